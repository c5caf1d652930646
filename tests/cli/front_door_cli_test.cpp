// What a user types first: sizes and bandwidths without a unit are errors naming the key (80 could
// be bytes, MB or GB; 0 is 0 in any unit), a scenario read from a pipe works in every command that
// loads it more than once, and a mistyped command suggests the nearest one (issue 30, bad input).
#include <sys/resource.h>

#include "cli/cli_support.hpp"

namespace stepcast_cli_test {
namespace {
namespace front_door_cli_test {  // this file's own names: test files are compiled several to a unit

using FrontDoorCli = CliTest;

void expect_exit_2_naming(const RunResult& r, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_TRUE(r.out.empty()) << r.describe();
  for (const std::string& needle : needles) {
    EXPECT_NE(r.err.find(needle), std::string::npos) << "stderr should name '" << needle << "'\n"
                                                     << r.describe();
  }
}

TEST_F(FrontDoorCli, ASizeOrBandwidthWithoutAUnitIsAnErrorNamingTheKey) {
  for (const std::string set :
       {"cluster.gpu_memory=80", "cluster.nic_bandwidth=100", "cluster.gpu.memory_reserved=1",
        "training.ps.slice_size=4096", "cluster.intra_node.bandwidth=300"}) {
    const std::string key = set.substr(0, set.find('='));
    expect_exit_2_naming(run({"predict", kExample, "--predictor", "coarse", "--set", set}),
                         {key, "with its unit", "'" + set.substr(set.find('=') + 1) + "'"});
  }
  // In a file, the message names the file and the line as well.
  std::string text = read_text(kExample);
  text.replace(text.find("nic_bandwidth: 10Gbps"), std::string("nic_bandwidth: 10Gbps").size(),
               "nic_bandwidth: 10");
  const std::string bare = file("bare-nic.yaml", text);
  expect_exit_2_naming(run({"predict", bare}), {"bare-nic.yaml:", "cluster.nic_bandwidth", "with its unit"});
  // The options take units too.
  expect_exit_2_naming(run({"collective", "--size", "1000000"}), {"--size", "with its unit"});
  // 0 needs none, and a unit is taken as before.
  for (const std::string set :
       {"training.ps.slice_size=0", "cluster.gpu_memory=80GB", "cluster.nic_bandwidth=100Gbps"}) {
    const RunResult r = run({"predict", kExample, "--predictor", "coarse", "--set", set});
    EXPECT_EQ(r.code, 0) << r.describe();
  }
}

TEST_F(FrontDoorCli, AScenarioFromAPipeGivesWhatTheFileGives) {
  // A pipe can be read once; predict with a sweep, advise and collective load the scenario
  // several times, and each must give what the file gives.
  const std::vector<std::vector<std::string>> commands = {
      {"predict", "@", "--predictor", "coarse", "--sweep", "training.ps.count=1,2", "--workers", "4,8"},
      {"advise", "@", "--vary", "training.ps.count=1..3", "--target-efficiency", "0.3", "--set",
       "predictor=coarse"},
      {"collective", "--scenario", "@", "--size", "1MB"}};
  for (const std::vector<std::string>& command : commands) {
    std::vector<std::string> from_file = command, from_pipe = command;
    for (std::string& a : from_file)
      if (a == "@") a = kExample;
    for (std::string& a : from_pipe)
      if (a == "@") a = "/dev/stdin";
    const RunResult file_run = run(from_file);
    ASSERT_EQ(file_run.code, 0) << file_run.describe();
    const RunResult pipe_run = run(from_pipe, 30, kExample);
    ASSERT_EQ(pipe_run.code, 0) << pipe_run.describe();
    // The same rows; only the scenario's name in messages may differ (it is the path given).
    auto after_first_line = [](const std::string& s) { return s.substr(s.find('\n') + 1); };
    EXPECT_EQ(after_first_line(pipe_run.out), after_first_line(file_run.out)) << command[0];
  }
}

TEST_F(FrontDoorCli, AMistypedCommandSuggestsTheNearest) {
  expect_exit_2_naming(run({"predcit", kExample}), {"unknown command 'predcit'", "did you mean 'predict'?"});
  expect_exit_2_naming(run({"colective"}), {"did you mean 'collective'?"});
  expect_exit_2_naming(run({"advice", kExample}), {"did you mean 'advise'?"});
  // Nothing within two edits: the list of commands instead of a guess.
  const RunResult far = run({"simulate", kExample});
  expect_exit_2_naming(far, {"unknown command 'simulate'", "predict", "collective", "plan"});
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.describe();
}

TEST_F(FrontDoorCli, ANodeOfSixteenThousandNicsNeedsLittleMemory) {
  // An extreme but valid node: 16,384 GPUs and as many NICs. The ring's channels were one per NIC,
  // each a ring over every GPU: 2^28 transfers and bad_alloc. Now at most NCCL's 64 channels.
  const std::string scenario =
      file("many-nics.yaml",
           "name: many-nics\n"
           "workload: {model: resnet50, step_time: 100ms}\n"
           "cluster: {workers: 16384, workers_per_node: 16384, nics_per_node: 16384, "
           "nic_bandwidth: 100Gbps}\n"
           "training: {scheme: allreduce}\n"
           "steps: {warmup: 1, measure: 1}\n");
  for (const std::string predictor : {"fine", "coarse", "analytic"}) {
    const RunResult r = run({"predict", scenario, "--predictor", predictor}, 120);
    EXPECT_EQ(r.code, 0) << r.describe();
  }
  rusage children{};
  ASSERT_EQ(getrusage(RUSAGE_CHILDREN, &children), 0);
  EXPECT_LT(children.ru_maxrss, 1L << 20) << "largest child's peak resident set, KiB";  // 1 GiB
}

}  // namespace front_door_cli_test
}  // namespace
}  // namespace stepcast_cli_test
