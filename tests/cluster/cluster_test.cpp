// Cluster topology: links built for a switch topology and the path a transfer takes.
#include "stepcast/cluster/cluster.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace stepcast::cluster {
namespace {
namespace cluster_test {  // this file's own names: test files are compiled several to a unit

ClusterSpec spec_of(int workers, int per_node) {
  ClusterSpec spec;
  spec.workers = workers;
  spec.workers_per_node = per_node;
  spec.nic_bw = 12.5e9;
  spec.latency = 8e-6;
  spec.intra_node_bw = 24e9;
  spec.intra_node_latency = 2e-6;
  return spec;
}

TEST(Cluster, SwitchPathBetweenNodesIsUplinkThenDownlink) {
  const Cluster c = build_cluster(spec_of(4, 1));
  ASSERT_EQ(c.num_nodes, 4);
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) {
      if (a == b) continue;
      SCOPED_TRACE(std::to_string(a) + " -> " + std::to_string(b));
      const Path p = c.path({.node = a, .device = 0}, {.node = b, .device = 0});
      EXPECT_EQ(p.links, (std::vector<uint32_t>{c.nic_up[a], c.nic_down[b]}));
      EXPECT_DOUBLE_EQ(p.latency, c.spec.latency);
      for (uint32_t l : p.links) EXPECT_DOUBLE_EQ(c.links[l].bw, 12.5e9);
    }
  }
  EXPECT_EQ(c.links.name(c.nic_up[2]), "node2.nic.up");
  EXPECT_EQ(c.links.name(c.nic_down[2]), "node2.nic.down");
}

TEST(Cluster, DevicesOfANodeShareItsNic) {
  const Cluster c = build_cluster(spec_of(8, 4));
  ASSERT_EQ(c.num_nodes, 2);
  const Endpoint w5 = c.worker_endpoint(5);
  EXPECT_EQ(w5, (Endpoint{.node = 1, .device = 1}));
  const Path p1 = c.path(c.worker_endpoint(0), c.worker_endpoint(5));
  const Path p2 = c.path(c.worker_endpoint(3), c.worker_endpoint(6));
  EXPECT_EQ(p1.links, (std::vector<uint32_t>{c.nic_up[0], c.nic_down[1]}));
  EXPECT_EQ(p2.links, p1.links);
  EXPECT_DOUBLE_EQ(p1.latency, c.spec.latency);
}

TEST(Cluster, SameNodeDevicesUseBusLinks) {
  const Cluster c = build_cluster(spec_of(8, 4));
  const Path p = c.path({.node = 1, .device = 0}, {.node = 1, .device = 3});
  ASSERT_EQ(p.links.size(), 2u);
  EXPECT_EQ(c.links.name(p.links[0]), "node1.gpu0.bus.up");
  EXPECT_EQ(c.links.name(p.links[1]), "node1.gpu3.bus.down");
  EXPECT_DOUBLE_EQ(p.latency, c.spec.intra_node_latency);
  for (uint32_t l : p.links) EXPECT_DOUBLE_EQ(c.links[l].bw, 24e9);

  // A co-located server on the host CPU has its own bus link.
  const Path to_host = c.path({.node = 0, .device = 2}, {.node = 0, .device = kHostDevice});
  ASSERT_EQ(to_host.links.size(), 2u);
  EXPECT_EQ(c.links.name(to_host.links[0]), "node0.gpu2.bus.up");
  EXPECT_EQ(c.links.name(to_host.links[1]), "node0.host.bus.down");
  EXPECT_DOUBLE_EQ(to_host.latency, c.spec.intra_node_latency);
}

TEST(Cluster, SameEndpointHasEmptyPath) {
  const Cluster c = build_cluster(spec_of(8, 4));
  const Path p = c.path({.node = 1, .device = 2}, {.node = 1, .device = 2});
  EXPECT_TRUE(p.links.empty());
  EXPECT_EQ(p.latency, 0.0);
  const Path host = c.path({.node = 0, .device = kHostDevice}, {.node = 0, .device = kHostDevice});
  EXPECT_TRUE(host.links.empty());
}

TEST(Cluster, LinkNamesAreUniqueAndIndicesValid) {
  const Cluster c = build_cluster(spec_of(6, 4), 2);  // 2 worker nodes (one partly filled) + 2 servers
  ASSERT_EQ(c.num_nodes, 4);
  ASSERT_EQ(c.nic_up.size(), 4u);
  ASSERT_EQ(c.nic_down.size(), 4u);
  EXPECT_EQ(c.bus_up.size(), 2u * 5u);  // per worker node: 4 GPUs + host
  EXPECT_EQ(c.bus_down.size(), 2u * 5u);
  std::set<std::string> names;
  for (size_t i = 0; i < c.links.size(); ++i) {
    const std::string name = c.links.name(i);
    EXPECT_TRUE(names.insert(name).second) << "duplicate " << name;
    EXPECT_GT(c.links[i].bw, 0.0);
  }
  for (auto* v : {&c.nic_up, &c.nic_down, &c.bus_up, &c.bus_down}) {
    for (uint32_t l : *v) EXPECT_LT(l, c.links.size());
  }
}

TEST(Cluster, DedicatedServerNodesUsePsNicBandwidth) {
  ClusterSpec spec = spec_of(4, 2);
  spec.ps_nic_bw = 50e9;
  const Cluster c = build_cluster(spec, 2);
  ASSERT_EQ(c.num_nodes, 4);  // 2 worker nodes, then 2 servers
  EXPECT_FALSE(c.is_server_node(1));
  EXPECT_TRUE(c.is_server_node(2));
  EXPECT_TRUE(c.is_server_node(3));
  for (int n = 0; n < 4; ++n) {
    const double bw = n >= 2 ? 50e9 : 12.5e9;
    EXPECT_DOUBLE_EQ(c.links[c.nic_up[n]].bw, bw) << "node " << n;
    EXPECT_DOUBLE_EQ(c.links[c.nic_down[n]].bw, bw) << "node " << n;
  }
  EXPECT_EQ(c.links.name(c.nic_up[3]), "server1.nic.up");

  const Path p = c.path(c.worker_endpoint(3), {.node = 2, .device = kHostDevice});
  EXPECT_EQ(p.links, (std::vector<uint32_t>{c.nic_up[1], c.nic_down[2]}));
  EXPECT_DOUBLE_EQ(p.latency, spec.latency);
}

TEST(Cluster, DedicatedServerNodesDefaultToNicBandwidth) {
  const Cluster c = build_cluster(spec_of(2, 1), 1);
  ASSERT_EQ(c.num_nodes, 3);
  EXPECT_DOUBLE_EQ(c.links[c.nic_up[2]].bw, 12.5e9);
  EXPECT_DOUBLE_EQ(c.links[c.nic_down[2]].bw, 12.5e9);
}

}  // namespace cluster_test
}  // namespace
}  // namespace stepcast::cluster
