// Routing takes its hop counts from the topology's shape (leaf-spine, k-ary fat-tree, BiGraph,
// torus) instead of a breadth-first search per destination, which at a million GPUs (16,384
// leaves) would cost a search over every link for every leaf. The shapes must give the search's
// numbers: here every switch to every switch a node attaches to, against a search over the
// built links; and the links' names and capacities, made from their index, as a node's are laid
// out.
#include <gtest/gtest.h>

#include <deque>
#include <set>
#include <string>
#include <vector>

#include "stepcast/cluster/cluster.hpp"

namespace stepcast::cluster {
namespace {
namespace switch_hops_test {  // this file's own names: test files are compiled several to a unit

/// Hops from every switch to `to` by a search backwards over the cluster's switch links.
std::vector<int> searched(const Cluster& c, int to) {
  std::vector<std::vector<int>> incoming(static_cast<size_t>(c.num_switches));
  for (int s = 0; s < c.num_switches; ++s) {
    for (uint32_t l : c.switch_out[static_cast<size_t>(s)]) {
      incoming[static_cast<size_t>(c.links[l].to - c.num_nodes)].push_back(s);
    }
  }
  std::vector<int> dist(static_cast<size_t>(c.num_switches), -1);
  std::deque<int> queue{to};
  dist[static_cast<size_t>(to)] = 0;
  while (!queue.empty()) {
    const int v = queue.front();
    queue.pop_front();
    for (int u : incoming[static_cast<size_t>(v)]) {
      if (dist[static_cast<size_t>(u)] < 0) {
        dist[static_cast<size_t>(u)] = dist[static_cast<size_t>(v)] + 1;
        queue.push_back(u);
      }
    }
  }
  return dist;
}

void expect_hops_of_a_search(const ClusterSpec& spec, const std::string& what) {
  const Cluster c = build_cluster(spec);
  const std::set<int> destinations(c.node_switch.begin(), c.node_switch.end());
  for (int to : destinations) {
    const std::vector<int> dist = searched(c, to);
    for (int from = 0; from < c.num_switches; ++from) {
      ASSERT_EQ(c.switch_hops(from, to), dist[static_cast<size_t>(from)])
          << what << ": switch " << from << " to " << to;
    }
  }
}

TEST(SwitchHops, ShapesGiveTheHopsOfASearch) {
  ClusterSpec spec;
  spec.workers = 40;
  spec.topology = Topology::FatTree;
  spec.fat_tree = {.levels = 2, .radix = 8, .oversubscription = 1};
  expect_hops_of_a_search(spec, "leaf-spine radix 8");
  spec.fat_tree.radix = 2;
  expect_hops_of_a_search(spec, "leaf-spine radix 2");
  spec.fat_tree.oversubscription = 4;  // 1 spine
  expect_hops_of_a_search(spec, "leaf-spine radix 8, 4:1");
  spec.routing = Routing::Ideal;  // bundled uplinks
  expect_hops_of_a_search(spec, "leaf-spine radix 8, 4:1, ideal");
  spec.routing = Routing::Ecmp;
  spec.fat_tree = {.levels = 3, .radix = 8, .oversubscription = 2};
  spec.workers = 100;  // 7 of 8 pods
  expect_hops_of_a_search(spec, "3-level fat-tree radix 8");
  spec.routing = Routing::Spray;
  expect_hops_of_a_search(spec, "3-level fat-tree radix 8, spray");
  spec.routing = Routing::Ecmp;
  spec.fat_tree.oversubscription = 1;
  expect_hops_of_a_search(spec, "3-level fat-tree radix 8, 1:1");
  spec.fat_tree.oversubscription = 2;
  spec.workers = 5;  // one pod
  expect_hops_of_a_search(spec, "3-level fat-tree, one pod");
  spec.topology = Topology::BiGraph;
  spec.bigraph = {.switches_per_half = 3, .hosts_per_switch = 2};
  spec.workers = 12;
  expect_hops_of_a_search(spec, "bigraph 3 x 2");
  spec.topology = Topology::Torus;
  for (const std::vector<int>& dims :
       std::vector<std::vector<int>>{{5}, {2, 3}, {4, 1, 3}, {2, 2, 2}, {6, 4}}) {
    spec.torus.dims = dims;
    spec.workers = 1;
    for (int d : dims) spec.workers *= d;
    expect_hops_of_a_search(spec, "torus of " + std::to_string(spec.workers));
  }
  spec.topology = Topology::FatTree;
  spec.fat_tree = {.levels = 2, .radix = 4, .oversubscription = 1};
  spec.node_placement = NodePlacement::Random;
  spec.fabric_nodes = 30;
  spec.workers = 11;
  expect_hops_of_a_search(spec, "leaf-spine, random placement");
}

TEST(LinkTable, NamesAndCapacitiesFollowTheLayout) {
  ClusterSpec spec;
  spec.workers = 10;
  spec.workers_per_node = 4;
  spec.nics_per_node = 2;
  spec.nic_bw = 50e9;
  spec.ps_nic_bw = 25e9;
  spec.latency = 4e-6;
  spec.intra_node_link = IntraNodeLink::Pcie;
  spec.gpus_per_pcie_switch = 2;
  spec.intra_node_bw = 32e9;
  spec.intra_node_latency = 2e-6;
  spec.topology = Topology::FatTree;
  spec.fat_tree = {.levels = 2, .radix = 4, .oversubscription = 2};
  const Cluster c = build_cluster(spec, 1);  // 3 worker nodes and a server
  EXPECT_EQ(c.links.name(c.nic_up[0]), "node0.nic0.up");
  EXPECT_EQ(c.links.name(c.nic_down[5]), "node2.nic1.down");
  EXPECT_EQ(c.links.name(c.nic_up[6]), "server0.nic.up");
  EXPECT_EQ(c.links[c.nic_up[5]].bw, 50e9);
  EXPECT_EQ(c.links[c.nic_up[6]].bw, 25e9);
  EXPECT_EQ(c.links[c.nic_up[2]].latency, 2e-6);
  EXPECT_EQ(c.links[c.nic_up[2]].from, 1);
  EXPECT_EQ(c.links[c.nic_down[2]].to, 1);
  EXPECT_EQ(c.links[c.nic_down[2]].from, c.num_nodes + c.node_switch[1]);
  EXPECT_EQ(c.links.name(c.pcie_up[3]), "node1.pcie1.up");
  EXPECT_EQ(c.links[c.pcie_up[3]].bw, 32e9);
  EXPECT_EQ(c.links.name(c.bus_down[9]), "node1.host.bus.down");
  EXPECT_EQ(c.links.name(c.bus_up[7]), "node1.gpu2.bus.up");
  EXPECT_EQ(c.links[c.bus_up[7]].latency, 1e-6);
  EXPECT_EQ(c.links.name(0), "leaf0->spine0");
  EXPECT_EQ(c.links[0].bw, 50e9);  // 2:1 of 2 hosts: one uplink at the NIC's speed
  // Every link has a name of its own, and the table ends with the last bus link.
  std::set<std::string> names;
  for (size_t l = 0; l < c.links.size(); ++l) EXPECT_TRUE(names.insert(c.links.name(l)).second) << l;
  EXPECT_EQ(c.links.size(), static_cast<size_t>(c.bus_down.back()) + 1);
}

}  // namespace switch_hops_test
}  // namespace
}  // namespace stepcast::cluster
