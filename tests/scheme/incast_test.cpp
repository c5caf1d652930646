// TCP incast at a shallow-buffered switch port (cluster.transport: tcp, cluster.switch.buffer,
// cluster.tcp_rto_min; docs/models.md, "Incast"): the closed form of the incast studies for n
// synchronized senders into one port, D / (D / C + RTO_min), above n* = (B + C x RTT) / w_min;
// exactly nothing at or below it, with rdma or without a buffer; one timeout per connection and
// burst; monotone in n and RTO_min; deterministic; the fast path declines it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "layered_workload.hpp"
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::scheme {
namespace {
namespace incast_test {  // this file's own names: test files are compiled several to a unit

using test_workloads::cluster_of;
using test_workloads::layered;
using test_workloads::mean_cycle;
using test_workloads::ps;

using cluster::ClusterSpec;
using workload::Workload;

constexpr double kNic = 1.25e9;    // 10 Gbps
constexpr double kLatency = 1e-9;  // the pipe holds C x 2 ns = 2.5 bytes: n* is the buffer's
constexpr double kRto = 0.2;       // Linux's RTO_min
constexpr int kThreshold = 8;      // n* of kBuffer
constexpr double kBuffer = kThreshold * cluster::kTcpMinWindow;

ClusterSpec tcp(int workers, double buffer = kBuffer, double rto = kRto) {
  ClusterSpec spec = cluster_of(workers, kNic, kLatency);
  spec.incast = {.transport = cluster::Transport::Tcp, .switch_buffer = buffer, .tcp_rto_min = rto};
  return spec;
}

SimulationResult run(const Workload& w, const ClusterSpec& spec, const SchemeConfig& scheme,
                     bool fast_paths = false) {
  return simulate_steps(w, spec, scheme, {.warmup_steps = 1, .measure_steps = 3, .fast_paths = fast_paths});
}

TEST(Incast, ThresholdIsTheBufferPlusThePipeInMinimumWindows) {
  EXPECT_EQ(cluster::incast_threshold(kBuffer, kNic, 2 * kLatency), kThreshold);
  // 128 KB at 10 Gbps with a 20 us round trip: (131,072 + 25,000) / 2,920 = 53.4.
  EXPECT_EQ(cluster::incast_threshold(128 * 1024, kNic, 20e-6), 53);
  EXPECT_EQ(cluster::incast_threshold(0, kNic, 0), 0);
}

TEST(Incast, PushBlockOfNSendersIntoOneShardRunsAtTheClosedForm) {
  // One layer of S bytes, one dedicated shard, negligible compute: a step is the pull phase (the
  // shard's up link, N S / C, each worker's port receiving one flow) and the push phase, N
  // synchronized senders into the shard's port, D = N S. Past n* the push block takes
  // D / C + RTO_min (goodput D / (D / C + RTO_min)), so the step grows by exactly RTO_min.
  const double s = 1e6;
  const Workload w = layered(1, s, 1e-9, 1e-9);
  const SchemeConfig scheme = ps(Mode::Sync, 1, PsPartition::Whole, PsOrder::Fifo);
  for (int n : {9, 16, 64}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    const double base = mean_cycle(run(w, cluster_of(n, kNic, kLatency), scheme));
    const double with = mean_cycle(run(w, tcp(n), scheme));
    const double block = n * s / kNic;
    EXPECT_NEAR(base, 2 * block, 1e-6 * base);
    EXPECT_NEAR(with - base, kRto, 1e-9 * with);
    // The push block's goodput, from the step less the pull phase.
    const double push = with - base / 2;
    EXPECT_NEAR(n * s / push, n * s / (n * s / kNic + kRto), 1e-6 * kNic);
  }
}

TEST(Incast, TheStallIsReportedAsTheShareOfTheStepAPortWaitsOutRtoMin) {
  // The same push block: every sender ends its block together and waits RTO_min, so the shard's
  // port stalls RTO_min a step (the union of the waits), RTO_min / cycle of the window. Below the
  // threshold nothing is reported.
  const Workload w = layered(1, 1e6, 1e-9, 1e-9);
  const SchemeConfig scheme = ps(Mode::Sync, 1, PsPartition::Whole, PsOrder::Fifo);
  auto stall = [&](const SimulationResult& r) {
    for (const ResourceLoad& load : r.loads) {
      if (load.resource == cluster::kIncastStall) return load.busy;
    }
    return -1.0;
  };
  for (int n : {9, 64}) {
    const SimulationResult r = run(w, tcp(n), scheme);
    EXPECT_NEAR(stall(r), kRto / mean_cycle(r), 1e-9) << "N = " << n;
  }
  EXPECT_EQ(stall(run(w, tcp(kThreshold), scheme)), -1.0) << "at n* nothing stalls";
}

TEST(Incast, NoEffectAtOrBelowTheThresholdWithRdmaOrWithoutBuffer) {
  // To the bit: the rule never fires, and the engine runs the same events.
  const Workload w = layered(4, 1e6, 1e-4, 2e-4);
  for (PsPartition partition : {PsPartition::Whole, PsPartition::Split}) {
    for (int n : {1, 4, kThreshold}) {
      SCOPED_TRACE("N = " + std::to_string(n));
      const SchemeConfig scheme = ps(Mode::Sync, 2, partition, PsOrder::Random);
      const SimulationResult base = run(w, cluster_of(n, kNic, kLatency), scheme);
      EXPECT_EQ(mean_cycle(run(w, tcp(n), scheme)), mean_cycle(base));
    }
    const int n = 32;  // above n*, but lossless or unbounded
    const SchemeConfig scheme = ps(Mode::Sync, 2, partition, PsOrder::Random);
    const double base = mean_cycle(run(w, cluster_of(n, kNic, kLatency), scheme));
    ClusterSpec rdma = tcp(n);
    rdma.incast.transport = cluster::Transport::Rdma;
    EXPECT_EQ(mean_cycle(run(w, rdma, scheme)), base);
    EXPECT_EQ(mean_cycle(run(w, tcp(n, 0), scheme)), base);
    // And it does act here (by less than RTO_min a step where the senders' timeouts do not all
    // fall together: the others' flows use the port meanwhile).
    EXPECT_GT(mean_cycle(run(w, tcp(n), scheme)), base + kRto / 2);
  }
}

TEST(Incast, OneTimeoutPerConnectionAndBurstWhateverItsMessages) {
  // Eight layers pushed back to back on each connection: the senders stay past n* for the whole
  // push phase, one burst, and each connection pays once; so the step still grows by one RTO_min.
  const Workload w = layered(8, 2e5, 1e-9, 1e-9);
  const SchemeConfig scheme = ps(Mode::Sync, 1, PsPartition::Whole, PsOrder::Fifo);
  const int n = 16;
  const double base = mean_cycle(run(w, cluster_of(n, kNic, kLatency), scheme));
  EXPECT_NEAR(mean_cycle(run(w, tcp(n), scheme)) - base, kRto, 1e-9 * base + 1e-9);
}

TEST(Incast, PullsFromManyShardsIntoOneWorker) {
  // One worker pulling its model split over P dedicated shards: P senders into its port. Pushes
  // go one to each shard's port, so only the pull phase pays: + RTO_min past n*, nothing at it.
  const Workload w = layered(1, 16e6, 1e-9, 1e-9);
  for (int p : {kThreshold, kThreshold + 1, 16}) {
    SCOPED_TRACE("P = " + std::to_string(p));
    const SchemeConfig scheme = ps(Mode::Sync, p, PsPartition::Split, PsOrder::Fifo);
    const double base = mean_cycle(run(w, cluster_of(1, kNic, kLatency), scheme));
    const double with = mean_cycle(run(w, tcp(1), scheme));
    if (p <= kThreshold) {
      EXPECT_EQ(with, base);
    } else {
      EXPECT_NEAR(with - base, kRto, 1e-9 * with);
    }
  }
}

TEST(Incast, MonotoneInSendersAndTimeoutAndDeterministic) {
  const Workload w = layered(4, 5e5, 1e-4, 2e-4);
  const SchemeConfig scheme = ps(Mode::Sync, 1, PsPartition::Whole, PsOrder::Fifo);
  // The loss (step with incast less step without) never falls as senders are added.
  double loss = 0;
  for (int n : {2, 4, 8, 9, 12, 16, 24, 32}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    const double now =
        mean_cycle(run(w, tcp(n), scheme)) - mean_cycle(run(w, cluster_of(n, kNic, kLatency), scheme));
    EXPECT_GE(now, loss - 1e-12);
    EXPECT_EQ(now > 0, n > kThreshold);
    loss = now;
  }
  double step = 0;
  for (double rto : {0.0, 1e-3, 5e-3, 0.2}) {
    const double now = mean_cycle(run(w, tcp(16, kBuffer, rto), scheme));
    EXPECT_GE(now, step);
    step = now;
  }
  const SimulationResult a = run(w, tcp(16), scheme);
  const SimulationResult b = run(w, tcp(16), scheme);
  ASSERT_EQ(a.workers.size(), b.workers.size());
  for (size_t i = 0; i < a.workers.size(); ++i) EXPECT_EQ(a.workers[i].cycle, b.workers[i].cycle);
}

TEST(Incast, FastPathDeclinesAndTheFullEngineAnswers) {
  // Fifo, sync, one switch: the fast path's domain, which declines incast (one client cannot
  // stand for the senders into a port) and runs the full engine; without incast it is taken.
  const Workload w = layered(1, 1e6, 1e-9, 1e-9);
  const SchemeConfig scheme = ps(Mode::Sync, 1, PsPartition::Whole, PsOrder::Fifo);
  const SimulationResult fast = run(w, tcp(16), scheme, true);
  EXPECT_EQ(fast.engine, SimulationEngine::Full);
  EXPECT_EQ(mean_cycle(fast), mean_cycle(run(w, tcp(16), scheme)));
  EXPECT_EQ(run(w, cluster_of(16, kNic, kLatency), scheme, true).engine, SimulationEngine::Fast);
}

}  // namespace incast_test
}  // namespace
}  // namespace stepcast::scheme
