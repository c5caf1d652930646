// The fabric in words (the table's "topology:" line) and the keys that cannot change a cluster:
// counts derived from the topology's own rules (k/2 hosts per leaf, (k/2)^2 cores, ...), not
// copied from the program's output.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stepcast/cluster/cluster.hpp"

namespace stepcast::cluster {
namespace {
namespace fabric_shape_test {  // this file's own names: test files are compiled several to a unit

ClusterSpec with(int workers, Topology topology) {
  ClusterSpec spec;
  spec.workers = workers;
  spec.topology = topology;
  return spec;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(FabricShape, LeafSpineCountsLeavesSpinesAndUplinks) {
  ClusterSpec spec = with(8, Topology::FatTree);
  spec.fat_tree = {.levels = 2, .radix = 4, .oversubscription = 2};
  // Radix 4: 2 hosts per leaf, so 8 nodes need 4 leaves; 2:1 leaves 2 / 2 = 1 full-speed
  // uplink per leaf, so 1 spine.
  const std::string shape = describe_fabric(build_cluster(spec));
  EXPECT_TRUE(contains(shape, "leaf-spine (radix 4)")) << shape;
  EXPECT_TRUE(contains(shape, "4 leaves of up to 2 hosts, 1 spine, 1 uplink per leaf at")) << shape;
  EXPECT_TRUE(contains(shape, "(2:1 oversubscribed)")) << shape;
  EXPECT_TRUE(contains(shape, "8 worker nodes")) << shape;
  // Even split: the uplinks are bundled, and the description says so.
  spec.routing = Routing::Ideal;
  EXPECT_TRUE(contains(describe_fabric(build_cluster(spec)), "ideal routing: each leaf's uplinks bundled"));
}

TEST(FabricShape, ThreeLevelFatTreeCountsPodsAndCores) {
  ClusterSpec spec = with(40, Topology::FatTree);
  spec.fat_tree = {.levels = 3, .radix = 8, .oversubscription = 1};
  // Radix 8: 4 hosts per edge switch, 16 per pod: 40 nodes fill 3 pods; (8/2)^2 = 16 cores.
  const std::string shape = describe_fabric(build_cluster(spec));
  EXPECT_TRUE(contains(shape, "3 pods of 4 edge and 4 aggregation switches, 16 cores, 4 hosts per edge switch"))
      << shape;
  EXPECT_FALSE(contains(shape, "uplinks")) << "no oversubscription, no uplink note: " << shape;
}

TEST(FabricShape, OtherTopologiesAndServerNodes) {
  ClusterSpec torus = with(8, Topology::Torus);
  torus.torus.dims = {2, 2, 2};
  EXPECT_TRUE(contains(describe_fabric(build_cluster(torus)), "torus 2x2x2 (8 routers)"));
  ClusterSpec bigraph = with(32, Topology::BiGraph);
  bigraph.bigraph = {.switches_per_half = 4, .hosts_per_switch = 4};
  EXPECT_TRUE(contains(describe_fabric(build_cluster(bigraph)), "2 halves of 4 switches, 4 hosts per switch"));
  // 16 GPUs at 8 per node are 2 worker nodes; 3 dedicated parameter servers add 3 nodes.
  ClusterSpec one_switch = with(16, Topology::Switch);
  one_switch.workers_per_node = 8;
  EXPECT_TRUE(contains(describe_fabric(build_cluster(one_switch, 3)), "one switch; 2 worker nodes and 3 server nodes"));
  EXPECT_TRUE(contains(describe_fabric(build_cluster(with(1, Topology::Switch))), "1 worker node"));
}

TEST(FabricShape, OversubscriptionUnderOneLeafHasNoEffect) {
  ClusterSpec spec = with(8, Topology::FatTree);
  spec.fat_tree = {.levels = 2, .radix = 16, .oversubscription = 2};
  // Radix 16: 8 hosts per leaf; all 8 nodes on leaf 0, nothing crosses an uplink.
  const std::vector<std::string> notes = ineffective_keys(build_cluster(spec));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(contains(notes[0], "cluster.fat_tree.oversubscription")) << notes[0];
  EXPECT_TRUE(contains(notes[0], "all 8 nodes attach to one leaf switch")) << notes[0];
  // A ninth node needs a second leaf: the uplinks carry traffic and the key matters.
  spec.workers = 9;
  EXPECT_TRUE(ineffective_keys(build_cluster(spec)).empty());
  // Without oversubscription there is nothing to say.
  spec.workers = 8;
  spec.fat_tree.oversubscription = 1;
  EXPECT_TRUE(ineffective_keys(build_cluster(spec)).empty());
  // A three-level tree under one edge switch: the same.
  spec.fat_tree = {.levels = 3, .radix = 16, .oversubscription = 4};
  const std::vector<std::string> edge = ineffective_keys(build_cluster(spec));
  ASSERT_EQ(edge.size(), 1u);
  EXPECT_TRUE(contains(edge[0], "one edge switch")) << edge[0];
}

// Keys of what is not built: each named once, and nothing for a default cluster.
TEST(FabricShape, KeysOfWhatIsNotBuiltHaveNoEffect) {
  EXPECT_TRUE(ineffective_keys(build_cluster(with(8, Topology::Switch))).empty());
  ClusterSpec spec = with(8, Topology::Switch);
  spec.fat_tree.radix = 8;
  spec.torus.dims = {2, 4};
  spec.fabric_nodes = 64;
  spec.gpus_per_pcie_switch = 4;  // on the default NVLink
  spec.ps_nic_bw = 12.5e9;        // no server nodes below
  const std::vector<std::string> notes = ineffective_keys(build_cluster(spec));
  const std::vector<std::string> keys = {"cluster.fat_tree.*", "cluster.torus.dims", "cluster.fabric_nodes",
                                         "cluster.intra_node.gpus_per_pcie_switch", "cluster.ps_nic_bandwidth"};
  ASSERT_EQ(notes.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_TRUE(contains(notes[i], keys[i])) << notes[i];
  // The same keys where they apply say nothing: the torus it describes, PCIe, a dedicated server.
  ClusterSpec torus = with(7, Topology::Torus);  // 7 worker nodes and the server fill 2 x 4
  torus.torus.dims = {2, 4};
  torus.intra_node_link = IntraNodeLink::Pcie;
  torus.gpus_per_pcie_switch = 4;
  torus.ps_nic_bw = 12.5e9;
  EXPECT_TRUE(ineffective_keys(build_cluster(torus, 1)).empty());
}

}  // namespace fabric_shape_test
}  // namespace
}  // namespace stepcast::cluster
