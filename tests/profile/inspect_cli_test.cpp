// `stepcast inspect` end to end: text and --json on a real trace, exit code 2 and the file name
// on bad input.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli_support.hpp"
#include "profile/kineto_fixtures.hpp"

namespace stepcast_cli_test {
namespace {
namespace inspect_cli_test {  // this file's own names: test files are compiled several to a unit

const fs::path kTrace =
    fs::path(STEPCAST_SHARED_DATA) / "traces" / "resnet50_ddp_2xA100_rank0_nccl_data.json.gz";

// The trace's three steps as ../shared/data/traces/step_summary.csv lists them (computed there
// independently of stepcast): ProfilerStep#4-6 took 222.442, 219.727 and 224.936 ms, all steady.
constexpr double kMeanStepMs = (222.442 + 219.727 + 224.936) / 3;  // 222.368 ms

using InspectCli = CliTest;

TEST_F(InspectCli, JsonHasEveryKeyOnARealTrace) {
  if (!fs::exists(kTrace)) GTEST_SKIP() << "skipped: shared trace data not found at " << kTrace.string();
  const RunResult r = run({"inspect", kTrace.string(), "--json"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const Json j = parse_json_or_fail(r.out);
  for (const char* key : {"file", "framework", "devices", "devices_used", "rank", "world_size", "backend",
                          "num_events", "steps_found", "steady_steps", "step_time_s", "not_steady",
                          "per_step_s", "steps", "collectives_by_type", "collectives", "warnings"}) {
    EXPECT_TRUE(j.has(key)) << key;
  }
  EXPECT_EQ(j["framework"].string, "pytorch");
  EXPECT_EQ(j["world_size"].number, 2);
  EXPECT_EQ(j["rank"].number, 0);
  EXPECT_EQ(j["steps_found"].number, 3);
  EXPECT_NEAR(j.at_path("step_time_s.mean")->number, kMeanStepMs * 1e-3, 1e-6);  // the CSV rounds to 1 us
  for (const char* key : {"p50", "p95", "count"}) EXPECT_NE(j["step_time_s"].find(key), nullptr) << key;
  for (const char* key : {"gpu_busy", "compute", "communication", "overlap", "idle"}) {
    EXPECT_NE(j["per_step_s"].find(key), nullptr) << key;
  }
  // collectives_summary.csv: each step runs the same 7 NCCL kernels (2 broadcasts, 5 all-reduces),
  // 21 in all, the third an all-reduce of 2049000 floats = 8196000 B; 7 distinct (type, dtype,
  // bytes, group size).
  ASSERT_EQ(j["collectives"].array.size(), 21u);
  const Json& c = j["collectives"].array[2];
  EXPECT_EQ(c["collective"].string, "allreduce");
  EXPECT_EQ(c["bytes"].number, 4 * 2049000);
  EXPECT_EQ(j["collectives_by_type"].array.size(), 7u);
}

TEST_F(InspectCli, TextNamesEverythingWithUnits) {
  if (!fs::exists(kTrace)) GTEST_SKIP() << "skipped: shared trace data not found at " << kTrace.string();
  const RunResult r = run({"inspect", kTrace.string()});
  ASSERT_EQ(r.code, 0) << r.describe();
  // The device, world size and the largest all-reduce (7875584 floats = 31502336 B) as the two
  // CSVs list them; the mean of the three steps above, printed to the microsecond.
  const std::string mean = fmt::format("mean {:.3f} ms", kMeanStepMs);
  for (const std::string& part : std::vector<std::string>{
           "framework   pytorch", "NVIDIA A100-PG509-200", "rank 0 of world size 2", "3 found", mean, "p95",
           "GPU busy", "overlapped", "idle", "allreduce", fmt::format("{:.1f} MB", 4 * 7875584 / 1e6)}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  }
  // The step-to-step variation, as workload.compute_cv takes it: stddev / mean of the steady
  // steps, the same numbers --json gives.
  const Json j = parse_json_or_fail(run({"inspect", kTrace.string(), "--json"}).out);
  const double cv = j.at_path("step_time_s.stddev")->number / j.at_path("step_time_s.mean")->number;
  ASSERT_GT(cv, 0);
  EXPECT_NE(r.out.find(fmt::format("workload.compute_cv: {:.4f})", cv)), std::string::npos) << r.out;
}

TEST_F(InspectCli, BadFileExitsWith2AndNamesIt) {
  const std::string bad = file("broken.json", R"({"traceEvents": [{"ph": "X", "ts": 1, "dur": )");
  RunResult r = run({"inspect", bad});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
  const std::string missing = path("nope.json.gz").string();
  r = run({"inspect", missing});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
  const std::string nosteps = file("nosteps.json", R"({"traceEvents": []})");
  r = run({"inspect", nosteps, "--json"});
  EXPECT_EQ(r.code, 2) << r.describe();
  EXPECT_NE(r.err.find("no steps"), std::string::npos) << r.err;
}

TEST_F(InspectCli, SmallGeneratedTraceWorksWithoutSharedData) {
  const std::string t = file("t.json", stepcast_profile_test::small_trace());
  const RunResult r = run({"inspect", t, "--json"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const Json j = parse_json_or_fail(r.out);
  EXPECT_EQ(j["steps_found"].number, 2);
  EXPECT_NEAR(j.at_path("per_step_s.overlap")->number, 0.0005, 1e-12);  // 1 ms and 0 ms
  EXPECT_EQ(j["devices"].array[0]["name"].string, "Test GPU \"X\"");
}

TEST_F(InspectCli, ATensorFlowTimelineGivesThePerMessageCost) {
  // Three receives of 1 kB, 100 kB and 10 MB at 50 us + bytes / 1 GB/s, and one of 1 kB that
  // waited 2 ms for its sender: the fit takes the fastest of each size.
  std::string events =
      R"({"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "/job:worker/replica:0/task:0/device:CPU:0 Compute"}},
 {"ph": "X", "cat": "Op", "name": "Conv2D", "pid": 1, "tid": 0, "ts": 20000, "dur": 3000, "args": {"name": "conv/Conv2D", "op": "Conv2D"}})";
  const double sizes[] = {1e3, 1e5, 1e7, 1e3};
  for (int i = 0; i < 4; ++i) {
    const double us = 50 + sizes[i] / 1e3 + (i == 3 ? 2000 : 0);
    events += fmt::format(
        R"(, {{"ph": "X", "cat": "Op", "name": "RecvTensor", "pid": 1, "tid": 1, "ts": {}, "dur": {}, "args": {{"name": "v{}/read", "op": "RecvTensor", "bytes": {:.0f}}}}})",
        100 * i, us, i, sizes[i]);
  }
  const std::string t = file("timeline.json", "{\"traceEvents\": [" + events + "]}");
  const RunResult text = run({"inspect", t});
  ASSERT_EQ(text.code, 0) << text.describe();
  EXPECT_NE(text.out.find("(TensorFlow timeline)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("per message 50.0 us + bytes / 1.00 GB/s"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("training.ps.message_overhead"), std::string::npos) << text.out;
  const RunResult json = run({"inspect", t, "--json"});
  ASSERT_EQ(json.code, 0) << json.describe();
  const Json j = parse_json_or_fail(json.out);
  EXPECT_EQ(j["framework"].string, "tensorflow");
  EXPECT_EQ(j["receives"].number, 4);
  EXPECT_NEAR(j.at_path("message_cost.overhead_s")->number, 50e-6, 1e-12);
  EXPECT_NEAR(j.at_path("message_cost.bandwidth_bytes_per_s")->number, 1e9, 1e-3);
  EXPECT_EQ(j.at_path("message_cost.size_classes")->number, 3);
  // A broken one: exit 2, naming the file and the event.
  const std::string bad = file("bad-timeline.json", R"({"traceEvents": [
 {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "/job:worker/replica:0/task:0/device:CPU:0 Compute"}},
 {"ph": "X", "cat": "Op", "name": "Conv2D", "pid": 1, "tid": 0, "ts": 5, "dur": -3, "args": {"op": "Conv2D"}}]})");
  const RunResult broken = run({"inspect", bad});
  EXPECT_EQ(broken.code, 2) << broken.describe();
  EXPECT_NE(broken.err.find(bad), std::string::npos) << broken.err;
  EXPECT_NE(broken.err.find("traceEvents[1]"), std::string::npos) << broken.err;
}

TEST_F(InspectCli, APipeReadsTheSameAsTheFile) {
  // inspect <(cat t.json): a pipe cannot be rewound after the gzip magic is sniffed, so the first
  // two bytes were lost and the JSON broke. Plain and gzip-compressed, through a FIFO.
  const std::string t = file("t.json", stepcast_profile_test::small_trace());
  const RunResult from_file = run({"inspect", t, "--json"});
  ASSERT_EQ(from_file.code, 0) << from_file.describe();
  ASSERT_EQ(std::system(("gzip -k -c " + shell_quote(t) + " > " + shell_quote(t + ".gz")).c_str()), 0);
  for (const std::string& source : {t, t + ".gz"}) {
    const std::string fifo = path("pipe").string();
    std::filesystem::remove(fifo);
    ASSERT_EQ(std::system(("mkfifo " + shell_quote(fifo)).c_str()), 0);
    // The writer blocks until inspect opens the FIFO; it ends when its reader does.
    ASSERT_EQ(std::system(("(cat " + shell_quote(source) + " > " + shell_quote(fifo) + ") &").c_str()), 0);
    const RunResult from_pipe = run({"inspect", fifo, "--json"});
    ASSERT_EQ(from_pipe.code, 0) << source << "\n" << from_pipe.describe();
    const Json a = parse_json_or_fail(from_file.out), b = parse_json_or_fail(from_pipe.out);
    EXPECT_EQ(a["steps_found"].number, b["steps_found"].number) << source;
    EXPECT_EQ(a.at_path("step_time_s.mean")->number, b.at_path("step_time_s.mean")->number) << source;
  }
}

}  // namespace inspect_cli_test
}  // namespace
}  // namespace stepcast_cli_test
