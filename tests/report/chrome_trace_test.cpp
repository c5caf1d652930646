// write_chrome_trace's events beyond plain spans (args, flows, instants, counters, rounding that
// keeps spans disjoint), every output checked by the trace event validator, and the validator
// itself against documents that break each of its rules.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "report/trace_event_checker.hpp"
#include "stepcast/report/report.hpp"

namespace stepcast::report {
namespace {
namespace chrome_trace_test {  // this file's own names: test files are compiled several to a unit

using stepcast_trace_test::check_trace_events;
using stepcast_trace_test::TraceCheck;

std::string write(const predict::Trace& trace) {
  std::ostringstream out;
  write_chrome_trace(out, trace);
  return out.str();
}

/// Two workers and a server: a pull feeding an op, a push applied at the server, markers and
/// a counter.
predict::Trace sample_trace() {
  predict::Trace t;
  t.processes = {"worker 0", "worker 1", "ps 0", "network"};
  t.threads = {"steps", "compute", "pull from ps 0", "push to ps 0", "apply"};
  t.paths = {"server0.nic.up > node0.nic.down"};
  t.spans = {
      {.process = 0, .thread = 0, .name = "step 0", .category = "step", .start = 0, .duration = 0.01, .step = 0},
      {.process = 0,
       .thread = 2,
       .name = "w0",
       .category = "pull",
       .start = 0,
       .duration = 0.002,
       .step = 0,
       .bytes = 4e6,
       .shard = 0,
       .path = 0},
      {.process = 0, .thread = 1, .name = "fwd0", .category = "compute", .start = 0.002, .duration = 0.003, .step = 0},
      {.process = 0, .thread = 3, .name = "w0", .category = "push", .start = 0.005, .duration = 0.002, .step = 0,
       .bytes = 4e6, .shard = 0},
      {.process = 2, .thread = 4, .name = "w0", .category = "apply", .start = 0.007, .duration = 0.001, .step = 0,
       .bytes = 4e6, .shard = 0, .worker = 0},
  };
  t.flows = {{1, 2, "input"}, {3, 4, "push"}};
  t.instants = {{-1, "measured window opens", 0.004}, {2, "server marker", 0.0}};
  t.counters = {{3, "server0.nic.up", {"utilisation", "flows"}, {0, 0.002, 0.01}, {1, 1, 0.5, 2, 0, 0}}};
  return t;
}

TEST(ChromeTraceEvents, SpansCarryTheirSetFieldsAsArgs) {
  const std::string json = write(sample_trace());
  const TraceCheck c = check_trace_events(json);
  ASSERT_TRUE(c.ok()) << c.summary() << "\n" << json;
  EXPECT_NE(json.find("\"pid\":1,\"tid\":3,\"args\":{\"step\":0,\"bytes\":4000000,\"shard\":0,"
                      "\"path\":\"server0.nic.up > node0.nic.down\"}}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"args\":{\"step\":0,\"bytes\":4000000,\"shard\":0,\"worker\":0}"), std::string::npos) << json;
  // A span without set fields has no args at all.
  predict::Trace plain;
  plain.processes = {"worker 0"};
  plain.threads = {"compute"};
  plain.spans = {{0, 0, "op", "compute", 0, 1e-3}};
  EXPECT_EQ(write(plain).find("args\":{\"step"), std::string::npos);
}

TEST(ChromeTraceEvents, FlowsAreStartFinishPairsRightAfterTheirSpans) {
  const std::string json = write(sample_trace());
  const TraceCheck c = check_trace_events(json);
  ASSERT_TRUE(c.ok()) << c.summary();
  EXPECT_EQ(c.flows, 2u);
  EXPECT_EQ(c.flow_names.at("input"), 1u);
  EXPECT_EQ(c.flow_names.at("push"), 1u);
  // At the start of the span each end binds to, written right after it, same cat and name.
  EXPECT_NE(json.find("\"pid\":1,\"tid\":3,\"args\":{\"step\":0,\"bytes\":4000000,\"shard\":0,\"path\":"
                      "\"server0.nic.up > node0.nic.down\"}},\n"
                      "{\"name\":\"input\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":1,\"ts\":0,\"pid\":1,\"tid\":3}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"name\":\"input\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":1,\"ts\":2000,"
                      "\"pid\":1,\"tid\":2}"),
            std::string::npos)
      << json;
  // A flow naming a span that does not exist, or going back in time, is left out entirely.
  predict::Trace bad = sample_trace();
  bad.flows.push_back({0, 99, "dangling"});
  bad.flows.push_back({4, 1, "backwards"});
  const std::string pruned = write(bad);
  EXPECT_TRUE(check_trace_events(pruned).ok()) << check_trace_events(pruned).summary();
  EXPECT_EQ(pruned.find("dangling"), std::string::npos);
  EXPECT_EQ(pruned.find("backwards"), std::string::npos);
}

TEST(ChromeTraceEvents, InstantsAndCounters) {
  const std::string json = write(sample_trace());
  const TraceCheck c = check_trace_events(json);
  ASSERT_TRUE(c.ok()) << c.summary();
  EXPECT_NE(json.find("{\"name\":\"measured window opens\",\"cat\":\"marker\",\"ph\":\"i\",\"ts\":4000,\"s\":\"g\"}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"ph\":\"i\",\"ts\":0,\"s\":\"p\",\"pid\":3}"), std::string::npos) << json;
  EXPECT_EQ(c.events.at("C"), 3u);
  EXPECT_NE(json.find("{\"name\":\"server0.nic.up\",\"ph\":\"C\",\"ts\":2000,\"pid\":4,"
                      "\"args\":{\"utilisation\":0.5,\"flows\":2}}"),
            std::string::npos)
      << json;
  EXPECT_TRUE(c.process_names.count("network"));
}

TEST(ChromeTraceEvents, RoundingKeepsBackToBackSpansDisjoint) {
  // 1.6 ns + 1.6 ns: rounding start and duration apart would give [2, 4) then [3, ...), an
  // overlap; rounding both ends gives [2, 3) and [3, 5).
  predict::Trace t;
  t.processes = {"worker 0"};
  t.threads = {"compute"};
  t.spans = {{0, 0, "a", "compute", 1.6e-9, 1.6e-9}, {0, 0, "b", "compute", 3.2e-9, 1.6e-9}};
  const std::string json = write(t);
  const TraceCheck c = check_trace_events(json);
  EXPECT_TRUE(c.ok()) << c.summary() << json;
  EXPECT_NE(json.find("\"ts\":0.002,\"dur\":0.001,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"ts\":0.003,\"dur\":0.002,"), std::string::npos) << json;
}

TEST(ChromeTraceEvents, UnnamedProcessesAreWrittenOnlyWhenUsed) {
  predict::Trace t;
  t.processes = {"worker 0", "", ""};  // worker 1 and 2 not traced
  t.threads = {"compute"};
  t.spans = {{0, 0, "a", "compute", 0, 1e-3}, {2, 0, "b", "compute", 0, 1e-3}};
  const std::string json = write(t);
  const TraceCheck c = check_trace_events(json);
  EXPECT_TRUE(c.ok()) << c.summary();
  EXPECT_EQ(c.process_names, (std::set<std::string>{"worker 0", "process 2"}));
}

// ---- the validator

TraceCheck check(const std::string& events) { return check_trace_events("{\"traceEvents\":[" + events + "]}"); }

const std::string kNames =
    R"({"name":"process_name","ph":"M","pid":1,"args":{"name":"p"}},)"
    R"({"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"t"}})";

TEST(TraceEventChecker, AcceptsNestedAndDisjointSlices) {
  const TraceCheck c = check(kNames + R"(,{"name":"a","ph":"X","ts":0,"dur":10,"pid":1,"tid":1})"
                                      R"(,{"name":"b","ph":"X","ts":2,"dur":3,"pid":1,"tid":1})"
                                      R"(,{"name":"c","ph":"X","ts":10,"dur":1,"pid":1,"tid":1})");
  EXPECT_TRUE(c.ok()) << c.summary();
  EXPECT_EQ(c.events.at("X"), 3u);
}

TEST(TraceEventChecker, RejectsPartialOverlapOnATrack) {
  const TraceCheck c = check(kNames + R"(,{"name":"a","ph":"X","ts":0,"dur":10,"pid":1,"tid":1})"
                                      R"(,{"name":"b","ph":"X","ts":5,"dur":10,"pid":1,"tid":1})");
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.partial_overlaps, 1u);
}

TEST(TraceEventChecker, RejectsMissingFieldsNegativeTimesAndUnknownPhases) {
  EXPECT_FALSE(check(kNames + R"(,{"name":"a","ph":"X","ts":0,"pid":1,"tid":1})").ok());               // no dur
  EXPECT_FALSE(check(kNames + R"(,{"name":"a","ph":"X","ts":-1,"dur":1,"pid":1,"tid":1})").ok());      // ts < 0
  EXPECT_FALSE(check(kNames + R"(,{"name":"a","ph":"X","ts":"0","dur":1,"pid":1,"tid":1})").ok());     // string ts
  EXPECT_FALSE(check(kNames + R"(,{"name":"a","ph":"Q","ts":0,"pid":1,"tid":1})").ok());               // unknown
  EXPECT_FALSE(check(kNames + R"(,{"name":"c","ph":"C","ts":0,"pid":1,"args":{"v":"high"}})").ok());    // not numeric
  EXPECT_FALSE(check(kNames + R"(,{"name":"c","ph":"C","ts":0,"pid":1})").ok());                        // no args
  EXPECT_TRUE(check(kNames + R"(,{"name":"c","ph":"C","ts":0,"pid":1,"args":{"v":1}})").ok());
  EXPECT_FALSE(check_trace_events("{\"events\":[]}").ok());
  EXPECT_FALSE(check_trace_events("{\"traceEvents\":[").ok());
}

TEST(TraceEventChecker, RejectsUnnamedPidsAndTracks) {
  EXPECT_FALSE(check(kNames + R"(,{"name":"a","ph":"X","ts":0,"dur":1,"pid":2,"tid":1})").ok());
  EXPECT_FALSE(check(kNames + R"(,{"name":"a","ph":"X","ts":0,"dur":1,"pid":1,"tid":2})").ok());
  EXPECT_FALSE(check(kNames + R"(,{"name":"c","ph":"C","ts":0,"pid":3,"args":{"v":1}})").ok());
  EXPECT_TRUE(check(kNames + R"(,{"name":"g","ph":"i","s":"g","ts":0})").ok());
}

TEST(TraceEventChecker, RejectsUnpairedOrUnboundFlows) {
  const std::string slices = kNames + R"(,{"name":"a","ph":"X","ts":0,"dur":10,"pid":1,"tid":1})"
                                      R"(,{"name":"b","ph":"X","ts":20,"dur":10,"pid":1,"tid":1})";
  const std::string s = R"(,{"name":"f","cat":"flow","ph":"s","id":1,"ts":0,"pid":1,"tid":1})";
  const std::string f = R"(,{"name":"f","cat":"flow","ph":"f","bp":"e","id":1,"ts":20,"pid":1,"tid":1})";
  EXPECT_TRUE(check(slices + s + f).ok()) << check(slices + s + f).summary();
  EXPECT_EQ(check(slices + s + f).flows, 1u);
  EXPECT_FALSE(check(slices + s).ok());          // no finish
  EXPECT_FALSE(check(slices + f).ok());          // no start
  EXPECT_FALSE(check(slices + s + s + f).ok());  // two starts
  // Finish before start; a flow end outside every slice; ends of another name.
  EXPECT_FALSE(check(slices + R"(,{"name":"f","cat":"flow","ph":"s","id":1,"ts":20,"pid":1,"tid":1})"
                              R"(,{"name":"f","cat":"flow","ph":"f","id":1,"ts":0,"pid":1,"tid":1})")
                   .ok());
  EXPECT_FALSE(check(slices + R"(,{"name":"f","cat":"flow","ph":"s","id":1,"ts":15,"pid":1,"tid":1})" + f).ok());
  EXPECT_FALSE(check(slices + s + R"(,{"name":"g","cat":"flow","ph":"f","id":1,"ts":20,"pid":1,"tid":1})").ok());
}

}  // namespace chrome_trace_test
}  // namespace
}  // namespace stepcast::report
