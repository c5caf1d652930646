// `stepcast predict --trace-out` end to end: the trace of the parameter-server example (the
// user's case: 4 workers, 2 shards, random order) passes the trace event validator with no
// partially overlapping slice; --trace-workers and --trace-steps keep what they say; more than
// 8 workers keep the first 8 by default (a pipeline's spread over its stages), said on stderr and
// in the "trace of" line; bad values are errors naming the flag.
#include <set>
#include <string>

#include "cli/cli_support.hpp"
#include "report/trace_event_checker.hpp"

namespace stepcast_cli_test {
namespace {
namespace trace_cli_test {  // this file's own names: test files are compiled several to a unit

using stepcast_trace_test::check_trace_events;
using stepcast_trace_test::TraceCheck;
using TraceCli = CliTest;

void expect_error_naming(const RunResult& r, const std::string& flag) {
  EXPECT_NE(r.code, 0) << r.describe();
  EXPECT_NE(r.err.find(flag), std::string::npos) << r.describe();
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.describe();
}

TEST_F(TraceCli, ParameterServerExampleNestsOnEveryTrackWithFlowsAndCounters) {
  const std::string trace = path("ps.json").string();
  const RunResult r = run({"predict", kExample, "--workers", "4", "--trace-out", trace});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(r.err.empty()) << r.err;  // 4 workers: no note, every worker kept
  const TraceCheck c = check_trace_events(read_text(trace));
  ASSERT_TRUE(c.ok()) << c.summary();
  EXPECT_EQ(c.partial_overlaps, 0u);
  for (const char* name : {"worker 0", "worker 3", "ps 0", "ps 1", "network"}) EXPECT_TRUE(c.process_names.count(name)) << name;
  for (const char* name : {"pull from ps 1", "push to ps 0", "apply", "steps"}) EXPECT_TRUE(c.thread_names.count(name)) << name;
  EXPECT_GT(c.flow_names.count("push"), 0u);
  EXPECT_TRUE(c.counters.count("server0.nic.up"));
  EXPECT_TRUE(c.counters.count("server NICs out (mean)"));
  EXPECT_EQ(c.events.at("i"), 1u);  // the measured window
}

TEST_F(TraceCli, WorkersAndStepsKeepWhatTheySay) {
  const std::string trace = path("some.json").string();
  const RunResult r = run({"predict", kExample, "--workers", "4", "--trace-out", trace, "--trace-workers", "1,3",
                           "--trace-steps", "1"});
  ASSERT_EQ(r.code, 0) << r.describe();
  const std::string text = read_text(trace);
  const TraceCheck c = check_trace_events(text);
  ASSERT_TRUE(c.ok()) << c.summary();
  std::set<std::string> workers;
  for (const std::string& name : c.process_names) {
    if (name.rfind("worker", 0) == 0) workers.insert(name);
  }
  EXPECT_EQ(workers, (std::set<std::string>{"worker 1", "worker 3"}));
  // One measured step (resnet50-ps.yaml warms up for 2): only step 2 is left.
  const Json doc = parse_json_or_fail(text);
  std::set<double> steps;
  for (const Json& e : doc["traceEvents"].array) {
    if (e["ph"].string == "X") steps.insert(e["args"]["step"].number);
  }
  EXPECT_EQ(steps, std::set<double>{2});
}

TEST_F(TraceCli, ManyWorkersKeepTheFirstEightAndSaySo) {
  const std::string trace = path("many.json").string();
  RunResult r = run({"predict", kExample, "--workers", "12", "--trace-out", trace, "--trace-steps", "1"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.err.find("the trace keeps workers 0-7 of 12 (--trace-workers all keeps every one)"), std::string::npos)
      << r.err;
  TraceCheck c = check_trace_events(read_text(trace));
  ASSERT_TRUE(c.ok()) << c.summary();
  EXPECT_TRUE(c.process_names.count("worker 7"));
  EXPECT_FALSE(c.process_names.count("worker 8"));
  EXPECT_NE(r.out.find("trace of 8 of 12 workers written to"), std::string::npos) << r.out;
  r = run({"predict", kExample, "--workers", "12", "--trace-out", trace, "--trace-steps", "1", "--trace-workers",
           "all"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_TRUE(r.err.empty()) << r.err;
  c = check_trace_events(read_text(trace));
  EXPECT_TRUE(c.process_names.count("worker 11"));
  EXPECT_NE(r.out.find("trace of 12 workers written to"), std::string::npos) << r.out;
}

// Under tp-cp-dp-pp order the first 8 of 16 ranks at t 2, p 4 are stages 0 and 1 only: the default
// must hold every stage (each stage's track names it), still 8 workers.
TEST_F(TraceCli, PipelineDefaultKeepsEveryStage) {
  const std::string trace = path("stages.json").string();
  const std::string example = (kSourceDir / "examples" / "llama3-70b-fsdp-tp.yaml").string();
  const RunResult r =
      run({"predict", example, "--workers", "16", "--set", "training.parallel.pipeline=4", "--set",
           "training.parallel.tensor=2", "--trace-out", trace, "--trace-steps", "1"});
  ASSERT_EQ(r.code, 0) << r.describe();
  // d = 16 / (2 x 4) = 2: a stage is 4 consecutive ranks; its first two are kept.
  EXPECT_NE(r.err.find("the trace keeps workers 0-1, 4-5, 8-9, 12-13 of 16"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("trace of 8 of 16 workers written to"), std::string::npos) << r.out;
  // Every track nests (collectives queued on their stream are drawn from when they start).
  const TraceCheck c = check_trace_events(read_text(trace));
  EXPECT_TRUE(c.ok()) << c.summary();
  std::set<std::string> workers;
  for (const std::string& name : c.process_names) {
    if (name.rfind("worker", 0) == 0) workers.insert(name);
  }
  EXPECT_EQ(workers, (std::set<std::string>{"worker 0 (stage 0)", "worker 1 (stage 0)", "worker 4 (stage 1)",
                                            "worker 5 (stage 1)", "worker 8 (stage 2)", "worker 9 (stage 2)",
                                            "worker 12 (stage 3)", "worker 13 (stage 3)"}));
}

TEST_F(TraceCli, BadSelectionsAreErrorsNamingTheFlag) {
  const std::string trace = path("t.json").string();
  const std::vector<std::string> base = {"predict", kExample, "--workers", "4", "--trace-out", trace};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  };
  expect_error_naming(with({"--trace-workers", "4"}), "--trace-workers");    // only 0-3
  expect_error_naming(with({"--trace-workers", "3-1"}), "--trace-workers");  // empty range
  expect_error_naming(with({"--trace-workers", "x"}), "--trace-workers");
  expect_error_naming(with({"--trace-workers", "1,"}), "--trace-workers");
  expect_error_naming(with({"--trace-steps", "0"}), "--trace-steps");
  expect_error_naming(with({"--trace-steps", "6"}), "--trace-steps");  // steps.measure is 5
  expect_error_naming(run({"predict", kExample, "--trace-workers", "0"}), "--trace-out");
  EXPECT_EQ(with({"--trace-workers", "0-1,3"}).code, 0);
}

}  // namespace trace_cli_test
}  // namespace
}  // namespace stepcast_cli_test
