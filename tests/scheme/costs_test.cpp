// The shared cost formulas (scheme/costs.hpp) against closed forms derived by hand (DESIGN.md
// 3.2), and the per-algorithm bytes of an all-reduce against the plan the simulator runs.
#include "stepcast/detail/scheme/costs.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "layered_workload.hpp"
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/detail/scheme/placement.hpp"

namespace stepcast::scheme {
namespace {
namespace costs_test {  // this file's own names: test files are compiled several to a unit

using cluster::ClusterSpec;

workload::Workload tensors_of(const std::vector<double>& bytes) {
  workload::Workload w;
  for (size_t t = 0; t < bytes.size(); ++t) {
    w.tensors.push_back(
        {.name = std::string("w") + std::to_string(t), .bytes = bytes[t], .producer = -1, .consumers = {}});
  }
  return w;
}

TEST(PsCosts, ApplyTimeIsFixedCostPlusBytesOverApplyBandwidth) {
  PsConfig ps;
  ps.apply_time = 20e-6;
  ps.apply_bw = 2e9;
  EXPECT_DOUBLE_EQ(ps_apply_time(ps, 4e6), 20e-6 + 4e6 / 2e9);  // 20 us + 2 ms
  EXPECT_DOUBLE_EQ(ps_apply_time(ps, 0), 20e-6);
  ps.apply_bw = 0;  // no per-byte cost
  EXPECT_DOUBLE_EQ(ps_apply_time(ps, 4e6), 20e-6);
  ps.apply_time = 0;
  EXPECT_EQ(ps_apply_time(ps, 4e6), 0);
}

TEST(PsCosts, ServerBandwidthIsTheDedicatedNicOrTheWorkerNodes) {
  ClusterSpec spec;
  spec.nic_bw = 1.25e9;
  PsConfig ps;
  ps.placement = PsPlacement::Dedicated;
  EXPECT_EQ(ps_server_bw(spec, ps), 1.25e9);  // ps_nic_bw 0: as fast as a worker's
  spec.ps_nic_bw = 5e9;
  EXPECT_EQ(ps_server_bw(spec, ps), 5e9);
  ps.placement = PsPlacement::Colocated;  // shares its worker node's NIC
  EXPECT_EQ(ps_server_bw(spec, ps), 1.25e9);
}

TEST(PsCosts, ShardLoadsFollowThePlacement) {
  // whole, 2 shards, tensors of 10, 4 and 3 MB in creation order: 10 -> shard 0; 4 -> shard 1
  // (0 < 10); 3 -> shard 1 (4 < 10). Shard 0 holds 10 MB and applies one piece, shard 1 holds 7 MB
  // and applies two.
  const workload::Workload w = tensors_of({10e6, 4e6, 3e6});
  PsConfig ps;
  ps.count = 2;
  ps.apply_time = 1e-3;
  ps.apply_bw = 1e9;
  const ShardLoads whole = shard_loads(w, ps);
  ASSERT_EQ(whole.bytes.size(), 2u);
  EXPECT_DOUBLE_EQ(whole.bytes[0], 10e6);
  EXPECT_DOUBLE_EQ(whole.bytes[1], 7e6);
  EXPECT_DOUBLE_EQ(whole.apply[0], 1e-3 + 10e6 / 1e9);     // 11 ms
  EXPECT_DOUBLE_EQ(whole.apply[1], 2 * 1e-3 + 7e6 / 1e9);  // 9 ms
  EXPECT_DOUBLE_EQ(whole.largest_bytes(), 10e6);
  EXPECT_DOUBLE_EQ(whole.largest_apply(), 11e-3);
  // split: every tensor halved over both shards, 8.5 MB each, three pieces each.
  ps.partition = PsPartition::Split;
  const ShardLoads split = shard_loads(w, ps);
  for (int s = 0; s < 2; ++s) {
    EXPECT_DOUBLE_EQ(split.bytes[s], 8.5e6);
    EXPECT_DOUBLE_EQ(split.apply[s], 3 * 1e-3 + 8.5e6 / 1e9);
  }
}

constexpr double kS = 100e6;

// Three layers on one lane, 1 ms per op; layer 2 (read last in the forward, produced first in the
// backward) holds 1 MB, layers 0 and 1 hold 1 kB; one shard, 1 GB/s per stream, 1 ms an apply.
const ShardStreams kOneGBps{1e9, std::numeric_limits<double>::infinity()};

PsConfig one_shard(PsOrder order) {
  PsConfig ps;
  ps.count = 1;
  ps.partition = PsPartition::Whole;
  ps.order = order;
  ps.apply_time = 1e-3;
  return ps;
}

TEST(PsStreams, TheLaneBacklogOfSmallPiecesPushedLast) {
  const workload::Workload w = test_workloads::layered({1e3, 1e3, 1e6}, 1e-3, 1e-3);
  // From the backward's start: w2 ready at 1 ms, in at 2 ms; w1 ready at 2 ms and w0 at 3 ms,
  // each in 1 us later. Four workers' copies take 4 ms of the lane per piece: 2 + 4 = 6 ms,
  // then 10 and 14 ms, 11 ms after the last push is in (not one piece's 4 ms).
  const PushStreams r = push_streams(w, one_shard(PsOrder::Fifo), 4, kOneGBps);
  EXPECT_NEAR(r.pushed, 3e-3 + 1e-6, 1e-12);
  EXPECT_NEAR(r.applied, 14e-3, 1e-12);
  ASSERT_EQ(r.piece_applied.size(), 3u);
  EXPECT_NEAR(r.piece_applied[2], 6e-3, 1e-12);
  EXPECT_NEAR(r.piece_applied[1], 10e-3, 1e-12);
  EXPECT_NEAR(r.piece_applied[0], 14e-3, 1e-12);
  // The next pulls end no sooner than each piece's applies plus every worker's copy of it and of
  // the pieces applied after it, through the shard's NIC (4 x 1 GB/s): w0, applied last, takes
  // 1 KB / 1 GB/s more, 14.001 ms (w2, 1 MB at 6 ms, would need 7.002 ms).
  EXPECT_NEAR(r.drained, 14e-3 + 1e-6, 1e-12);
  // Free applies: the lane is done with the last push.
  PsConfig free = one_shard(PsOrder::Fifo);
  free.apply_time = 0;
  EXPECT_NEAR(push_streams(w, free, 4, kOneGBps).applied, 3e-3 + 1e-6, 1e-12);
  // A large piece applied last: w0 (1 MB) is produced at 3 ms and in at 4 ms, so the pulls end
  // at 5 ms at the soonest, one piece-time after the last apply.
  const workload::Workload large_first = test_workloads::layered({1e6, 1e3, 1e3}, 1e-3, 1e-3);
  const PushStreams late = push_streams(large_first, free, 4, kOneGBps);
  EXPECT_NEAR(late.applied, 4e-3, 1e-12);
  EXPECT_NEAR(late.drained, 5e-3, 1e-12);
}

TEST(PsStreams, TheForwardRunsWhileTheLastLayersArePulled) {
  const workload::Workload w = test_workloads::layered({1e3, 1e3, 1e6}, 1e-3, 1e-3);
  // Piece order (fifo) from 0: w0 in at 1 us, w1 at 2 us, w2 at 1.000002 ms, hidden behind fwd0
  // and fwd1, so the forward ends at 3.000001 ms; all pulls then the forward would be 4.000002.
  const double need = forward_end_after_pulls(w, one_shard(PsOrder::Fifo), {0.0}, kOneGBps, {}, 1, 1);
  EXPECT_NEAR(need, 3e-3 + 1e-6, 1e-12);
  // A piece waits until it is ready: w0 ready at 5 ms holds the whole forward.
  const double held =
      forward_end_after_pulls(w, one_shard(PsOrder::Fifo), {0.0}, kOneGBps, {5e-3, 0, 0}, 1, 1);
  EXPECT_NEAR(held, 5e-3 + 1e-6 + 3e-3, 1e-12);
  // Random order: the mean over seeded orders lies between the need order and all pulls first,
  // and the same seed gives the same mean.
  const double random = forward_end_after_pulls(w, one_shard(PsOrder::Random), {0.0}, kOneGBps, {}, 7, 64);
  EXPECT_GT(random, need + 1e-5);
  EXPECT_LT(random, 1.000002e-3 + 3e-3 - 1e-5);
  EXPECT_EQ(random, forward_end_after_pulls(w, one_shard(PsOrder::Random), {0.0}, kOneGBps, {}, 7, 64));
  // How far two orders put two workers apart: of the six orders, three end the forward at about
  // 3 ms (w0 w1 w2, w1 w0 w2, w0 w2 w1) and three at about 4 ms, so E|X - X'| = 2 x 1/2 x 1/2 x
  // 1 ms = 0.5 ms; a need order has one end.
  double apart = -1;
  (void)forward_end_after_pulls(w, one_shard(PsOrder::Random), {0.0}, kOneGBps, {}, 7, 64, &apart);
  EXPECT_GT(apart, 0.35e-3);
  EXPECT_LT(apart, 0.65e-3);
  (void)forward_end_after_pulls(w, one_shard(PsOrder::Fifo), {0.0}, kOneGBps, {}, 7, 64, &apart);
  EXPECT_EQ(apart, 0.0);
}

TEST(PsStreams, ConnectionsShareTheWorkersLinkFairly) {
  // Two shards, 1 MB and 3 MB, each connection at most 1 GB/s. On a 1 GB/s worker link both run
  // at 0.5 GB/s until the 1 MB piece is in at 2 ms; the other then has the link, in at 4 ms. The
  // forward (1 ms an op) runs 2-3 ms and 4-5 ms. On an unbounded link: in at 1 and 3 ms, done at 4.
  const workload::Workload w = test_workloads::layered({1e6, 3e6}, 1e-3, 1e-3);
  PsConfig ps = one_shard(PsOrder::Fifo);
  ps.count = 2;
  ASSERT_NE(place_parameters(w, ps)[0].shard, place_parameters(w, ps)[1].shard);
  const ShardStreams shared{1e9, 1e9};
  const ShardStreams own{1e9, std::numeric_limits<double>::infinity()};
  EXPECT_NEAR(forward_end_after_pulls(w, ps, {0.0, 0.0}, shared, {}, 1, 1), 5e-3, 1e-12);
  EXPECT_NEAR(forward_end_after_pulls(w, ps, {0.0, 0.0}, own, {}, 1, 1), 4e-3, 1e-12);
  // Pushes: w1 is produced at 1 ms (its backward runs first), w0 at 2 ms. w1 runs alone at
  // 1 GB/s until 2 ms (1 MB of 3 in), then both at 0.5 GB/s: w0 is in at 4 ms, when w1 has 1 MB
  // left, which takes the whole link: in at 5 ms.
  PsConfig free = ps;
  free.apply_time = 0;
  const PushStreams pushed = push_streams(w, free, 1, shared);
  EXPECT_NEAR(pushed.piece_applied[0], 4e-3, 1e-12);
  EXPECT_NEAR(pushed.piece_applied[1], 5e-3, 1e-12);
  EXPECT_NEAR(pushed.pushed, 5e-3, 1e-12);
  // Each shard's NIC sends its own pieces: w1's shard its 3 MB after 5 ms, 8 ms.
  EXPECT_NEAR(pushed.drained, 8e-3, 1e-12);
}

TEST(CollectiveBytes, ClosedFormsPerAlgorithm) {
  // Ring, halving-doubling and hdrm: reduce-scatter then all-gather, (N-1)/N S each per worker.
  for (AllReduceAlgorithm a :
       {AllReduceAlgorithm::Ring, AllReduceAlgorithm::HalvingDoubling, AllReduceAlgorithm::Hdrm}) {
    EXPECT_DOUBLE_EQ(allreduce_bytes_per_worker(a, 8, 1, kS), 2.0 * 7 / 8 * kS);  // 175 MB
  }
  // Tree: each of the T trees has N - 1 edges and moves its S/T over each edge once each way (in
  // C chunks), so 2 (N-1) S in all, the ring's 2 (N-1)/N S per worker, whatever C and the nodes.
  EXPECT_DOUBLE_EQ(allreduce_bytes_per_worker(AllReduceAlgorithm::Tree, 8, 1, kS), 1.75 * kS);
  EXPECT_DOUBLE_EQ(allreduce_bytes_per_worker(AllReduceAlgorithm::Tree, 16, 4, kS), 2.0 * 15 / 16 * kS);
  // Hierarchical with full nodes (8 workers, 4 per node, 2 nodes): 2 x 3/4 S inside plus
  // 2 x 1/8 S across = 1.75 S, the ring's.
  EXPECT_DOUBLE_EQ(allreduce_bytes_per_worker(AllReduceAlgorithm::Hierarchical, 8, 4, kS), 1.75 * kS);
  // Hierarchical, 5 workers, 4 per node: node 0 runs a local ring of 4 (3 steps each way of S/4:
  // 2 x 3 x 4 x S/4 = 6 S), node 1 is alone (nothing); across, only GPU 0 has a partner, a ring of
  // two (2 steps of S/8, 2 transfers each: 0.5 S). 6.5 S in all, 1.3 S per worker (the ring: 1.6 S).
  EXPECT_DOUBLE_EQ(allreduce_bytes_per_worker(AllReduceAlgorithm::Hierarchical, 5, 4, kS), 1.3 * kS);
  // One worker sends nothing.
  EXPECT_EQ(allreduce_bytes_per_worker(AllReduceAlgorithm::Tree, 1, 1, kS), 0);
}

// What the plan sends (collective_bytes_sent) is the closed form, for every algorithm on the
// clusters it runs on.
TEST(CollectiveBytes, PlanBytesEqualTheClosedForm) {
  struct Case {
    AllReduceAlgorithm algorithm;
    ClusterSpec spec;
  };
  std::vector<Case> cases;
  for (int n : {2, 3, 5, 8, 13, 16, 64}) {
    ClusterSpec spec;
    spec.workers = n;
    cases.push_back({AllReduceAlgorithm::Ring, spec});
    cases.push_back({AllReduceAlgorithm::Tree, spec});
    for (int g : {2, 4, 8}) {
      spec.workers_per_node = g;
      cases.push_back({AllReduceAlgorithm::Hierarchical, spec});
      cases.push_back({AllReduceAlgorithm::Ring, spec});
    }
  }
  for (int n : {2, 4, 16, 64}) {
    ClusterSpec spec;
    spec.workers = n;
    cases.push_back({AllReduceAlgorithm::HalvingDoubling, spec});
  }
  ClusterSpec bigraph;  // 2 halves of 4 switches, one host each
  bigraph.workers = 8;
  bigraph.topology = cluster::Topology::BiGraph;
  bigraph.bigraph = {.switches_per_half = 4, .hosts_per_switch = 1};
  cases.push_back({AllReduceAlgorithm::Hdrm, bigraph});
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(to_string(c.algorithm)) + ", N = " + std::to_string(c.spec.workers) +
                 ", per node " + std::to_string(c.spec.workers_per_node));
    const cluster::Cluster cluster = cluster::build_cluster(c.spec);
    const CollectivePlan plan = plan_collective(cluster, CollectiveOp::AllReduce, c.algorithm);
    const double per_worker =
        allreduce_bytes_per_worker(c.algorithm, c.spec.workers, c.spec.workers_per_node, kS);
    EXPECT_NEAR(collective_bytes_sent(plan, kS), c.spec.workers * per_worker, 1e-12 * kS * c.spec.workers);
  }
}

}  // namespace costs_test
}  // namespace
}  // namespace stepcast::scheme
