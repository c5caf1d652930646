// The execution traces the fine engine records, written as Chrome trace JSON and checked by the
// trace event validator (tests/report/trace_event_checker.hpp): no partially overlapping slices
// on any track for a parameter server in random order (4 workers, 2 shards), a bucketed
// all-reduce and fully sharded data parallelism; the flows, counters and step markers each
// records; --trace-workers / --trace-steps selections; and a trace changes no result.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "report/trace_event_checker.hpp"
#include "scheme/trace_network.hpp"
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/report/report.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::scheme {
namespace {
namespace trace_test {  // this file's own names: test files are compiled several to a unit

using stepcast_trace_test::check_trace_events;
using stepcast_trace_test::TraceCheck;

/// One lane: forward ops of layers 0..L-1 then backward ops L-1..0, each after the one before;
/// layer l's tensor is read by its forward op and its gradient produced by its backward op.
workload::Workload layers(int count, double bytes, double forward, double backward) {
  workload::Workload w;
  w.name = "layers";
  w.batch_per_worker = 32;
  for (int l = 0; l < count; ++l) {
    workload::Op op{.name = fmt::format("fwd{}", l),
                    .kind = workload::OpKind::Forward,
                    .duration = forward,
                    .lane = 0,
                    .layer = l,
                    .deps = {}};
    if (l > 0) op.deps = {l - 1};
    w.ops.push_back(op);
  }
  for (int l = count - 1; l >= 0; --l) {
    const int before = static_cast<int>(w.ops.size()) - 1;
    w.ops.push_back({.name = fmt::format("bwd{}", l),
                     .kind = workload::OpKind::Backward,
                     .duration = backward,
                     .lane = 0,
                     .layer = l,
                     .deps = {before}});
  }
  for (int l = 0; l < count; ++l) {
    w.tensors.push_back(
        {.name = fmt::format("w{}", l), .bytes = bytes, .producer = 2 * count - 1 - l, .consumers = {l}});
  }
  EXPECT_EQ(workload::validate(w), "");
  return w;
}

cluster::ClusterSpec switch_of(int workers, int per_node = 1) {
  cluster::ClusterSpec spec;
  spec.workers = workers;
  spec.workers_per_node = per_node;
  spec.nic_bw = 1e9;
  spec.latency = 5e-6;
  return spec;
}

SchemeConfig random_ps(int shards) {
  SchemeConfig s;
  s.scheme = Scheme::ParameterServer;
  s.mode = Mode::Sync;
  s.ps.count = shards;
  s.ps.partition = PsPartition::Split;
  s.ps.order = PsOrder::Random;
  s.ps.apply_bw = 20e9;  // applies take time: the apply track is drawn
  return s;
}

SchemeConfig allreduce() {
  SchemeConfig s;
  s.scheme = Scheme::AllReduce;
  s.allreduce.bucket_bytes = 3e6;
  return s;
}

SchemeConfig full_sharding() {
  SchemeConfig s;
  s.scheme = Scheme::Fsdp;
  s.fsdp.sharding = FsdpSharding::Full;
  s.fsdp.prefetch = 1;
  return s;
}

SimulationOptions traced(sim::TraceSelection selection = {}) {
  SimulationOptions o{.warmup_steps = 1, .measure_steps = 2, .seed = 3, .record_trace = true};
  o.trace_selection = std::move(selection);
  return o;
}

std::string json_of(const sim::Trace& trace) {
  std::ostringstream out;
  report::write_chrome_trace(out, trace);
  return out.str();
}

/// Writes and validates the trace; fails the test on any problem.
TraceCheck valid(const SimulationResult& r) {
  const TraceCheck c = check_trace_events(json_of(r.trace));
  EXPECT_TRUE(c.ok()) << c.summary();
  EXPECT_EQ(c.partial_overlaps, 0u);
  return c;
}

std::set<int> processes_with_spans(const sim::Trace& trace, const char* category) {
  std::set<int> out;
  for (const sim::TraceSpan& s : trace.spans) {
    if (s.category == category) out.insert(s.process);
  }
  return out;
}

TEST(SimulatedTrace, ParameterServerInRandomOrderNestsOnEveryTrack) {
  const SimulationResult r =
      simulate_steps(layers(12, 1e6, 1e-3, 2e-3), switch_of(4), random_ps(2), traced());
  const TraceCheck c = valid(r);
  // One track per connection: each worker pulls from and pushes to both shards.
  for (const char* name :
       {"pull from ps 0", "pull from ps 1", "push to ps 0", "push to ps 1", "apply", "steps"}) {
    EXPECT_TRUE(c.thread_names.count(name)) << name;
  }
  EXPECT_TRUE(c.process_names.count("ps 1"));
  EXPECT_TRUE(c.process_names.count("network"));
  // Every push is applied (applies take time here), each with its arrow; some op waited for a pull.
  std::size_t pushes = 0, pulls = 0;
  for (const sim::TraceSpan& s : r.trace.spans) {
    pushes += s.category == "push" ? 1 : 0;
    pulls += s.category == "pull" ? 1 : 0;
  }
  EXPECT_GE(pushes, 4u * 12u * 3u);  // workers x tensors (split over the shards) x steps
  EXPECT_EQ(pulls, pushes);
  EXPECT_EQ(c.flow_names.at("push"), pushes);
  EXPECT_GT(c.flow_names.at("input"), 0u);
  // Counters for the shards' NICs and the NIC means, with numbers (the validator checks them).
  EXPECT_TRUE(c.counters.count("server0.nic.up"));
  EXPECT_TRUE(c.counters.count("worker NICs in (mean)"));
  EXPECT_TRUE(c.counters.count("server NICs out (mean)"));
  // Steps: one slice per step per worker, warm-up named so, and the window marker.
  std::size_t steps = 0, warmups = 0;
  for (const sim::TraceSpan& s : r.trace.spans) {
    if (s.category != "step") continue;
    ++steps;
    warmups += s.name.rfind("warm-up", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(steps, 4u * 3u);
  EXPECT_EQ(warmups, 4u);
  ASSERT_EQ(r.trace.instants.size(), 1u);
  EXPECT_EQ(r.trace.instants[0].name, "measured window opens");
  // Transfers carry bytes, shard, step and their links.
  const auto pull = std::find_if(r.trace.spans.begin(), r.trace.spans.end(),
                                 [](const sim::TraceSpan& s) { return s.category == "pull"; });
  ASSERT_NE(pull, r.trace.spans.end());
  EXPECT_GT(pull->bytes, 0);
  EXPECT_GE(pull->shard, 0);
  EXPECT_GE(pull->step, 0);
  ASSERT_GE(pull->path, 0);
  EXPECT_NE(r.trace.paths[static_cast<size_t>(pull->path)].find(".nic."), std::string::npos);
}

TEST(SimulatedTrace, ParameterServerWithLocalAggregationNests) {
  SchemeConfig s = random_ps(2);
  s.ps.local_aggregation = true;
  const SimulationResult r = simulate_steps(layers(8, 1e6, 1e-3, 2e-3), switch_of(4, 2), s, traced());
  const TraceCheck c = valid(r);
  EXPECT_TRUE(c.thread_names.count("broadcast from leader"));
  EXPECT_TRUE(c.thread_names.count("gather to leader"));
}

TEST(SimulatedTrace, AllReduceNestsAndDrawsBucketsToTheirCollectives) {
  const SimulationResult r = simulate_steps(layers(12, 1e6, 1e-3, 2e-3), switch_of(4), allreduce(), traced());
  const TraceCheck c = valid(r);
  EXPECT_TRUE(c.thread_names.count("allreduce"));
  std::size_t collectives = 0;
  for (const sim::TraceSpan& s : r.trace.spans) {
    if (s.category != "allreduce") continue;
    ++collectives;
    EXPECT_GE(s.bucket, 0);
    EXPECT_GT(s.bytes, 0);
  }
  EXPECT_EQ(collectives, 4u * 4u * 3u);  // workers x buckets (12 MB in 3 MB) x steps
  EXPECT_EQ(c.flow_names.at("bucket ready"), collectives);
  EXPECT_TRUE(c.counters.count("worker NICs out (mean)"));
}

TEST(SimulatedTrace, FullShardingNestsAndDrawsGathersToTheOpsThatWaited) {
  const SimulationResult r =
      simulate_steps(layers(8, 4e6, 1e-4, 2e-4), switch_of(4), full_sharding(), traced());
  const TraceCheck c = valid(r);
  EXPECT_TRUE(c.thread_names.count("all-gather"));
  EXPECT_TRUE(c.thread_names.count("reduce-scatter"));
  EXPECT_GT(c.flow_names.at("input"), 0u);  // communication-bound: ops wait for their gathers
  std::size_t reduces = 0;
  for (const sim::TraceSpan& s : r.trace.spans) reduces += s.name.rfind("reduce-scatter", 0) == 0 ? 1 : 0;
  EXPECT_GT(reduces, 0u);
  EXPECT_EQ(c.flow_names.at("gradients ready"), reduces);
}

// A parallel layout's collectives queue on their group's stream behind the ones issued before
// them (FSDP's reduce-scatters of two units, a tensor group's gathers): each is drawn from when its
// transfers begin, not from when its group released it, so no two overlap on a track (an
// exploratory review found 24 partial overlaps on "data-parallel reductions" of this layout).
TEST(SimulatedTrace, ParallelLayoutCollectivesNestOnEveryTrack) {
  for (const char* schedule : {"1f1b", "zero_bubble"}) {
    SCOPED_TRACE(schedule);
    const scenario::Scenario s = scenario::load_scenario(
        std::string(STEPCAST_SOURCE_DIR) + "/examples/llama3-70b-fsdp-tp.yaml",
        {"cluster.workers=16", "training.parallel.tensor=2", "training.parallel.pipeline=4",
         "workload.global_batch=8", "workload.seq_len=1024",
         fmt::format("training.pipeline.schedule={}", schedule), "steps.warmup=1", "steps.measure=1"});
    SimulationOptions o = traced();
    o.warmup_steps = 1;
    o.measure_steps = 1;
    const SimulationResult r = simulate_steps(scenario::build_workload(s), s.cluster, s.scheme, o);
    const TraceCheck c = valid(r);
    EXPECT_TRUE(c.thread_names.count("data-parallel reductions")) << c.summary();
  }
}

TEST(SimulatedTrace, SelectionKeepsOnlyTheChosenWorkersAndSteps) {
  const workload::Workload w = layers(6, 1e6, 1e-3, 2e-3);
  const SimulationResult all = simulate_steps(w, switch_of(4), random_ps(2), traced());
  const SimulationResult some = simulate_steps(w, switch_of(4), random_ps(2),
                                               traced({.workers = {1, 3}, .first_workers = 0, .steps = 1}));
  valid(some);
  EXPECT_EQ(processes_with_spans(some.trace, "compute"), (std::set<int>{1, 3}));
  std::set<int> steps;
  for (const sim::TraceSpan& s : some.trace.spans) steps.insert(s.step);
  EXPECT_EQ(steps, std::set<int>{1});  // the first measured step (after one warm-up)
  // The servers apply every worker's gradients, kept workers' or not.
  EXPECT_EQ(processes_with_spans(some.trace, "apply"), (std::set<int>{4, 5}));
  EXPECT_LT(some.trace.spans.size(), all.trace.spans.size() / 4);
  // Workers not kept are not written.
  const TraceCheck c = check_trace_events(json_of(some.trace));
  EXPECT_FALSE(c.process_names.count("worker 0"));
  EXPECT_TRUE(c.process_names.count("worker 3"));
  // The first workers only (the CLI's default at many workers).
  const SimulationResult first =
      simulate_steps(w, switch_of(4), allreduce(), traced({.workers = {}, .first_workers = 2}));
  EXPECT_EQ(processes_with_spans(first.trace, "compute"), (std::set<int>{0, 1}));
}

TEST(SimulatedTrace, RecordingChangesNoResult) {
  const workload::Workload w = layers(8, 1e6, 1e-3, 2e-3);
  for (const SchemeConfig& s : {random_ps(2), allreduce(), full_sharding()}) {
    SimulationOptions plain = traced();
    plain.record_trace = false;
    plain.fast_paths = false;
    const SimulationResult a = simulate_steps(w, switch_of(4), s, plain);
    const SimulationResult b = simulate_steps(w, switch_of(4), s, traced());
    ASSERT_EQ(a.workers.size(), b.workers.size());
    for (size_t i = 0; i < a.workers.size(); ++i) {
      EXPECT_EQ(a.workers[i].cycle, b.workers[i].cycle);
      EXPECT_EQ(a.workers[i].communication, b.workers[i].communication);
    }
    EXPECT_EQ(a.bytes_sent, b.bytes_sent);
    EXPECT_EQ(a.events, b.events);
  }
}

TEST(SimulatedTrace, LinkCountersCarryTheLinksBytes) {
  // The integral of a link's utilisation counter is the bytes it carried: the bins are means.
  const cluster::ClusterSpec spec = switch_of(4);
  const SimulationResult r = simulate_steps(layers(12, 1e6, 1e-3, 2e-3), spec, allreduce(), traced({}));
  const cluster::Cluster cluster = cluster::build_cluster(spec);
  ASSERT_FALSE(r.trace.counters.empty());
  std::size_t checked = 0;
  for (const sim::TraceCounter& c : r.trace.counters) {
    if (c.series.size() != 2) continue;  // the NIC means have one series
    size_t l = 0;
    while (l < cluster.links.size() && cluster.links.name(l) != c.name) ++l;
    ASSERT_LT(l, cluster.links.size()) << c.name;
    const cluster::Link link = cluster.links[l];
    double bytes = 0;
    for (size_t k = 0; k + 1 < c.times.size(); ++k)
      bytes += c.values[2 * k] * link.bw * (c.times[k + 1] - c.times[k]);
    // All of the run's traffic: 3 steps of a ring all-reduce of 12 MB, 2 (N-1)/N x 12 MB per NIC
    // each way.
    const double expected = 3 * 2.0 * 3 / 4 * 12e6;
    EXPECT_NEAR(bytes, expected, expected * 2e-3) << c.name;
    EXPECT_LE(c.times.size(), TracedNetwork::kBins + 1);
    ++checked;
  }
  EXPECT_EQ(checked, 8u);  // 4 NICs x 2 directions
}

}  // namespace trace_test
}  // namespace
}  // namespace stepcast::scheme
