// Validation of parallel layouts on measured iteration times (the shared data set, skipped when it
// is absent; CI has it):
// - Megatron-LM on NVIDIA Selene (Korthikanti et al. 2022, table 5, as Calculon transcribes it):
//   GPT models of 22B to 1T parameters on 8 to 512 A100 with tensor 8 and pipeline parallelism,
//   full recomputation against sequence parallelism with selective recomputation. Fitted: ONE
//   achieved FLOP rate, on the one row a single node measures (22B, full recomputation); every
//   other row predicted. Hardware from the DGX A100 spec sheet (NVLink 3: 300 GB/s each way per
//   GPU; 8 HDR InfiniBand NICs of 200 Gb/s; 312 TFLOP/s fp16).
// - The same with one rate per model size, fitted on its full-recomputation row and predicting its
//   sequence-parallel, selective-recomputation row (same GEMM shapes): what the layout model
//   (recomputation, sequence parallelism, pipeline schedule) gets right apart from how fast the
//   GPU runs GEMMs of that size.
// - The same rows with compute from shapes: on the roofline (nothing fitted), with one GEMM peak
//   fitted on the single-node row, and with that peak and the NVLink bandwidth one node's
//   nccl-tests sweep measures (ABCI 2.0's A100 nodes, fitted with --fit regimes).
// - SimuMax's 31 dense Megatron-LM runs on one node of 8 B200 (Llama-3 70B and 405B cut to a few
//   layers; tensor, pipeline, context and data parallelism, 4 to 32 micro-batches, sequences of 4k
//   to 128k). Fitted: one rate on the file's first row; the rest predicted. B200 from its spec
//   sheet (NVLink 5: 900 GB/s each way per GPU, 2.25 PFLOP/s dense bf16).
// - The same file's 12 mixture-of-experts rows (DeepSeek-V2 and -V3 cut to 4 layers, expert 8
//   over data 8 and expert 4 over data 4 with pipeline 2, 4 to 32 micro-batches), predicted with
//   the dense rows' one rate and nothing fitted to them; and, as a second variant, one rate fitted
//   on the first MoE row predicting the 11 others.
// The errors asserted are regression pins at the level measured (each labelled below;
// docs/validation.md has the tables this test prints), not targets: Megatron's one-rate errors
// grow with the model, because the rate the GPUs sustain grows with the GEMMs' size, which one
// rate cannot express.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "shared_data.hpp"
#include "stepcast/detail/calibrate/ring_calibration.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace stepcast {
namespace {
namespace parallel_validation_test {  // this file's own names: test files are compiled several to a unit

using Row = testing::CsvRow;
using testing::read_csv;

/// The predicted step (fine) of a scenario at `tflops` achieved per GPU.
double step_at(const std::string& yaml_without_rate, double tflops) {
  const std::string text = yaml_without_rate + fmt::format("  achieved_flops: {}TFLOPS\n", tflops);
  // The rate key sits last under workload:, which the template leaves open.
  const scenario::Scenario s = scenario::parse_scenario(text, "validation.yaml");
  return predict::predict(scenario::build_workload(s), s.cluster, s.scheme, s.options).step_time;
}

/// The rate (TFLOP/s) at which the scenario's predicted step is `seconds`. The step is compute
/// (proportional to 1 / rate) plus what does not depend on it, piecewise, so secant steps in
/// 1 / rate converge in a few predictions.
double fit_rate(const std::string& yaml, double seconds) {
  double x0 = 1.0 / 100, x1 = 1.0 / 300;  // 1 / (TFLOP/s)
  double y0 = step_at(yaml, 1 / x0) - seconds, y1 = step_at(yaml, 1 / x1) - seconds;
  for (int i = 0; i < 12 && std::fabs(y1) > 1e-7 * seconds; ++i) {
    const double x2 = x1 - y1 * (x1 - x0) / (y1 - y0);
    x0 = x1;
    y0 = y1;
    x1 = x2;
    y1 = step_at(yaml, 1 / x1) - seconds;
  }
  return 1 / x1;
}

/// A Megatron table-5 row on DGX A100 nodes; the workload: section is left open for the rate.
/// Megatron-LM's GPT of 2022: GELU, tied head, its default attention and hidden dropout (0.1),
/// standard (unfused) attention, and its default scatter-gather of pipeline messages (which acts
/// without sequence parallelism: the full-recomputation rows).
std::string megatron_yaml(const Row& r) {
  const bool full = r.at("mode") == "full";
  const int v = std::stoi(r.at("interleave"));
  return fmt::format(
      "name: {model}-{mode}\n"
      "cluster:\n"
      "  workers: {gpus}\n  workers_per_node: 8\n  nics_per_node: 8\n  nic_bandwidth: 200Gbps\n"
      "  link_latency: 5us\n  intra_node: {{bandwidth: 300GB/s, latency: 2us}}\n"
      "  gpu: {{peak_flops: 312TFLOPS}}\n"
      "training:\n"
      "  parallel: {{tensor: {tp}, pipeline: {pp}, virtual_stages: {v}, sequence: {sp}}}\n"
      "  pipeline: {{schedule: {schedule}, scatter_gather: true}}\n"
      "steps: {{warmup: 1, measure: 1}}\n"
      "workload:\n"
      "  transformer: {{layers: {layers}, hidden: {hidden}, ffn_hidden: {ffn}, heads: {heads}, vocab: 51200, "
      "swiglu: false, tied_embeddings: true, dropout: true}}\n"
      "  seq_len: {seq}\n  precision: fp16\n  activation_checkpointing: {ckpt}\n  flash_attention: false\n"
      "  micro_batch: {mb}\n  global_batch: {gb}\n",
      fmt::arg("model", r.at("model")), fmt::arg("mode", r.at("mode")), fmt::arg("gpus", r.at("gpus")),
      fmt::arg("tp", r.at("tp")), fmt::arg("pp", r.at("pp")), fmt::arg("v", v),
      fmt::arg("sp", full ? "false" : "true"), fmt::arg("schedule", v > 1 ? "interleaved" : "1f1b"),
      fmt::arg("layers", r.at("layers")), fmt::arg("hidden", r.at("hidden")), fmt::arg("ffn", r.at("ffn")),
      fmt::arg("heads", r.at("heads")), fmt::arg("seq", r.at("seq_len")),
      fmt::arg("ckpt", full ? "full" : "selective"), fmt::arg("mb", r.at("micro_batch")),
      fmt::arg("gb", r.at("global_batch")));
}

struct Errors {
  double mean = 0, max = 0;
};

/// Fits on `fit` (an index into rows), predicts the others; prints the markdown table.
Errors predict_rows(const std::vector<Row>& rows, size_t fit, const std::function<std::string(const Row&)>& yaml,
                    const std::string& time_key, double time_unit, const std::string& title,
                    const std::function<std::string(const Row&)>& label) {
  const double rate = fit_rate(yaml(rows[fit]), std::stod(rows[fit].at(time_key)) * time_unit);
  fmt::print(
      "\n{} (fitted on {}: {:.1f} TFLOP/s per GPU)\n| row | measured | predicted | error "
      "|\n|---|---|---|---|\n",
      title, label(rows[fit]), rate);
  Errors e;
  int n = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const double measured = std::stod(rows[i].at(time_key)) * time_unit;
    const double predicted = step_at(yaml(rows[i]), rate);
    const double error = predicted / measured - 1;
    fmt::print("| {}{} | {:.3f} s | {:.3f} s | {:+.1f}% |\n", label(rows[i]), i == fit ? " (fitted)" : "", measured,
               predicted, 100 * error);
    if (i == fit) continue;
    e.mean += std::fabs(error);
    e.max = std::max(e.max, std::fabs(error));
    ++n;
  }
  e.mean /= n;
  fmt::print("mean |error| {:.1f}%, max {:.1f}% over {} predicted rows\n", 100 * e.mean, 100 * e.max, n);
  return e;
}

TEST(ParallelValidation, MegatronTable5OneRateFromTheSingleNodeRow) {
  const std::string path = testing::shared_table("megatron_korthikanti_table5_iteration_times.csv");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared data not found at " << path << ": validation skipped";
  const std::vector<Row> rows = read_csv(path);
  ASSERT_EQ(rows.size(), 8u);
  const Errors e = predict_rows(rows, 0, megatron_yaml, "measured_iter_s", 1,
                                "Megatron-LM table 5, one rate for every model",
                                [](const Row& r) { return r.at("model") + " " + r.at("mode"); });
  // Regression pin: the one-rate errors, max 42.9% and mean 27.1% over the 7 predicted rows,
  // measured 2026-12-07 with Megatron's scatter-gather of pipeline messages (27.5% without, at
  // ffa1787, 2026-12-05); the larger models run their bigger
  // GEMMs faster than the 22B's rate (docs/validation.md). The bounds sit just above so that a
  // change to the layout model that moves these errors is noticed; they are not targets.
  EXPECT_LT(e.max, 0.45);
  EXPECT_LT(e.mean, 0.30);
}

TEST(ParallelValidation, MegatronTable5RatePerModelPredictsSequenceParallelism) {
  const std::string path = testing::shared_table("megatron_korthikanti_table5_iteration_times.csv");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared data not found at " << path << ": validation skipped";
  const std::vector<Row> rows = read_csv(path);
  double worst = 0;
  for (size_t i = 0; i + 1 < rows.size(); i += 2) {
    ASSERT_EQ(rows[i].at("mode"), "full");
    const Errors e = predict_rows({rows[i], rows[i + 1]}, 0, megatron_yaml, "measured_iter_s", 1,
                                  "Megatron-LM table 5, " + rows[i].at("model") + ": full fitted, seqsel predicted",
                                  [](const Row& r) { return r.at("model") + " " + r.at("mode"); });
    worst = std::max(worst, e.max);
  }
  // Regression pin: the worst of the four sequence-parallel predictions is 2.7% (22B; 0.7%, 1.7%
  // and 0.6% for the others), measured 2026-12-07 with Megatron's scatter-gather of pipeline
  // messages on the fitted full rows (2.9% without, at ffa1787); the bound sits just above so that a change
  // to recomputation, sequence parallelism or the schedule that moves it is noticed. Not a target.
  EXPECT_LT(worst, 0.035);
}

TEST(ParallelValidation, MegatronTable5FromShapesOnTheRoofline) {
  // workload.compute: shapes with no calibration: every kernel on the DGX A100 spec sheet's
  // roofline (312 TFLOP/s fp16, 2.039 TB/s HBM2e), nothing fitted to any row. A roofline is a lower
  // bound on each kernel, so every row should come out fast; how fast says what a GEMM table
  // measured on one GPU has to supply.
  const std::string path = testing::shared_table("megatron_korthikanti_table5_iteration_times.csv");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared data not found at " << path << ": validation skipped";
  const std::vector<Row> rows = read_csv(path);
  fmt::print("\nMegatron-LM table 5, compute from shapes on the roofline (nothing fitted)\n"
             "| row | measured | predicted | error |\n|---|---|---|---|\n");
  double mean = 0, worst = 0, highest = -1;
  for (const Row& r : rows) {
    const scenario::Scenario s = scenario::parse_scenario(megatron_yaml(r) + "  compute: shapes\n", "validation.yaml",
                                                          {"cluster.gpu.memory_bandwidth=2.039TB/s"});
    const double predicted = predict::predict(scenario::build_workload(s), s.cluster, s.scheme, s.options).step_time;
    const double measured = std::stod(r.at("measured_iter_s"));
    const double error = predicted / measured - 1;
    fmt::print("| {} {} | {:.3f} s | {:.3f} s | {:+.1f}% |\n", r.at("model"), r.at("mode"), measured, predicted,
               100 * error);
    mean += std::fabs(error) / static_cast<double>(rows.size());
    worst = std::max(worst, std::fabs(error));
    highest = std::max(highest, error);
  }
  fmt::print("mean |error| {:.1f}%, max {:.1f}% over {} rows\n", 100 * mean, 100 * worst, rows.size());
  // A roofline predicts every row faster than measured (the bound it is).
  EXPECT_LT(highest, 0);
  // Regression pin: every row 23.8-31.9% fast (mean |error| 28.3%, max 31.9%, 175B seqsel),
  // measured 2026-12-07 after the unfused attention core became batched GEMMs, Megatron's dropout
  // kernels were added and the rows took its scatter-gather of pipeline messages (30.7% and
  // 37.9% before); the bounds sit just above so that a
  // change to the kernels or the layout model is noticed. Not targets: the roofline is what a GEMM
  // table measured on one GPU is to replace.
  EXPECT_LT(worst, 0.33);
  EXPECT_LT(mean, 0.29);
}

/// A SimuMax dense row on one node of 8 B200 (Megatron's distributed optimizer, sequence
/// parallelism with t > 1, no recomputation, no communication overlap, its fused cross entropy:
/// the rows' "cef").
/// What every SimuMax row shares: the node of 8 B200 (NVLink 5, the data sheet's bf16 peak and HBM
/// bandwidth), Megatron's distributed optimizer with its fp32 gradients (the launch scripts'
/// --accumulate-allreduce-grads-in-fp32), the row's layout with `expert` appended, and its batch.
std::string simumax_node(const Row& r, const std::string& expert = "") {
  const int m = std::stoi(r.at("num_microbatches")), dp = std::stoi(r.at("dp")), mbs = std::stoi(r.at("mbs"));
  return fmt::format(
      "name: {case}\n"
      "cluster:\n"
      "  workers: 8\n  workers_per_node: 8\n  nics_per_node: 8\n  nic_bandwidth: 400Gbps\n"
      "  intra_node: {{bandwidth: 900GB/s, latency: 2us}}\n"
      "  gpu_memory: 180GB\n  gpu: {{peak_flops: 2250TFLOPS, memory_bandwidth: 8TB/s}}\n"
      "training:\n"
      "  scheme: fsdp\n  fsdp: {{sharding: optimizer}}\n  grad_reduce_in_fp32: true\n"
      "  parallel: {{tensor: {tp}, pipeline: {pp}, context: {cp}{expert}}}\n"
      "steps: {{warmup: 1, measure: 1}}\n"
      "workload:\n"
      "  seq_len: {seq}\n  precision: bf16\n  loss: fp32_in_place\n"
      "  micro_batch: {mbs}\n  global_batch: {gb}\n",
      fmt::arg("case", r.at("case")), fmt::arg("tp", r.at("tp")), fmt::arg("pp", r.at("pp")),
      fmt::arg("cp", r.at("cp")), fmt::arg("expert", expert), fmt::arg("seq", r.at("seq_len")),
      fmt::arg("mbs", mbs), fmt::arg("gb", m * dp * mbs));
}

std::string simumax_yaml(const Row& r) {
  const bool is405 = r.at("model") == "llama3-405b";
  return simumax_node(r) +
         fmt::format(
             "  transformer: {{layers: {layers}, hidden: {hidden}, ffn_hidden: {ffn}, heads: {heads}, "
             "kv_heads: 8, vocab: 128256}}\n",
             fmt::arg("layers", r.at("layers")), fmt::arg("hidden", is405 ? 16384 : 8192),
             fmt::arg("ffn", is405 ? 53248 : 28672), fmt::arg("heads", is405 ? 128 : 64));
}

/// The file's 31 dense rows (Llama 3 70B and 405B cut to a few layers; no experts).
std::vector<Row> simumax_dense_rows(const std::string& path) {
  std::vector<Row> dense;
  for (const Row& r : read_csv(path)) {
    if (r.at("ep") == "1" && r.at("model").rfind("llama3", 0) == 0) dense.push_back(r);
  }
  return dense;
}

TEST(ParallelValidation, SimuMaxB200DenseRowsOneRate) {
  const std::string path = testing::shared_table("simumax_b200_single_node_tp_pp_ep_cp.csv");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared data not found at " << path << ": validation skipped";
  const std::vector<Row> dense = simumax_dense_rows(path);
  ASSERT_EQ(dense.size(), 31u);
  const Errors e = predict_rows(dense, 0, simumax_yaml, "real_iter_ms", 1e-3, "SimuMax B200 dense rows, one rate",
                                [](const Row& r) { return r.at("case"); });
  // Regression pin: the one-rate errors over the 30 predicted rows, max 36.7% and mean 11.3%,
  // measured at ffa1787 (2026-12-05) and unchanged at f750b82 (docs/validation.md); the bounds sit
  // just above so that a change that moves them is noticed. Not targets.
  EXPECT_LT(e.max, 0.40);
  EXPECT_LT(e.mean, 0.13);

  // Memory: the peak the allocator held (PyTorch's max_memory_allocated) against memory per GPU.
  fmt::print(
      "\nSimuMax B200 dense rows, memory per GPU\n| row | measured peak | predicted | error "
      "|\n|---|---|---|---|\n");
  double worst = 0, sum = 0;
  for (const Row& r : dense) {
    const scenario::Scenario s =
        scenario::parse_scenario(simumax_yaml(r) + "  achieved_flops: 1000TFLOPS\n", "validation.yaml");
    predict::Options o = s.options;
    o.predictor = predict::Predictor::Analytic;  // the memory check is the same for every predictor
    const double predicted = predict::predict(scenario::build_workload(s), s.cluster, s.scheme, o).memory.per_worker.total();
    const double measured = std::stod(r.at("real_peak_alloc_gib")) * (1ull << 30);
    const double error = predicted / measured - 1;
    worst = std::max(worst, std::fabs(error));
    sum += std::fabs(error);
    fmt::print("| {} | {:.1f} GiB | {:.1f} GiB | {:+.1f}% |\n", r.at("case"), measured / (1ull << 30),
               predicted / (1ull << 30), 100 * error);
  }
  fmt::print("mean |error| {:.1f}%, max {:.1f}%\n", 100 * sum / static_cast<double>(dense.size()), 100 * worst);
  // Regression pin: with the runs' fp32 gradient buffer (training.grad_reduce_in_fp32, the
  // launch script's --accumulate-allreduce-grads-in-fp32) the memory is within 9.3% (mean 3.8%;
  // the 405B rows with pipeline parallelism the worst), measured 2026-12-07; before that key
  // every row was 9-30% low (worst 29.6%, mean 19.5%, 2026-12-05). The bound sits just above so
  // that a change to the memory model that moves it is noticed. Not a target.
  EXPECT_LT(worst, 0.10);
}

/// A SimuMax mixture-of-experts row (DeepSeek-V2 or -V3 cut to the row's layers) on the same node
/// and with the same method as the dense rows; the workload: section is left open for the rate.
/// Shapes from the models' Hugging Face config.json, as SimuMax's launch script
/// (simu_tools/megatron_scripts/scripts/run_pretrain_deepseekv2.sh at 1b8ca90) passes them to
/// Megatron-LM:
/// - DeepSeek-V2 (deepseek-ai/DeepSeek-V2): hidden_size 5120, 128 heads (num_key_value_heads 128),
///   intermediate_size 12288 (the dense block), n_routed_experts 160, num_experts_per_tok 6,
///   moe_intermediate_size 1536, n_shared_experts 2 (Megatron's one shared expert of 3072 =
///   2 x 1536: the same parameters and FLOPs), q_lora_rank 1536, kv_lora_rank 512,
///   qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, vocab_size 102400, untied;
/// - DeepSeek-V3 (deepseek-ai/DeepSeek-V3): hidden_size 7168, 128 heads, intermediate_size 18432,
///   n_routed_experts 256, num_experts_per_tok 8, moe_intermediate_size 2048, n_shared_experts 1,
///   the same latent attention, vocab_size 129280, untied (the zoo's deepseek-v3 without its
///   first_k_dense_replace of 3).
/// Both cut to the row's layers with ONE dense block first: the script's --moe-layer-freq
/// "([0]*1+[1]*(layers-1))" for both models (the file's header: "DeepSeek-V3 rows use
/// dense_layers=1"; DeepSeek-V2's own first_k_dense_replace is 1 too). Routing: capacity factor 1
/// with --moe-pad-expert-input-to-capacity, so every expert computes exactly its capacity, the
/// balanced mean: workload.moe.capacity_factor 1 with no imbalance. The router's group-limited
/// top-k, its auxiliary loss and the multi-token-prediction module (not in the script) are left
/// out. Expert parallelism over the stage's data ranks (tensor 1: expert_tensor is 1 by default).
std::string simumax_moe_yaml(const Row& r) {
  const bool v3 = r.at("model") == "deepseekv3";
  return simumax_node(r, ", expert: " + r.at("ep")) +
         fmt::format(
             "  transformer: {{layers: {layers}, hidden: {hidden}, ffn_hidden: {ffn}, heads: 128, kv_heads: "
             "128, "
             "vocab: {vocab}, experts: {experts}, top_k: {top_k}, expert_ffn_hidden: {expert_ffn}, "
             "shared_experts: "
             "{shared}, dense_layers_first: 1, q_lora_rank: 1536, kv_lora_rank: 512, qk_nope_head_dim: 128, "
             "qk_rope_head_dim: 64, v_head_dim: 128}}\n"
             "  moe: {{capacity_factor: 1}}\n",
             fmt::arg("layers", r.at("layers")), fmt::arg("hidden", v3 ? 7168 : 5120),
             fmt::arg("ffn", v3 ? 18432 : 12288), fmt::arg("vocab", v3 ? 129280 : 102400),
             fmt::arg("experts", v3 ? 256 : 160), fmt::arg("top_k", v3 ? 8 : 6),
             fmt::arg("expert_ffn", v3 ? 2048 : 1536), fmt::arg("shared", v3 ? 1 : 2));
}

/// Memory per GPU (the largest stage's) the memory check predicts for a scenario.
predict::Memory predicted_memory(const std::string& yaml_without_rate) {
  const scenario::Scenario s =
      scenario::parse_scenario(yaml_without_rate + "  achieved_flops: 1000TFLOPS\n", "validation.yaml");
  predict::Options o = s.options;
  o.predictor = predict::Predictor::Analytic;  // the memory check is the same for every predictor
  return predict::predict(scenario::build_workload(s), s.cluster, s.scheme, o).memory.per_worker;
}

TEST(ParallelValidation, SimuMaxB200MoeRowsFromTheDenseRate) {
  const std::string path = testing::shared_table("simumax_b200_single_node_tp_pp_ep_cp.csv");
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << "shared data not found at " << path << ": validation skipped";
  std::vector<Row> dense, moe;
  for (const Row& r : read_csv(path)) {
    if (r.at("model").rfind("deepseek", 0) == 0) {
      moe.push_back(r);
    } else if (r.at("ep") == "1") {
      dense.push_back(r);
    }
  }
  ASSERT_EQ(dense.size(), 31u);
  ASSERT_EQ(moe.size(), 12u);  // DeepSeek-V2 and -V3, ep8 dp8 and ep4 pp2 dp4, 4 to 32 micro-batches

  // The same method as the dense rows: one rate, fitted on the file's first (dense) row. Nothing
  // is fitted to a MoE row.
  const double rate = fit_rate(simumax_yaml(dense[0]), std::stod(dense[0].at("real_iter_ms")) * 1e-3);
  fmt::print(
      "\nSimuMax B200 MoE rows, the dense rate (fitted on {}: {:.1f} TFLOP/s per GPU)\n"
      "| row | measured | predicted | error | SimuMax | SimuMax error |\n|---|---|---|---|---|---|\n",
      dense[0].at("case"), rate);
  std::map<std::string, double> step;  // by case
  double time_sum = 0, time_worst = 0, simumax_sum = 0;
  for (const Row& r : moe) {
    const double predicted = step_at(simumax_moe_yaml(r), rate);
    // Every row is a layout Megatron-LM ran, so every one must run and give a step.
    ASSERT_TRUE(std::isfinite(predicted)) << r.at("case");
    ASSERT_GT(predicted, 0) << r.at("case");
    step[r.at("case")] = predicted;
    const double measured = std::stod(r.at("real_iter_ms")) * 1e-3;
    const double error = predicted / measured - 1;
    time_sum += std::fabs(error);
    time_worst = std::max(time_worst, std::fabs(error));
    simumax_sum += std::fabs(std::stod(r.at("simumax_err_pct"))) / 100;
    fmt::print("| {} | {:.3f} s | {:.3f} s | {:+.1f}% | {:.3f} s | {:+.1f}% |\n", r.at("case"), measured,
               predicted, 100 * error, std::stod(r.at("simumax_pred_ms")) * 1e-3,
               std::stod(r.at("simumax_err_pct")));
  }
  const double n = static_cast<double>(moe.size());
  fmt::print("mean |error| {:.1f}%, max {:.1f}% over {} rows (SimuMax: mean {:.1f}%)\n", 100 * time_sum / n,
             100 * time_worst, moe.size(), 100 * simumax_sum / n);
  // More micro-batches of the same layout take longer: each adds its passes.
  for (const Row& r : moe) {
    const std::string& c = r.at("case");
    if (c.find("_mbc4_") == std::string::npos) continue;
    const std::string c8 = std::string(c).replace(c.find("_mbc4_"), 6, "_mbc8_");
    const std::string c32 = std::string(c).replace(c.find("_mbc4_"), 6, "_mbc32_");
    ASSERT_TRUE(step.contains(c8) && step.contains(c32)) << c;
    EXPECT_LT(step[c], step[c8]) << c;
    EXPECT_LT(step[c8], step[c32]) << c;
  }

  // Memory: the peak the allocator held (PyTorch's max_memory_allocated) against memory per GPU
  // (the runs pass --accumulate-allreduce-grads-in-fp32: training.grad_reduce_in_fp32 above).
  fmt::print(
      "\nSimuMax B200 MoE rows, memory per GPU\n| row | measured peak | predicted | error | SimuMax "
      "|\n|---|---|---|---|---|\n");
  double memory_sum = 0, memory_worst = 0, memory_highest = -1;
  std::map<std::string, double> memory;  // by case
  for (const Row& r : moe) {
    const predict::Memory m = predicted_memory(simumax_moe_yaml(r));
    const double predicted = m.total();
    ASSERT_TRUE(std::isfinite(predicted) && predicted > 0) << r.at("case");
    memory[r.at("case")] = predicted;
    const double measured = std::stod(r.at("real_peak_alloc_gib")) * (1ull << 30);
    const double error = predicted / measured - 1;
    memory_sum += std::fabs(error);
    memory_worst = std::max(memory_worst, std::fabs(error));
    memory_highest = std::max(memory_highest, error);
    fmt::print("| {} | {:.1f} GiB | {:.1f} GiB | {:+.1f}% | {:.1f} GiB |\n", r.at("case"),
               measured / (1ull << 30), predicted / (1ull << 30), 100 * error,
               std::stod(r.at("simumax_peak_alloc_gib")));
  }
  fmt::print("mean |error| {:.1f}%, max {:.1f}%\n", 100 * memory_sum / n, 100 * memory_worst);
  // The peak does not depend on the number of micro-batches (one stage holds at most p in flight
  // under 1F1B), as the measurements show.
  for (const Row& r : moe) {
    const std::string& c = r.at("case");
    if (c.find("_mbc4_") == std::string::npos) continue;
    for (const char* more : {"_mbc8_", "_mbc32_"}) {
      EXPECT_DOUBLE_EQ(memory[c], memory[std::string(c).replace(c.find("_mbc4_"), 6, more)]) << c;
    }
  }
  // Regression pin: with the dense rate every MoE row is predicted fast, by 16.5-29.0% (mean
  // |error| 22.3%, max 29.0%, deepseekv2 ep4 pp2 mbc4; SimuMax's own mean on these rows 6.6%):
  // the rate of the 70B's large GEMMs does not hold for experts of 1,536-2,048 columns on 512-1,229
  // tokens each (a micro-batch's), and the tokens' permutation (memory-bound) is not in the FLOP
  // count (time measured 2026-12-07 on the simumoe branch at 5a019c0; 28.7% max with the fp32
  // gradient reductions since). The memory is low on every row by 0.6-1.9% (mean 1.2%) with the
  // runs' fp32 gradient buffer (training.grad_reduce_in_fp32, 2026-12-07; 12.3-15.1% low without
  // it). The bounds sit just above so that a change that moves them is noticed. Not targets.
  EXPECT_LT(time_worst, 0.31);
  EXPECT_LT(time_sum / n, 0.24);
  EXPECT_LT(memory_worst, 0.025);
  EXPECT_LT(memory_highest, 0);
}

TEST(ParallelValidation, SimuMaxB200MoeRowsFromOneMoeRow) {
  // A second, separate variant: a user who measured one MoE configuration on one node fits the
  // rate there (the file's first MoE row) and predicts the other MoE rows with it.
  const std::string path = testing::shared_table("simumax_b200_single_node_tp_pp_ep_cp.csv");
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << "shared data not found at " << path << ": validation skipped";
  std::vector<Row> moe;
  for (const Row& r : read_csv(path)) {
    if (r.at("model").rfind("deepseek", 0) == 0) moe.push_back(r);
  }
  ASSERT_EQ(moe.size(), 12u);
  const Errors e = predict_rows(moe, 0, simumax_moe_yaml, "real_iter_ms", 1e-3,
                                "SimuMax B200 MoE rows, one rate fitted on a MoE row",
                                [](const Row& r) { return r.at("case"); });
  // Regression pin: fitted on deepseekv2 ep8 mbc4 (730.3 TFLOP/s), the 11 other MoE rows are
  // within 9.4% (mean |error| 5.1%; DeepSeek-V3 and the ep4 pp2 layout included), measured
  // 2026-12-07 on the simumoe branch at 5a019c0; the bounds sit just above so that a change that
  // moves them is noticed. Not targets.
  EXPECT_LT(e.max, 0.10);
  EXPECT_LT(e.mean, 0.06);
}

/// Compute from shapes with the GEMMs' roofline at a peak fitted on one row (bisection on
/// cluster.gpu.peak_flops, s), the attention core at `attention` and the memory-bound kernels at
/// the spec sheet's bandwidth: what one rate does when the rest of the step comes from shapes.
/// Returns the mean and largest |error| over the other rows, and prints the table.
Errors predict_rows_from_shapes(const std::vector<Row>& rows,
                                const std::function<std::string(const Row&)>& yaml,
                                const std::vector<std::string>& overrides, const std::string& time_key,
                                double time_unit, double spec_peak, const std::string& title) {
  auto step = [&](const Row& r, double peak) {
    std::vector<std::string> o = overrides;
    o.push_back(fmt::format("cluster.gpu.peak_flops={}TFLOPS", peak));
    const scenario::Scenario s =
        scenario::parse_scenario(yaml(r) + "  compute: shapes\n", "validation.yaml", o);
    return predict::predict(scenario::build_workload(s), s.cluster, s.scheme, s.options).step_time;
  };
  // The step shortens as the GEMMs' peak rises: bisect it on the first row.
  double slow = spec_peak / 20, fast = spec_peak;
  const double target = std::stod(rows[0].at(time_key)) * time_unit;
  for (int i = 0; i < 32; ++i) {
    const double mid = (slow + fast) / 2;
    (step(rows[0], mid) > target ? slow : fast) = mid;
  }
  fmt::print(
      "\n{} (GEMM peak fitted on the first row: {:.1f} TFLOP/s)\n| row | measured | predicted | error |\n"
      "|---|---|---|---|\n",
      title, slow);
  Errors e;
  for (size_t i = 0; i < rows.size(); ++i) {
    const double measured = std::stod(rows[i].at(time_key)) * time_unit, predicted = step(rows[i], slow);
    const double error = predicted / measured - 1;
    fmt::print("| {} | {:.3f} s | {:.3f} s | {:+.1f}% |\n",
               rows[i].count("case") ? rows[i].at("case") : rows[i].at("model") + " " + rows[i].at("mode"),
               measured, predicted, 100 * error);
    if (i == 0) {
      EXPECT_NEAR(error, 0, 1e-6);  // the fit
      continue;
    }
    e.mean += std::fabs(error) / static_cast<double>(rows.size() - 1);
    e.max = std::max(e.max, std::fabs(error));
  }
  fmt::print("mean |error| {:.1f}%, max {:.1f}% over {} predicted rows\n", 100 * e.mean, 100 * e.max,
             rows.size() - 1);
  return e;
}

TEST(ParallelValidation, MegatronTable5FromShapesWithOneFittedGemmPeak) {
  // Fitted: the GEMMs' peak on the single-node row (22B, full recomputation); the attention core at
  // the A100's 312 TFLOP/s, the memory-bound kernels at its 2.039 TB/s. Predicted: the other seven.
  const std::string path = testing::shared_table("megatron_korthikanti_table5_iteration_times.csv");
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << "shared data not found at " << path << ": validation skipped";
  const Errors e = predict_rows_from_shapes(
      read_csv(path), megatron_yaml,
      {"cluster.gpu.memory_bandwidth=2.039TB/s", "cluster.gpu.attention_flops=312TFLOPS"}, "measured_iter_s",
      1, 312, "Megatron-LM table 5, compute from shapes, one GEMM peak");
  // Regression pin: mean 11.7%, max 20.8% (1T full), every larger model slower than measured,
  // measured 2026-12-07 with the unfused attention core as batched GEMMs, Megatron's dropout
  // kernels and its scatter-gather of pipeline messages (17.3% and 28.8% before; the one-rate fit of
  // FLOPs: 27.5% and 42.9%); the bounds sit just above so that a change to the kernels or the layout model is
  // noticed. What is left grows with the model: the tensor-parallel all-reduces on the data sheet's NVLink
  // (the next test) and GEMMs that run closer to the peak the larger they are, which one peak cannot say and
  // a GEMM table measured on one GPU can (issue 29).
  EXPECT_LT(e.mean, 0.13);
  EXPECT_LT(e.max, 0.23);
}

TEST(ParallelValidation, SimuMaxB200DenseRowsFromShapesWithOneFittedGemmPeak) {
  // Fitted: the GEMMs' peak on the file's first dense row; the attention core at the B200's 2.25
  // PFLOP/s and the memory-bound kernels at its 8 TB/s. Predicted: the other 30.
  const std::string path = testing::shared_table("simumax_b200_single_node_tp_pp_ep_cp.csv");
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << "shared data not found at " << path << ": validation skipped";
  const std::vector<Row> dense = simumax_dense_rows(path);
  ASSERT_EQ(dense.size(), 31u);
  const Errors e = predict_rows_from_shapes(dense, simumax_yaml, {"cluster.gpu.attention_flops=2250TFLOPS"},
                                            "real_iter_ms", 1e-3, 2250,
                                            "SimuMax B200 dense rows, compute from shapes, one GEMM peak");
  // Regression pin: mean 10.4%, max 31.7% (70B at tp8), measured 2026-12-07 at 8c0528d (one FLOP
  // rate: 11.3% and 36.7%); the bounds sit just above. Not targets: the tensor-parallel rows stay
  // fast, as with one rate.
  EXPECT_LT(e.mean, 0.12);
  EXPECT_LT(e.max, 0.34);
}

/// The intra-node all-reduce of 8 A100 (NVLink 3, NVSwitch) as a user measures it on one node:
/// ABCI 2.0's 1-node, 8-GPU nccl-tests sweep (out of place, 4 B to 32 MiB) fitted with
/// `calibrate nccl-tests --fit regimes`, as cluster.intra_node keys for its largest-size regime.
/// Returns no keys when the shared data is absent.
std::vector<std::string> nvlink_from_one_node() {
  const std::string path =
      testing::shared_table("nccl_tests_abci2_nodeA_a100_hdr_allreduce_bcast_1to16nodes.csv");
  if (!std::filesystem::exists(path)) return {};
  std::vector<calibrate::Measurement> points;
  for (const Row& r : read_csv(path)) {
    if (r.at("nodes") == "1" && r.at("gpus_per_node") == "8" && r.at("collective") == "all_reduce" &&
        r.at("placement") == "out_of_place") {
      points.push_back({.bytes = std::stod(r.at("size_bytes")), .time = std::stod(r.at("time_us")) * 1e-6});
    }
  }
  EXPECT_EQ(points.size(), 24u);
  const calibrate::Calibration fit =
      calibrate::calibrate_ring(points, 8, {.method = calibrate::FitMethod::Regimes});
  const calibrate::Regime& large = fit.regimes.regimes.back();
  // Every tensor-parallel collective of these rows moves b s h x 2 bytes, 50 MB at the least
  // (175B: 2048 x 12288 x 2): all of them in the largest-size regime.
  EXPECT_LT(large.from_bytes, 50e6);
  fmt::print(
      "\nNVLink from one node's all-reduce sweep (ABCI 2.0 A100, --fit regimes): {} regimes, the largest "
      "from {:.0f} B: a = {:.3f} us a ring step, B = {:.1f} GB/s\n",
      fit.regimes.regimes.size(), large.from_bytes, large.step_latency * 1e6, large.bw / 1e9);
  return {fmt::format("cluster.intra_node.bandwidth={}GB/s", large.bw / 1e9),
          fmt::format("cluster.intra_node.latency={}us", large.step_latency * 1e6)};
}

TEST(ParallelValidation, MegatronTable5FromShapesWithOneFittedGemmPeakAndNvlinkFromOneNode) {
  // As MegatronTable5FromShapesWithOneFittedGemmPeak, with the tensor-parallel collectives on the
  // NVLink bandwidth one node's nccl-tests sweep measures instead of the data sheet's 300 GB/s:
  // both inputs are what a user measures on one node (the sweep on ABCI 2.0's A100 nodes, the
  // same NVLink 3 and NVSwitch as Selene's DGX A100, NCCL 2.8). Fitted: the GEMMs' peak on the
  // single-node row; predicted: the other seven.
  const std::string path = testing::shared_table("megatron_korthikanti_table5_iteration_times.csv");
  const std::vector<std::string> nvlink = nvlink_from_one_node();
  if (!std::filesystem::exists(path) || nvlink.empty())
    GTEST_SKIP() << "shared data not found at " << path << ": validation skipped";
  std::vector<std::string> overrides{"cluster.gpu.memory_bandwidth=2.039TB/s",
                                     "cluster.gpu.attention_flops=312TFLOPS"};
  overrides.insert(overrides.end(), nvlink.begin(), nvlink.end());
  const Errors e =
      predict_rows_from_shapes(read_csv(path), megatron_yaml, overrides, "measured_iter_s", 1, 312,
                               "Megatron-LM table 5, compute from shapes, one GEMM peak, NVLink "
                               "from one node's nccl-tests");
  // Regression pin: mean 6.8%, max 13.7% (1T full), measured 2026-12-07 (with the data sheet's
  // NVLink 11.7% / 20.8%; Calculon 3.65% / 8.9%); the bounds sit just above. What is left still
  // grows with the model, the full-recomputation rows more, and GEMM efficiency growing with size
  // is the part a GEMM table measured on one GPU would give (issue 29).
  EXPECT_LT(e.mean, 0.08);
  EXPECT_LT(e.max, 0.155);
}

}  // namespace parallel_validation_test
}  // namespace
}  // namespace stepcast
