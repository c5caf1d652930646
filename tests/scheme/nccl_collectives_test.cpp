// Collectives as NCCL runs them (issue 11): the node-aware tree and the channel rings on
// multi-GPU nodes against their closed forms, NCCL's latency model per protocol, and the `auto`
// choice switching from tree to ring where the same constants' closed forms cross. Expected values
// are derived in the comments from the cluster's inputs, not taken from the program.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"

namespace stepcast::scheme {
namespace {
namespace nccl_collectives_test {  // this file's own names: test files are compiled several to a unit

using cluster::ClusterSpec;
using cluster::NcclHop;
using cluster::NcclProtocol;

constexpr double kNic = 12.5e9;    // 100 Gbps
constexpr double kNvLink = 150e9;  // per GPU link into the node fabric
constexpr double kLatency = 5e-6;  // s between nodes
constexpr double kIntraLatency = 1e-6;

ClusterSpec nodes_of(int nodes, int gpus_per_node, int nics = 1) {
  ClusterSpec spec;
  spec.workers = nodes * gpus_per_node;
  spec.workers_per_node = gpus_per_node;
  spec.nics_per_node = nics;
  spec.nic_bw = kNic;
  spec.intra_node_bw = kNvLink;
  spec.latency = kLatency;
  spec.intra_node_latency = kIntraLatency;
  return spec;
}

/// Path latencies as the cluster builds them: GPU to GPU inside a node, and node to node.
double intra_hop(const ClusterSpec& spec) {
  const cluster::Cluster c = cluster::build_cluster(spec);
  return c.path({0, 0}, {0, 1}).latency;
}
double inter_hop(const ClusterSpec& spec) {
  const cluster::Cluster c = cluster::build_cluster(spec);
  return c.path({0, 0}, {1, 0}).latency;
}

double allreduce(const ClusterSpec& spec, double bytes, AllReduceAlgorithm algorithm,
                 CollectiveProtocol protocol = CollectiveProtocol::Links) {
  return simulate_collective(spec, bytes, CollectiveOp::AllReduce, algorithm, NetworkKind::MaxMin, true,
                             protocol)
      .time;
}

TEST(NodeAwareTree, TwoNodesOfEightGpusMatchItsClosedForm) {
  // Two nodes of G = 8 GPUs, one NIC each. Each node's chain carries both trees (A ascending from
  // GPU 0, B descending from GPU 7), so each GPU link carries two chunk transfers of S/(2C): a
  // chain step takes S/(C Bi). Across nodes tree A is node 1 -> node 0 and tree B node 0 -> node
  // 1: one flow per NIC direction, S/(2C B) a step, which dominates the chain when Bi > 2B.
  // Up: G - 1 steps with only chain levels, then C steps with the node edge: (G-1) S/(C Bi) + S/(2B);
  // down the same in reverse. Latency: the filling steps, 2 ((G-1) intra + 1 inter).
  const ClusterSpec spec = nodes_of(2, 8);
  const double bytes = 64e6, c = kTreeChunks, g = 8;
  const double expected = 2 * ((g - 1) * bytes / (c * kNvLink) + bytes / (2 * kNic)) +
                          2 * ((g - 1) * intra_hop(spec) + inter_hop(spec));
  EXPECT_NEAR(allreduce(spec, bytes, AllReduceAlgorithm::Tree), expected, 0.01 * expected);
}

TEST(NodeAwareTree, OnMultiGpuNodesIsWithinASmallFactorOfTheRingAndFarFasterWhenSmall) {
  // Issue 11's case: 25 MB on 64 GPUs at 8 per node on a plain switch. The flat tree put 16 flows
  // on a NIC (52 ms against 4.2 ms for the ring); the node-aware tree puts at most two.
  const ClusterSpec spec = nodes_of(8, 8);
  const double ring = allreduce(spec, 25e6, AllReduceAlgorithm::Ring);
  const double tree = allreduce(spec, 25e6, AllReduceAlgorithm::Tree);
  EXPECT_LT(tree, 1.5 * ring);
  EXPECT_LE(simulate_collective(spec, 25e6, CollectiveOp::AllReduce, AllReduceAlgorithm::Tree).max_link_flows,
            2u);
  // At 64 nodes and 8 kB the ring's 2 (N-1) = 1022 steps of latency dominate; the tree pays
  // 2 (7 intra + 6 inter).
  const ClusterSpec big = nodes_of(64, 8);
  EXPECT_LT(allreduce(big, 8e3, AllReduceAlgorithm::Tree),
            allreduce(big, 8e3, AllReduceAlgorithm::Ring) / 10);
}

TEST(ChannelRings, FollowNodeOrderAndOneRingPerNicReachesTheSumOfTheNics) {
  // Ring in node order (GPUs of a node adjacent): with one NIC, each node's NIC carries one
  // transfer each way per step: 2 (N-1) steps of S/(N B), plus the slowest hop's latency each.
  const double bytes = 256e6;
  const ClusterSpec one = nodes_of(4, 8, 1);
  const double n = 32;
  const double expected = 2 * (n - 1) * (bytes / (n * kNic) + inter_hop(one));
  EXPECT_NEAR(allreduce(one, bytes, AllReduceAlgorithm::Ring), expected, 0.01 * expected);
  // With K = 8 NICs NCCL runs 8 channels, each ring leaving a node through its own NIC: each moves
  // S/K, a NIC carries one ring each way, a GPU's link the K - 1 rings that stay in the node (the
  // one leaving the node from this GPU goes to its NIC), so a step takes
  // max(S/(N K B), (K-1) S/(N K Bi)).
  const ClusterSpec eight = nodes_of(4, 8, 8);
  const double step = std::max(bytes / (n * 8 * kNic), 7 * bytes / (n * 8 * kNvLink));
  const double expected8 = 2 * (n - 1) * (step + inter_hop(eight));
  EXPECT_NEAR(allreduce(eight, bytes, AllReduceAlgorithm::Ring), expected8, 0.01 * expected8);
  EXPECT_EQ(
      simulate_collective(eight, bytes, CollectiveOp::AllReduce, AllReduceAlgorithm::Ring).max_link_flows,
      7u);
  // The tree spreads its 2 K trees over the NICs the same way: far faster with 8 NICs.
  EXPECT_LT(allreduce(eight, bytes, AllReduceAlgorithm::Tree),
            allreduce(one, bytes, AllReduceAlgorithm::Tree) / 3);
}

TEST(NcclLatencyModel, RingAndTreeLatenciesAreNcclsFormulas) {
  // A tiny message isolates the latency: ring = base + 2 (M-1) net hops + (2 (N-1) - 2 (M-1))
  // NVLink hops; tree = base + 2 ((G-1) NVLink hops + floor(log2 M) net hops) (tuning.cc).
  const ClusterSpec spec = nodes_of(16, 8);
  const cluster::NcclTuning nccl;
  const double n = 128, m = 16, g = 8, d = 4;
  for (const auto& [protocol, p] : {std::pair{CollectiveProtocol::LL, NcclProtocol::LL},
                                    std::pair{CollectiveProtocol::LL128, NcclProtocol::LL128},
                                    std::pair{CollectiveProtocol::Simple, NcclProtocol::Simple}}) {
    SCOPED_TRACE(to_string(protocol));
    const cluster::NcclCost& r = nccl.ring[static_cast<int>(p)];
    const cluster::NcclCost& t = nccl.tree[static_cast<int>(p)];
    const int nvl = static_cast<int>(NcclHop::NvLink), net = static_cast<int>(NcclHop::Net);
    const double ring =
        r.base_latency + 2 * (m - 1) * r.hop_latency[net] + (2 * (n - 1) - 2 * (m - 1)) * r.hop_latency[nvl];
    const double tree = t.base_latency + 2 * ((g - 1) * t.hop_latency[nvl] + d * t.hop_latency[net]);
    // 1 byte: its transfer time is below a nanosecond.
    EXPECT_NEAR(allreduce(spec, 1, AllReduceAlgorithm::Ring, protocol), ring, 1e-9 + 1e-6 * ring);
    EXPECT_NEAR(allreduce(spec, 1, AllReduceAlgorithm::Tree, protocol), tree, 1e-9 + 1e-6 * tree);
  }
}

TEST(NcclLatencyModel, AProtocolsEfficiencyScalesTheBandwidthTerm) {
  // LL moves a quarter of the bytes per wire byte: the bandwidth term is 4x Simple's.
  const ClusterSpec spec = nodes_of(4, 1);
  const double big = 1e9;
  const cluster::NcclTuning nccl;
  const double ll = allreduce(spec, big, AllReduceAlgorithm::Ring, CollectiveProtocol::LL) -
                    allreduce(spec, 1, AllReduceAlgorithm::Ring, CollectiveProtocol::LL);
  const double simple = allreduce(spec, big, AllReduceAlgorithm::Ring, CollectiveProtocol::Simple) -
                        allreduce(spec, 1, AllReduceAlgorithm::Ring, CollectiveProtocol::Simple);
  const double ratio = nccl.ring[static_cast<int>(NcclProtocol::Simple)].efficiency /
                       nccl.ring[static_cast<int>(NcclProtocol::LL)].efficiency;
  EXPECT_NEAR(ll / simple, ratio, 1e-3 * ratio);
}

TEST(AutoAlgorithm, SwitchesFromTreeToRingWhereTheirClosedFormsCross) {
  // Four nodes of one GPU, Simple only. With equal constants b (base) and h (hop) for both:
  //   ring(S) = b + 2 (N-1) h + 2 (N-1)/N S/B = b + 6 h + 1.5 S/B
  //   tree(S) = b + 2 D h + (2C+1)/C S/B      = b + 4 h + (2 + 1/C) S/B   (MatchesItsPipelinedClosedForm)
  // so tree wins below S* = 2 h B / (0.5 + 1/C) and ring above.
  ClusterSpec spec = nodes_of(4, 1);
  const double b = 10e-6, h = 20e-6;
  for (cluster::NcclCost* cost : {&spec.nccl.ring[static_cast<int>(NcclProtocol::Simple)],
                                  &spec.nccl.tree[static_cast<int>(NcclProtocol::Simple)]}) {
    cost->base_latency = b;
    for (double& hop : cost->hop_latency) hop = h;
    cost->efficiency = 1;
  }
  const double c = kTreeChunks;
  const double crossover = 2 * h * kNic / (0.5 + 1 / c);
  auto chosen = [&](double bytes) {
    return simulate_collective(spec, bytes, CollectiveOp::AllReduce, AllReduceAlgorithm::Auto,
                               NetworkKind::MaxMin, true, CollectiveProtocol::Simple);
  };
  EXPECT_EQ(chosen(0.97 * crossover).algorithm, AllReduceAlgorithm::Tree);
  EXPECT_EQ(chosen(1.03 * crossover).algorithm, AllReduceAlgorithm::Ring);
  EXPECT_EQ(chosen(1.03 * crossover).protocol, CollectiveProtocol::Simple);
  // And auto's time is the lesser of the two at every size.
  for (double bytes : {1e3, 1e5, 0.5 * crossover, 2 * crossover, 1e9}) {
    SCOPED_TRACE(bytes);
    const double best =
        std::min(allreduce(spec, bytes, AllReduceAlgorithm::Ring, CollectiveProtocol::Simple),
                 allreduce(spec, bytes, AllReduceAlgorithm::Tree, CollectiveProtocol::Simple));
    EXPECT_NEAR(chosen(bytes).time, best, 1e-9 * best);
  }
}

TEST(AutoAlgorithm, ProtocolAutoPicksLowLatencyWhenSmallAndSimpleWhenLarge) {
  const ClusterSpec spec = nodes_of(8, 8);
  auto ran = [&](double bytes) {
    return simulate_collective(spec, bytes, CollectiveOp::AllReduce, AllReduceAlgorithm::Ring,
                               NetworkKind::MaxMin, true, CollectiveProtocol::Auto)
        .protocol;
  };
  EXPECT_EQ(ran(1e3), CollectiveProtocol::LL);
  EXPECT_EQ(ran(1e9), CollectiveProtocol::Simple);
  // Time never grows as the protocol choice widens: auto <= each fixed protocol.
  for (double bytes : {1e3, 1e6, 1e9}) {
    const double automatic = allreduce(spec, bytes, AllReduceAlgorithm::Ring, CollectiveProtocol::Auto);
    for (CollectiveProtocol p :
         {CollectiveProtocol::LL, CollectiveProtocol::LL128, CollectiveProtocol::Simple}) {
      EXPECT_LE(automatic, allreduce(spec, bytes, AllReduceAlgorithm::Ring, p) * (1 + 1e-12));
    }
  }
}

TEST(AutoAlgorithm, RingLatencyAtScaleIsAvoided) {
  // 2,048 ranks (256 nodes of 8): NCCL never runs a 1 MB all-reduce as a ring paying 4,094 hops;
  // auto takes the tree and is several times faster than the ring alone.
  const ClusterSpec spec = nodes_of(256, 8);
  const CollectiveResult chosen =
      simulate_collective(spec, 1e6, CollectiveOp::AllReduce, AllReduceAlgorithm::Auto, NetworkKind::MaxMin,
                          true, CollectiveProtocol::Auto);
  EXPECT_EQ(chosen.algorithm, AllReduceAlgorithm::Tree);
  EXPECT_LT(chosen.time, allreduce(spec, 1e6, AllReduceAlgorithm::Ring, CollectiveProtocol::Auto) / 3);
}

}  // namespace nccl_collectives_test
}  // namespace
}  // namespace stepcast::scheme
