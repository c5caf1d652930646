// NCCL's channels and its protocols' bandwidth caps (issue 11): a capped collective against its
// closed form (NCCL's tuning model: base + hops + bytes / min(links x efficiency, channels x
// per-channel cap, the cap on the whole)), caps that never speed anything up, more channels that
// never slow a capped collective, and `auto` switching protocol where the capped closed forms
// cross. Expected values are derived in the comments from the inputs and NCCL's tables
// (src/graph/tuning.cc at NVIDIA/nccl commit b6475625), not taken from the program.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"

namespace stepcast::scheme {
namespace {
namespace nccl_channels_test {  // this file's own names: test files are compiled several to a unit

using cluster::ClusterSpec;
using cluster::NcclHop;
using cluster::NcclProtocol;

constexpr int kNvl = static_cast<int>(NcclHop::NvLink);
constexpr int kNet = static_cast<int>(NcclHop::Net);
constexpr int kLL = static_cast<int>(NcclProtocol::LL);
constexpr int kLL128 = static_cast<int>(NcclProtocol::LL128);
constexpr int kSimple = static_cast<int>(NcclProtocol::Simple);

ClusterSpec nodes_of(int nodes, int gpus_per_node, int nics, double nic_bw, double intra_bw) {
  ClusterSpec spec;
  spec.workers = nodes * gpus_per_node;
  spec.workers_per_node = gpus_per_node;
  spec.nics_per_node = nics;
  spec.nic_bw = nic_bw;
  spec.intra_node_bw = intra_bw;
  spec.latency = 5e-6;
  spec.intra_node_latency = 1e-6;
  return spec;
}

/// Every cap of NCCL's model off (0: no cap), so that only the links bound a transfer.
ClusterSpec uncapped(ClusterSpec spec) {
  for (cluster::NcclCost* costs : {spec.nccl.ring, spec.nccl.tree}) {
    for (int p = 0; p < cluster::kNcclProtocols; ++p) costs[p].channel_bw = costs[p].max_bw = 0.0;
  }
  return spec;
}

CollectiveResult run(const ClusterSpec& spec, double bytes, AllReduceAlgorithm algorithm,
                     CollectiveProtocol protocol, bool fast_path = true) {
  return simulate_collective(spec, bytes, CollectiveOp::AllReduce, algorithm, NetworkKind::MaxMin, fast_path,
                             protocol);
}

/// NCCL's ring latency (tuning.cc): base + 2 (M-1) network hops + the other 2 (N-1) - 2 (M-1)
/// steps over NVLink.
double ring_latency(const cluster::NcclCost& cost, double ranks, double nodes) {
  return cost.base_latency + 2 * (nodes - 1) * cost.hop_latency[kNet] +
         (2 * (ranks - 1) - 2 * (nodes - 1)) * cost.hop_latency[kNvl];
}

TEST(NcclChannelCaps, ACappedLLRingIsBasePlusHopsPlusBytesOverChannelsTimesTheCap) {
  // 4 nodes of 8 GPUs, 8 NICs of 12.5 GB/s, NVLink 150 GB/s. LL moves a quarter of its wire
  // bytes: the links give the ring 8 rings x 12.5 GB/s x 1/4 = 25 GB/s of bus bandwidth (a GPU
  // link: 7 rings of 1/8 on 150 GB/s, 21 GB/s each, above the NIC's 12.5). 16 channels of 1 GB/s
  // cap it at 16 GB/s, so t = base + hops + 2 (N-1)/N S / 16 GB/s, for any size.
  ClusterSpec spec = nodes_of(4, 8, 8, 12.5e9, 150e9);
  spec.nccl.channels = 16;
  spec.nccl.ring[kLL].channel_bw = 1e9;
  spec.nccl.ring[kLL].max_bw = 0.0;
  const double n = 32, m = 4, bus = 16 * 1e9;
  for (double bytes : {1e3, 1e6, 256e6}) {
    SCOPED_TRACE(bytes);
    const double expected = ring_latency(spec.nccl.ring[kLL], n, m) + 2 * (n - 1) / n * bytes / bus;
    EXPECT_NEAR(run(spec, bytes, AllReduceAlgorithm::Ring, CollectiveProtocol::LL).time, expected,
                1e-9 * expected);
    // The event-by-event engine bounds each transfer the same way.
    EXPECT_NEAR(run(spec, bytes, AllReduceAlgorithm::Ring, CollectiveProtocol::LL, false).time, expected,
                1e-9 * expected);
    // And the tuner's closed form (what `auto` and the coarse predictor use) is the same time.
    const cluster::Cluster c = cluster::build_cluster(spec);
    const AllReducePlanner planner(c, AllReduceAlgorithm::Ring, CollectiveProtocol::LL);
    const AllReducePlanner::Choice choice = planner.choose(bytes);
    EXPECT_NEAR(collective_cost(c, planner.plan(choice), choice.terms).time(bytes), expected,
                1e-9 * expected);
  }
}

TEST(NcclChannelCaps, HopperTablesCapLL128PerChannelAndLLAsAWhole) {
  // 2 nodes of 8 H100, 8 NICs of 400 Gbps (50 GB/s), fast NVLink so the NICs bind. NCCL's rule:
  // 48 GB/s (sm90 inter speed table) fits once in a 50 GB/s NIC: 8 channels, not doubled (Hopper
  // below 50 GB/s with more than 4). The links give LL128 8 x 50 x 120/128 = 375 GB/s and LL
  // 8 x 50 / 4 = 100 GB/s of bus bandwidth; NCCL's tables cap LL128 at 8 x 36.7 GB/s
  // (perChMaxRingLL128Bws, Hopper) = 293.6 GB/s and LL at 39.0 GB/s (llMaxBws, 2 nodes, Intel
  // hosts) or 22.5 GB/s (AMD hosts).
  ClusterSpec spec = nodes_of(2, 8, 8, 50e9, 900e9);
  ASSERT_EQ(cluster::nccl_channels(spec), 8);
  const double n = 16, m = 2, bytes = 64e6;
  const double ll128 = ring_latency(spec.nccl.ring[kLL128], n, m) + 2 * (n - 1) / n * bytes / (8 * 36.7e9);
  EXPECT_NEAR(run(spec, bytes, AllReduceAlgorithm::Ring, CollectiveProtocol::LL128).time, ll128,
              1e-9 * ll128);
  const double ll = ring_latency(spec.nccl.ring[kLL], n, m) + 2 * (n - 1) / n * bytes / 39.0e9;
  EXPECT_NEAR(run(spec, bytes, AllReduceAlgorithm::Ring, CollectiveProtocol::LL).time, ll, 1e-9 * ll);
  spec.cpu_vendor = cluster::CpuVendor::Amd;
  const double amd = ring_latency(spec.nccl.ring[kLL], n, m) + 2 * (n - 1) / n * bytes / 22.5e9;
  EXPECT_NEAR(run(spec, bytes, AllReduceAlgorithm::Ring, CollectiveProtocol::LL).time, amd, 1e-9 * amd);
  // Simple has no cap on the ring: the links alone, 8 x 50 GB/s.
  const double simple = ring_latency(spec.nccl.ring[kSimple], n, m) + 2 * (n - 1) / n * bytes / (8 * 50e9);
  EXPECT_NEAR(run(spec, bytes, AllReduceAlgorithm::Ring, CollectiveProtocol::Simple).time, simple,
              1e-9 * simple);
}

TEST(NcclChannelCaps, ACappedTreeMovesEveryChunkAtItsShareOfTheCap) {
  // 2 nodes of 8 GPUs, one NIC, Simple. C = 2 channels of 1 GB/s: 2 GB/s of bus bandwidth, shared
  // by the 2 x (1 NIC) = 2 trees, 1 GB/s each, far below every link. Each way is D + 31 steps
  // (D = 7 chain levels + 1 node level), each moving a chunk S / (2 x 32) per edge at 1 GB/s: the
  // bytes take 2 (D + 31) S / (32 x 2 GB/s) (NCCL: 2 S / busBw, plus the pipeline's fill), and the
  // latency is NCCL's tree formula, 2 ((G-1) NVLink + log2 M network) hops (base 0 for Simple).
  ClusterSpec spec = nodes_of(2, 8, 1, 12.5e9, 150e9);
  spec.nccl.channels = 2;
  spec.nccl.tree[kSimple].channel_bw = 1e9;
  const cluster::NcclCost& cost = spec.nccl.tree[kSimple];
  const double depth = 8, bytes = 32e6, chunks = kTreeChunks;
  const double expected = cost.base_latency + 2 * (7 * cost.hop_latency[kNvl] + 1 * cost.hop_latency[kNet]) +
                          2 * (depth + chunks - 1) * bytes / (chunks * 2e9);
  EXPECT_NEAR(run(spec, bytes, AllReduceAlgorithm::Tree, CollectiveProtocol::Simple).time, expected,
              1e-9 * expected);
}

TEST(NcclChannelCaps, WhereNoCapBindsNothingMoves) {
  // 10 Gbps NICs and PCIe-class links inside nodes: every default cap of NCCL's tables (tens of
  // GB/s) is far above what the links give, so every candidate's time is the uncapped one exactly.
  const ClusterSpec spec = nodes_of(4, 4, 1, 1.25e9, 12e9);
  for (AllReduceAlgorithm a : {AllReduceAlgorithm::Ring, AllReduceAlgorithm::Tree}) {
    for (CollectiveProtocol p :
         {CollectiveProtocol::LL, CollectiveProtocol::LL128, CollectiveProtocol::Simple}) {
      for (double bytes : {1e3, 1e7, 1e9}) {
        EXPECT_EQ(run(spec, bytes, a, p).time, run(uncapped(spec), bytes, a, p).time)
            << to_string(a) << " " << to_string(p) << " " << bytes;
      }
    }
  }
}

/// A seeded random cluster of NVLink nodes whose links are fast enough for caps to bind.
ClusterSpec random_cluster(std::mt19937_64& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int gpus = pick(1, 8);
  const int nodes = gpus == 1 ? pick(2, 6) : pick(1, 6);  // at least two ranks
  // One pick a statement: compilers evaluate a call's arguments in different orders.
  const int nics = pick(1, gpus);
  const double nic_bw = std::exp2(pick(30, 36));
  const double intra_bw = std::exp2(pick(33, 39));
  ClusterSpec spec = nodes_of(nodes, gpus, nics, nic_bw, intra_bw);
  spec.gpu_generation = static_cast<cluster::GpuGeneration>(pick(0, 2));
  spec.cpu_vendor = static_cast<cluster::CpuVendor>(pick(0, 1));
  return spec;
}

TEST(NcclChannelCaps, CapsNeverSpeedACollectiveUp) {
  const uint64_t seed = 11;
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 40; ++trial) {
    const ClusterSpec spec = random_cluster(rng);
    const ClusterSpec free = uncapped(spec);
    for (AllReduceAlgorithm a : {AllReduceAlgorithm::Ring, AllReduceAlgorithm::Tree}) {
      for (CollectiveProtocol p :
           {CollectiveProtocol::LL, CollectiveProtocol::LL128, CollectiveProtocol::Simple}) {
        for (double bytes : {4e3, 4e6, 4e8}) {
          EXPECT_GE(run(spec, bytes, a, p).time, run(free, bytes, a, p).time * (1 - 1e-12))
              << "seed " << seed << " trial " << trial << ": " << spec.workers << " workers, "
              << spec.workers_per_node << " per node, " << spec.nics_per_node << " NICs, " << to_string(a)
              << " " << to_string(p) << " " << bytes << " B";
        }
      }
    }
  }
}

TEST(NcclChannelCaps, MoreChannelsNeverSlowACappedCollective) {
  // From 1 channel up: the first channels add rings over idle NICs, the rest raise the per-channel
  // caps' sum; neither can slow a collective. Caps set low enough to bind.
  const uint64_t seed = 12;
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 25; ++trial) {
    ClusterSpec spec = random_cluster(rng);
    for (cluster::NcclCost* costs : {spec.nccl.ring, spec.nccl.tree}) {
      for (int p = 0; p < cluster::kNcclProtocols; ++p) costs[p].channel_bw = 2e9;
    }
    for (AllReduceAlgorithm a : {AllReduceAlgorithm::Ring, AllReduceAlgorithm::Tree}) {
      for (CollectiveProtocol p : {CollectiveProtocol::LL128, CollectiveProtocol::Simple}) {
        double previous = net::kInfinity;
        for (int channels = 1; channels <= 24; ++channels) {
          spec.nccl.channels = channels;
          const double t = run(spec, 64e6, a, p).time;
          EXPECT_LE(t, previous * (1 + 1e-12))
              << "seed " << seed << " trial " << trial << ": " << spec.workers << " workers, "
              << spec.workers_per_node << " per node, " << spec.nics_per_node << " NICs, " << to_string(a)
              << " " << to_string(p) << ", " << channels << " channels";
          previous = t;
        }
      }
    }
  }
}

TEST(NcclChannelCaps, AutoSwitchesProtocolWhereTheCappedClosedFormsCross) {
  // 4 nodes of one GPU, NIC 100 GB/s, ring only. Every step crosses nodes, so
  //   t_p(S) = base_p + 6 net_p + 1.5 S / bus_p,   bus_p = min(100 GB/s x efficiency_p, cap_p).
  // LL: 6.6 + 6 x 2.7 = 22.8 us, bus min(25, max_bw 10) = 10 GB/s;
  // LL128: 14 + 6 x 4 = 38 us, bus min(93.75, 4 channels x 5 GB/s) = 20 GB/s;
  // Simple: 8.4 + 6 x 14 = 92.4 us, bus 100 GB/s (no cap).
  // LL -> LL128 at S1 = (38 - 22.8) us / (1.5 (1/10 - 1/20) / GB/s) = 202,667 B (uncapped: 345 kB);
  // LL128 -> Simple at S2 = (92.4 - 38) us / (1.5 (1/20 - 1/100) / GB/s) = 906,667 B.
  ClusterSpec spec = nodes_of(4, 1, 1, 100e9, 800e9);
  spec.nccl.channels = 4;
  spec.nccl.ring[kLL].max_bw = 10e9;
  spec.nccl.ring[kLL128].channel_bw = 5e9;
  const double s1 = 15.2e-6 / (1.5 * (1 / 10e9 - 1 / 20e9)), s2 = 54.4e-6 / (1.5 * (1 / 20e9 - 1 / 100e9));
  auto ran = [&](double bytes) {
    return run(spec, bytes, AllReduceAlgorithm::Ring, CollectiveProtocol::Auto);
  };
  EXPECT_EQ(ran(0.999 * s1).protocol, CollectiveProtocol::LL);
  EXPECT_EQ(ran(1.001 * s1).protocol, CollectiveProtocol::LL128);
  EXPECT_EQ(ran(0.999 * s2).protocol, CollectiveProtocol::LL128);
  EXPECT_EQ(ran(1.001 * s2).protocol, CollectiveProtocol::Simple);
  // Without the caps LL would still win at S1 (its crossover is at 345 kB).
  EXPECT_EQ(run(uncapped(spec), 1.001 * s1, AllReduceAlgorithm::Ring, CollectiveProtocol::Auto).protocol,
            CollectiveProtocol::LL);
  // The time auto reports is the chosen closed form's.
  const double at = 1.5 * s1;
  const double ll128 = 38e-6 + 1.5 * at / 20e9;
  EXPECT_NEAR(ran(at).time, ll128, 1e-9 * ll128);
}

}  // namespace nccl_channels_test
}  // namespace
}  // namespace stepcast::scheme
