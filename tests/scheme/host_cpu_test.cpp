// Host CPU per byte of a parameter server's transfers (workload.comm_cpu_per_byte, c): a worker
// serialises each push of b bytes before it sends it and deserialises each pull after it
// arrived, c b each, and its compute lane pays the same time (worker_runtime.hpp: host work).
// Closed forms where nothing overlaps (one worker, one layer), the exact cost of a compute-bound
// step (every byte pulled and pushed once: 2 x model bytes x c more), monotonicity, and the
// scenario key.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "layered_workload.hpp"
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace stepcast::scheme {
namespace {
namespace host_cpu_test {  // this file's own names: test files are compiled several to a unit

bool close(double a, double b, double tolerance = 1e-9) {
  return std::fabs(a - b) <= tolerance * std::max({std::fabs(a), std::fabs(b), 1e-12});
}

using test_workloads::layered;

SchemeConfig ps(int shards) {
  SchemeConfig s;
  s.scheme = Scheme::ParameterServer;
  s.ps.count = shards;
  s.ps.order = PsOrder::Fifo;
  return s;
}

cluster::ClusterSpec plain_switch(int workers, double bw, double latency) {
  cluster::ClusterSpec s;
  s.workers = workers;
  s.topology = cluster::Topology::Switch;
  s.nic_bw = bw;
  s.latency = latency;
  return s;
}

TEST(HostCpu, OneWorkerPaysItOnceForThePullAndOnceForThePush) {
  // One layer, one shard: pull (S/B + a), deserialise (c S), forward, backward, serialise (c S),
  // push (S/B + a); the next step's pull waits for the applied gradient (sync).
  constexpr double kS = 4e7, kB = 1.25e9, kA = 5e-6, kF = 2e-3, kBwd = 4e-3, kC = 1e-9;
  workload::Workload w = layered({kS}, kF, kBwd);
  w.comm_cpu_per_byte = kC;
  const double transfer = kS / kB + kA;
  for (bool fast : {true, false}) {
    const SimulationResult r = simulate_steps(w, plain_switch(1, kB, kA), ps(1),
                                              {.warmup_steps = 1, .measure_steps = 3, .fast_paths = fast});
    const WorkerTimes& t = r.workers.front();
    EXPECT_TRUE(close(t.cycle, 2 * transfer + 2 * kC * kS + kF + kBwd)) << "fast " << fast << ": " << t.cycle;
    // The CPU is busy: compute, not communication.
    EXPECT_TRUE(close(t.compute, kF + kBwd + 2 * kC * kS)) << t.compute;
    EXPECT_TRUE(close(t.communication + t.wait, 2 * transfer)) << t.communication;
  }
}

TEST(HostCpu, AComputeBoundStepGrowsByTheCpuOfEveryByteItMoves) {
  // One worker, one shard, compute far above the transfers: the pulls arrive one after the other
  // in the order the forward needs them, the first before any other, so the lane is idle until
  // the first arrives in both runs and busy from then on, computing or handling a message; it
  // waits again only after the last push. So each byte pulled and pushed costs the step c
  // seconds: 2 x model x c in all. (Where host work can fill time the lane would have waited
  // anyway, e.g. a later tensor's pull arriving first from another shard, or where the CPU moves
  // transfers in time and so changes how they share links, it costs less: then only the
  // monotonicity below holds.)
  const std::vector<double> bytes{2e6, 1e6, 3e6, 1e6, 2e6, 1e6};
  const double model = 1e7, c = 2e-9;
  workload::Workload w = layered(bytes, 0.02, 0.04);
  const cluster::ClusterSpec spec = plain_switch(1, 12.5e9, 5e-6);
  const SimulationResult free_cpu = simulate_steps(w, spec, ps(1), {.warmup_steps = 1, .measure_steps = 2});
  w.comm_cpu_per_byte = c;
  for (bool fast : {true, false}) {
    const SimulationResult paid =
        simulate_steps(w, spec, ps(1), {.warmup_steps = 1, .measure_steps = 2, .fast_paths = fast});
    EXPECT_TRUE(close(paid.workers.front().cycle - free_cpu.workers.front().cycle, 2 * model * c, 1e-6))
        << "fast " << fast << ": " << paid.workers.front().cycle << " vs " << free_cpu.workers.front().cycle;
    EXPECT_TRUE(close(paid.workers.front().compute - free_cpu.workers.front().compute, 2 * model * c, 1e-6));
  }
  // The coarse and analytic predictors add the same term to the compute.
  for (predict::Predictor p : {predict::Predictor::Coarse, predict::Predictor::Analytic}) {
    const predict::Options options{.predictor = p, .warmup_steps = 1, .measure_steps = 2};
    workload::Workload unpaid = w;
    unpaid.comm_cpu_per_byte = 0;
    const predict::Result with = predict::predict(w, spec, ps(1), options);
    const predict::Result without = predict::predict(unpaid, spec, ps(1), options);
    EXPECT_TRUE(close(with.breakdown.compute - without.breakdown.compute, 2 * model * c, 1e-6))
        << to_string(p);
  }
}

TEST(HostCpu, MoreCpuPerByteNeverSpeedsAFifoStepAndOtherSchemesIgnoreIt) {
  // In fifo order it did not on any of these cases. In random order it need not: on this
  // case with one shard the step is 0.564 s at c = 0 and 0.513 s at c = 0.1 ns per byte, because
  // delaying each worker's messages changes which pieces meet at the shard's link, and when.
  workload::Workload w = layered({3e7, 1e7, 5e7, 2e7}, 2e-3, 4e-3);
  for (int shards : {1, 2, 4}) {
    double previous = 0;
    for (double c : {0.0, 1e-10, 1e-9, 1e-8}) {
      w.comm_cpu_per_byte = c;
      const SimulationResult r =
          simulate_steps(w, plain_switch(8, 3e9, 5e-6), ps(shards), {.warmup_steps = 1, .measure_steps = 2});
      EXPECT_GE(r.workers.front().cycle, previous * (1 - 1e-12)) << shards << " shards, c " << c;
      previous = r.workers.front().cycle;
    }
  }
  SchemeConfig allreduce;
  allreduce.scheme = Scheme::AllReduce;
  w.comm_cpu_per_byte = 0;
  const SimulationResult free_cpu = simulate_steps(w, plain_switch(8, 3e9, 5e-6), allreduce, {});
  w.comm_cpu_per_byte = 1e-8;
  const SimulationResult with = simulate_steps(w, plain_switch(8, 3e9, 5e-6), allreduce, {});
  EXPECT_EQ(with.workers.front().cycle, free_cpu.workers.front().cycle);
}

TEST(HostCpuScenario, TheKeyReadsAsTimePerByteAndRejectsImpossibleValues) {
  constexpr const char* kText =
      "workload: {model: resnet50, step_time: 100ms, comm_cpu_per_byte: 0.5ns}\n"
      "training: {scheme: ps}\n";
  const scenario::Scenario s = scenario::parse_scenario(kText, "h.yaml");
  EXPECT_DOUBLE_EQ(s.workload.comm_cpu_per_byte, 0.5e-9);
  EXPECT_DOUBLE_EQ(scenario::build_workload(s).comm_cpu_per_byte, 0.5e-9);
  for (const char* bad : {"workload.comm_cpu_per_byte=-1ns", "workload.comm_cpu_per_byte=2ms",
                          "workload.comm_cpu_per_byte=.nan", "workload.comm_cpu_per_byte=fast"}) {
    try {
      (void)scenario::parse_scenario(kText, "h.yaml", {bad});
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.where().key, "workload.comm_cpu_per_byte") << bad << ": " << e.what();
    }
  }
}

}  // namespace host_cpu_test
}  // namespace
}  // namespace stepcast::scheme
