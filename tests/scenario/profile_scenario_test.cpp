// workload.profile with the non-PyTorch readers: a layer table and a Chakra trace exported from
// a zoo scenario give the workload (and so the prediction) they describe.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/report/chakra_export.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace stepcast::scenario {
namespace {
namespace profile_scenario_test {  // this file's own names: test files are compiled several to a unit

std::filesystem::path temp_dir(const std::string& name) {
  auto dir = std::filesystem::path(::testing::TempDir()) / ("stepcast_profile_scenario_" + name);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(ProfileScenario, LayerTableBecomesTheWorkload) {
  const auto dir = temp_dir("layers");
  std::ofstream(dir / "layers.csv") << "layer,forward_time,backward_time,parameter_bytes\n"
                                       "conv,1ms,2ms,4MB\nfc,0.5ms,1ms,40MB\n";
  const Scenario s = parse_scenario(
      "workload: {profile: " + (dir / "layers.csv").string() + ", batch_per_worker: 16}\n", "job.yaml");
  const workload::Workload w = build_workload(s);
  EXPECT_EQ(w.ops.size(), 4u);  // two forward, two backward
  EXPECT_NEAR(w.compute_time(), 4.5e-3, 1e-12);
  EXPECT_NEAR(w.parameter_bytes(), 44e6, 1);
  EXPECT_EQ(w.batch_per_worker, 16);
}

TEST(ProfileScenario, ChakraExportPredictsLikeTheZooScenario) {
  const std::string yaml = R"(
workload: {model: alexnet, batch_per_worker: 128, step_time: 100ms}
cluster: {workers: 4, nic_bandwidth: 25Gbps}
training: {scheme: allreduce}
steps: {warmup: 1, measure: 2}
)";
  const Scenario zoo_scenario = parse_scenario(yaml, "zoo.yaml");
  const workload::Workload zoo_workload = build_workload(zoo_scenario);
  const auto dir = temp_dir("chakra");
  report::ChakraExport how;
  how.workers = 4;
  how.buckets = workload::make_buckets(zoo_workload, zoo_scenario.scheme.allreduce.bucket_bytes);
  (void)report::write_chakra_traces((dir / "alexnet").string(), zoo_workload, how);
  const Scenario traced = parse_scenario("workload: {profile: " + (dir / "alexnet.0.et").string() +
                                             ", batch_per_worker: 128}\n"
                                             "cluster: {workers: 4, nic_bandwidth: 25Gbps}\n"
                                             "steps: {warmup: 1, measure: 2}\n",
                                         "traced.yaml");
  const predict::Result a =
      predict::predict(zoo_workload, zoo_scenario.cluster, zoo_scenario.scheme, zoo_scenario.options);
  const predict::Result b =
      predict::predict(build_workload(traced), traced.cluster, traced.scheme, traced.options);
  // Chakra keeps whole microseconds: the step times agree to well under 1%.
  EXPECT_NEAR(b.step_time, a.step_time, 0.01 * a.step_time);
  EXPECT_NEAR(b.throughput, a.throughput, 0.01 * a.throughput);
}

TEST(ProfileScenario, BrokenProfileNamesTheKey) {
  const auto dir = temp_dir("broken");
  std::ofstream(dir / "bad.csv") << "layer,forward_time\nconv,abc\n";
  const Scenario s = parse_scenario("workload: {profile: " + (dir / "bad.csv").string() + "}\n", "job.yaml");
  try {
    (void)build_workload(s);
    FAIL() << "expected an error";
  } catch (const stepcast::Error& e) {
    EXPECT_EQ(e.where().key, "workload.profile");
    EXPECT_NE(std::string(e.what()).find("bad.csv"), std::string::npos) << e.what();
  }
}

}  // namespace profile_scenario_test
}  // namespace
}  // namespace stepcast::scenario
