// Replay: a Kineto trace converted to the Workload IR (profile/kineto_workload.hpp) and run by
// the fine predictor at one worker (no network: collectives keep their measured durations)
// reproduces the measured mean step time of the steady steps within 5%. Needs the shared traces;
// skipped, saying so, when they are absent (CI has them). Small generated traces check the
// conversion rules without real data.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/profile/kineto_workload.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/workload/workload.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace {

namespace fs = std::filesystem;
using stepcast::profile::KinetoWorkload;

const fs::path kTraces = fs::path(STEPCAST_SHARED_DATA) / "traces";

#define SKIP_WITHOUT_SHARED_DATA()                                                  \
  if (!fs::is_directory(kTraces)) {                                                 \
    GTEST_SKIP() << "skipped: shared trace data not found at " << kTraces.string()  \
                 << " (it lives next to the project as ../shared/data; CI has it)"; \
  }

double replay_step_time(const stepcast::workload::Workload& w) {
  stepcast::scheme::SchemeConfig scheme;  // all-reduce; at one worker nothing is sent
  stepcast::predict::Options options;
  options.warmup_steps = 1;
  options.measure_steps = 3;
  stepcast::cluster::ClusterSpec one;
  one.workers = 1;
  return stepcast::predict::predict_fine(w, one, scheme, options).step_time;
}

void check_replay(const std::string& file) {
  const KinetoWorkload k = stepcast::profile::convert_kineto_file((kTraces / file).string());
  ASSERT_EQ(stepcast::workload::validate(k.workload), "");
  const auto& stats = k.summary.step_time;
  const double predicted = replay_step_time(k.workload);
  const double error = (predicted - stats.mean) / stats.mean;
  const std::string report = fmt::format(
      "{}: {} steady steps, measured mean {:.3f} ms (min {:.3f}, max {:.3f}, spread {:.1f}%), "
      "representative {} ({:.3f} ms, {} ops on {} lanes), replay {:.3f} ms, error {:+.2f}%",
      file, stats.count, stats.mean * 1e3, stats.min * 1e3, stats.max * 1e3,
      100 * (stats.max - stats.min) / stats.mean, k.step, k.step_duration * 1e3, k.workload.ops.size(),
      k.workload.lanes.size(), predicted * 1e3, 100 * error);
  SCOPED_TRACE(report);
  std::cout << report << '\n';
  for (const auto& s : k.summary.steps) {
    if (!s.steady) std::cout << "  not steady: " << s.name << ": " << s.note << '\n';
  }
  EXPECT_LT(std::abs(error), 0.05);
}

TEST(KinetoReplay, ResNet50Ddp2xA100WithinFivePercent) {
  SKIP_WITHOUT_SHARED_DATA();
  check_replay("resnet50_ddp_2xA100_rank0_nccl_data.json.gz");
}

TEST(KinetoReplay, ResNet50Ddp1xV100WithinFivePercent) {
  SKIP_WITHOUT_SHARED_DATA();
  check_replay("resnet50_ddp_1xV100_worldsize1_rank0.json.gz");
}

// Extrapolation: a one-worker trace without NCCL kernels, gradients sized by the zoo model named
// next to it, predicting 8 workers on 25 Gbps; the same scenario at one worker is the replay.
class ProfiledScenario : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::is_directory(kTraces)) {
      GTEST_SKIP() << "skipped: shared trace data not found at " << kTraces.string()
                   << " (it lives next to the project as ../shared/data; CI has it)";
    }
    dir_ = fs::temp_directory_path() /
           fmt::format("stepcast_replay_{}", ::testing::UnitTest::GetInstance()->random_seed());
    fs::create_directories(dir_);
    // A relative workload.profile resolves against the scenario file's directory.
    fs::remove(dir_ / "trace.json.gz");
    fs::create_symlink(kTraces / "resnet50_ddp_1xV100_worldsize1_rank0.json.gz", dir_ / "trace.json.gz");
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  fs::path write(const std::string& text) const {
    const fs::path path = dir_ / "job.yaml";
    std::ofstream(path) << text;
    return path;
  }
  fs::path dir_;
};

constexpr const char* kScenario = R"(workload:
  profile: trace.json.gz
  model: resnet50
  batch_per_worker: 32
cluster:
  workers: 8
  nic_bandwidth: 25Gbps
training:
  scheme: allreduce
)";

TEST_F(ProfiledScenario, OneWorkerTraceExtrapolatesToEightWorkers) {
  using namespace stepcast;
  const fs::path path = write(kScenario);
  scenario::Scenario s = scenario::load_scenario(path.string());
  EXPECT_EQ(s.workload.profile, (dir_ / "trace.json.gz").string());
  s.options.warmup_steps = 1;
  s.options.measure_steps = 3;
  const workload::Workload eight = scenario::build_workload(s);
  ASSERT_EQ(workload::validate(eight), "");
  EXPECT_EQ(eight.tensors.size(), zoo::get_model("resnet50").num_tensors());
  EXPECT_NEAR(eight.parameter_bytes(), 4.0 * static_cast<double>(zoo::get_model("resnet50").num_parameters()),
              1);
  const predict::Result r8 = predict::predict(eight, s.cluster, s.scheme, s.options);

  scenario::Scenario one = scenario::load_scenario(path.string(), {"cluster.workers=1"});
  one.options = s.options;
  const workload::Workload w1 = scenario::build_workload(one);
  const predict::Result r1 = predict::predict(w1, one.cluster, one.scheme, one.options);
  const double replay = replay_step_time(
      profile::convert_kineto_file((kTraces / "resnet50_ddp_1xV100_worldsize1_rank0.json.gz").string())
          .workload);
  const std::string report = fmt::format(
      "1 worker: {:.3f} ms, {:.1f} samples/s; 8 workers on 25 Gbps: {:.3f} ms, "
      "{:.1f} samples/s, efficiency vs 1 worker {:.3f}",
      r1.step_time * 1e3, r1.throughput, r8.step_time * 1e3, r8.throughput,
      r8.throughput / (8 * r1.throughput));
  SCOPED_TRACE(report);
  std::cout << report << '\n';
  EXPECT_NEAR(r1.step_time, replay, 1e-9);
  EXPECT_NEAR(r1.throughput, 32 / replay, 1e-6 * r1.throughput);
  EXPECT_GT(r8.throughput, r1.throughput);
  // Against the simulated one-worker run: predict::Result::efficiency divides by
  // Workload::compute_time(), the sum over all lanes, which overlapping CPU and GPU lanes inflate.
  EXPECT_LT(r8.throughput / (8 * r1.throughput), 1.0);
  EXPECT_GT(r8.step_time, r1.step_time);
}

TEST_F(ProfiledScenario, ProfileAndStepTimeTogetherIsAnError) {
  const fs::path path = write(std::string(kScenario) + "\n");
  try {
    (void)stepcast::scenario::load_scenario(path.string(), {"workload.step_time=90ms"});
    FAIL() << "expected an error";
  } catch (const stepcast::Error& e) {
    EXPECT_EQ(e.where().key, "workload.step_time") << e.what();
  }
}

TEST_F(ProfiledScenario, MissingTraceNamesTheKey) {
  const fs::path path = write("workload:\n  profile: nowhere.json.gz\n");
  try {
    (void)stepcast::scenario::load_scenario(path.string());
    FAIL() << "expected an error";
  } catch (const stepcast::Error& e) {
    EXPECT_EQ(e.where().key, "workload.profile") << e.what();
    EXPECT_EQ(e.where().line, 2) << e.what();
  }
}

TEST_F(ProfiledScenario, ManyWorkersWithoutGradientSizesIsAnError) {
  const fs::path path = write("workload:\n  profile: trace.json.gz\ncluster:\n  workers: 4\n");
  const auto s = stepcast::scenario::load_scenario(path.string());
  try {
    (void)stepcast::scenario::build_workload(s);
    FAIL() << "expected an error";
  } catch (const stepcast::Error& e) {
    EXPECT_EQ(e.where().key, "workload.profile") << e.what();
  }
}

}  // namespace
