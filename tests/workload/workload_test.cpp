// The Workload IR's queries and transforms: step time alone on several lanes, DDP bucketing,
// validation, per-step samples.
#include "stepcast/workload/workload.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace stepcast::workload {
namespace {
namespace workload_test {  // this file's own names: test files are compiled several to a unit

Workload two_lanes() {
  // cpu: a (1 s) then b (1 s); gpu: k (3 s) after a. k overlaps b: the step takes 1 + 3 = 4 s,
  // not the 5 s sum.
  Workload w;
  w.lanes = {"cpu", "gpu"};
  w.ops = {{"a", OpKind::Other, 1.0, 0, -1, {}},
           {"b", OpKind::Other, 1.0, 0, -1, {0}},
           {"k", OpKind::Forward, 3.0, 1, -1, {0}}};
  return w;
}

TEST(Workload, StepTimeAloneOverlapsLanes) {
  const Workload w = two_lanes();
  EXPECT_DOUBLE_EQ(w.compute_time(), 5.0);
  EXPECT_DOUBLE_EQ(w.step_time_alone(), 4.0);
  EXPECT_EQ(validate(w), "");
}

TEST(Workload, StepTimeAloneOnOneLaneIsTheSum) {
  Workload w;
  w.ops = {{"f", OpKind::Forward, 0.25, 0, 0, {}}, {"g", OpKind::Backward, 0.5, 0, 0, {}}};
  EXPECT_DOUBLE_EQ(w.step_time_alone(), 0.75);
}

TEST(Workload, BucketsFollowGradientProductionOrder) {
  // Three tensors produced by ops 2, 1, 0 (a backward pass): buckets of >= 6 bytes in that order.
  Workload w;
  w.ops = {{"b0", OpKind::Backward, 1, 0, 0, {}},
           {"b1", OpKind::Backward, 1, 0, 1, {}},
           {"b2", OpKind::Backward, 1, 0, 2, {}}};
  w.tensors = {{"t0", 4, 2, {}}, {"t1", 4, 1, {}}, {"t2", 4, 0, {}}};
  const std::vector<Bucket> buckets = make_buckets(w, 6);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].tensors, (std::vector<int>{2, 1}));
  EXPECT_DOUBLE_EQ(buckets[0].bytes, 8);
  EXPECT_EQ(buckets[1].tensors, (std::vector<int>{0}));
  EXPECT_EQ(make_buckets(w, 0).size(), 3u);  // one bucket per gradient
}

TEST(Workload, ValidateNamesTheBadOp) {
  Workload w = two_lanes();
  w.ops[1].deps = {2};  // a dependency on a later op
  EXPECT_NE(validate(w).find("'b'"), std::string::npos);
  w = two_lanes();
  w.ops[2].duration = -1;
  EXPECT_NE(validate(w).find("'k'"), std::string::npos);
}

/// two_lanes() measured over three steps: k took 3, 2 and 4 s; a and b the same each time.
Workload two_lanes_sampled() {
  Workload w = two_lanes();
  w.ops[0].samples = {1.0, 1.0, 1.0};
  w.ops[1].samples = {1.0, 1.0, 1.0};
  w.ops[2].samples = {3.0, 2.0, 4.0};
  return w;
}

TEST(Workload, SamplesAreCountedAndValid) {
  EXPECT_EQ(two_lanes().num_samples(), 0u);
  // Named, not a temporary: GCC 12 at -O2 warns -Wmaybe-uninitialized (a false positive) on the
  // destruction of a temporary Workload{}'s nested strings inside EXPECT_EQ.
  const Workload empty;
  EXPECT_EQ(empty.num_samples(), 0u);
  const Workload w = two_lanes_sampled();
  EXPECT_EQ(w.num_samples(), 3u);
  EXPECT_EQ(validate(w), "");
  // Samples take part in equality: a workload measured differently is another workload.
  Workload other = w;
  other.ops[2].samples[1] = 2.5;
  EXPECT_NE(other, w);
}

TEST(Workload, WithSampleIsThatStepAlone) {
  const Workload w = two_lanes_sampled();
  // a (1 s) then k (2 s) after a: 3 s; with k at 4 s: 5 s.
  const Workload step1 = with_sample(w, 1);
  EXPECT_DOUBLE_EQ(step1.ops[2].duration, 2.0);
  EXPECT_DOUBLE_EQ(step1.step_time_alone(), 3.0);
  EXPECT_DOUBLE_EQ(with_sample(w, 2).step_time_alone(), 5.0);
  // One step: no samples left, everything else unchanged.
  EXPECT_EQ(step1.num_samples(), 0u);
  for (const Op& op : step1.ops) EXPECT_TRUE(op.samples.empty()) << op.name;
  Workload expected = two_lanes();
  expected.ops[2].duration = 2.0;
  EXPECT_EQ(step1, expected);
  // The representative step is sample 0 here: its durations are the op durations.
  EXPECT_EQ(with_sample(w, 0), two_lanes());
}

TEST(Workload, StepVariationIsThePopulationSpreadOfTheSampleSteps) {
  const Workload w = two_lanes_sampled();
  std::vector<double> t;
  for (std::size_t k = 0; k < 3; ++k) t.push_back(with_sample(w, k).step_time_alone());
  const double mean = (t[0] + t[1] + t[2]) / 3;
  const double sd = std::sqrt(
      ((t[0] - mean) * (t[0] - mean) + (t[1] - mean) * (t[1] - mean) + (t[2] - mean) * (t[2] - mean)) / 3);
  EXPECT_NEAR(step_variation(w), sd / mean, 1e-15);
  EXPECT_GT(step_variation(w), 0);
  EXPECT_EQ(step_variation(two_lanes()), 0);  // one step: no variation to measure
}

TEST(Workload, WithSampleOutOfRangeIsAnError) {
  // No samples: there is no step k (returning the workload unchanged would hide the mistake).
  EXPECT_THROW((void)with_sample(two_lanes(), 0), std::out_of_range);
  EXPECT_THROW((void)with_sample(two_lanes_sampled(), 3), std::out_of_range);
  Workload ragged = two_lanes_sampled();
  ragged.ops[1].samples.pop_back();
  EXPECT_THROW((void)with_sample(ragged, 2), std::out_of_range);
}

TEST(Workload, ValidateChecksSamples) {
  Workload w = two_lanes_sampled();
  w.ops[1].samples.pop_back();  // 2 samples where the others have 3
  EXPECT_NE(validate(w).find("'b' has 2 per-step samples"), std::string::npos) << validate(w);
  w = two_lanes_sampled();
  w.ops[2].samples.clear();  // some ops with samples, some without
  EXPECT_NE(validate(w).find("'k'"), std::string::npos) << validate(w);
  w = two_lanes_sampled();
  w.ops[0].samples = {};  // the first op decides the count: the others then disagree
  EXPECT_NE(validate(w), "");
  w = two_lanes_sampled();
  w.ops[2].samples[1] = -0.5;
  EXPECT_NE(validate(w).find("'k' has a negative or non-finite per-step sample"), std::string::npos)
      << validate(w);
  w.ops[2].samples[1] = std::nan("");
  EXPECT_NE(validate(w).find("'k'"), std::string::npos) << validate(w);
  w.ops[2].samples[1] = INFINITY;
  EXPECT_NE(validate(w).find("'k'"), std::string::npos) << validate(w);
  w.ops[2].samples[1] = 0;  // an op that took no time in one step is fine
  EXPECT_EQ(validate(w), "");
}

}  // namespace workload_test
}  // namespace
}  // namespace stepcast::workload
