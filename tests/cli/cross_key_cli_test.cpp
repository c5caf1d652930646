// Rules across keys through the binary: the message names the file, the line and the key (or the
// --set that gave it), exit code 2; and a --workers sweep is checked at the swept counts, not at
// the file's cluster.workers.
#include "cli/cli_support.hpp"

namespace stepcast_cli_test {
namespace {
namespace cross_key_cli_test {  // this file's own names: test files are compiled several to a unit

using CrossKeyCli = CliTest;

void expect_exit_2(const RunResult& r, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.describe();
  for (const auto& needle : needles) {
    EXPECT_NE(r.err.find(needle), std::string::npos) << "stderr should contain '" << needle << "'\n"
                                                     << r.describe();
  }
}

TEST_F(CrossKeyCli, NicsPerNodeNamesWhereItWasSet) {
  // Before validate(), this printed the key alone: no file, no --set, line 0.
  expect_exit_2(run({"predict", kExample, "--set", "cluster.nics_per_node=2"}),
                {"error: --set: cluster.nics_per_node: ", "2 NICs"});
  const std::string yaml = file("nics.yaml",
                                "workload:\n"             // 1
                                "  model: resnet50\n"     // 2
                                "  step_time: 100ms\n"    // 3
                                "cluster:\n"              // 4
                                "  workers: 2\n"          // 5
                                "  nics_per_node: 2\n");  // 6
  expect_exit_2(run({"predict", yaml}), {"error: " + yaml + ":6: cluster.nics_per_node: ", "2 NICs"});
  RunResult ok = run({"predict", yaml, "--set", "cluster.workers_per_node=2", "--predictor", "coarse"});
  EXPECT_EQ(ok.code, 0) << ok.describe();
}

TEST_F(CrossKeyCli, WorkerSweepIsCheckedAtEachSweptCount) {
  // hdrm on a 4 x 4 BiGraph needs exactly 32 workers; the file's 16 are not what --workers predicts.
  const std::string yaml = file("hdrm.yaml",
                                "workload:\n"                 // 1
                                "  model: resnet50\n"         // 2
                                "  step_time: 100ms\n"        // 3
                                "cluster:\n"                  // 4
                                "  workers: 16\n"             // 5
                                "  topology: bigraph\n"       // 6
                                "  bigraph:\n"                // 7
                                "    switches_per_half: 4\n"  // 8
                                "    hosts_per_switch: 4\n"   // 9
                                "training:\n"                 // 10
                                "  allreduce:\n"              // 11
                                "    algorithm: hdrm\n");     // 12
  const std::string at_algorithm = yaml + ":12: training.allreduce.algorithm";
  expect_exit_2(run({"predict", yaml}), {at_algorithm, "got 16 workers"});

  RunResult set = run({"predict", yaml, "--set", "cluster.workers=32", "--predictor", "coarse", "--json"});
  EXPECT_EQ(set.code, 0) << set.describe();
  RunResult swept = run({"predict", yaml, "--workers", "32", "--predictor", "coarse", "--json"});
  ASSERT_EQ(swept.code, 0) << swept.describe();
  const Json json = parse_json_or_fail(swept.out);
  ASSERT_EQ(json["predictions"].array.size(), 1u) << swept.out;
  EXPECT_EQ(json["predictions"].array[0]["workers"].number, 32);

  // A swept count that breaks the rule fails with the count, the key and where it was set.
  expect_exit_2(run({"predict", yaml, "--workers", "32,8", "--predictor", "coarse"}),
                {at_algorithm, "got 8 workers", "--workers 8"});
  // And power-of-two: halving_doubling over a swept 12.
  expect_exit_2(run({"predict", yaml, "--set", "training.allreduce.algorithm=halving_doubling", "--set",
                     "cluster.topology=switch", "--workers", "8,12", "--predictor", "coarse"}),
                {"--set: training.allreduce.algorithm", "power-of-two", "got 12", "--workers 12"});
}

}  // namespace cross_key_cli_test
}  // namespace
}  // namespace stepcast_cli_test
