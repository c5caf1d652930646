#include "stepcast/cluster/cluster.hpp"

#include <fmt/format.h>

#include "stepcast/error.hpp"

namespace stepcast::cluster {

Endpoint Cluster::worker_endpoint(int worker) const {
  return {worker / spec.workers_per_node, worker % spec.workers_per_node};
}

namespace {
// Bus links per node: one per GPU plus one for the host CPU (a co-located server).
int bus_index(const ClusterSpec& spec, Endpoint e) {
  const int slots = spec.workers_per_node + 1;
  const int device = e.device == kHostDevice ? spec.workers_per_node : e.device;
  return e.node * slots + device;
}
}  // namespace

Path Cluster::path(Endpoint from, Endpoint to) const {
  Path p;
  if (from == to) return p;
  if (from.node == to.node) {
    // Device to device inside a node: up the sender's bus link, down the receiver's.
    p.links = {bus_up[bus_index(spec, from)], bus_down[bus_index(spec, to)]};
  } else {
    // Between nodes a GPU reaches the NIC directly (GPUDirect-style); the devices of a node share
    // its NIC. PCIe switches shared by GPU pairs are a refinement for later topologies.
    p.links = {nic_up[from.node], nic_down[to.node]};
  }
  for (uint32_t l : p.links) p.latency += links[l].latency;
  return p;
}

Cluster build_cluster(const ClusterSpec& spec, int extra_nodes) {
  STEPCAST_ASSERT(spec.workers >= 1 && spec.workers_per_node >= 1 && spec.nic_bw > 0);
  STEPCAST_ASSERT(extra_nodes >= 0);
  Cluster c;
  c.spec = spec;
  const int worker_nodes = spec.num_worker_nodes();
  c.num_nodes = worker_nodes + extra_nodes;
  auto add = [&c](std::string name, double bw, double latency) {
    c.links.push_back({std::move(name), bw, latency});
    return static_cast<uint32_t>(c.links.size() - 1);
  };
  // Half the end-to-end latency on each NIC hop so a node-to-node path pays exactly `latency`.
  const double hop = spec.latency / 2;
  for (int n = 0; n < c.num_nodes; ++n) {
    const bool server = n >= worker_nodes;
    const double bw = server && spec.ps_nic_bw > 0 ? spec.ps_nic_bw : spec.nic_bw;
    const std::string node = server ? fmt::format("server{}", n - worker_nodes) : fmt::format("node{}", n);
    c.nic_up.push_back(add(node + ".nic.up", bw, hop));
    c.nic_down.push_back(add(node + ".nic.down", bw, hop));
  }
  // The bus hop inside a node: half the intra-node latency each way, so GPU-to-GPU pays it once.
  const double bus_hop = spec.intra_node_latency / 2;
  for (int n = 0; n < worker_nodes; ++n) {
    for (int d = 0; d <= spec.workers_per_node; ++d) {
      const std::string dev = d == spec.workers_per_node ? "host" : fmt::format("gpu{}", d);
      c.bus_up.push_back(add(fmt::format("node{}.{}.bus.up", n, dev), spec.intra_node_bw, bus_hop));
      c.bus_down.push_back(add(fmt::format("node{}.{}.bus.down", n, dev), spec.intra_node_bw, bus_hop));
    }
  }
  return c;
}

}  // namespace stepcast::cluster
