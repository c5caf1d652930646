// A three-level fat-tree is built only as far as its nodes reach (the pods that hold them, and
// the cores): the routes between any two nodes are link for link those of the whole fabric, and
// a radix far larger than the job costs no more than its used pods.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stepcast/cluster/cluster.hpp"

namespace stepcast::cluster {
namespace {
namespace fat_tree_pods_test {  // this file's own names: test files are compiled several to a unit

ClusterSpec fat_tree(int workers, int radix) {
  ClusterSpec spec;
  spec.workers = workers;
  spec.topology = Topology::FatTree;
  spec.fat_tree = {.levels = 3, .radix = radix, .oversubscription = 2};
  spec.routing_seed = 7;
  return spec;
}

std::vector<std::string> route_names(const Cluster& c, int from, int to) {
  std::vector<std::string> names;
  for (uint32_t l : c.path(c.worker_endpoint(from), c.worker_endpoint(to)).links)
    names.push_back(c.links.name(l));
  return names;
}

TEST(FatTreePods, RoutesAreThoseOfTheWholeFabric) {
  const int k = 8;  // 8 pods of 16 hosts: 128 nodes fill the fabric
  const Cluster whole = build_cluster(fat_tree(128, k));
  const Cluster part = build_cluster(fat_tree(40, k));  // three pods, the third partly filled
  EXPECT_LT(part.links.size(), whole.links.size());
  for (int a = 0; a < 40; ++a) {
    for (int b = 0; b < 40; b += 3) {
      EXPECT_EQ(route_names(part, a, b), route_names(whole, a, b)) << a << " -> " << b;
    }
  }
}

TEST(FatTreePods, ARadixFarLargerThanTheJobBuildsOnePod) {
  const Cluster c = build_cluster(fat_tree(8, 256));
  // One pod: 8 NICs (two directions); at 2:1, 128 / 2 = 64 aggregation switches, so 128 x 64
  // edge-aggregation and 64 x 128 aggregation-core links (two directions each); the whole
  // fabric would have 256 times the switch links.
  const size_t switch_links = 2 * (128 * 64 + 64 * 128);
  EXPECT_LE(c.links.size(), switch_links + 2 * 8 + 64);
  EXPECT_GE(c.links.size(), switch_links);
  EXPECT_EQ(route_names(c, 0, 7).size(), 2u) << "two hosts of one edge switch: up and down";
}

}  // namespace fat_tree_pods_test
}  // namespace
}  // namespace stepcast::cluster
