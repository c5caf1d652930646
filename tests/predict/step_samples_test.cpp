// Predictions of a workload with per-step samples (workload::Op::samples): every sample step
// predicted on its own, the Result describing the run of those steps one after another, and the
// spread of the predicted step time. Hand-sized workloads where the answer is known.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::predict {
namespace {
namespace step_samples_test {  // this file's own names: test files are compiled several to a unit

using workload::Workload;

const Options kFine{.predictor = Predictor::Fine, .warmup_steps = 1, .measure_steps = 3};
const Options kCoarse{.predictor = Predictor::Coarse, .warmup_steps = 1, .measure_steps = 3};

/// ResNet-50 at 0.2 s per step, measured over four steps that took 1.0, 0.9, 1.2 and 1.1 times
/// the first (every op scaled alike); the first is the representative (its samples are the
/// durations).
const std::vector<double> kFactors{1.0, 0.9, 1.2, 1.1};

Workload sampled_resnet() {
  Workload w = zoo::to_workload(zoo::get_model("resnet50"), {.batch_per_worker = 32, .step_time = 0.2});
  for (auto& op : w.ops) {
    for (double f : kFactors) op.samples.push_back(op.duration * f);
  }
  return w;
}

cluster::ClusterSpec workers(int n) {
  cluster::ClusterSpec spec;
  spec.workers = n;
  spec.nic_bw = 1.25e9;  // 10 Gbps
  return spec;
}

TEST(StepSamples, OneWorkerSpreadIsTheMeasuredSpread) {
  // One worker, one lane, nothing to send: each sample step takes the sum of its ops, 0.2 s x
  // factor. Sorted factors 0.9, 1.0, 1.1, 1.2: p50 halfway between 1.0 and 1.1; p95 at 0.95 x 3 =
  // 2.85, 1.1 + 0.85 x (1.2 - 1.1) = 1.185.
  const Workload w = sampled_resnet();
  ASSERT_EQ(workload::validate(w), "");
  for (const Options& options : {kFine, kCoarse}) {
    SCOPED_TRACE(to_string(options.predictor));
    const Result r = predict(w, workers(1), {}, options);
    const StepSpread& s = r.step_samples;
    ASSERT_EQ(s.samples, 4u);
    ASSERT_EQ(s.step_times.size(), 4u);
    for (size_t k = 0; k < 4; ++k) EXPECT_NEAR(s.step_times[k], 0.2 * kFactors[k], 1e-9) << k;
    EXPECT_NEAR(s.mean, 0.21, 1e-9);
    EXPECT_NEAR(s.p50, 0.21, 1e-9);
    EXPECT_NEAR(s.p95, 0.237, 1e-9);
    EXPECT_NEAR(s.min, 0.18, 1e-9);
    EXPECT_NEAR(s.max, 0.24, 1e-9);
    // The step time is the mean over the measured steps, and the rest agrees with it: 32 samples
    // per 0.21 s, as fast as one worker alone running the same steps.
    EXPECT_EQ(r.step_time, s.mean);
    EXPECT_NEAR(r.throughput, 32 / 0.21, 1e-6);
    EXPECT_NEAR(r.speedup, 1.0, 1e-9);
    EXPECT_NEAR(r.efficiency, 1.0, 1e-9);
    EXPECT_NEAR(r.breakdown.compute + r.breakdown.communication_exposed + r.breakdown.wait, r.step_time,
                1e-9);
  }
}

TEST(StepSamples, EachSampleIsPredictedAsThatStepAlone) {
  // Eight workers on 10 Gbps ring all-reduce: communication matters, and the sample steps are
  // predicted exactly as their own workloads are.
  const Workload w = sampled_resnet();
  Options options = kFine;
  options.record_trace = true;
  // Only the traced step must run on the full engine; the others would take the fast path,
  // equal to 1e-9 (tests/scheme/fast_path_test.cpp) but not to the last bit compared here.
  options.fast_paths = false;
  const Result r = predict(w, workers(8), {}, options);
  ASSERT_EQ(r.step_samples.samples, 4u);
  std::vector<Result> alone;
  double seconds_per_sample = 0;
  uint64_t events = 0;
  double compute = 0;
  for (size_t k = 0; k < 4; ++k) {
    alone.push_back(predict(workload::with_sample(w, k), workers(8), {}, options));
    EXPECT_EQ(r.step_samples.step_times[k], alone[k].step_time) << k;
    seconds_per_sample += 1 / alone[k].throughput;
    events += alone[k].events;
    compute += alone[k].breakdown.compute / 4;
  }
  // Slower compute, slower step.
  EXPECT_LT(alone[1].step_time, alone[0].step_time);
  EXPECT_GT(alone[2].step_time, alone[3].step_time);
  EXPECT_GT(r.bytes_sent, 0);
  EXPECT_NEAR(r.step_time,
              std::accumulate(r.step_samples.step_times.begin(), r.step_samples.step_times.end(), 0.0) / 4,
              1e-12);
  EXPECT_NEAR(r.throughput, 4 / seconds_per_sample, 1e-9 * r.throughput);
  EXPECT_NEAR(r.breakdown.compute, compute, 1e-12);
  EXPECT_EQ(r.events, events);  // the cost: one simulation per sample
  // The trace is the representative step's (sample 0 here).
  EXPECT_FALSE(r.trace.spans.empty());
  EXPECT_EQ(r.trace, alone[0].trace);
  EXPECT_FALSE(r.bottleneck.empty());
}

TEST(StepSamples, NoSamplesNoSpread) {
  Workload w = sampled_resnet();
  for (auto& op : w.ops) op.samples.clear();
  for (const Options& options : {kFine, kCoarse}) {
    const Result r = predict(w, workers(4), {}, options);
    EXPECT_EQ(r.step_samples, StepSpread{});
    // The workload as given: its durations are sample 0's.
    EXPECT_EQ(r.step_time,
              predict(workload::with_sample(sampled_resnet(), 0), workers(4), {}, options).step_time);
  }
}

}  // namespace step_samples_test
}  // namespace
}  // namespace stepcast::predict
