// Per-message costs of a parameter server (training.ps.message_overhead) and the latency of its
// messages (cluster.rpc_latency): closed forms where bandwidth costs nothing, the equality of
// the unset keys with the model without them, and what a per-message cost does to scaling.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "layered_workload.hpp"
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::scheme {
namespace {
namespace message_overhead_test {  // this file's own names: test files are compiled several to a unit

using test_workloads::cluster_of;
using test_workloads::layered;
using test_workloads::mean_cycle;
using test_workloads::ps;

using cluster::ClusterSpec;
using workload::Workload;

double busy(const SimulationResult& r, const std::string& resource) {
  for (const ResourceLoad& load : r.loads) {
    if (load.resource == resource) return load.busy;
  }
  return -1;
}

TEST(MessageOverhead, SyncStepGrowsByTheBusiestShardsMessagesTimesTheOverhead) {
  // 1 kB tensors through 1 PB/s NICs with 1 ns latency and ~10 ns of compute: without overhead
  // the step costs nothing. With o per message, the busiest shard's lane handles each of its m
  // pieces once per client in the pull phase and once in the push phase, one at a time: N m o
  // each, so the step grows by at least 2 N m o. Layer order (fifo) keeps the next step's pulls
  // behind this step's pushes (layer 0, needed first, is pushed last), and the lane idles only
  // while a worker's own end works with nothing else queued: at most one o per phase (the first
  // push being prepared, the last pull being handled), so
  //   2 N m o <= growth <= 2 (N m + 1) o,
  // the upper end for one worker, whose end and the lane take turns; with several, one worker's
  // end works while the lane serves another's messages, and the step is the lane's 2 N m o.
  // split: m = L pieces on every shard; whole: ceil(L / P) on the busiest.
  const int layers = 8;
  const double o = 50e-6;
  const Workload w = layered(layers, 1e3, 1e-9, 1e-9);
  struct Case {
    int workers, shards;
    PsPartition partition;
    int messages;  // m at the busiest shard
  };
  for (const Case& c : std::vector<Case>{{1, 1, PsPartition::Split, 8},
                                         {4, 1, PsPartition::Split, 8},
                                         {16, 2, PsPartition::Split, 8},
                                         {16, 3, PsPartition::Whole, 3},
                                         {32, 4, PsPartition::Whole, 2}}) {
    SCOPED_TRACE("N = " + std::to_string(c.workers) + ", P = " + std::to_string(c.shards));
    const ClusterSpec spec = cluster_of(c.workers, 1e15, 1e-9);
    const SimulationOptions options{.warmup_steps = 1, .measure_steps = 3};
    const double base =
        mean_cycle(simulate_steps(w, spec, ps(Mode::Sync, c.shards, c.partition, PsOrder::Fifo, 0), options));
    const SimulationResult r =
        simulate_steps(w, spec, ps(Mode::Sync, c.shards, c.partition, PsOrder::Fifo, o), options);
    const double growth = mean_cycle(r) - base;
    const double lane = 2.0 * c.workers * c.messages * o;
    EXPECT_GE(mean_cycle(r), lane * (1 - 1e-9));  // (the ~20 ns of compute overlap the lane)
    EXPECT_LE(growth, lane + 2 * o * (1 + 1e-6));
    if (c.workers == 1) {
      EXPECT_NEAR(growth, lane + 2 * o, 1e-4 * lane);  // the base step's ~20 ns of compute overlap
    }
    EXPECT_EQ(r.engine, SimulationEngine::Full);  // the fast path declines a message overhead
    // The busiest lane works 2 N m o of the step.
    EXPECT_NEAR(busy(r, "PS messages"), 2.0 * c.workers * c.messages * o / mean_cycle(r), 0.02);
    // The coarse predictor's message terms: a phase lasts N m o (several workers) or (m + 1) o
    // (one worker alone), plus latency.
    const predict::Result coarse =
        predict::predict_coarse(w, spec, ps(Mode::Sync, c.shards, c.partition, PsOrder::Fifo, o),
                                {.predictor = predict::Predictor::Coarse});
    EXPECT_NEAR(coarse.step_time, mean_cycle(r), 0.03 * mean_cycle(r));
    // And the analytic bound, clients x the lane's 2 m o, never exceeds the simulated step.
    const predict::Result analytic =
        predict::predict_analytic(w, spec, ps(Mode::Sync, c.shards, c.partition, PsOrder::Fifo, o),
                                  {.predictor = predict::Predictor::Analytic});
    EXPECT_LE(analytic.step_time, mean_cycle(r) * (1 + 1e-9));
    EXPECT_NEAR(analytic.step_time, 2.0 * c.workers * c.messages * o, 1e-6 * analytic.step_time);
  }
}

TEST(MessageOverhead, NoOrderBeatsTheBusiestLane) {
  // A random order lets pulls of some pieces overlap pushes of others, but the lane handles all
  // 2 N m messages of a step one at a time: step >= 2 N m o for every order and seed, sync or
  // async (async: per worker step, N workers' messages share it).
  const Workload w = layered(8, 1e3, 1e-6, 2e-6);
  const double o = 20e-6;
  for (Mode mode : {Mode::Sync, Mode::Async}) {
    for (uint64_t seed : {1, 2, 3}) {
      SCOPED_TRACE(std::string(mode == Mode::Sync ? "sync" : "async") + ", seed " + std::to_string(seed));
      const int n = 8;
      const SimulationResult r =
          simulate_steps(w, cluster_of(n, 1e15, 1e-9), ps(mode, 1, PsPartition::Split, PsOrder::Random, o),
                         {.warmup_steps = 2, .measure_steps = 4, .seed = seed});
      // 2% for the measured window's edges.
      EXPECT_GE(mean_cycle(r), 2.0 * n * 8 * o * (1 - 0.02));
      EXPECT_LE(busy(r, "PS messages"), 1 + 1e-9);
      EXPECT_GT(busy(r, "PS messages"), 0.9);  // and it is what the step waits on
    }
  }
}

TEST(MessageOverhead, ZeroOverheadAndRpcLatencyEqualToTheLinkLatencyChangeNothing) {
  // On one switch with a worker per node, every pull and push path has exactly the link latency
  // (half on each NIC hop); setting rpc_latency to it and the overhead to 0 must give the same
  // result bit for bit, on the fast path and on the full engine, sync and async.
  const Workload w = layered(6, 2e6, 1e-3, 2e-3);
  for (Mode mode : {Mode::Sync, Mode::Async}) {
    for (bool fast_paths : {true, false}) {
      SCOPED_TRACE(std::string(mode == Mode::Sync ? "sync" : "async") + (fast_paths ? ", fast" : ", full"));
      const ClusterSpec plain = cluster_of(6, 1.25e9, 7e-6);
      ClusterSpec rpc = plain;
      rpc.rpc_latency = 7e-6;
      const SchemeConfig scheme = ps(mode, 2, PsPartition::Whole, PsOrder::Fifo, 0);
      const SimulationOptions options{.warmup_steps = 1, .measure_steps = 3, .fast_paths = fast_paths};
      const SimulationResult a = simulate_steps(w, plain, scheme, options);
      const SimulationResult b = simulate_steps(w, rpc, scheme, options);
      ASSERT_EQ(a.workers.size(), b.workers.size());
      for (size_t i = 0; i < a.workers.size(); ++i) {
        EXPECT_EQ(a.workers[i].cycle, b.workers[i].cycle);
        EXPECT_EQ(a.workers[i].communication, b.workers[i].communication);
        EXPECT_EQ(a.workers[i].wait, b.workers[i].wait);
      }
      EXPECT_EQ(a.window, b.window);
      EXPECT_EQ(a.bytes_sent, b.bytes_sent);
      EXPECT_EQ(a.engine, b.engine);
      EXPECT_EQ(a.engine, mode == Mode::Sync && fast_paths ? SimulationEngine::Fast : SimulationEngine::Full);
      for (predict::Predictor p : {predict::Predictor::Coarse, predict::Predictor::Analytic}) {
        const predict::Options o{.predictor = p};
        EXPECT_EQ(predict::predict(w, plain, scheme, o), predict::predict(w, rpc, scheme, o));
      }
    }
  }
}

TEST(MessageOverhead, RpcLatencyReplacesThePathLatencyOfPullsAndPushes) {
  // Free bandwidth, 1 ns compute ops: a sync fifo step is a pull phase then a push phase, each
  // pipelined on its connection, so each pays one message latency: step ~ 2 a. With
  // rpc_latency = 1 ms instead of the 2 us links the step grows by 2 (1 ms - 2 us), on the fast
  // path and the full engine alike, and coarse adds the same.
  const Workload w = layered(4, 1e3, 1e-9, 1e-9);
  ClusterSpec spec = cluster_of(4, 1e15, 2e-6);
  const SchemeConfig scheme = ps(Mode::Sync, 2, PsPartition::Split, PsOrder::Fifo, 0);
  for (bool fast_paths : {true, false}) {
    const SimulationOptions options{.warmup_steps = 1, .measure_steps = 3, .fast_paths = fast_paths};
    spec.rpc_latency.reset();
    const double base = mean_cycle(simulate_steps(w, spec, scheme, options));
    const double base_coarse = predict::predict_coarse(w, spec, scheme, {}).step_time;
    spec.rpc_latency = 1e-3;
    const SimulationResult r = simulate_steps(w, spec, scheme, options);
    EXPECT_EQ(r.engine, fast_paths ? SimulationEngine::Fast : SimulationEngine::Full);
    EXPECT_NEAR(mean_cycle(r) - base, 2 * (1e-3 - 2e-6), 1e-3 * 2e-3);
    EXPECT_NEAR(predict::predict_coarse(w, spec, scheme, {}).step_time - base_coarse, 2 * (1e-3 - 2e-6),
                1e-9);
  }
}

TEST(MessageOverhead, ThroughputStopsScalingAtScale) {
  // 20 tensors of 10 kB, 100 ms of compute, 100 Gbps NICs: 128 workers move 26 MB through the
  // server's NIC each way per step, 2 ms, so without overhead a sync PS scales almost linearly
  // to 128 workers. With 50 us per message
  // the one shard's lane needs 2 N x 20 x 50 us = N x 2 ms a step, more than the compute from
  // N = 50 on: throughput N b / (C + 2 N m o) approaches b / (2 m o) and stops growing.
  const Workload w = layered(20, 1e4, 1.6e-3, 3.4e-3);
  std::vector<double> with, without;
  const std::vector<int> workers{16, 32, 64, 128};
  for (int n : workers) {
    const ClusterSpec spec = cluster_of(n, 12.5e9, 5e-6);
    const predict::Options options{.warmup_steps = 1, .measure_steps = 2};
    without.push_back(
        predict::predict(w, spec, ps(Mode::Sync, 1, PsPartition::Whole, PsOrder::Fifo, 0), options)
            .throughput);
    with.push_back(
        predict::predict(w, spec, ps(Mode::Sync, 1, PsPartition::Whole, PsOrder::Fifo, 50e-6), options)
            .throughput);
  }
  for (size_t i = 1; i < workers.size(); ++i) {
    SCOPED_TRACE("N = " + std::to_string(workers[i]));
    EXPECT_GT(without[i], 1.9 * without[i - 1]);  // keeps scaling
    EXPECT_LE(with[i], 2 * with[i - 1]);          // never more than linear
  }
  // Past the knee: doubling from 64 to 128 workers gains under 20%, and the rate stays below the
  // lane's bound b / (2 m o) = 32 / 2 ms = 16,000 samples/s.
  EXPECT_LT(with[3], 1.2 * with[2]);
  EXPECT_LE(with[3], 32 / (2 * 20 * 50e-6) * (1 + 1e-9));
  EXPECT_LT(with[3], 0.5 * without[3]);
}

}  // namespace message_overhead_test
}  // namespace
}  // namespace stepcast::scheme
