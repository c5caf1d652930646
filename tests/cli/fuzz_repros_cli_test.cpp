// Regression pins for the fuzz reproducers in tests/data/fuzz/ (README.md there): each must end
// as a clear error (exit 2, naming the file and the key or line), never a signal, an abort, a
// stall or a number. Also /dev/zero given where a text input belongs.
#include "cli/cli_support.hpp"

namespace stepcast_cli_test {
namespace {
namespace fuzz_repros_cli_test {  // this file's own names: test files are compiled several to a unit

using FuzzRepros = CliTest;

const fs::path kFuzz = kSourceDir / "tests" / "data" / "fuzz";

void expect_clear_error(const RunResult& r, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.describe();
  EXPECT_EQ(r.err.find("invalid workload"), std::string::npos) << r.describe();
  EXPECT_EQ(r.out.find("nan"), std::string::npos) << r.describe();
  for (const std::string& needle : needles) {
    EXPECT_NE(r.err.find(needle), std::string::npos) << "stderr should contain '" << needle << "'\n"
                                                     << r.describe();
  }
}

TEST_F(FuzzRepros, ScenariosEndInErrorsNamingFileLineAndKey) {
  struct Case {
    const char* file;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {"scenario-1.bin", {":1:", "workload.compute_cv", "1e308"}},
      {"scenario-2.bin", {":2:", "cluster.nic_bandwidth", "1e308Gbps"}},
      {"scenario-3.bin", {":2:", "cluster.torus.dims", "routers"}},
      {"scenario-4.bin", {":2:", "cluster.link_latency", "1e308s"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    // A .yaml name, as a user would give it; the content is the reproducer's.
    const std::string scenario = file(std::string(c.file) + ".yaml", read_text(kFuzz / c.file));
    std::vector<std::string> needles = c.needles;
    needles.push_back(scenario);
    expect_clear_error(run({"predict", scenario}), needles);
    expect_clear_error(run({"predict", scenario, "--set", "predictor=coarse"}), needles);
  }
}

TEST_F(FuzzRepros, ProfilesAndTopologiesEndInErrorsNamingTheirFile) {
  struct Case {
    const char* file;
    const char* as;       ///< name the reproducer is saved under (its reader follows the extension)
    const char* key;      ///< scenario key that points at it
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {"astrasim-1.bin", "workload.txt", "profile", {"workload.txt:2:", "layers"}},
      {"astrasim-2.bin", "workload.txt", "profile", {"workload.txt:3:", "wg_comm_size", "1e30"}},
      {"layer_table-1.bin", "layers.csv", "profile", {"layers.csv:2:", "forward_time", "1e308s"}},
      {"tf-1b.bin", "timeline.json", "profile", {"timeline.json", "pid", "not an integer"}},
      {"tf-2.bin", "timeline.json", "profile", {"timeline.json", "traceEvents[0]", "more than one op takes"}},
      // The step of 2e12 us is skipped (with a warning), so the trace has no step.
      {"kineto-1.bin", "trace.json", "profile", {"trace.json", "ProfilerStep"}},
      {"topology-1.bin", "topology.yaml", "custom", {"topology.yaml:4:", "node99999999999"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    file(c.as, read_text(kFuzz / c.file));
    std::string yaml;
    if (std::string(c.key) == "profile") {
      yaml = std::string("workload: {profile: ") + c.as + ", batch_per_worker: 32}\ncluster: {workers: 8}\n";
    } else {
      yaml = std::string("workload: {model: resnet50, step_time: 100ms}\n"
                         "cluster: {workers: 2, topology: custom, custom: ") +
             c.as + "}\n";
    }
    expect_clear_error(run({"predict", file("scenario.yaml", yaml)}), c.needles);
  }
  // tf-1.bin has no events a reader could use: an error, whichever reader takes it.
  file("tiny.json", read_text(kFuzz / "tf-1.bin"));
  expect_clear_error(run({"predict", file("tiny.yaml", "workload: {profile: tiny.json, batch_per_worker: 32}\n"
                                                       "cluster: {workers: 8}\n")}),
                     {"tiny.json"});
}

TEST_F(FuzzRepros, CollectiveLogsWithARepeatedHeaderColumnAreRejected) {
  expect_clear_error(run({"calibrate", "nccl-tests", (kFuzz / "nccl-1.bin").string(), "--workers", "8"}),
                     {"nccl-1.bin:1:", "appears twice"});
  expect_clear_error(run({"calibrate", "nccl-tests", (kFuzz / "nccl-1b.bin").string(), "--workers", "8"}),
                     {"nccl-1b.bin:1:", "bytes", "appears twice"});
}

TEST_F(FuzzRepros, CollectiveLogTimesThatVanishInSecondsAreRejected) {
  // 4e-324 us is positive but 0 s: the fit saw an infinitely fast point.
  expect_clear_error(run({"calibrate", "nccl-tests", (kFuzz / "nccl-2.bin").string(), "--workers", "8"}),
                     {"nccl-2.bin:2:", "time_us", "4e-324"});
  // The same in an nccl-tests log: the out-of-place time of the first row.
  std::string log = "#       size         count      type   redop    root     time   algbw   busbw #wrong"
                    "     time   algbw   busbw #wrong\n";
  for (const auto& [size, time] : {std::pair{"1024", "1e-320"}, {"1048576", "60.0"}, {"16777216", "400.0"}}) {
    log += std::string(size) + " 256 float sum -1 " + time + " 0.00 0.00 0 60.0 0.00 0.00 0\n";
  }
  const std::string f = file("tiny.log", log);
  expect_clear_error(run({"calibrate", "nccl-tests", f, "--workers", "8"}), {"tiny.log:2:", "time", "1e-320"});
}

TEST_F(FuzzRepros, AnEndlessInputIsRefusedNotReadUntilMemoryRunsOut) {
  expect_clear_error(run({"predict", "/dev/zero"}), {"/dev/zero", "64 MiB"});
  expect_clear_error(run({"calibrate", "nccl-tests", "/dev/zero", "--workers", "8"}), {"/dev/zero", "64 MiB"});
  const std::string custom = file("custom.yaml", "workload: {model: resnet50, step_time: 100ms}\n"
                                                 "cluster: {workers: 2, topology: custom, custom: /dev/zero}\n");
  expect_clear_error(run({"predict", custom}), {"/dev/zero", "64 MiB"});
}

}  // namespace fuzz_repros_cli_test
}  // namespace
}  // namespace stepcast_cli_test
