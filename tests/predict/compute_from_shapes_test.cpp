// workload.compute: shapes end to end: flops (the default) gives exactly today's workloads and
// predictions; a GEMM table's time follows the shapes that tensor parallelism and the micro-batch
// make (closed forms on a table whose rate is a known function of the shape); context
// parallelism shortens the attention core; a shape beyond the table is clamped with a note
// naming it and the table; a roofline says it is one.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "scenario/shape_compute.hpp"
#include "stepcast/cluster/gemm_table.hpp"
#include "stepcast/detail/scheme/costs.hpp"
#include "stepcast/error.hpp"
#include "stepcast/predict/memory.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/scheme/validate.hpp"
#include "stepcast/zoo/decoder_kernels.hpp"

namespace stepcast::predict {
namespace {
namespace compute_from_shapes_test {  // this file's own names: test files are compiled several to a unit

constexpr double kPeak = 989e12;  // FLOP/s

// Every GEMM dimension of this decoder at b, t in {1, 2, 4} is a power of two (h + 2g = 2048,
// 2f = 8192, V = 32768, s = 1024), so every shape lies on a power-of-two grid and its table time is
// the table's function exactly.
constexpr const char* kDecoder =
    "workload:\n"
    "  transformer: {layers: 2, hidden: 1024, ffn_hidden: 4096, heads: 16, kv_heads: 8, vocab: 32768}\n"
    "  seq_len: 1024\n"
    "  precision: bf16\n"
    "  compute: shapes\n"
    "  batch_per_worker: 1\n"
    "cluster:\n"
    "  workers: 1\n"
    "  gpu: {peak_flops: 989TFLOPS, memory_bandwidth: 3.35TB/s}\n";

/// A bf16 table on the power-of-two grid 128 .. 32768 in each dimension, each GEMM at `rate(m, n, k)`.
cluster::GemmTable rate_table(const std::function<double(double, double, double)>& rate,
                              std::string file = "t.csv", int64_t largest = 32768) {
  cluster::GemmTable table{.file = std::move(file), .rows = {}};
  for (int64_t m = 128; m <= largest; m *= 2) {
    for (int64_t n = 128; n <= largest; n *= 2) {
      for (int64_t k = 128; k <= largest; k *= 2) {
        const auto dm = static_cast<double>(m), dn = static_cast<double>(n), dk = static_cast<double>(k);
        table.rows.push_back({m, n, k, cluster::GemmDtype::BF16, 2 * dm * dn * dk / rate(dm, dn, dk), 0});
      }
    }
  }
  cluster::check_gemm_table(table);
  return table;
}

scenario::Scenario decoder(int64_t micro_batch, int tensor, int context = 1) {
  scenario::Scenario s = scenario::parse_scenario(kDecoder, "shapes.yaml");
  s.workload.batch_per_worker = static_cast<int>(micro_batch);
  s.scheme.parallel.tensor = tensor;
  s.scheme.parallel.context = context;
  return s;
}

TEST(ComputeFromShapes, FlopsGivesExactlyTodaysResults) {
  // The default and `workload.compute: flops` said outright: the same workload, op for op, and the
  // same predictions to the bit, on examples with each compute source a decoder can have.
  for (const char* example : {"llama3-8b-fsdp.yaml", "llama3-70b-fsdp-tp.yaml", "gpt3-175b-3d.yaml",
                              "llama2-70b-fsdp.yaml", "bert-large-allreduce.yaml"}) {
    SCOPED_TRACE(example);
    const std::string file = std::string(STEPCAST_SOURCE_DIR) + "/examples/" + example;
    const scenario::Scenario today = scenario::load_scenario(file);
    const scenario::Scenario flops = scenario::load_scenario(file, {"workload.compute=flops"});
    EXPECT_EQ(today.workload.compute, scenario::ComputeMethod::Flops);
    const workload::Workload a = scenario::build_workload(today);
    const workload::Workload b = scenario::build_workload(flops);
    EXPECT_EQ(a, b);
    EXPECT_FALSE(a.facts.timed_per_rank);
    Options options = today.options;
    options.predictor = Predictor::Coarse;
    EXPECT_EQ(predict(a, today.cluster, today.scheme, options).step_time,
              predict(b, flops.cluster, flops.scheme, options).step_time);
  }
}

TEST(ComputeFromShapes, SpeedUpIsAgainstTheWholeModelOnOneGpuWithItsOptimizerStep) {
  // Speed-up compares with one GPU training the whole model alone: with shapes its kernels at
  // t = c = 1 (not one rank's of the layout) and its whole optimizer step at the HBM bandwidth.
  const std::string base = std::string(kDecoder) + "training:\n  parallel: {tensor: 1}\n";
  const scenario::Scenario one = scenario::parse_scenario(base, "shapes.yaml");
  const workload::Workload whole = scenario::build_workload(one);
  scheme::SchemeConfig alone;
  cluster::ClusterSpec single = one.cluster;
  single.workers = 1;
  const double optimizer = scheme::optimizer_step_time(whole, single, alone);
  EXPECT_GT(optimizer, 0);
  EXPECT_NEAR(whole.facts.baseline_step_time, whole.step_time_alone() + optimizer, 1e-15);
  for (const int t : {2, 4}) {
    SCOPED_TRACE(t);
    const scenario::Scenario split = scenario::parse_scenario(
        base, "shapes.yaml",
        {fmt::format("training.parallel.tensor={}", t), fmt::format("cluster.workers={}", t)});
    const workload::Workload w = scenario::build_workload(split);
    EXPECT_TRUE(w.facts.timed_per_rank);
    EXPECT_LT(w.step_time_alone(), whole.step_time_alone());  // one rank's share of the kernels
    EXPECT_DOUBLE_EQ(w.facts.baseline_step_time, whole.facts.baseline_step_time);
  }
  // With micro-batches (a global batch) one GPU alone accumulates the global batch as the job
  // does, its optimizer step spread over its micro-batches: the baseline is one micro-batch's
  // compute and 1 / (global batch / micro-batch) of the optimizer step.
  const scenario::Scenario micro = scenario::parse_scenario(
      base, "shapes.yaml", {"training.parallel.tensor=2", "cluster.workers=4", "workload.global_batch=8"});
  EXPECT_NEAR(scenario::build_workload(micro).facts.baseline_step_time, whole.step_time_alone() + optimizer / 8,
              1e-15);
  // One worker alone: speed-up 1 and efficiency 100% for every compute source, the optimizer step
  // included (it used to be left out of the baseline: 0.94x with no communication at all), with
  // or without a global batch of its one micro-batch (the same job; a global batch left it out).
  for (const std::vector<std::string>& source :
       {std::vector<std::string>{}, {"workload.compute=flops", "workload.achieved_flops=400TFLOPS"},
        {"workload.global_batch=1"}, {"workload.compute=flops", "workload.achieved_flops=400TFLOPS",
                                      "workload.global_batch=1"}}) {
    const scenario::Scenario s = scenario::parse_scenario(kDecoder, "shapes.yaml", source);
    const Result r = predict(scenario::build_workload(s), s.cluster, s.scheme, s.options);
    EXPECT_NEAR(r.speedup, 1, 1e-12);
    EXPECT_NEAR(r.efficiency, 1, 1e-12);
  }
  const scenario::Scenario measured = scenario::parse_scenario(
      "workload:\n  model: llama3-8b\n  step_time: 2s\n  batch_per_worker: 1\n"
      "cluster:\n  workers: 1\n  gpu: {memory_bandwidth: 3.35TB/s}\n",
      "measured.yaml");
  const Result r =
      predict(scenario::build_workload(measured), measured.cluster, measured.scheme, measured.options);
  EXPECT_NEAR(r.step_time, 2, 1e-9);
  EXPECT_NEAR(r.speedup, 1, 1e-9);
}

TEST(ComputeFromShapes, TensorDegreeSplitsFlopsWhileTimeFollowsTheTable) {
  // A table whose rate grows with n: 2 m n k / time = peak x n / (n + 2048). At tensor degree t a
  // block's GEMM FLOPs are 1/t of t = 1's exactly, and each GEMM's time is the table's at its split
  // shape, 2 m n k (n + 2048) / (peak n): more than 1/t of the whole, since narrower GEMMs run slower.
  const cluster::GemmTable table =
      rate_table([](double, double n, double) { return kPeak * n / (n + 2048); });
  const scenario::Scenario s = decoder(2, 1);
  scenario::detail::KernelRates rates = scenario::detail::kernel_rates(s);
  rates.gemm = &table;
  const zoo::ModelSpec model = scenario::model_of(s);
  double whole_flops = 0, whole_time = 0;
  for (int64_t t : {1, 2, 4}) {
    SCOPED_TRACE(t);
    const auto kernels = zoo::decoder_kernels(model, {.micro_batch = 2, .tensor = t});
    double flops = 0, time = 0, closed = 0;
    std::vector<std::string> notes;
    for (size_t l = 1; l + 1 < kernels.size(); ++l) {  // the blocks
      for (const auto* pass : {&kernels[l].forward, &kernels[l].backward}) {
        for (const zoo::Kernel& k : *pass) {
          if (k.kind != zoo::KernelKind::Gemm) continue;
          flops += k.flops;
          time += scenario::detail::kernel_time(k, rates, notes);
          const auto n = static_cast<double>(k.n);
          closed += k.flops * (n + 2048) / (kPeak * n);
        }
      }
    }
    EXPECT_TRUE(notes.empty());
    EXPECT_NEAR(time, closed, 1e-12 * closed);
    if (t == 1) {
      whole_flops = flops;
      whole_time = time;
    } else {
      EXPECT_EQ(flops * static_cast<double>(t), whole_flops);
      EXPECT_GT(time * static_cast<double>(t), whole_time * 1.01);
    }
  }
}

double kernels_time(const std::vector<zoo::Kernel>& kernels, const scenario::detail::KernelRates& rates) {
  std::vector<std::string> notes;
  double total = 0;
  for (const zoo::Kernel& k : kernels) total += scenario::detail::kernel_time(k, rates, notes);
  return total;
}

TEST(ComputeFromShapes, EachOpIsItsLayersKernelsOnOneRank) {
  // At t = 2 every layer's forward op is its forward kernels' time at the split shapes, and its
  // backward op its backward kernels' (no checkpointing: nothing recomputed); the workload says
  // its ops are one rank's, so the stage programs divide them by nothing.
  scenario::Scenario s = decoder(1, 2);
  s.cluster.gemm = rate_table([](double m, double, double) { return kPeak * m / (m + 1024); });
  const workload::Workload w = scenario::build_workload(s);
  EXPECT_TRUE(w.facts.timed_per_rank);
  const auto kernels =
      zoo::decoder_kernels(scenario::model_of(s),
                           {.micro_batch = 1, .tensor = 2, .sequence_parallel = s.scheme.parallel.sequence});
  const scenario::detail::KernelRates rates = scenario::detail::kernel_rates(s);
  const size_t layers = kernels.size();
  ASSERT_EQ(w.ops.size(), 2 * layers);
  for (size_t l = 0; l < layers; ++l) {
    EXPECT_DOUBLE_EQ(w.ops[l].duration, kernels_time(kernels[l].forward, rates)) << l;
    EXPECT_DOUBLE_EQ(w.ops[2 * layers - 1 - l].duration, kernels_time(kernels[l].backward, rates)) << l;
  }
  // The attention layer's shares of its forward: before, core and after add up to it.
  const workload::AttentionShares& shares = w.facts.attention_forward;
  EXPECT_NEAR(shares.before + shares.core + shares.after, 1.0, 1e-12);
  EXPECT_GT(shares.core, 0);
}

/// A mixture of experts timed from shapes on `workers` GPUs of one node with expert parallelism
/// `expert` and routing imbalance `imbalance`: 8 experts of 1024 (top-2), every GEMM dimension a
/// power of two at e in {1, 2, 4}.
scenario::Scenario moe_decoder(int expert, int workers, double imbalance) {
  scenario::Scenario s = scenario::parse_scenario(
      "workload:\n"
      "  transformer: {layers: 2, hidden: 1024, ffn_hidden: 1024, heads: 16, kv_heads: 8, vocab: 32768,\n"
      "                experts: 8, top_k: 2}\n"
      "  seq_len: 1024\n"
      "  precision: bf16\n"
      "  compute: shapes\n"
      "  micro_batch: 1\n"
      "  global_batch: 8\n"
      "cluster:\n"
      "  workers_per_node: 8\n"
      "  gpu: {peak_flops: 989TFLOPS, memory_bandwidth: 3.35TB/s}\n",
      "moe-shapes.yaml");
  s.cluster.workers = workers;
  s.scheme.parallel.expert = expert;
  s.workload.moe_imbalance = imbalance;
  return s;
}

TEST(ComputeFromShapes, ExpertParallelismTimesEachRanksExpertsAndTheBusiestOnes) {
  // A flat GEMM rate and no launch cost: under expert parallelism a rank runs the same routed
  // FLOPs and rows on fewer, larger GEMMs, so each layer takes e = 1's time exactly (balanced). With
  // routing skew every rank of an expert group runs its experts as long as the busiest GPU's,
  // g times their balanced time (the busiest GPU's share), the rest of the layer unchanged: the
  // step's compute grows by (g - 1) x the routed experts' time of each MoE layer's forward and
  // backward, their share of the layer's time measured from its kernels.
  const cluster::GemmTable flat = rate_table([](double, double, double) { return 0.6 * kPeak; });
  auto prepared = [&](int expert, double imbalance) {
    scenario::Scenario s = moe_decoder(expert, 4, imbalance);
    s.cluster.gemm = flat;
    return s;
  };
  auto compute = [&](const scenario::Scenario& s) {
    const workload::Workload w = scenario::build_workload(s);
    scheme::validate(w, s.cluster, s.scheme);
    Options options = s.options;
    options.predictor = Predictor::Fine;
    return predict(w, s.cluster, s.scheme, options).breakdown.compute;
  };
  // Each layer's forward and backward on a rank (the optimizer step, which holds fewer experts'
  // parameters under e > 1, is apart from them).
  const workload::Workload one = scenario::build_workload(prepared(1, 1.0));
  for (int e : {2, 4}) {
    const workload::Workload split = scenario::build_workload(prepared(e, 1.0));
    ASSERT_EQ(split.ops.size(), one.ops.size());
    for (size_t op = 0; op < one.ops.size(); ++op) {
      EXPECT_NEAR(split.ops[op].duration, one.ops[op].duration, 1e-12 * one.ops[op].duration)
          << "e " << e << ", " << one.ops[op].name;
    }
  }

  const scenario::Scenario skewed = prepared(4, 1.6);
  const workload::Workload w = scenario::build_workload(skewed);
  const double forward = w.facts.experts_time_forward, backward = w.facts.experts_time_backward;
  EXPECT_GT(forward, 0);
  EXPECT_LT(forward, 1);
  EXPECT_GT(backward, 0);
  EXPECT_LT(backward, 1);
  const double g = scheme::busiest_expert_gpu_by_block(w, skewed.scheme.parallel).front();
  EXPECT_GT(g, 1);
  double experts = 0;  // the routed experts' balanced time in one micro-batch, every MoE layer
  const size_t layers = w.ops.size() / 2;
  for (size_t l = 0; l < layers; ++l) {
    if (!w.ops[l].name.ends_with(".moe")) continue;
    experts += forward * w.ops[l].duration + backward * w.ops[2 * layers - 1 - l].duration;
  }
  ASSERT_GT(experts, 0);
  const int micro_batches = 8 / 4;
  EXPECT_NEAR(compute(skewed) - compute(prepared(4, 1.0)), (g - 1) * experts * micro_batches,
              1e-9 * compute(skewed));
}

TEST(ComputeFromShapes, SmallerMicroBatchesRunLessEfficientlyWhenTheTableSaysSo) {
  // Rate growing with m (peak x m / (m + 4096)): a micro-batch of 1 multiplies 1024-row GEMMs at
  // a fifth of the peak, one of 4 multiplies 4096-row GEMMs at half of it, so one sequence costs
  // more at b = 1 than a quarter of b = 4.
  const cluster::GemmTable growing =
      rate_table([](double m, double, double) { return kPeak * m / (m + 4096); });
  // With one rate everywhere (no launch cost), every kernel's time is linear in the tokens: b = 4
  // costs exactly 4 x b = 1.
  const cluster::GemmTable flat = rate_table([](double, double, double) { return 0.6 * kPeak; });
  auto step = [](const cluster::GemmTable& table, int64_t b) {
    scenario::Scenario s = decoder(b, 1);
    s.cluster.gemm = table;
    return scenario::build_workload(s).step_time_alone();
  };
  EXPECT_GT(step(growing, 1), 1.2 * step(growing, 4) / 4);
  EXPECT_NEAR(step(flat, 1), step(flat, 4) / 4, 1e-12 * step(flat, 1));
}

TEST(ComputeFromShapes, ContextParallelismShortensTheAttentionCore) {
  // The core's FLOPs are 4 b (s / c) s h / t: at c = 2 half of c = 1, at the same rate.
  const scenario::Scenario s = decoder(1, 1);
  const scenario::detail::KernelRates rates = scenario::detail::kernel_rates(s);
  const zoo::ModelSpec model = scenario::model_of(s);
  auto core = [&](int64_t c) {
    double total = 0;
    std::vector<std::string> notes;
    // Held: a range-for over a member of a temporary's element would outlive the temporary.
    const auto blocks = zoo::decoder_kernels(model, {.micro_batch = 1, .context = c});
    for (const zoo::Kernel& k : blocks[1].forward) {
      if (k.kind == zoo::KernelKind::Attention) total += scenario::detail::kernel_time(k, rates, notes);
    }
    return total;
  };
  EXPECT_NEAR(core(2), core(1) / 2, 1e-15);
  EXPECT_NEAR(core(1), 4.0 * 1024 * 1024 * 1024 / kPeak, 1e-18);  // at the peak: no attention_flops given
}

TEST(ComputeFromShapes, ShapeOutsideTheTableIsClampedWithANoteNamingIt) {
  // A table up to 1024 in each dimension; b = 4 multiplies 4096 tokens: clamped, and said.
  scenario::Scenario s = decoder(4, 1);
  s.cluster.gemm = rate_table([](double, double, double) { return 0.5 * kPeak; }, "small-gemm.csv", 1024);
  const workload::Workload w = scenario::build_workload(s);
  ASSERT_FALSE(w.notes.empty());
  bool named = false;
  for (const std::string& note : w.notes) {
    named =
        named || (note.find("m=4096 n=2048 k=1024 bf16") != std::string::npos &&
                  note.find("small-gemm.csv") != std::string::npos && note.find("qkv") != std::string::npos);
  }
  EXPECT_TRUE(named) << w.notes.front();
  // Inside the table nothing is said.
  s.cluster.gemm = rate_table([](double, double, double) { return 0.5 * kPeak; });
  EXPECT_TRUE(scenario::build_workload(s).notes.empty());
}

TEST(ComputeFromShapes, RooflineSaysItIsNotAMeasurement) {
  const scenario::Scenario s = scenario::parse_scenario(kDecoder, "shapes.yaml");
  EXPECT_EQ(s.workload.compute_source, scenario::ComputeSource::Shapes);
  const std::string text = scenario::compute_source_text(s);
  EXPECT_NE(text.find("roofline"), std::string::npos) << text;
  EXPECT_NE(text.find("not a measurement"), std::string::npos) << text;
  // The step is the sum of its ops, as for every other compute source.
  EXPECT_DOUBLE_EQ(s.workload.step_time, scenario::build_workload(s).step_time_alone());
}

// From FLOPs the compute time is batch_per_worker samples of the whole model on one GPU: the
// step of plain data parallelism, but only one micro-batch of a parallel layout (whose step runs
// global_batch / (d x micro-batch) of them), and the compute line must say which.
TEST(ComputeFromShapes, FlopsComputeLineSaysStepOrMicroBatch) {
  std::string flops = kDecoder;
  flops.replace(flops.find("compute: shapes"), std::string("compute: shapes").size(),
                "compute: flops\n  compute_efficiency: 0.5");
  const scenario::Scenario plain = scenario::parse_scenario(flops, "flops.yaml");
  std::string text = scenario::compute_source_text(plain);
  EXPECT_NE(text.find("per step of one worker"), std::string::npos) << text;
  EXPECT_EQ(text.find("micro-batch"), std::string::npos) << text;

  flops.replace(flops.find("batch_per_worker: 1"), std::string("batch_per_worker: 1").size(),
                "micro_batch: 2");
  const scenario::Scenario layout = scenario::parse_scenario(
      flops, "flops.yaml", {"cluster.workers=8", "training.parallel.tensor=2", "workload.global_batch=16"});
  text = scenario::compute_source_text(layout);
  EXPECT_NE(text.find("for one micro-batch (2 samples) on one GPU holding the whole model"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("per step"), std::string::npos) << text;
}

TEST(ComputeFromShapes, Fp8RunsTheGemmsAtTheFp8PeakAndNothingElse) {
  // Transformer Engine's recipe on the roofline: each compute-bound GEMM at 2 m n k / fp8 peak,
  // its inputs 1 byte an element; attention and the memory-bound kernels as in bf16.
  constexpr double kFp8Peak = 1979e12;
  const scenario::Scenario bf16 = scenario::parse_scenario(kDecoder, "shapes.yaml");
  const scenario::Scenario fp8 = scenario::parse_scenario(
      kDecoder, "shapes.yaml", {"workload.precision=fp8", "cluster.gpu.peak_flops_fp8=1979TFLOPS"});
  const scenario::detail::KernelRates a = scenario::detail::kernel_rates(bf16);
  const scenario::detail::KernelRates b = scenario::detail::kernel_rates(fp8);
  EXPECT_EQ(b.dtype, cluster::GemmDtype::FP8);
  EXPECT_EQ(b.gemm_element_bytes, 1);
  EXPECT_EQ(b.element_bytes, 2);
  const zoo::ModelSpec model = scenario::model_of(bf16);
  const auto blocks = zoo::decoder_kernels(model, {.micro_batch = 4});
  std::vector<std::string> notes;
  int gemms = 0;
  std::vector<zoo::Kernel> forward;  // every layer's: attention, MLP, head
  for (const zoo::LayerKernels& layer : blocks)
    forward.insert(forward.end(), layer.forward.begin(), layer.forward.end());
  for (const zoo::Kernel& k : forward) {
    const double t8 = scenario::detail::kernel_time(k, b, notes);
    const double t16 = scenario::detail::kernel_time(k, a, notes);
    switch (k.kind) {
      case zoo::KernelKind::Gemm: {
        const auto m = static_cast<double>(k.m), n = static_cast<double>(k.n), kk = static_cast<double>(k.k);
        const double compute = 2 * m * n * kk / kFp8Peak, memory = (m * kk + kk * n + m * n) / 3.35e12;
        EXPECT_DOUBLE_EQ(t8, static_cast<double>(k.count) * std::max(compute, memory)) << k.name;
        EXPECT_LT(t8, t16) << k.name;
        ++gemms;
        break;
      }
      case zoo::KernelKind::Attention:
      case zoo::KernelKind::MemoryBound:
        EXPECT_EQ(t8, t16) << k.name;
        break;
    }
  }
  EXPECT_GT(gemms, 3);
  EXPECT_NE(scenario::compute_source_text(fp8).find("in fp8"), std::string::npos);
}

TEST(ComputeFromShapes, TheUnfusedAttentionCoreIsBatchedGemmsOnTheTrainingPrecisionsRoofline) {
  // Without flash attention the core's two products are batched GEMMs: each of the batch on the
  // roofline of the training precision (bf16 inputs even in fp8: both operands are activations,
  // which Transformer Engine's recipe leaves alone), one kernel overhead per launch.
  constexpr double kBf16Peak = 989e12, kBandwidth = 3.35e12, kOverhead = 5e-6;
  const std::vector<std::string> unfused{"workload.flash_attention=false", "cluster.gpu.kernel_overhead=5us"};
  std::vector<std::string> in_fp8 = unfused;
  in_fp8.insert(in_fp8.end(), {"workload.precision=fp8", "cluster.gpu.peak_flops_fp8=1979TFLOPS"});
  for (const auto& overrides : {unfused, in_fp8}) {
    const scenario::Scenario s = scenario::parse_scenario(kDecoder, "shapes.yaml", overrides);
    const scenario::detail::KernelRates rates = scenario::detail::kernel_rates(s);
    const auto layers =
        zoo::decoder_kernels(scenario::model_of(s), {.micro_batch = 4, .flash_attention = false});
    std::vector<std::string> notes;
    int batched = 0;
    for (const zoo::Kernel& k : layers[1].forward) {
      if (k.batch == 1) continue;
      ++batched;
      EXPECT_TRUE(k.activations_only);
      const auto m = static_cast<double>(k.m), n = static_cast<double>(k.n), kk = static_cast<double>(k.k);
      const double one = std::max(2 * m * n * kk / kBf16Peak, 2 * (m * kk + kk * n + m * n) / kBandwidth);
      EXPECT_DOUBLE_EQ(scenario::detail::kernel_time(k, rates, notes),
                       static_cast<double>(k.batch) * one + kOverhead)
          << k.name;
    }
    EXPECT_EQ(batched, 2);  // scores and context
  }
  // fp8 without flash attention and a table without bf16 rows: an error naming the table's key.
  const std::filesystem::path table = std::filesystem::temp_directory_path() / "stepcast-fp8-only-gemm.csv";
  std::ofstream(table) << "m,n,k,dtype,time_us\n1024,1024,1024,fp8,1\n";
  try {
    (void)scenario::parse_scenario(
        kDecoder, "fp8.yaml",
        {"workload.precision=fp8", "workload.flash_attention=false", "cluster.gpu.gemm=" + table.string()});
    FAIL() << "fp8 without flash attention and a table without bf16 rows";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().key, "cluster.gpu.gemm") << e.what();
    EXPECT_NE(e.message().find("no bf16 rows"), std::string::npos) << e.what();
  }
  std::filesystem::remove(table);
}

TEST(ComputeFromShapes, Fp8KeepsAnFp8CopyOfEachWeightAndSendsBf16) {
  // One byte more per parameter than bf16 (the fp8 weight copy); gradients, the optimizer and the
  // tensors on the wire as in bf16.
  const scheme::SchemeConfig ddp{};
  const Memory m16 = model_state_memory(1e9, workload::Precision::BF16, ddp, 8, 8);
  const Memory m8 = model_state_memory(1e9, workload::Precision::FP8, ddp, 8, 8);
  EXPECT_DOUBLE_EQ(m8.parameters - m16.parameters, 1e9);
  EXPECT_DOUBLE_EQ(m8.gradients, m16.gradients);
  EXPECT_DOUBLE_EQ(m8.optimizer, m16.optimizer);
  EXPECT_EQ(workload::bytes_per_element(workload::Precision::FP8), 2);
}

TEST(ComputeFromShapes, Fp8NeedsAnFp8RateAndNoShareOfTheBf16Peak) {
  try {
    (void)scenario::parse_scenario(kDecoder, "shapes.yaml", {"workload.precision=fp8"});
    FAIL() << "fp8 without an fp8 rate";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().key, "workload.precision");
    EXPECT_NE(e.message().find("cluster.gpu.peak_flops_fp8"), std::string::npos) << e.what();
  }
  try {
    (void)scenario::parse_scenario(
        kDecoder, "shapes.yaml",
        {"workload.compute=flops", "workload.precision=fp8", "workload.compute_efficiency=0.4"});
    FAIL() << "fp8 with a share of the peak";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().key, "workload.compute_efficiency");
  }
  // A bare rate could be FLOP/s or TFLOP/s.
  EXPECT_THROW((void)scenario::parse_scenario(kDecoder, "shapes.yaml", {"cluster.gpu.peak_flops_fp8=1979"}),
               Error);
}

}  // namespace compute_from_shapes_test
}  // namespace
}  // namespace stepcast::predict
