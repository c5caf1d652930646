// Bad input must end with exit code exactly 2 and a message on stderr naming the key (and the
// file and line for scenario files) -- never a crash, a hang, exit code 1 or a silent success.
#include <fmt/format.h>

#include "cli/cli_support.hpp"

namespace stepcast_cli_test {
namespace {
namespace bad_input_cli_test {  // this file's own names: test files are compiled several to a unit

using BadInputCli = CliTest;

constexpr const char* kHead =
    "name: t\n"             // 1
    "workload:\n"           // 2
    "  model: resnet50\n"   // 3
    "  step_time: 100ms\n"  // 4
    "cluster:\n";           // 5

/// Runs and checks: exit 2, nothing useful on stdout, stderr has every one of `needles`.
void expect_bad_input(const RunResult& r, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_FALSE(r.err.empty()) << r.describe();
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.describe();
  for (const auto& needle : needles) {
    EXPECT_NE(r.err.find(needle), std::string::npos) << "stderr should contain '" << needle << "'\n"
                                                     << r.describe();
  }
}

struct FileCase {
  const char* name;
  std::string yaml;
  std::vector<std::string> needles;  ///< "@" is replaced by the file's path
};

TEST_F(BadInputCli, ScenarioFilesNameFileLineAndKey) {
  const std::vector<FileCase> cases = {
      {"unknown_key",
       std::string(kHead) + "  workers: 4\ntraining:\n  scheme: ps\n  bogus_key: 1\n",
       {"@:9:", "training.bogus_key", "unknown key"}},
      {"typo_key",
       std::string(kHead) + "  nic_bandwdth: 10Gbps\n",
       {"@:6:", "cluster.nic_bandwdth", "cluster.nic_bandwidth"}},
      {"wrong_type", std::string(kHead) + "  workers: abc\n", {"@:6:", "cluster.workers", "abc"}},
      {"zero_workers", std::string(kHead) + "  workers: 0\n", {"@:6:", "cluster.workers"}},
      {"negative_workers", std::string(kHead) + "  workers: -3\n", {"@:6:", "cluster.workers"}},
      {"fractional_workers", std::string(kHead) + "  workers: 2.5\n", {"@:6:", "cluster.workers"}},
      {"negative_bandwidth",
       std::string(kHead) + "  nic_bandwidth: -10Gbps\n",
       {"@:6:", "cluster.nic_bandwidth"}},
      {"zero_bandwidth", std::string(kHead) + "  nic_bandwidth: 0Gbps\n", {"@:6:", "cluster.nic_bandwidth"}},
      {"unknown_unit",
       std::string(kHead) + "  nic_bandwidth: 10Gbs\n",
       {"@:6:", "cluster.nic_bandwidth", "Gbs"}},
      {"map_for_value", std::string(kHead) + "  workers: {a: 1}\n", {"@:6:", "cluster.workers"}},
      {"scalar_for_section",
       "workload:\n  model: resnet50\n  step_time: 100ms\ncluster: 5\n",
       {"@:4:", "cluster"}},
      {"duplicate_key",
       std::string(kHead) + "  workers: 2\n  workers: 3\n",
       {"@:7:", "cluster.workers", "duplicate"}},
      {"colocated_ps_count_above_nodes",
       std::string(kHead) +
           "  workers: 2\ntraining:\n  scheme: ps\n  ps:\n    count: 4\n    placement: colocated\n",
       {"@:10:", "training.ps.count"}},
      {"async_allreduce",
       std::string(kHead) + "  workers: 2\ntraining:\n  scheme: allreduce\n  mode: async\n",
       {"@:9:", "training.mode"}},
      {"both_step_time_and_throughput",
       "workload:\n  model: resnet50\n  step_time: 100ms\n  single_worker_throughput: 300\n",
       {"@:4:", "workload.single_worker_throughput"}},
      {"no_step_time", "workload:\n  model: resnet50\n", {"@", "workload.step_time"}},
      {"no_model", "workload:\n  step_time: 100ms\n", {"@", "workload.model"}},
      {"unknown_model", "workload:\n  model: nope\n  step_time: 100ms\n", {"@:2:", "workload.model", "nope"}},
      {"bad_choice",
       std::string(kHead) + "training:\n  scheme: gossip\n",
       {"@:7:", "training.scheme", "gossip"}},
      {"empty_file", "", {"@", "empty"}},
      {"only_comments", "# nothing here\n", {"@", "empty"}},
      {"top_level_list", "- a\n- b\n", {"@:1:"}},
      {"invalid_yaml", "workload: [\n  model: x\n", {"@:", "invalid YAML"}},
      {"bad_indentation", "workload:\n  model: resnet50\n   step_time: 100ms\n", {"@:", "invalid YAML"}},
      {"truncated_in_key", "workload:\n  model: resnet50\n  step_ti", {"@:3:", "workload.step_ti"}},
      {"truncated_in_flow_map",
       "workload:\n  model: resnet50\n  step_time: 100ms\ncluster: {workers: 2\n",
       {"@:", "invalid YAML"}},
      {"truncated_in_quoted_value_at_eof",
       "workload:\n  model: resnet50\n  step_time: \"100ms",
       {"@:3:", "invalid YAML"}},
      {"binary_garbage", std::string("\x00\x01\xff\xfe", 4), {"@"}},
  };
  for (const FileCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string yaml = file(std::string(c.name) + ".yaml", c.yaml);
    std::vector<std::string> needles;
    for (std::string n : c.needles) {
      if (size_t at = n.find('@'); at != std::string::npos) n.replace(at, 1, yaml);
      needles.push_back(n);
    }
    expect_bad_input(run({"predict", yaml}), needles);
  }
}

// yaml-cpp accepts a double-quoted scalar left open at the end of a file when a newline follows,
// so a file cut inside a quoted value would be predicted as if it were complete; stepcast checks
// the closing quote itself. Closed quotes of both kinds, with escapes, still parse.
TEST_F(BadInputCli, TruncatedInQuotedValueBeforeFinalNewline) {
  const std::string yaml = file("cut.yaml", "workload:\n  model: resnet50\n  step_time: \"100ms\n");
  expect_bad_input(run({"predict", yaml}), {yaml + ":3:", "workload.step_time", "not closed"});
  const std::string cut_list = file("cut-list.yaml",
                                    "workload:\n  model: resnet50\n  step_time: 100ms\n"
                                    "cluster:\n  collective_regimes:\n    - \"0B 1us 1GB/s\n");
  expect_bad_input(run({"predict", cut_list}), {cut_list + ":6:", "not closed"});
  const std::string fine = file("quoted.yaml",
                                "name: \"it\\\"s\"\nworkload:\n  model: 'resnet50'\n"
                                "  step_time: \"100ms\"\ndescription: 'a ''quoted'' word'\n");
  RunResult r = run({"predict", fine});
  EXPECT_EQ(r.code, 0) << r.describe();
}

TEST_F(BadInputCli, MissingFileAndDirectory) {
  const std::string missing = path("does-not-exist.yaml").string();
  expect_bad_input(run({"predict", missing}), {missing});
  expect_bad_input(run({"predict", dir_.string()}), {dir_.string()});
}

TEST_F(BadInputCli, Overrides) {
  expect_bad_input(run({"predict", kExample, "--set", "cluster.nic_bw=1Gbps"}), {"--set", "cluster.nic_bw"});
  expect_bad_input(run({"predict", kExample, "--set", "nosuchkey=1"}), {"--set", "nosuchkey"});
  expect_bad_input(run({"predict", kExample, "--set", "cluster.nic_bandwidth"}),
                   {"--set", "cluster.nic_bandwidth", "key=value"});
  expect_bad_input(run({"predict", kExample, "--set", "cluster.workers=abc"}), {"--set", "cluster.workers"});
  expect_bad_input(run({"predict", kExample, "--set", "cluster.workers=[1,2]"}),
                   {"--set", "cluster.workers"});
  expect_bad_input(run({"predict", kExample, "--set", "cluster.workers={"}), {"--set", "cluster.workers"});
  expect_bad_input(run({"predict", kExample, "--set", "cluster.nic_bandwidth=10Gbs"}),
                   {"--set", "cluster.nic_bandwidth", "Gbs"});
  expect_bad_input(run({"predict", kExample, "--set", "workload.model=nope"}), {"workload.model", "nope"});
  expect_bad_input(run({"predict", kExample, "--set", "training.ps.placement=colocated", "--set",
                        "training.ps.count=9", "--workers", "1"}),
                   {"training.ps.count"});
}

TEST_F(BadInputCli, NcclChannelsAndCaps) {
  expect_bad_input(run({"collective", "--set", "cluster.nccl.channels=0"}),
                   {"--set", "cluster.nccl.channels"});
  expect_bad_input(run({"collective", "--set", "cluster.nccl.channels=many"}),
                   {"--set", "cluster.nccl.channels", "many"});
  expect_bad_input(
      run({"collective", "--algorithm", "auto", "--set", "cluster.nccl.ring.ll128.channel_bw=-5GB/s"}),
      {"--set", "cluster.nccl.ring.ll128.channel_bw"});
  expect_bad_input(run({"predict", kExample, "--set", "cluster.nccl.tree.ll.max_bw=abc"}),
                   {"--set", "cluster.nccl.tree.ll.max_bw", "abc"});
  const std::string yaml = file("caps.yaml", std::string(kHead) + "  nccl:\n    channels: -3\n");
  expect_bad_input(run({"predict", yaml}), {yaml + ":", "cluster.nccl.channels"});
}

TEST_F(BadInputCli, OverrideOfASectionDoesNotSuggestItself) {
  // `training.ps` is a section; "did you mean 'training.ps'?" for key 'training.ps' is no help.
  RunResult r = run({"predict", kExample, "--set", "training.ps=3"});
  expect_bad_input(r, {"training.ps"});
  EXPECT_EQ(r.err.find("did you mean 'training.ps'?"), std::string::npos) << r.err;
}

TEST_F(BadInputCli, WorkerLists) {
  for (const char* list : {"0", "1,,2", "x", "1,", ",1", "-1", "2.5", "1;2", "", "99999999999"}) {
    SCOPED_TRACE(list);
    expect_bad_input(run({"predict", kExample, "--workers", list}), {"--workers"});
  }
}

TEST_F(BadInputCli, ColocatedSweepBelowPsCountNamesWorkers) {
  const std::string yaml = file("colo.yaml", std::string(kHead) +
                                                 "  workers: 4\n  workers_per_node: 2\n"
                                                 "training:\n  scheme: ps\n  ps:\n    count: 2\n"
                                                 "    placement: colocated\n");
  RunResult ok = run({"predict", yaml});
  EXPECT_EQ(ok.code, 0) << ok.describe();
  expect_bad_input(run({"predict", yaml, "--workers", "4,2"}), {"--workers", "training.ps.count"});
}

TEST_F(BadInputCli, PredictorAndSeedOptions) {
  expect_bad_input(run({"predict", kExample, "--predictor", "exact"}), {"--predictor"});
  expect_bad_input(run({"predict", kExample, "--seed", "-1"}), {"--seed"});
  expect_bad_input(run({"predict", kExample, "--seed", "x"}), {"--seed"});
  expect_bad_input(
      run({"predict", kExample, "--predictor", "coarse", "--trace-out", path("t.json").string()}),
      {"--trace-out"});
}

TEST_F(BadInputCli, UnwritableOutputs) {
  // One rule for every output flag: missing parent directories are created; a path that still
  // cannot be written is an error naming the flag. A regular file used as a directory is
  // unwritable on every machine, whoever runs the test (no assumption about /nonexistent).
  const std::string blocker = file("a-file", "x");
  const std::string under_file = blocker + "/dir/t.json";
  expect_bad_input(run({"predict", kExample, "--workers", "1", "--trace-out", under_file}),
                   {"--trace-out", under_file});
  expect_bad_input(run({"predict", kExample, "--workers", "1", "--csv", blocker + "/out.csv"}),
                   {"--csv", blocker + "/out.csv"});
  expect_bad_input(run({"calibrate", "nccl-tests", kSourceDir.string() + "/tests/data/fuzz/nccl-1b.bin",
                        "--workers", "8", "--output", blocker + "/c.yaml"}),
                   {});
  // A directory is not a file either.
  expect_bad_input(run({"predict", kExample, "--workers", "1", "--csv", dir_.string()}), {"--csv"});
}

TEST_F(BadInputCli, OutputFlagsCreateMissingDirectories) {
  const std::string csv = path("new/sub/out.csv").string();
  const RunResult r = run({"predict", kExample, "--workers", "1", "--csv", csv});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(read_text(csv).find("workers"), std::string::npos);
}

TEST_F(BadInputCli, CommandLineMistakesAreErrorsWithThePrefix) {
  expect_bad_input(run({"predict", kExample, "--predictor", "magic"}),
                   {"stepcast: error:", "--predictor", "magic"});
  expect_bad_input(run({"predict", kExample, "--workers", "1,2,1"}), {"--workers", "1 is given twice"});
  expect_bad_input(run({"predict", kExample, "--no-such-flag"}), {"stepcast: error:", "--no-such-flag"});
  // --help is not an error.
  EXPECT_EQ(run({"predict", "--help"}).code, 0);
}

TEST_F(BadInputCli, ATinyThroughputNamesItsKeyNotTheStepTime) {
  const std::string s = file("tiny.yaml",
                             "workload: {model: resnet50, single_worker_throughput: 1e-320}\n"
                             "cluster: {workers: 2}\n");
  expect_bad_input(run({"predict", s}), {s + ":1:", "workload.single_worker_throughput", "1e6 s"});
}

TEST_F(BadInputCli, ASwitchLinkedToItselfIsRejected) {
  file("loop.yaml", "switches: [s]\nlinks:\n  - [node0, s]\n  - [node1, s]\n  - [s, s]\n");
  const std::string s = file("c.yaml",
                             "workload: {model: resnet50, step_time: 100ms}\n"
                             "cluster: {workers: 2, topology: custom, custom: loop.yaml}\n");
  expect_bad_input(run({"predict", s}), {"loop.yaml:5:", "to itself"});
}

TEST_F(BadInputCli, AFlatCalibrationSweepHasNoBandwidth) {
  // Every size takes the same time: no bandwidth fits (it used to print 5e20 GB/s).
  std::string log =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong"
      "     time   algbw   busbw #wrong\n";
  for (long size = 1024; size <= (1L << 24); size *= 4) {
    log += fmt::format(
        "{:>12} {:>12}     float     sum      -1    100.0    0.00    0.00      0    100.0"
        "    0.00    0.00      0\n",
        size, size / 4);
  }
  const std::string f = file("flat.txt", log);
  expect_bad_input(run({"calibrate", "nccl-tests", f, "--workers", "8"}), {"no positive bandwidth fits"});
}

TEST_F(BadInputCli, ACalibrationWithTooFewSizesNamesTheLogAndTheRangeInUnits) {
  // Three sizes of a sweep, none of them from 2 GB up: the error names the log and says the range
  // as sizes (it said "in [2000000000, inf] B" and named no file).
  std::string log =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong"
      "     time   algbw   busbw #wrong\n";
  for (long size = 1 << 20; size <= (1L << 22); size *= 2) {
    log += fmt::format(
        "{:>12} {:>12}     float     sum      -1    {:.1f}    0.00    0.00      0    {:.1f}"
        "    0.00    0.00      0\n",
        size, size / 4, 10 + size / 1e4, 10 + size / 1e4);
  }
  const std::string f = file("three.txt", log);
  expect_bad_input(run({"calibrate", "nccl-tests", f, "--workers", "8", "--min-size", "2GB"}),
                   {"--min-size", "from 2.00 GB up", f});
  expect_bad_input(run({"calibrate", "nccl-tests", f, "--workers", "8", "--fit", "regimes"}),
                   {"--fit", "got 3 sizes (" + f + ")"});
}

TEST_F(BadInputCli, Collective) {
  expect_bad_input(run({"collective", "--size", "-5MB"}), {"--size"});
  expect_bad_input(run({"collective", "--size", "0"}), {"--size"});
  expect_bad_input(run({"collective", "--size", "5XB"}), {"--size"});
  expect_bad_input(run({"collective", "--algorithm", "butterfly"}), {"--algorithm", "butterfly"});
  expect_bad_input(run({"collective", "--op", "alltoall"}), {"--op", "alltoall"});
  // NCCL's protocols time the all-reduce only: on another op --protocol would be printed as run
  // and change nothing (it was).
  expect_bad_input(run({"collective", "--op", "allgather", "--protocol", "ll"}), {"--protocol", "allgather"});
  const RunResult ring = run({"collective", "--op", "allgather", "--algorithm", "ring", "--json"});
  ASSERT_EQ(ring.code, 0) << ring.describe();
  EXPECT_NE(ring.out.find("\"protocol\": \"links\""), std::string::npos) << ring.out;
  expect_bad_input(run({"collective", "--workers", "0"}), {"--workers"});
  expect_bad_input(run({"collective", "--workers", "x"}), {"--workers"});
  expect_bad_input(run({"collective", "--workers-per-node", "0"}), {"--workers-per-node"});
  expect_bad_input(run({"collective", "--nic-bandwidth", "0Gbps"}), {"--nic-bandwidth"});
  expect_bad_input(run({"collective", "--nic-bandwidth", "10Gbs"}), {"--nic-bandwidth"});
  expect_bad_input(run({"collective", "--latency", "-1us"}), {"--latency"});
}

// Integer keys accept anything up to INT_MAX; extreme values must be rejected (exit 2), not crash
// or run for ever. Each run gets a short time limit so a hang fails instead of stalling the suite.
TEST_F(BadInputCli, ExtremeStepCountsDoNotCrash) {
  for (const char* set : {"steps.warmup=2147483647", "steps.measure=2147483646"}) {
    SCOPED_TRACE(set);
    expect_bad_input(run({"predict", kExample, "--workers", "1", "--set", set}, 10), {"steps."});
  }
}

TEST_F(BadInputCli, ExtremeWorkersPerNodeDoesNotCrash) {
  expect_bad_input(
      run({"predict", kExample, "--workers", "2", "--set", "cluster.workers_per_node=2147483647"}, 10),
      {"cluster.workers_per_node"});
  expect_bad_input(run({"collective", "--workers", "64", "--workers-per-node", "2147483647"}, 10),
                   {"--workers-per-node"});
}

}  // namespace bad_input_cli_test
}  // namespace
}  // namespace stepcast_cli_test
