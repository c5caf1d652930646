// The Workload IR's queries and transforms: step time alone on several lanes, DDP bucketing,
// validation.
#include "stepcast/workload/workload.hpp"

#include <gtest/gtest.h>

namespace stepcast::workload {
namespace {

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

}  // namespace
}  // namespace stepcast::workload
