// The rings of a group that spans nodes (plan_group_ring): as NCCL's channels, one ring per NIC
// the group's members use in a node, each carrying 1 / K of the data and leaving every node on its
// own NIC, so the group's traffic spreads over all of those NICs evenly; inside one node, or with
// one member (one NIC) per node, the plain ring. Checked on the link loads of the plans, by hand.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"

namespace stepcast::scheme {
namespace {
namespace group_ring_channels_test {  // this file's own names: test files are compiled several to a unit

/// Nodes of 8 GPUs with 8 NICs (one per GPU).
cluster::Cluster nodes_of_eight(int workers) {
  cluster::ClusterSpec spec;
  spec.workers = workers;
  spec.workers_per_node = 8;
  spec.nics_per_node = 8;
  return cluster::build_cluster(spec);
}

/// Per link: the share of a ring step's bytes each member sends that crosses it.
std::map<uint32_t, double> link_loads(const CollectivePlan& plan) {
  std::map<uint32_t, double> load;
  for (const FlowGroup& g : plan.patterns.front().groups) {
    for (const net::LinkUse& u : g.path) load[u.link] += u.count * g.size_factor;
  }
  return load;
}

TEST(GroupRing, AGroupOfEveryGpuUsesEveryNicOnceEachWayAsTheWholeClusterRingDoes) {
  const cluster::Cluster c = nodes_of_eight(32);
  std::vector<int> all(32);
  for (int w = 0; w < 32; ++w) all[static_cast<size_t>(w)] = w;
  const std::map<uint32_t, double> group = link_loads(plan_group_ring(c, CollectiveOp::AllGather, {all}));
  const std::map<uint32_t, double> cluster_ring =
      link_loads(plan_collective(c, CollectiveOp::AllGather, AllReduceAlgorithm::Ring));
  for (size_t n = 0; n < c.nic_up.size(); ++n) {
    // 8 rings of 1/8 of the data; each NIC carries one of them out and one in.
    EXPECT_DOUBLE_EQ(group.at(c.nic_up[n]), 1.0 / 8) << "nic " << n;
    EXPECT_DOUBLE_EQ(group.at(c.nic_down[n]), 1.0 / 8) << "nic " << n;
  }
  EXPECT_EQ(group, cluster_ring);
}

TEST(GroupRing, EveryOtherGpuUsesItsFourNicsAndLeavesTheOthersIdle) {
  // A data-parallel group of tensor rank 0 under t = 2: GPUs 0, 2, 4, 6 of each of 4 nodes, on
  // NICs 0, 2, 4, 6: four rings of 1/4 of the data.
  const cluster::Cluster c = nodes_of_eight(32);
  std::vector<int> even;
  for (int w = 0; w < 32; w += 2) even.push_back(w);
  const std::map<uint32_t, double> load = link_loads(plan_group_ring(c, CollectiveOp::ReduceScatter, {even}));
  for (int node = 0; node < 4; ++node) {
    for (int nic = 0; nic < 8; ++nic) {
      const size_t n = static_cast<size_t>(node * 8 + nic);
      const double expected = nic % 2 == 0 ? 0.25 : 0.0;
      EXPECT_DOUBLE_EQ(load.count(c.nic_up[n]) ? load.at(c.nic_up[n]) : 0.0, expected) << node << " " << nic;
      EXPECT_DOUBLE_EQ(load.count(c.nic_down[n]) ? load.at(c.nic_down[n]) : 0.0, expected)
          << node << " " << nic;
    }
  }
}

TEST(GroupRing, OneMemberPerNodeOrOneNodeIsThePlainRing) {
  const cluster::Cluster c = nodes_of_eight(32);
  // GPU 3 of each node: one NIC each, one ring carrying everything.
  const std::map<uint32_t, double> across =
      link_loads(plan_group_ring(c, CollectiveOp::AllReduce, {{3, 11, 19, 27}}));
  for (int node = 0; node < 4; ++node) {
    EXPECT_DOUBLE_EQ(across.at(c.nic_up[static_cast<size_t>(node * 8 + 3)]), 1.0);
    EXPECT_DOUBLE_EQ(across.at(c.nic_down[static_cast<size_t>(node * 8 + 3)]), 1.0);
  }
  // Inside a node no NIC at all, each member sending its whole step to the next.
  const CollectivePlan inside = plan_group_ring(c, CollectiveOp::AllReduce, {{0, 1, 2, 3, 4, 5, 6, 7}});
  ASSERT_EQ(inside.patterns.front().groups.size(), 1u);
  EXPECT_DOUBLE_EQ(inside.patterns.front().groups.front().size_factor, 1.0);
  EXPECT_EQ(inside.patterns.front().groups.front().members, 8);
  for (uint32_t nic : c.nic_up) EXPECT_EQ(link_loads(inside).count(nic), 0u);
}

TEST(GroupRing, EveryMemberSendsItsWholeStepWhateverTheChannels) {
  // Bytes conservation: summed over its channels each member sends one step's share, so a ring
  // all-reduce over g members still sends 2 (g - 1) / g of the buffer per member.
  const cluster::Cluster c = nodes_of_eight(32);
  for (const std::vector<int>& group :
       {std::vector<int>{0, 2, 4, 6, 8, 10, 12, 14}, std::vector<int>{0, 8, 16, 24}}) {
    const CollectivePlan plan = plan_group_ring(c, CollectiveOp::AllReduce, {group});
    double sent = 0;
    for (const FlowGroup& g : plan.patterns.front().groups) sent += g.members * g.size_factor;
    EXPECT_DOUBLE_EQ(sent, static_cast<double>(group.size()));
    double fraction = 0;
    for (const Stage& st : plan.stages) fraction += st.fraction;
    const auto n = static_cast<double>(group.size());
    EXPECT_DOUBLE_EQ(fraction, 2 * (n - 1) / n);
  }
}

}  // namespace group_ring_channels_test
}  // namespace
}  // namespace stepcast::scheme
