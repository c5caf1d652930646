// The network reduced to classes of interchangeable links (reduce_to_link_classes): what the
// fast paths and a collective's timing run on. A class is links of one capacity crossed by the
// same flow groups with the same member counts; the number of classes follows the pattern's
// kinds of links, not the number of ranks, which is what keeps memory flat at a million GPUs.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "scheme/collective_timing.hpp"
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"

namespace stepcast::scheme {
namespace {
namespace link_classes_test {  // this file's own names: test files are compiled several to a unit

cluster::ClusterSpec nodes_of_eight(int workers) {
  cluster::ClusterSpec spec;
  spec.workers = workers;
  spec.workers_per_node = 8;
  spec.nic_bw = 25e9;
  spec.intra_node_bw = 300e9;
  spec.latency = 5e-6;
  return spec;
}

struct Reduced {
  std::vector<double> capacities;
  std::vector<uint32_t> source;
  CollectivePlan plan;
};

Reduced reduce_ring(const cluster::Cluster& c, CollectiveOp op) {
  Reduced r{.capacities = {}, .source = {}, .plan = plan_collective(c, op, AllReduceAlgorithm::Ring)};
  r.capacities = reduce_to_link_classes(c, {&r.plan}, r.source);
  return r;
}

TEST(LinkClasses, ARingHasAsManyClassesAtEveryScale) {
  // One ring over nodes of 8: GPU links out and in, NICs out and in (a handful), however many
  // nodes; 64 to 4,096 GPUs give the same classes.
  size_t classes_at_64 = 0;
  for (int workers : {64, 512, 4096}) {
    SCOPED_TRACE(std::to_string(workers) + " workers");
    const cluster::Cluster c = cluster::build_cluster(nodes_of_eight(workers));
    const Reduced r = reduce_ring(c, CollectiveOp::AllGather);
    if (workers == 64) classes_at_64 = r.capacities.size();
    EXPECT_EQ(r.capacities.size(), classes_at_64);
    EXPECT_LE(r.capacities.size(), 8u);
    EXPECT_EQ(r.source.size(), c.links.size());
  }
}

TEST(LinkClasses, EveryCrossedLinkMapsToAClassOfItsCapacityAndTheOthersToNone) {
  const cluster::Cluster c = cluster::build_cluster(nodes_of_eight(256));
  const CollectivePlan original = plan_collective(c, CollectiveOp::AllReduce, AllReduceAlgorithm::Ring);
  const Reduced r = reduce_ring(c, CollectiveOp::AllReduce);
  std::set<uint32_t> crossed;
  for (const Pattern& p : original.patterns) {
    for (const FlowGroup& g : p.groups) {
      for (const net::LinkUse& u : g.path) crossed.insert(u.link);
    }
  }
  ASSERT_FALSE(crossed.empty());
  for (uint32_t l = 0; l < c.links.size(); ++l) {
    if (!crossed.contains(l)) {
      EXPECT_EQ(r.source[l], kNoClass) << c.links.name(l);
      continue;
    }
    ASSERT_LT(r.source[l], r.capacities.size()) << c.links.name(l);
    EXPECT_EQ(r.capacities[r.source[l]], c.links[l].bw) << c.links.name(l);
  }
  // Each group's path now names each of its classes once, with the members it had on each link.
  ASSERT_EQ(r.plan.patterns.size(), original.patterns.size());
  for (size_t p = 0; p < original.patterns.size(); ++p) {
    ASSERT_EQ(r.plan.patterns[p].groups.size(), original.patterns[p].groups.size());
    for (size_t g = 0; g < original.patterns[p].groups.size(); ++g) {
      const FlowGroup& before = original.patterns[p].groups[g];
      const FlowGroup& after = r.plan.patterns[p].groups[g];
      std::set<uint32_t> classes;
      for (const net::LinkUse& u : before.path) classes.insert(r.source[u.link]);
      ASSERT_EQ(after.path.size(), classes.size());
      for (const net::LinkUse& u : after.path) EXPECT_TRUE(classes.contains(u.link));
      for (const net::LinkUse& u : before.path) {
        const auto it = std::find_if(after.path.begin(), after.path.end(),
                                     [&](const net::LinkUse& a) { return a.link == r.source[u.link]; });
        ASSERT_NE(it, after.path.end());
        EXPECT_EQ(it->count, u.count) << c.links.name(u.link);
      }
    }
  }
}

TEST(LinkClasses, ALinkCrossedByOneMoreGroupIsAClassOfItsOwn) {
  // A ring over every GPU and one extra message from GPU 0 to GPU 8 (node 0 to node 1): node 0's
  // NIC uplink carries both, every other NIC uplink the ring alone, so node 0's is a class apart
  // though its capacity is theirs; without the message they are one class.
  const cluster::Cluster c = cluster::build_cluster(nodes_of_eight(64));
  const uint32_t up0 = c.nic_up[0], up1 = c.nic_up[1], up2 = c.nic_up[2];
  ASSERT_EQ(c.links[up0].bw, c.links[up1].bw);

  CollectivePlan ring = plan_collective(c, CollectiveOp::AllGather, AllReduceAlgorithm::Ring);
  std::vector<uint32_t> alone;
  (void)reduce_to_link_classes(c, {&ring}, alone);
  EXPECT_EQ(alone[up0], alone[up1]);

  CollectivePlan ring_again = plan_collective(c, CollectiveOp::AllGather, AllReduceAlgorithm::Ring);
  CollectivePlan message = plan_transfers(c, {{0, 8}});
  std::vector<uint32_t> both;
  const std::vector<double> capacities = reduce_to_link_classes(c, {&ring_again, &message}, both);
  EXPECT_NE(both[up0], both[up1]);
  EXPECT_EQ(both[up1], both[up2]);
  EXPECT_EQ(capacities[both[up0]], capacities[both[up1]]);
}

}  // namespace link_classes_test
}  // namespace
}  // namespace stepcast::scheme
