// Validation of FSDP transformer predictions at 8-512 GPUs on LLM Foundry's published MPT
// throughput tables (the shared data set, skipped when it is absent; CI has it):
// llmfoundry_mpt_fsdp_training_throughput_8to512gpus.csv, every row of the results tables of
// mosaicml/llm-foundry scripts/train/benchmarking/README.md (Composer + PyTorch FSDP, bf16, ~12
// steps a run).
//
// Method (nothing tuned to what is predicted): a *clean series* is a set of rows of one hardware
// section with the same model, sequence length, micro-batch, sharding strategy and activation
// checkpointing, one micro-batch a step (grad_accum 1), at two or more GPU counts: the per-GPU work
// is fixed and only the number of GPUs changes. Per series, ONE achieved FLOP rate per GPU is fitted
// on its smallest-GPU-count row (the anchor) and the other rows are predicted; tokens/s per GPU is
// compared. Sections without a clean series (A100 80GB, H100 FP8: every clean row at 8 GPUs) are
// reported as such. Only the H100 BF16 13b series (8/16/32/64 GPUs) has a one-node anchor; the
// large-scale H100 series are fitted at 128 GPUs (16 nodes) and the A100 40GB and other H100 BF16
// series at 16 or 32 GPUs; the tables say which. A second check fits one rate per section on the
// anchor of its first series and predicts every clean row of the section (other models too).
//
// The errors asserted are regression pins at the level measured (each labelled below;
// docs/validation.md has the tables this test prints), not targets.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "shared_data.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace stepcast::predict {
namespace {
namespace mpt_fsdp_validation_test {  // this file's own names: test files are compiled several to a unit

using Row = testing::CsvRow;
using testing::read_csv;

const std::string kFile = "llmfoundry_mpt_fsdp_training_throughput_8to512gpus.csv";

/// MPT shapes: d_model, n_heads, n_layers of mosaicml/llm-foundry scripts/train/yamls/pretrain/
/// mpt-<size>.yaml (read for 760m, 3b, 30b and 70b; 125m, 350m, 1b, 7b, 13b as the same yaml set
/// gives them), expansion_ratio 4 (MLP 4 d, GELU), vocab_size 50368, tied embeddings (MPT's LM
/// head is its token embedding), no grouped-query attention. d_model and n_layers are confirmed by
/// the file's num_params, which equals exactly 12 d^2 L + 13 d L + 2 d + 50368 d + seq_len d for
/// every row: biases and LayerNorm biases (13 d a block) and a learned position embedding of
/// seq_len x d, i.e. these benchmark models ran with MPTConfig's defaults (learned_pos_emb, no
/// ALiBi, biases on), not the ALiBi of the released MPT-7B. stepcast counts neither biases nor the
/// position embedding (below 0.1% of the parameters and FLOPs). The head count does not change
/// the parameters or the FLOPs stepcast counts (attention 4 s^2 d per sequence forward); 760m's 12
/// and 3b's 20 heads are the yamls' ("modified so that d_head == 128"), the others d_head 64 or 128
/// as the yamls give and not checked against the data.
struct Shape {
  int hidden, heads, layers;
};
const std::map<std::string, Shape> kShapes = {
    {"125m", {768, 12, 12}}, {"350m", {1024, 16, 24}}, {"760m", {1536, 12, 24}},
    {"1b", {2048, 16, 24}},  {"3b", {2560, 20, 32}},   {"7b", {4096, 32, 32}},
    {"13b", {5120, 40, 40}}, {"30b", {7168, 56, 48}},  {"70b", {8192, 64, 80}},
};

/// The hardware of a section: nodes of 8 GPUs on NVLink. H100: the interconnect is not stated, so
/// DGX H100's is assumed (8 x 400 Gb/s InfiniBand NDR a node, NVLink 4 at 450 GB/s each way per
/// GPU). A100: "1600 Gbps node-node interconnect (RoCE)" as the section says, taken as 8 NICs of
/// 200 Gb/s (an assumption about how it is split), NVLink 3 at 300 GB/s. Peaks and HBM bandwidth
/// from the data sheets (H100 SXM 989 TFLOP/s dense bf16, 3.35 TB/s; A100 312 TFLOP/s, 40GB
/// 1.555 TB/s, 80GB 2.039 TB/s). The memory in GiB: an "80GB" H100 or A100 has 80 GiB of HBM
/// (85.9e9 bytes), the "40GB" A100 40 GiB; stepcast reads "80GB" as 80e9 bytes.
std::string cluster_yaml(const Row& r) {
  const std::string& gpu = r.at("gpu");
  const bool h100 = gpu == "h100_80gb";
  return fmt::format(
      "cluster:\n"
      "  workers: {gpus}\n  workers_per_node: 8\n  nics_per_node: 8\n  nic_bandwidth: {nic}\n"
      "  link_latency: 5us\n  intra_node: {{bandwidth: {nvlink}, latency: 2us}}\n"
      "  gpu_memory: {mem}\n  gpu: {{peak_flops: {peak}, memory_bandwidth: {hbm}}}\n",
      fmt::arg("gpus", r.at("num_gpus")), fmt::arg("nic", h100 ? "400Gbps" : "200Gbps"),
      fmt::arg("nvlink", h100 ? "450GB/s" : "300GB/s"),
      fmt::arg("mem", gpu == "a100_40gb" ? "40GiB" : "80GiB"),
      fmt::arg("peak", h100 ? "989TFLOPS" : "312TFLOPS"),
      fmt::arg("hbm", h100 ? "3.35TB/s" : (gpu == "a100_40gb" ? "1.555TB/s" : "2.039TB/s")));
}

/// A row as a scenario: its own GPUs, micro-batch (one a step: grad_accum 1), sharding strategy
/// and checkpointing; the workload: section is left open for the rate. The loss is llm-foundry's
/// default, flash-attn's fused cross entropy ("fused_crossentropy" in ComposerMPTCausalLM), which
/// keeps the bf16 logits and an fp32 log-sum-exp per token: stepcast's bf16_logits is the closest
/// (it changes the memory check only, not the time).
std::string row_yaml(const Row& r) {
  const Shape& m = kShapes.at(r.at("model"));
  const bool full = r.at("sharding_strategy") == "FULL_SHARD";
  return fmt::format(
             "name: mpt-{model}-{gpus}\n"
             "training:\n  scheme: fsdp\n  optimizer: adam\n  fsdp: {{sharding: {sharding}, prefetch: 1}}\n"
             "steps: {{warmup: 1, measure: 1}}\n",
             fmt::arg("model", r.at("model")), fmt::arg("gpus", r.at("num_gpus")),
             fmt::arg("sharding", full ? "full" : "grad_op")) +
         cluster_yaml(r) +
         fmt::format(
             "workload:\n"
             "  transformer: {{layers: {layers}, hidden: {hidden}, ffn_hidden: {ffn}, heads: {heads}, vocab: "
             "50368, "
             "swiglu: false, tied_embeddings: true}}\n"
             "  seq_len: {seq}\n  batch_per_worker: {mb}\n  precision: bf16\n  loss: bf16_logits\n"
             "  activation_checkpointing: {ckpt}\n",
             fmt::arg("layers", m.layers), fmt::arg("hidden", m.hidden), fmt::arg("ffn", 4 * m.hidden),
             fmt::arg("heads", m.heads), fmt::arg("seq", r.at("seq_len")),
             fmt::arg("mb", r.at("micro_batch")),
             fmt::arg("ckpt", r.at("activation_checkpointing") == "True" ? "full" : "none"));
}

struct Prediction {
  double tokens_per_gpu = 0;          // tokens/s per GPU
  double step_without_optimizer = 0;  // s: the step less the optimizer step on the GPU's shard
  double mfu = 0;
  double allocated = 0, reserved = 0;  // bytes per GPU
  bool fits = true;
};

Prediction predict_at(const Row& r, double tflops) {
  const scenario::Scenario s =
      scenario::parse_scenario(row_yaml(r) + fmt::format("  achieved_flops: {}TFLOPS\n", tflops), "mpt.yaml");
  const Result res = predict(scenario::build_workload(s), s.cluster, s.scheme, s.options);
  return {res.tokens.tokens_per_s_per_worker,
          res.step_time - res.optimizer_step_time,
          res.tokens.mfu,
          res.memory.allocated(),
          res.memory.reserved(),
          res.memory.fits()};
}

double measured_tokens_per_gpu(const Row& r) {
  return std::stod(r.at("throughput_tokens_per_s")) / std::stod(r.at("num_gpus"));
}

/// The rate (TFLOP/s) at which the row's predicted tokens/s per GPU is the measured one. The step
/// is compute (proportional to 1 / rate) plus exposed communication, piecewise, so secant steps
/// in 1 / rate converge in a few predictions.
double fit_rate(const Row& r) {
  const double step = 1 / measured_tokens_per_gpu(r);  // s per token per GPU
  const auto f = [&](double x) { return 1 / predict_at(r, 1 / x).tokens_per_gpu - step; };
  double x0 = 1.0 / 100, x1 = 1.0 / 400;
  double y0 = f(x0), y1 = f(x1);
  for (int i = 0; i < 20 && std::fabs(y1) > 1e-7 * step; ++i) {
    const double x2 = x1 - y1 * (x1 - x0) / (y1 - y0);
    x0 = x1;
    y0 = y1;
    x1 = x2;
    y1 = f(x1);
  }
  return 1 / x1;
}

using SeriesKey = std::tuple<std::string, std::string, int, int, std::string, std::string>;

/// The clean series of the file: rows with grad_accum 1, grouped by section, model, sequence
/// length, micro-batch, sharding and checkpointing, kept where they span two GPU counts or more;
/// each series' rows by GPU count, rising. In the file's order of sections.
std::vector<std::vector<Row>> clean_series(const std::vector<Row>& rows) {
  std::map<SeriesKey, std::vector<Row>> groups;
  std::vector<SeriesKey> order;
  for (const Row& r : rows) {
    if (r.at("grad_accum") != "1" || r.at("precision") == "amp_fp8") continue;
    const SeriesKey key{r.at("section"),
                        r.at("model"),
                        std::stoi(r.at("seq_len")),
                        std::stoi(r.at("micro_batch")),
                        r.at("sharding_strategy"),
                        r.at("activation_checkpointing")};
    if (!groups.contains(key)) order.push_back(key);
    groups[key].push_back(r);
  }
  std::vector<std::vector<Row>> out;
  for (const SeriesKey& key : order) {
    std::vector<Row> g = groups[key];
    std::sort(g.begin(), g.end(), [](const Row& a, const Row& b) {
      return std::stoi(a.at("num_gpus")) < std::stoi(b.at("num_gpus"));
    });
    if (std::stoi(g.front().at("num_gpus")) < std::stoi(g.back().at("num_gpus"))) out.push_back(g);
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct SectionErrors {
  std::vector<double> abs_errors;  // |error| of each predicted row
  int rows_not_fitting = 0;        // rows the memory check (reserved bytes) says do not fit (all ran)
};

std::string label(const Row& r) {
  return fmt::format("{} seq {} mb {} {}{}", r.at("model"), r.at("seq_len"), r.at("micro_batch"),
                     r.at("sharding_strategy") == "FULL_SHARD" ? "full" : "grad_op",
                     r.at("activation_checkpointing") == "True" ? " ckpt" : "");
}

/// Predicts `rows` at `rate`, printing a markdown table row each; `fitted` is the anchor row's
/// index (or -1 when the anchor is not in `rows`). Returns the predictions.
std::vector<Prediction> predict_rows(const std::vector<Row>& rows, double rate, int fitted,
                                     SectionErrors& e) {
  std::vector<Prediction> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const double measured = measured_tokens_per_gpu(r);
    const Prediction p = predict_at(r, rate);
    const double error = p.tokens_per_gpu / measured - 1;
    fmt::print("| {} | {} | {:.0f} | {:.0f} | {:+.1f}% | {:.1f}% | {:.1f}% | {:.1f} / {:.1f} GB{} |\n",
               label(r), r.at("num_gpus") + (static_cast<int>(i) == fitted ? " (fitted)" : ""), measured,
               p.tokens_per_gpu, 100 * error, std::stod(r.at("mfu_pct")), 100 * p.mfu, p.allocated / 1e9,
               p.reserved / 1e9, p.fits ? "" : " (does not fit)");
    out.push_back(p);
    if (!p.fits) ++e.rows_not_fitting;
    if (static_cast<int>(i) == fitted) continue;
    e.abs_errors.push_back(std::fabs(error));
  }
  return out;
}

void print_header() {
  fmt::print(
      "| series | GPUs | measured tokens/s/GPU | predicted | error | MFU measured | MFU predicted | "
      "allocated / reserved "
      "per GPU "
      "|\n|---|---|---|---|---|---|---|---|\n");
}

void print_summary(const std::string& section, const SectionErrors& e) {
  if (e.abs_errors.empty()) return;
  fmt::print(
      "{}: median |error| {:.1f}%, max {:.1f}% over {} predicted rows; {} rows (with the anchors) predicted "
      "not to fit\n",
      section, 100 * median(e.abs_errors), 100 * *std::max_element(e.abs_errors.begin(), e.abs_errors.end()),
      e.abs_errors.size(), e.rows_not_fitting);
}

TEST(MptFsdpValidation, RatePerSeriesFittedOnItsSmallestGpuCount) {
  const std::string path = testing::shared_table(kFile);
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << "shared data not found at " << path << ": validation skipped";
  const std::vector<Row> rows = read_csv(path);
  ASSERT_GT(rows.size(), 100u);
  const std::vector<std::vector<Row>> series = clean_series(rows);

  std::map<std::string, SectionErrors> by_section;
  std::vector<std::string> sections;
  for (const std::vector<Row>& s : series) {
    const std::string& section = s.front().at("section");
    if (!by_section.contains(section)) sections.push_back(section);
    const double rate = fit_rate(s.front());
    fmt::print("\n{}, {} (fitted on {} GPUs: {:.1f} TFLOP/s per GPU)\n", section, label(s.front()),
               s.front().at("num_gpus"), rate);
    print_header();
    const std::vector<Prediction> predicted = predict_rows(s, rate, 0, by_section[section]);
    // The fitted row reproduces itself.
    EXPECT_NEAR(predicted.front().tokens_per_gpu / measured_tokens_per_gpu(s.front()), 1, 1e-4)
        << label(s.front());
    // At a fixed per-GPU batch, more GPUs never make a GPU's step shorter, apart from the
    // optimizer step, which runs on the GPU's 1/N shard and so shrinks with N (that alone lifts
    // the 13b H100 series' predicted tokens/s per GPU by 1.1% from 8 to 64 GPUs): the compute is
    // the same and the collectives span more GPUs over slower links.
    for (size_t i = 1; i < predicted.size(); ++i) {
      EXPECT_GE(predicted[i].step_without_optimizer, predicted[i - 1].step_without_optimizer * (1 - 1e-9))
          << label(s[i]) << " at " << s[i].at("num_gpus");
    }
  }
  fmt::print("\n");
  for (const std::string& section : sections) print_summary(section, by_section[section]);

  // Every section with a clean series; the A100 80GB and FP8 sections have none (their rows are at
  // 8 GPUs or change the micro-batch with the GPU count).
  ASSERT_EQ(sections.size(), 3u);
  const SectionErrors& large = by_section.at("H100 80GB BF16 (Large Scale, >= 128 GPUs)");
  const SectionErrors& h100 = by_section.at("H100 80GB BF16");
  const SectionErrors& a100 = by_section.at("A100 40GB with 1600 Gbps node-node interconnect (RoCE)");
  ASSERT_EQ(large.abs_errors.size(), 12u);  // six models at 256 and 512 GPUs
  const auto max_of = [](const SectionErrors& e) {
    return *std::max_element(e.abs_errors.begin(), e.abs_errors.end());
  };
  // Regression pin: median and max |error| of tokens/s per GPU over the predicted rows, measured
  // 2026-12-07 on branch mptval (docs/validation.md): H100 large scale 3.2% and 9.3% (12 rows, all
  // optimistic: stepcast hides FSDP's collectives behind compute, while the measured rows lose 2-10%
  // from 128 to 512 GPUs); H100 BF16 1.0% and 3.6% (6 rows); A100 40GB 2.9% and 18.2% (16 rows; the
  // 18.2% is the 1b series, whose 32-GPU anchor runs at 45% MFU against 55% at 64 and 128 GPUs).
  // The bounds sit just above so that a change that moves them is noticed; they are not targets.
  EXPECT_LT(median(large.abs_errors), 0.035);
  EXPECT_LT(max_of(large), 0.10);
  EXPECT_LT(median(h100.abs_errors), 0.012);
  EXPECT_LT(max_of(h100), 0.04);
  EXPECT_LT(median(a100.abs_errors), 0.032);
  EXPECT_LT(max_of(a100), 0.20);
  // Regression pin (same date): every one of these rows ran, and every one's predicted allocated
  // bytes are below the GPU's memory (the largest: H100 1b mb 20, 79.1 GB of 85.9; A100 40GB 350m
  // mb 18, 41.0 GB of 42.9), but the memory check on reserved bytes (allocated / 0.9 + 1.1 GB)
  // puts 0 (H100 large scale), 3 (H100 BF16: 1b mb 20, no checkpointing) and 9 (A100 40GB) of the
  // rows, anchors included, above it: conservative for these runs (docs/validation.md). The bounds
  // notice it growing; not targets.
  EXPECT_LE(large.rows_not_fitting, 0);
  EXPECT_LE(h100.rows_not_fitting, 3);
  EXPECT_LE(a100.rows_not_fitting, 9);
}

TEST(MptFsdpValidation, OneRatePerSectionAcrossModels) {
  const std::string path = testing::shared_table(kFile);
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << "shared data not found at " << path << ": validation skipped";
  const std::vector<std::vector<Row>> series = clean_series(read_csv(path));
  // The anchor of each section: the smallest GPU count of its first series in the file (H100
  // large scale: 70b at 128; H100 BF16: 13b at 8, one node; A100 40GB: 13b at 64).
  std::map<std::string, double> rate;
  std::map<std::string, SectionErrors> by_section;
  std::vector<std::string> sections;
  for (const std::vector<Row>& s : series) {
    const std::string& section = s.front().at("section");
    int fitted = -1;
    if (!rate.contains(section)) {
      sections.push_back(section);
      rate[section] = fit_rate(s.front());
      fitted = 0;
      fmt::print("\n{}: one rate, fitted on {} at {} GPUs: {:.1f} TFLOP/s per GPU\n", section,
                 label(s.front()), s.front().at("num_gpus"), rate[section]);
      print_header();
    }
    predict_rows(s, rate[section], fitted, by_section[section]);
  }
  fmt::print("\n");
  for (const std::string& section : sections) print_summary(section, by_section[section]);
  // Regression pin: median and max |error| with one rate per section, measured 2026-12-07 on
  // branch mptval: H100 large scale 25.5% and 53.5% (17 rows), H100 BF16 1.7% and 8.2% (8 rows),
  // A100 40GB 33.4% and 76.5% (22 rows). The smaller models run their smaller GEMMs at a lower
  // rate than the anchor's (the same effect as Megatron's table 5 in docs/validation.md), which one
  // rate cannot express. Bounds just above, to notice a change; not targets.
  ASSERT_EQ(sections.size(), 3u);
  const std::map<std::string, std::pair<double, double>> pins = {
      {"H100 80GB BF16 (Large Scale, >= 128 GPUs)", {0.27, 0.56}},
      {"H100 80GB BF16", {0.02, 0.09}},
      {"A100 40GB with 1600 Gbps node-node interconnect (RoCE)", {0.35, 0.78}},
  };
  for (const std::string& section : sections) {
    const std::vector<double>& e = by_section[section].abs_errors;
    EXPECT_LT(median(e), pins.at(section).first) << section;
    EXPECT_LT(*std::max_element(e.begin(), e.end()), pins.at(section).second) << section;
  }
}

}  // namespace mpt_fsdp_validation_test
}  // namespace
}  // namespace stepcast::predict
