// Ring all-reduce in the fine model against the DESIGN.md 3.2 closed form 2(N-1)(a + S/(N B)), on
// one worker per node and on nodes whose GPUs share a NIC.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/predict/predict.hpp"

namespace stepcast::scheme {
namespace {
namespace collective_test {  // this file's own names: test files are compiled several to a unit

using cluster::ClusterSpec;

ClusterSpec one_per_node(int workers, double nic_bw, double latency) {
  ClusterSpec spec;
  spec.workers = workers;
  spec.workers_per_node = 1;
  spec.nic_bw = nic_bw;
  spec.latency = latency;
  return spec;
}

double ring_time(const ClusterSpec& spec, double bytes) {
  return simulate_allreduce(spec, bytes, AllReduceAlgorithm::Ring).time;
}

TEST(RingAllReduce, MatchesClosedFormOnePerNode) {
  // One worker per node: step i of the ring sends S/N bytes from every worker to the next over its
  // NIC uplink and the next node's downlink; each link carries exactly one member, so every member
  // runs at B and a step takes S/(N B) plus the end-to-end latency a (a/2 per NIC hop). 2(N-1)
  // steps: T = 2(N-1)(a + S/(N B)).
  const double bytes = 100e6;
  const double bw = 12.5e9;
  const double latency = 5e-6;
  for (int n : {2, 3, 4, 8, 16, 64, 256, 1024}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    const ClusterSpec spec = one_per_node(n, bw, latency);
    const double expected = 2.0 * (n - 1) * (latency + bytes / (n * bw));
    const double simulated = ring_time(spec, bytes);
    EXPECT_NEAR(simulated, expected, 0.01 * expected);
    // The closed form of predict/ gives the same number, fed with the ring's bottleneck.
    const RingBottleneck ring = ring_bottleneck(cluster::build_cluster(spec));
    EXPECT_DOUBLE_EQ(ring.bw, bw);
    EXPECT_DOUBLE_EQ(ring.latency, latency);
    const double closed = predict::ring_allreduce_time(bytes, n, ring.bw, ring.latency);
    EXPECT_NEAR(closed, expected, 1e-9 * expected);
    EXPECT_NEAR(simulated, closed, 0.01 * closed);
  }
}

TEST(RingAllReduce, LongRingsRunInMergedStagesAtTheClosedForm) {
  // A ring of N ranks has 2(N-1) identical steps; past kMaxSimulatedSteps they run as that many
  // stages, each standing for several steps. Alone, the time is the closed form either way, and
  // the full engine (stage after stage on the flow network) gives the fast path's number.
  const double bytes = 100e6;
  const double bw = 12.5e9;
  const double latency = 5e-6;
  for (int n : {513, 514, 1100, 5000, 40000}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    const ClusterSpec spec = one_per_node(n, bw, latency);
    const double expected = 2.0 * (n - 1) * (latency + bytes / (n * bw));
    const CollectiveResult fast = simulate_allreduce(spec, bytes, AllReduceAlgorithm::Ring);
    EXPECT_NEAR(fast.time, expected, 1e-9 * expected);
    EXPECT_EQ(fast.stages, 2 * (n - 1));
    const CollectivePlan plan =
        plan_collective(cluster::build_cluster(spec), CollectiveOp::AllReduce, AllReduceAlgorithm::Ring);
    EXPECT_EQ(static_cast<int>(plan.stages.size()), std::min(2 * (n - 1), kMaxSimulatedSteps));
    if (n <= 1100) {
      const CollectiveResult full =
          simulate_allreduce(spec, bytes, AllReduceAlgorithm::Ring, NetworkKind::MaxMin, false);
      EXPECT_NEAR(full.time, fast.time, 1e-9 * fast.time);
    }
  }
}

TEST(RingAllReduce, LatencyTermDominatesSmallMessages) {
  // S = 8 bytes: the bandwidth term is ~1e-18 s, so T = 2(N-1) a exactly enough for 1%.
  const double latency = 20e-6;
  for (int n : {2, 16, 128}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    const double expected = 2.0 * (n - 1) * latency;
    EXPECT_NEAR(ring_time(one_per_node(n, 1.25e9, latency), 8.0), expected, 0.01 * expected);
  }
}

TEST(RingAllReduce, OneWorkerTakesNoTime) {
  // Nothing to reduce with: 2(1-1)(...) = 0, in the simulator and the closed form.
  EXPECT_EQ(ring_time(one_per_node(1, 1.25e9, 5e-6), 100e6), 0.0);
  EXPECT_EQ(predict::ring_allreduce_time(100e6, 1, 1.25e9, 5e-6), 0.0);
}

TEST(RingAllReduce, SharedNicFollowsTheNic) {
  // 2 GPUs per node, fast bus (12 GB/s), slow NIC (1 GB/s). In rank order the ring goes gpu0 ->
  // gpu1 inside a node (bus links) and gpu1 -> next node's gpu0 (NIC up, NIC down), so each node's
  // NIC is crossed by exactly one member per direction per step: the member rate is min(B_nic,
  // B_bus) = B_nic and the slowest hop's latency is the inter-node a. T = 2(N-1)(a + S/(N B_nic)).
  const double bytes = 64e6;
  const double nic = 1e9;
  const double latency = 10e-6;
  for (int n : {4, 8, 16}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    ClusterSpec spec = one_per_node(n, nic, latency);
    spec.workers_per_node = 2;
    spec.intra_node_bw = 12e9;
    spec.intra_node_latency = 1e-6;
    const double expected = 2.0 * (n - 1) * (latency + bytes / (n * nic));
    EXPECT_NEAR(ring_time(spec, bytes), expected, 0.01 * expected);
    const RingBottleneck ring = ring_bottleneck(cluster::build_cluster(spec));
    EXPECT_DOUBLE_EQ(ring.bw, nic);
    EXPECT_DOUBLE_EQ(ring.latency, latency);
  }
}

TEST(RingAllReduce, SingleNodeRingUsesTheBus) {
  // 4 GPUs on one node: the ring never leaves the node, so it runs at the bus bandwidth with the
  // intra-node latency, whatever the NIC: T = 2(N-1)(a_bus + S/(N B_bus)).
  const double bytes = 64e6;
  ClusterSpec spec = one_per_node(4, 1e8, 10e-6);
  spec.workers_per_node = 4;
  spec.intra_node_bw = 12e9;
  spec.intra_node_latency = 2e-6;
  const double expected = 2.0 * 3 * (2e-6 + bytes / (4 * 12e9));
  EXPECT_NEAR(ring_time(spec, bytes), expected, 0.01 * expected);
}

TEST(RingAllReduce, MoreBandwidthNeverSlower) {
  // Doubling every NIC's bandwidth halves the bandwidth term and leaves latency: never slower.
  for (int per_node : {1, 2, 4}) {
    for (int n : {2, 3, 5, 8, 16, 33}) {
      double previous = -1;
      for (double bw = 1e8; bw <= 1e11; bw *= 2) {
        SCOPED_TRACE("per_node = " + std::to_string(per_node) + ", N = " + std::to_string(n) +
                     ", bw = " + std::to_string(bw));
        ClusterSpec spec = one_per_node(n, bw, 5e-6);
        spec.workers_per_node = per_node;
        const double t = ring_time(spec, 50e6);
        if (previous >= 0) {
          EXPECT_LE(t, previous * (1 + 1e-12));
        }
        previous = t;
      }
    }
  }
}

TEST(RingAllReduce, NoContentionModelAgreesOnARing) {
  // A ring loads every link with one member, so max-min sharing and no sharing coincide.
  const ClusterSpec spec = one_per_node(8, 12.5e9, 5e-6);
  const double maxmin = simulate_allreduce(spec, 100e6, AllReduceAlgorithm::Ring, NetworkKind::MaxMin).time;
  const double free =
      simulate_allreduce(spec, 100e6, AllReduceAlgorithm::Ring, NetworkKind::NoContention).time;
  EXPECT_NEAR(maxmin, free, 1e-9 * free);
}

// ---- Size regimes (cluster.collective_regimes) ------------------------------------------------

// Three regimes below a 100 GB/s link: each size runs the ring closed form with its regime's
// latency (at least the link's) and bandwidth (at most the link's). Sizes below the first regime
// use the links alone.
TEST(RingAllReduce, EachSizeRunsInItsRegime) {
  ClusterSpec spec = one_per_node(16, 100e9, 2e-6);
  spec.collective_regimes = {{1e3, 4e-6, 17e9}, {1e6, 5e-6, 38e9}, {32e6, 30e-6, 343e9}};
  const int n = spec.workers;
  auto ring = [n](double a, double b, double bytes) { return 2.0 * (n - 1) * (a + bytes / (n * b)); };
  struct Case {
    double bytes, a, b;
  };
  for (const Case& c :
       {Case{512, 2e-6, 100e9}, Case{1e3, 4e-6, 17e9}, Case{512e3, 4e-6, 17e9}, Case{1e6, 5e-6, 38e9},
        Case{16e6, 5e-6, 38e9}, Case{32e6, 30e-6, 100e9}, Case{1e9, 30e-6, 100e9}}) {
    SCOPED_TRACE("bytes = " + std::to_string(c.bytes));
    const double expected = ring(c.a, c.b, c.bytes);
    EXPECT_NEAR(ring_time(spec, c.bytes), expected, 1e-9 * expected);
  }
  // Without regimes the same cluster runs every size at the link.
  spec.collective_regimes.clear();
  EXPECT_NEAR(ring_time(spec, 16e6), ring(2e-6, 100e9, 16e6), 1e-9 * ring(2e-6, 100e9, 16e6));
}

// Every algorithm: the simulated time with a regime equals collective_cost's closed form with the
// same regime (on a non-blocking switch the groups of a step do not meet), and a lower regime
// bandwidth or a higher regime latency is never faster.
TEST(CollectiveRegimes, SimulatorMatchesClosedCostForEveryAlgorithm) {
  for (AllReduceAlgorithm algorithm :
       {AllReduceAlgorithm::Ring, AllReduceAlgorithm::Tree, AllReduceAlgorithm::HalvingDoubling,
        AllReduceAlgorithm::Hierarchical}) {
    SCOPED_TRACE(to_string(algorithm));
    ClusterSpec spec = one_per_node(16, 50e9, 3e-6);
    spec.workers_per_node = 4;
    spec.intra_node_bw = 200e9;
    const double bytes = 64e6;
    double previous = 0;
    for (double bw : {400e9, 40e9, 10e9}) {
      spec.collective_regimes = {{0, 8e-6, bw}};
      const cluster::Cluster c = cluster::build_cluster(spec);
      const double closed = collective_cost(c, plan_collective(c, CollectiveOp::AllReduce, algorithm),
                                            {.regime = spec.regime_for(bytes)})
                                .time(bytes);
      const double simulated = simulate_allreduce(spec, bytes, algorithm).time;
      EXPECT_NEAR(simulated, closed, 1e-9 * closed) << "regime bandwidth " << bw;
      EXPECT_GE(simulated, previous * (1 - 1e-12));
      previous = simulated;
    }
  }
}

}  // namespace collective_test
}  // namespace
}  // namespace stepcast::scheme
