// cluster.node_placement (issue 11): a job's nodes scattered over a fabric larger than the job,
// as the CNTK seed's batch system placed them on a 3-D torus. Packed keeps node n in slot n;
// random takes a seeded choice of slots, which costs hops and shared links.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/error.hpp"
#include "stepcast/scheme/validate.hpp"

namespace stepcast::cluster {
namespace {
namespace node_placement_test {  // this file's own names: test files are compiled several to a unit

ClusterSpec torus_job(NodePlacement placement, uint64_t seed = 1) {
  ClusterSpec spec;
  spec.workers = 64;
  spec.topology = Topology::Torus;
  spec.torus.dims = {8, 8, 8};
  spec.nic_bw = 12.5e9;
  spec.node_placement = placement;
  spec.placement_seed = seed;
  return spec;
}

TEST(NodePlacement, PackedPutsNodeNInSlotNAndRandomIsASeededChoiceOfDistinctSlots) {
  const Cluster packed = build_cluster(torus_job(NodePlacement::Packed));
  for (int n = 0; n < 64; ++n) EXPECT_EQ(packed.node_switch[n], n);
  const Cluster a = build_cluster(torus_job(NodePlacement::Random, 7));
  const Cluster again = build_cluster(torus_job(NodePlacement::Random, 7));
  const Cluster b = build_cluster(torus_job(NodePlacement::Random, 8));
  EXPECT_EQ(a.node_switch, again.node_switch);  // same seed, same placement
  EXPECT_NE(a.node_switch, b.node_switch);
  const std::set<int> slots(a.node_switch.begin(), a.node_switch.end());
  EXPECT_EQ(slots.size(), 64u);    // distinct routers
  EXPECT_GT(*slots.rbegin(), 63);  // beyond the packed block
  EXPECT_LT(*slots.rbegin(), 512);
}

TEST(NodePlacement, AScatteredRingIsSlowerThanAPackedOne) {
  // Packed on the 8x8x8 torus, the ring's neighbours are torus neighbours except where it turns
  // to the next row or plane (at most two transfers on a link); scattered, each transfer crosses
  // several routers and more of them share links, and every step waits for the most shared one.
  const double bytes = 100e6;
  const auto packed =
      scheme::simulate_allreduce(torus_job(NodePlacement::Packed), bytes, scheme::AllReduceAlgorithm::Ring);
  // Which links meet depends on the placement's seed (and ECMP's hash of each flow among its
  // minimal routes): over 8 placements none is faster than packed, some share a link among more
  // transfers, and on average they are slower.
  EXPECT_LE(packed.max_link_flows, 2u);
  double total = 0;
  uint32_t most = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const auto scattered = scheme::simulate_allreduce(torus_job(NodePlacement::Random, seed), bytes,
                                                      scheme::AllReduceAlgorithm::Ring);
    EXPECT_GE(scattered.time, packed.time * (1 - 1e-9)) << "placement seed " << seed;
    total += scattered.time;
    most = std::max(most, scattered.max_link_flows);
  }
  EXPECT_GT(most, packed.max_link_flows);
  EXPECT_GT(total / 8, 1.1 * packed.time);
  // On a ring of 64 routers a packed job of 32 nodes is a chain of neighbours (its wrap-around
  // runs back on the other direction's links): one transfer per link. Scattered, the 32
  // transfers' arcs overlap: several times slower, for every seed.
  ClusterSpec ring = torus_job(NodePlacement::Packed);
  ring.workers = 32;
  ring.torus.dims = {64};
  const double chain = scheme::simulate_allreduce(ring, bytes, scheme::AllReduceAlgorithm::Ring).time;
  ring.node_placement = NodePlacement::Random;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    ring.placement_seed = seed;
    EXPECT_GT(scheme::simulate_allreduce(ring, bytes, scheme::AllReduceAlgorithm::Ring).time, 3 * chain)
        << seed;
  }
}

TEST(NodePlacement, RandomWithoutPositionsOrSlotsIsAnError) {
  ClusterSpec flat = torus_job(NodePlacement::Random);
  flat.topology = Topology::Switch;
  EXPECT_THROW(scheme::validate(flat, {}), Error);
  ClusterSpec leaf_spine = torus_job(NodePlacement::Random);
  leaf_spine.topology = Topology::FatTree;  // two levels: grows with its nodes
  EXPECT_THROW(scheme::validate(leaf_spine, {}), Error);
  leaf_spine.fabric_nodes = 256;
  EXPECT_NO_THROW(scheme::validate(leaf_spine, {}));
  ClusterSpec small = torus_job(NodePlacement::Random);
  small.fabric_nodes = 32;  // fewer slots than the job's 64 nodes
  EXPECT_THROW(scheme::validate(small, {}), Error);
}

}  // namespace node_placement_test
}  // namespace
}  // namespace stepcast::cluster
