// Hardware and topology: nodes, their NICs and intra-node bus, the links between them, and the
// path a transfer takes. Owns link capacities and latencies; knows nothing of flows or time.
//
// Topology "switch": one non-blocking switch; each node has a full-duplex NIC, modelled as an
// uplink (node -> switch) and a downlink (switch -> node) of `nic_bw` each way. Workers on the
// same node share its NIC; transfers between devices of one node cross the node's intra-node
// links (one per device and direction, `intra_node_bw` each); a GPU reaches the NIC directly.
// The end-to-end latency between two
// nodes is `latency` (split evenly over the two hops).
//
//   ClusterSpec spec{.workers = 8, .nic_bw = 12.5e9, .latency = 5e-6};
//   Cluster c = build_cluster(spec, /*extra_nodes=*/2);           // e.g. two dedicated PS nodes
//   Path p = c.path({.node = 0, .device = 0}, {.node = 8, .device = kHostDevice});
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stepcast::cluster {

enum class Topology : uint8_t { Switch };

struct ClusterSpec {
  int workers = 1;               ///< total workers N
  int workers_per_node = 1;      ///< GPUs (workers) per node
  Topology topology = Topology::Switch;
  double nic_bw = 1.25e9;        ///< bytes/s each way per node NIC
  double latency = 5e-6;         ///< s, end to end between two nodes
  double intra_node_bw = 12e9;   ///< bytes/s each way per device link inside a node (PCIe 3 x16)
  double intra_node_latency = 1e-6;  ///< s
  double ps_nic_bw = 0;          ///< bytes/s of a dedicated server node's NIC; 0 = nic_bw

  bool operator==(const ClusterSpec&) const = default;
  [[nodiscard]] int num_worker_nodes() const { return (workers + workers_per_node - 1) / workers_per_node; }
};

struct Link {
  std::string name;   ///< e.g. "node3.nic.up", "ps1.nic.down", "node0.gpu2.bus.up"
  double bw = 0;      ///< bytes/s
  double latency = 0;  ///< s
};

/// The host CPU of a node (where a co-located parameter server runs), as opposed to its GPUs.
inline constexpr int kHostDevice = -1;

struct Endpoint {
  int node = 0;
  int device = 0;  ///< GPU index inside the node, or kHostDevice
  bool operator==(const Endpoint&) const = default;
};

struct Path {
  std::vector<uint32_t> links;  ///< indices into Cluster::links, in order
  double latency = 0;           ///< s, sum over the links
};

struct Cluster {
  ClusterSpec spec;
  int num_nodes = 0;              ///< worker nodes first, then extra (server) nodes
  std::vector<Link> links;
  std::vector<uint32_t> nic_up, nic_down;  ///< per node
  std::vector<uint32_t> bus_up, bus_down;  ///< per node * (workers_per_node + 1), host last

  [[nodiscard]] Endpoint worker_endpoint(int worker) const;
  /// Empty path (zero latency) when both ends are the same device.
  [[nodiscard]] Path path(Endpoint from, Endpoint to) const;
  [[nodiscard]] bool is_server_node(int node) const { return node >= spec.num_worker_nodes(); }
};

/// Builds the links of `spec` plus `extra_nodes` single-purpose nodes (dedicated parameter
/// servers) whose NIC runs at spec.ps_nic_bw (or nic_bw). Asserts the spec was validated.
[[nodiscard]] Cluster build_cluster(const ClusterSpec& spec, int extra_nodes = 0);

}  // namespace stepcast::cluster
