// Collective algorithms and topologies (issue 4): closed forms on a non-blocking switch, the cost
// of oversubscription, and link conflicts on BiGraph. Expected values derived in comments.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "stepcast/detail/net/network_model.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"

namespace stepcast::scheme {
namespace {
namespace collective_algorithms_test {  // this file's own names: test files are compiled several to a unit

using cluster::ClusterSpec;
using cluster::Topology;

constexpr double kBw = 12.5e9;     // 100 Gbps
constexpr double kLatency = 2e-6;  // s between nodes
constexpr double kBytes = 100e6;

ClusterSpec switch_of(int n) {
  ClusterSpec spec;
  spec.workers = n;
  spec.nic_bw = kBw;
  spec.latency = kLatency;
  return spec;
}

double time_of(const ClusterSpec& spec, CollectiveOp op, AllReduceAlgorithm algorithm) {
  return simulate_collective(spec, kBytes, op, algorithm).time;
}

TEST(HalvingDoubling, MatchesClosedFormOnASwitch) {
  // Recursive halving then doubling: log2 N steps each way; step k moves S/2^(k+1) per worker,
  // each NIC direction used by one transfer: 2 log2(N) a + 2 (N-1)/N S/B.
  for (int n = 2; n <= 1024; n *= 2) {
    SCOPED_TRACE("N = " + std::to_string(n));
    const double expected = 2 * std::log2(n) * kLatency + 2.0 * (n - 1) / n * kBytes / kBw;
    EXPECT_NEAR(time_of(switch_of(n), CollectiveOp::AllReduce, AllReduceAlgorithm::HalvingDoubling), expected,
                0.01 * expected);
  }
}

TEST(HalvingDoubling, ATinyMessagePaysTwoLog2NLatencies) {
  // 1 byte isolates the latency term: 2 log2 N steps, each the path latency a.
  for (int n : {2, 16, 256}) {
    const double expected = 2 * std::log2(n) * kLatency;
    EXPECT_NEAR(simulate_collective(switch_of(n), 1, CollectiveOp::AllReduce, AllReduceAlgorithm::HalvingDoubling).time,
                expected, 1e-3 * expected)
        << n;
  }
}

TEST(DoubleBinaryTree, MatchesItsPipelinedClosedForm) {
  // One GPU per node, so the tree is NCCL's double binary tree over the nodes alone; T = 2 trees
  // each move S/2 in C = kTreeChunks chunks, a step moving one chunk S/(2C) per active edge; only
  // the D = floor(log2 N) filling steps each way pay a latency.
  // N = 2: tree A 1 -> 0, tree B 0 -> 1, one flow per NIC direction: C steps of S/(2C B) each way:
  //   S/B + 2 a.
  // N = 4: A = heap 0 <- {1, 2}, 1 <- 3; B = its mirror 3 <- {2, 1}, 2 <- 0. Up: the deepest level
  // alone (one flow per NIC direction), then C - 1 steps with both (nodes 1 and 2 send to two
  // parents, nodes 0 and 3 hear two children: two flows), then the top level alone (two flows):
  //   (1 + 2 (C - 1) + 2) S/(2C B) = (2C + 1) S/(2C B) each way, and 2 D a = 4 a of latency.
  const double c = kTreeChunks;
  const double two = kBytes / kBw + 2 * kLatency;
  const double four = (2 * c + 1) / c * kBytes / kBw + 4 * kLatency;
  const CollectiveResult r2 =
      simulate_collective(switch_of(2), kBytes, CollectiveOp::AllReduce, AllReduceAlgorithm::Tree);
  const CollectiveResult r4 =
      simulate_collective(switch_of(4), kBytes, CollectiveOp::AllReduce, AllReduceAlgorithm::Tree);
  EXPECT_NEAR(r2.time, two, 0.01 * two);
  EXPECT_NEAR(r4.time, four, 0.01 * four);
  EXPECT_EQ(r2.max_link_flows, 1u);
  EXPECT_EQ(r4.max_link_flows, 2u);
  // Steps: D + C - 1 each way.
  EXPECT_EQ(r2.stages, 2 * (1 + kTreeChunks - 1));
  EXPECT_EQ(r4.stages, 2 * (2 + kTreeChunks - 1));
}

TEST(DoubleBinaryTree, BeatsTheRingOnLatencyForSmallMessages) {
  // 1 kB on 256 workers: the ring pays 510 latencies, the tree 2 x 8 (its filling steps).
  const auto ring =
      simulate_collective(switch_of(256), 1e3, CollectiveOp::AllReduce, AllReduceAlgorithm::Ring);
  const auto tree =
      simulate_collective(switch_of(256), 1e3, CollectiveOp::AllReduce, AllReduceAlgorithm::Tree);
  EXPECT_LT(tree.time, ring.time / 10);
}

TEST(RingCollectives, AllGatherAndReduceScatterMatchClosedForm) {
  // Half a ring all-reduce: (N-1)(a + S/(N B)) each.
  for (int n : {2, 3, 8, 64}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    const double expected = (n - 1) * (kLatency + kBytes / (n * kBw));
    EXPECT_NEAR(time_of(switch_of(n), CollectiveOp::AllGather, AllReduceAlgorithm::Ring), expected,
                0.01 * expected);
    EXPECT_NEAR(time_of(switch_of(n), CollectiveOp::ReduceScatter, AllReduceAlgorithm::Ring), expected,
                0.01 * expected);
  }
}

TEST(RingCollectives, PipelinedBroadcastIsOneTransferAndTheChainsLatency) {
  // Pipelined along the N-1 hops of the chain in chunks small beside S, as NCCL runs it: every hop
  // carries S at once, S / B, and the chain's hops add their latency, (N - 1) a. It does not grow
  // with N beyond the latency (64 fixed chunks made it (N - 2 + 64) / 64 S / B: 2 S / B at 64).
  for (const int n : {2, 8, 64}) {
    SCOPED_TRACE(n);
    const double expected = (n - 1) * kLatency + kBytes / kBw;
    EXPECT_NEAR(time_of(switch_of(n), CollectiveOp::Broadcast, AllReduceAlgorithm::Ring), expected,
                1e-9 * expected);
  }
}

TEST(Hierarchical, MatchesClosedFormWithSharedNic) {
  // G GPUs per node, M nodes. Inside: ring reduce-scatter and all-gather over G GPUs, S/G per
  // step on the GPU links: 2 (G-1)(a_i + S/(G B_i)). Across: G rings of 1/G of the data share
  // the node NIC (B/G each): 2 (M-1)(a + (S/(G M)) / (B/G)) = 2 (M-1)(a + S/(M B)).
  for (auto [g, m] : {std::pair{8, 4}, std::pair{4, 2}, std::pair{2, 8}}) {
    SCOPED_TRACE("G = " + std::to_string(g) + ", M = " + std::to_string(m));
    ClusterSpec spec = switch_of(g * m);
    spec.workers_per_node = g;
    spec.intra_node_bw = 150e9;
    spec.intra_node_latency = 1e-6;
    const double expected = 2 * (g - 1) * (spec.intra_node_latency + kBytes / (g * spec.intra_node_bw)) +
                            2 * (m - 1) * (kLatency + kBytes / (m * kBw));
    EXPECT_NEAR(time_of(spec, CollectiveOp::AllReduce, AllReduceAlgorithm::Hierarchical), expected,
                0.01 * expected);
  }
}

TEST(Hierarchical, BeatsTheFlatRingWhenGpusShareANic) {
  ClusterSpec spec = switch_of(32);
  spec.workers_per_node = 8;
  spec.intra_node_bw = 150e9;
  EXPECT_LT(time_of(spec, CollectiveOp::AllReduce, AllReduceAlgorithm::Hierarchical),
            time_of(spec, CollectiveOp::AllReduce, AllReduceAlgorithm::Ring));
}

TEST(FatTree, OversubscriptionAsFewerUplinksSlowsCrossTrafficNotARing) {
  // Leaf-spine with radix 16: 8 hosts per leaf, 8 leaves for 64 hosts. 2:1 or 4:1 as fewer
  // full-speed uplinks (4 or 2 per leaf): a ring leaves and enters each leaf once, so no two of
  // its flows meet on an uplink and it runs at B, as on one switch. Built as slower uplinks
  // (8 at B / r, cluster.fat_tree.uplink_bandwidth) the crossing hop runs at B / r: r times slower.
  ClusterSpec spec = switch_of(64);
  spec.topology = Topology::FatTree;
  spec.fat_tree.radix = 16;
  spec.fat_tree.oversubscription = 1;
  const double full = time_of(spec, CollectiveOp::AllReduce, AllReduceAlgorithm::Ring);
  EXPECT_NEAR(full, time_of(switch_of(64), CollectiveOp::AllReduce, AllReduceAlgorithm::Ring), 0.01 * full);
  for (double r : {2.0, 4.0}) {
    spec.fat_tree = {.levels = 2, .radix = 16, .oversubscription = r, .uplinks = 0, .uplink_bw = 0};
    EXPECT_NEAR(time_of(spec, CollectiveOp::AllReduce, AllReduceAlgorithm::Ring), full, 1e-9 * full)
        << "oversubscription " << r;
    spec.fat_tree = {.levels = 2, .radix = 16, .oversubscription = r, .uplinks = 8, .uplink_bw = kBw / r};
    const double slow = time_of(spec, CollectiveOp::AllReduce, AllReduceAlgorithm::Ring);
    EXPECT_NEAR(slow / full, r, 0.05 * r) << "oversubscription " << r << " as slower uplinks";
  }
  // A ring inside one leaf never touches the uplinks.
  ClusterSpec one_leaf = spec;
  one_leaf.workers = 8;
  EXPECT_NEAR(time_of(one_leaf, CollectiveOp::AllReduce, AllReduceAlgorithm::Ring),
              time_of(switch_of(8), CollectiveOp::AllReduce, AllReduceAlgorithm::Ring), 1e-9);
}

TEST(FatTree, ThreeLevelsRouteEveryPair) {
  ClusterSpec spec = switch_of(16);
  spec.topology = Topology::FatTree;
  spec.fat_tree.levels = 3;
  spec.fat_tree.radix = 4;  // k = 4: 16 hosts, 20 switches
  const cluster::Cluster c = cluster::build_cluster(spec);
  for (int a = 0; a < 16; ++a) {
    for (int b = 0; b < 16; ++b) {
      if (a == b) continue;
      const cluster::Path p = c.path({a, 0}, {b, 0});
      // host-edge (+ edge-agg + agg-core + core-agg + agg-edge) + edge-host: 2, 4 or 6 links.
      const size_t expected = a / 2 == b / 2 ? 2 : (a / 4 == b / 4 ? 4 : 6);
      EXPECT_EQ(p.links.size(), expected) << a << " -> " << b;
      EXPECT_NEAR(p.latency, kLatency, 1e-15);
    }
  }
}

TEST(BiGraph, HdrmNeverSharesALinkWhileNaiveHalvingDoublingDoes) {
  // 4 switches per half, one host each: 8 workers. Naive halving-doubling pairs hosts of one half
  // at some step, routed through the other half over ECMP-hashed switches, so two transfers meet
  // on a link; hdrm makes every step cross between the halves on distinct links.
  for (uint64_t seed : {1, 2, 3, 7, 42}) {
    SCOPED_TRACE("routing seed " + std::to_string(seed));
    ClusterSpec spec = switch_of(8);
    spec.topology = Topology::BiGraph;
    spec.bigraph.switches_per_half = 4;
    spec.bigraph.hosts_per_switch = 1;
    spec.routing_seed = seed;
    const CollectiveResult hdrm =
        simulate_collective(spec, kBytes, CollectiveOp::AllReduce, AllReduceAlgorithm::Hdrm);
    const CollectiveResult naive =
        simulate_collective(spec, kBytes, CollectiveOp::AllReduce, AllReduceAlgorithm::HalvingDoubling);
    EXPECT_EQ(hdrm.max_link_flows, 1u);
    EXPECT_GE(naive.max_link_flows, 2u);
    EXPECT_LT(hdrm.time, naive.time);
    // Without conflicts hdrm runs at the halving-doubling closed form.
    const double closed = 2 * 3 * kLatency + 2.0 * 7 / 8 * kBytes / kBw;
    EXPECT_NEAR(hdrm.time, closed, 0.01 * closed);
  }
}

TEST(Torus, RingOnAOneDimensionalTorusUsesNeighbourLinksOnly) {
  // Ranks in order on a ring-shaped torus: every transfer is one hop on its own link.
  ClusterSpec spec = switch_of(16);
  spec.topology = Topology::Torus;
  spec.torus.dims = {16};
  const CollectiveResult r =
      simulate_collective(spec, kBytes, CollectiveOp::AllReduce, AllReduceAlgorithm::Ring);
  EXPECT_EQ(r.max_link_flows, 1u);
  EXPECT_NEAR(r.time, time_of(switch_of(16), CollectiveOp::AllReduce, AllReduceAlgorithm::Ring),
              0.01 * r.time);
}

TEST(Torus, TwoDimensionalRingSharesWrapLinks) {
  // Rank order on a 4x4 torus: row ends jump to the next row (two hops), so some link carries two
  // transfers and the ring runs at B/2.
  ClusterSpec spec = switch_of(16);
  spec.topology = Topology::Torus;
  spec.torus.dims = {4, 4};
  const CollectiveResult r =
      simulate_collective(spec, kBytes, CollectiveOp::AllReduce, AllReduceAlgorithm::Ring);
  EXPECT_EQ(r.max_link_flows, 2u);
  EXPECT_GT(r.time, 1.9 * time_of(switch_of(16), CollectiveOp::AllReduce, AllReduceAlgorithm::Ring));
}

TEST(Routing, SameSeedSamePathsAndEveryLinkBelowCapacity) {
  ClusterSpec spec = switch_of(64);
  spec.topology = Topology::FatTree;
  spec.fat_tree.radix = 8;
  const auto a =
      simulate_collective(spec, kBytes, CollectiveOp::AllReduce, AllReduceAlgorithm::HalvingDoubling);
  const auto b =
      simulate_collective(spec, kBytes, CollectiveOp::AllReduce, AllReduceAlgorithm::HalvingDoubling);
  EXPECT_EQ(a.time, b.time);
  ASSERT_EQ(a.links.size(), b.links.size());
  for (size_t i = 0; i < a.links.size(); ++i) {
    EXPECT_EQ(a.links[i].name, b.links[i].name);
    EXPECT_LE(a.links[i].busy, 1.0 + 1e-9) << a.links[i].name;
  }
}

TEST(CollectiveCost, ClosedFormEqualsTheSimulationWhenStepsDoNotInteract) {
  // On a switch no two groups of a step meet, so the per-group narrowest-link cost is exact.
  for (auto algorithm :
       {AllReduceAlgorithm::Ring, AllReduceAlgorithm::HalvingDoubling, AllReduceAlgorithm::Hierarchical}) {
    SCOPED_TRACE(to_string(algorithm));
    ClusterSpec spec = switch_of(32);
    spec.workers_per_node = 4;
    const cluster::Cluster c = cluster::build_cluster(spec);
    const CollectiveCost cost = collective_cost(c, plan_collective(c, CollectiveOp::AllReduce, algorithm));
    const double simulated = time_of(spec, CollectiveOp::AllReduce, algorithm);
    EXPECT_NEAR(cost.time(kBytes), simulated, 1e-6 * simulated);
  }
}

TEST(CollectiveCost, SeesLinksSharedWithinAStep) {
  // Naive halving-doubling on BiGraph: equal-size transfers of one step form one group, so two of
  // them on one link halve the group's rate in the cost as in the simulation.
  ClusterSpec spec = switch_of(8);
  spec.topology = Topology::BiGraph;
  spec.bigraph.switches_per_half = 4;
  spec.bigraph.hosts_per_switch = 1;
  const cluster::Cluster c = cluster::build_cluster(spec);
  const CollectiveCost cost =
      collective_cost(c, plan_collective(c, CollectiveOp::AllReduce, AllReduceAlgorithm::HalvingDoubling));
  const double simulated = time_of(spec, CollectiveOp::AllReduce, AllReduceAlgorithm::HalvingDoubling);
  EXPECT_NEAR(cost.time(kBytes), simulated, 1e-6 * simulated);
}

}  // namespace collective_algorithms_test
}  // namespace
}  // namespace stepcast::scheme

namespace stepcast::scheme {
namespace {
namespace collective_algorithms_test {  // this file's own names: test files are compiled several to a unit

// The EFLOPS motivation: every GPU of node 0 sends to its peer on node 1 at once.
double per_gpu_rate(const cluster::ClusterSpec& spec) {
  const cluster::Cluster c = cluster::build_cluster(spec);
  std::vector<double> capacities;
  for (const auto& l : c.links) capacities.push_back(l.bw);
  auto network = net::make_maxmin_network(capacities);
  std::vector<net::FlowId> flows;
  for (int d = 0; d < spec.workers_per_node; ++d) {
    const cluster::Path p = c.path({0, d}, {1, d});
    std::vector<net::LinkUse> uses;
    for (uint32_t l : p.links) uses.push_back({l, 1});
    flows.push_back(network->start_flow({uses, 1e9}, 0));
  }
  double slowest = net::kInfinity;
  for (net::FlowId f : flows) slowest = std::min(slowest, network->rate(f));
  return slowest;
}

TEST(IntraNode, GpusSharingOneNicGetItsBandwidthSplitAndANicEachGetsAll) {
  // g GPUs behind one NIC of bandwidth B: B/g each; one NIC per GPU: B each.
  for (int g : {2, 4, 8}) {
    SCOPED_TRACE("g = " + std::to_string(g));
    cluster::ClusterSpec spec;
    spec.workers = 2 * g;
    spec.workers_per_node = g;
    spec.nic_bw = kBw;
    spec.intra_node_bw = 150e9;
    EXPECT_NEAR(per_gpu_rate(spec), kBw / g, 1e-6 * kBw);
    spec.nics_per_node = g;
    EXPECT_NEAR(per_gpu_rate(spec), kBw, 1e-6 * kBw);
  }
}

TEST(IntraNode, PcieSwitchUplinkIsSharedByItsGpus) {
  // Two GPUs per PCIe switch with an uplink of 16 GB/s and a NIC per GPU of 25 GB/s: the uplink
  // limits each GPU to 8 GB/s.
  cluster::ClusterSpec spec;
  spec.workers = 8;
  spec.workers_per_node = 4;
  spec.nics_per_node = 4;
  spec.nic_bw = 25e9;
  spec.intra_node_link = cluster::IntraNodeLink::Pcie;
  spec.intra_node_bw = 16e9;
  spec.gpus_per_pcie_switch = 2;
  EXPECT_NEAR(per_gpu_rate(spec), 8e9, 1e3);
  spec.gpus_per_pcie_switch = 1;
  EXPECT_NEAR(per_gpu_rate(spec), 16e9, 1e3);
}

}  // namespace collective_algorithms_test
}  // namespace
}  // namespace stepcast::scheme
