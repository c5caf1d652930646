// Host-bound profiles and replay marking: the GPU-busy share of one worker's step
// (Workload::busy_alone), "host-bound" when the GPUs idle most of it (kind Host), and each
// profiled prediction marked replay or extrapolated, with workload.replay: never extrapolating
// at the trace's own size too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace stepcast::predict {
namespace {
namespace host_bound_test {  // this file's own names: test files are compiled several to a unit

namespace fs = std::filesystem;

TEST(BusyAlone, UnionOfTheMatchingLanesOpsInTheAloneSchedule) {
  workload::Workload w;
  w.lanes = {"cpu 1:1", "gpu 0 stream 7", "gpu 0 stream 9"};
  // cpu 0..4, then two kernels launched by it on two streams: [4, 6) and [5, 8) -> GPU busy 4 s
  // of an 8 s step; host alone 4 s.
  w.ops.push_back({.name = "host", .kind = workload::OpKind::Other, .duration = 4, .lane = 0, .deps = {}});
  w.ops.push_back({.name = "k1", .kind = workload::OpKind::Other, .duration = 2, .lane = 1, .deps = {0}});
  w.ops.push_back({.name = "wait", .kind = workload::OpKind::Other, .duration = 1, .lane = 0, .deps = {0}});
  w.ops.push_back({.name = "k2", .kind = workload::OpKind::Other, .duration = 3, .lane = 2, .deps = {2}});
  EXPECT_DOUBLE_EQ(w.step_time_alone(), 8);
  EXPECT_DOUBLE_EQ(w.busy_alone("gpu"), 4);
  EXPECT_DOUBLE_EQ(w.busy_alone("cpu"), 5);
  EXPECT_DOUBLE_EQ(w.busy_alone("none"), 0);
}

const fs::path kTrace = fs::path(STEPCAST_SHARED_DATA) / "traces" / "resnet50_ddp_2xA100_rank0_nccl_data.json.gz";

class SharedTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kTrace)) GTEST_SKIP() << "skipped: " << kTrace << " is absent (../shared/data is not part of a clone)";
    dir_ = fs::temp_directory_path() / ("stepcast_host_bound_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    scenario_ = (dir_ / "a100.yaml").string();
    std::ofstream(scenario_) << "workload:\n  profile: " << kTrace.string()
                             << "\n  step_samples: representative\ncluster:\n  workers: 2\n  nic_bandwidth: 100Gbps\n"
                                "training:\n  scheme: allreduce\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result at(int workers, std::vector<std::string> overrides = {}) {
    overrides.push_back("cluster.workers=" + std::to_string(workers));
    const scenario::Scenario s = scenario::load_scenario(scenario_, overrides);
    return predict(scenario::build_workload(s), s.cluster, s.scheme, s.options);
  }

  fs::path dir_;
  std::string scenario_;
};

TEST_F(SharedTrace, TheCpuBoundA100TraceIsHostBoundAtEveryScale) {
  // The shared data's own summary: a 222 ms step with about 38 ms of GPU compute
  // (traces/step_summary.csv), so the GPUs idle most of the step.
  for (int n : {2, 4, 64}) {
    const Result r = at(n);
    EXPECT_EQ(r.bottleneck_kind, BottleneckKind::Host) << n << ": " << r.bottleneck;
    EXPECT_LT(r.gpu_busy_fraction, 0.5) << n;
    EXPECT_NE(r.bottleneck.find("does not shrink with more workers"), std::string::npos);
  }
}

TEST_F(SharedTrace, ReplayedAtItsOwnSizeExtrapolatedElsewhereOrWhenAsked) {
  EXPECT_EQ(at(2).mode, "replay");
  EXPECT_EQ(at(3).mode, "extrapolated");
  EXPECT_EQ(at(2, {"workload.replay=never"}).mode, "extrapolated");
  // Extrapolated at every size, the curve is continuous through the traced size: two workers
  // are no slower per step than three.
  EXPECT_LE(at(2, {"workload.replay=never"}).step_time, at(3).step_time * (1 + 1e-9));
}

}  // namespace host_bound_test
}  // namespace
}  // namespace stepcast::predict

namespace stepcast::predict {
namespace {
namespace host_bound_test {  // this file's own names: test files are compiled several to a unit

const std::string kPsExample = std::string(STEPCAST_SOURCE_DIR) + "/examples/resnet50-ps.yaml";

Result ps_at(int workers, const std::vector<std::string>& more) {
  std::vector<std::string> overrides = more;
  overrides.push_back("cluster.workers=" + std::to_string(workers));
  const scenario::Scenario s = scenario::load_scenario(kPsExample, overrides);
  return predict(scenario::build_workload(s), s.cluster, s.scheme, s.options);
}

TEST(MeasuredWith, AMeasurementThatIncludedThePsGivesOneWorkerSpeedUpOne) {
  for (const char* predictor : {"fine", "coarse"}) {
    const std::vector<std::string> with{"workload.measured_with=ps", std::string("predictor=") + predictor};
    const Result one = ps_at(1, with);
    EXPECT_NEAR(one.speedup, 1.0, 1e-6) << predictor;
    // Taken as compute alone, the same measurement adds a round trip on top: slower than measured.
    const Result alone = ps_at(1, {std::string("predictor=") + predictor});
    EXPECT_LT(alone.speedup, 0.99) << predictor;
    // Less compute per step: at scale the prediction is faster, and its compute share smaller.
    EXPECT_LT(ps_at(16, with).step_time, ps_at(16, {std::string("predictor=") + predictor}).step_time) << predictor;
  }
}

}  // namespace host_bound_test
}  // namespace
}  // namespace stepcast::predict
