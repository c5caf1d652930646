// Hardware and topology: nodes, their NICs and intra-node links, the switches and links between
// them, and the path a transfer takes (shortest paths; equal-cost paths chosen by a seeded hash
// of each flow's endpoints, as ECMP does, or split evenly as bundled fat-tree uplinks). Owns link
// capacities and latencies; knows nothing of flows or time.
//
// Every node has a full-duplex NIC: an uplink (node -> its switch or router) and a downlink, of
// `nic_bw` each way. Workers on a node share its NIC; transfers between devices of one node
// cross the node's intra-node links (one per device and direction); a GPU reaches the NIC
// directly. Topologies: `switch` (one non-blocking switch), `fat_tree` (leaf-spine or 3-level
// k-ary, FatTreeUplinks full-speed uplinks per leaf: fewer when oversubscribed), `bigraph` (two halves of
// switches, each switch of one half linked to each of the other), `torus` (a router per node,
// links to the neighbours in each dimension). The end-to-end latency between two nodes is
// `latency`, split over the two NIC hops; switch-to-switch hops add none.
//
//   ClusterSpec spec{.workers = 8, .nic_bw = 12.5e9, .latency = 5e-6};
//   Cluster c = build_cluster(spec, /*extra_nodes=*/2);           // e.g. two dedicated PS nodes
//   Path p = c.path({.node = 0, .device = 0}, {.node = 8, .device = kHostDevice});
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stepcast/cluster/gemm_table.hpp"
#include "stepcast/enum_names.hpp"

namespace stepcast::cluster {

enum class Topology : uint8_t { Switch, FatTree, BiGraph, Torus, Custom };
constexpr std::string_view name_of(Topology v) {
  switch (v) {
    case Topology::Switch:
      return "switch";
    case Topology::FatTree:
      return "fat_tree";
    case Topology::BiGraph:
      return "bigraph";
    case Topology::Torus:
      return "torus";
    case Topology::Custom:
      return "custom";
  }
  return {};
}
/// nvlink: each GPU has its own link into the node fabric and reaches the NIC directly;
/// pcie: GPUs sit in groups under PCIe switches whose uplink (intra_node_bw) they share for
/// traffic to the NIC, the host, or GPUs under another switch.
enum class IntraNodeLink : uint8_t { NvLink, Pcie };
constexpr std::string_view name_of(IntraNodeLink v) {
  switch (v) {
    case IntraNodeLink::NvLink:
      return "nvlink";
    case IntraNodeLink::Pcie:
      return "pcie";
  }
  return {};
}

struct FatTreeSpec {
  int levels = 2;  ///< 2: leaf-spine; 3: k-ary fat-tree (edge, aggregation, core)
  int radix = 16;  ///< switch ports k: k/2 hosts per leaf (edge), up to k/2 uplinks
  /// Host bandwidth below a leaf (edge) switch / its uplinks' bandwidth: shorthand for fewer
  /// full-speed uplinks (radix/2 / oversubscription of them), as real fabrics are built.
  double oversubscription = 1;
  int uplinks = 0;       ///< per leaf (edge) switch, 1 .. radix/2; 0: from oversubscription
  double uplink_bw = 0;  ///< bytes/s each way of one uplink; 0: nic_bw (or what the ratio needs)
  bool operator==(const FatTreeSpec&) const = default;
};

/// The uplinks of a fat-tree's leaf (edge) switches as built from FatTreeSpec: `count` of `bw`
/// each. Leaf-spine: `count` spines, one link from every leaf to each. Three levels: `count`
/// aggregation switches per pod, each with one link to every edge switch of its pod and radix/2
/// links up to `count` x radix/2 cores, so only the edge tier is oversubscribed (as real fabrics
/// are built: fewer uplinks at the leaves, a non-blocking core). Defaults: with uplinks unset,
/// round(radix/2 / oversubscription) uplinks (at least 1) at the bandwidth that keeps the ratio
/// exact (nic_bw when the ratio divides radix/2); with uplinks set, uplink_bw or nic_bw.
struct FatTreeUplinks {
  int count = 0;
  double bw = 0;  ///< bytes/s each way
};
struct ClusterSpec;
[[nodiscard]] FatTreeUplinks fat_tree_uplinks(const ClusterSpec& spec);

/// How flows between two nodes use several equal-cost paths. ecmp: each flow (each pair of
/// endpoint devices, as each connection or queue pair of a real fabric) takes one path chosen by
/// a seeded hash, so flows can collide on an uplink while another idles; ideal: every flow
/// split evenly over all its equal-cost paths, built exactly on a fat-tree as each leaf's (and
/// each pod's) uplinks bundled into one link of their summed capacity; spray: per-packet
/// spraying, which at flow level is the same even split (built as ideal).
enum class Routing : uint8_t { Ecmp, Ideal, Spray };
constexpr std::string_view name_of(Routing v) {
  switch (v) {
    case Routing::Ecmp:
      return "ecmp";
    case Routing::Ideal:
      return "ideal";
    case Routing::Spray:
      return "spray";
  }
  return {};
}

struct BiGraphSpec {
  int switches_per_half = 4;
  int hosts_per_switch = 4;
  bool operator==(const BiGraphSpec&) const = default;
};

/// A topology given as switches and full-duplex links (cluster.custom). Endpoints are switch
/// names or "node<i>" (worker nodes first, then dedicated servers); every node has exactly one
/// link, to a switch: its NIC.
struct CustomLink {
  std::string a, b;
  double bw = 0;       ///< bytes/s each way
  double latency = 0;  ///< s, switch-to-switch links only (a node's NIC hop pays half of `latency`)
  bool operator==(const CustomLink&) const = default;
};
struct CustomTopologySpec {
  std::vector<std::string> switches;
  std::vector<CustomLink> links;
  bool operator==(const CustomTopologySpec&) const = default;
};

struct TorusSpec {
  std::vector<int> dims{4};  ///< ring of 4 (1D) or e.g. {8, 8} (2D)
  bool operator==(const TorusSpec&) const = default;
};

/// The cost of collectives in one size range. Communication libraries switch protocol and
/// algorithm with the message size (NCCL: LL, LL128, Simple; ring, tree, NVLS), so one
/// (latency, bandwidth) pair cannot describe a whole nccl-tests sweep. A collective whose buffer
/// is at least `from_bytes` (and below the next regime's) runs every step for at least
/// `step_latency` after its transfers end, and moves each transfer at no more than `bw`; the links
/// still limit and share it as usual. Point-to-point traffic (parameter servers) ignores regimes.
struct CollectiveRegime {
  double from_bytes = 0;    ///< bytes of the collective's buffer (nccl-tests' `size`)
  double step_latency = 0;  ///< s, least time between a step's last transfer end and the next step
  double bw = 0;            ///< bytes/s, most a transfer of a step moves per second
  bool operator==(const CollectiveRegime&) const = default;
};

/// NCCL's protocols: LL (8-byte stores with a flag: lowest latency, a quarter of the bandwidth),
/// LL128 (128-byte lines, 120 of payload) and Simple (bulk copies with a fence per chunk: full
/// bandwidth, highest latency).
enum class NcclProtocol : uint8_t { LL, LL128, Simple };
constexpr std::string_view name_of(NcclProtocol v) {
  switch (v) {
    case NcclProtocol::LL:
      return "ll";
    case NcclProtocol::LL128:
      return "ll128";
    case NcclProtocol::Simple:
      return "simple";
  }
  return {};
}
inline constexpr int kNcclProtocols = 3;
/// NCCL's hardware classes for a hop's latency.
enum class NcclHop : uint8_t { NvLink, Pcie, Net };
inline constexpr int kNcclHops = 3;

/// One (algorithm, protocol) of NCCL's tuning model: a collective costs `base_latency` once, each
/// step of a chunk's path one hop latency of its hardware class, and moves data at `efficiency`
/// of the links' bandwidth (the rest is the protocol's flags and framing), but its bus bandwidth
/// (nccl-tests' busbw: the payload each rank's link moves per second) never above
/// channels x `channel_bw`, nor above `max_bw` (nccl_bus_bw_cap).
struct NcclCost {
  double base_latency = 0;                    ///< s, once per collective
  double hop_latency[kNcclHops] = {0, 0, 0};  ///< s per step over NVLink, PCIe, the network
  double efficiency = 1;                      ///< payload bytes / wire bytes, in (0, 1]
  /// bytes/s of payload bus bandwidth one channel carries at most; unset: NCCL's table for the
  /// cluster's GPU generation and node count (nccl_channel_bw); 0: no cap.
  std::optional<double> channel_bw;
  /// bytes/s of payload bus bandwidth the collective reaches at most whatever its channels; unset:
  /// NCCL's table (LL's llMaxBws, by node count and host CPU; nccl_max_bw); 0: no cap.
  std::optional<double> max_bw;
  bool operator==(const NcclCost&) const = default;
};

/// NCCL's tuning constants for the all-reduce algorithms it chooses between (ring, tree), by
/// protocol. Defaults: NCCL 2.18's tables (src/graph/tuning.cc: baseLat, hwLat; the LL and LL128
/// bandwidth factors 1/4 and 120/128 of its ring model); the bandwidth caps default to NCCL's
/// tables of the same file (llMaxBws, perChMaxRingLL128Bws, perChMaxTreeLL128Bws,
/// perChMaxTreeBws), picked by the cluster's GPU generation, node count and host CPU.
struct NcclTuning {
  NcclCost ring[kNcclProtocols] = {
      {6.6e-6, {0.6e-6, 1.0e-6, 2.7e-6}, 0.25, {}, {}},
      {14.0e-6, {1.9e-6, 2.5e-6, 4.0e-6}, 0.9375, {}, {}},
      {8.4e-6, {3.4e-6, 5.7e-6, 14.0e-6}, 1.0, {}, {}},
  };
  NcclCost tree[kNcclProtocols] = {
      {6.8e-6, {0.6e-6, 1.0e-6, 5.0e-6}, 0.25, {}, {}},
      {14.0e-6, {1.25e-6, 1.9e-6, 8.5e-6}, 0.9375, {}, {}},
      {0.0, {4.0e-6, 28.0e-6, 28.0e-6}, 1.0, {}, {}},
  };
  /// The channels NCCL's tuning model counts (tuning.cc's graphs[a]->nChannels: the rings its
  /// topology search found, src/graph/search.cc); unset: nccl_default_channels. Between nodes a
  /// ring runs per NIC of a node while there are channels (fewer channels than NICs leave NICs
  /// unused); more channels than NICs share them and raise only the per-channel caps' sum.
  std::optional<int> channels;
  bool operator==(const NcclTuning&) const = default;
};
/// NCCL's own spelling, as reports print it: "LL", "LL128", "Simple" (name_of: the scenario keys'
/// "ll", "ll128", "simple").
[[nodiscard]] const char* to_string(NcclProtocol protocol);
/// "cluster.nccl.tree.ll128": the scenario keys of one (algorithm, protocol) start so.
[[nodiscard]] std::string nccl_key(bool tree, NcclProtocol protocol);

/// The most channels cluster.nccl.channels takes: twice the MAXCHANNELS (32) of the NCCL sources
/// whose tables stepcast uses, room for versions that launch more.
inline constexpr int kMaxNcclChannels = 64;

/// The GPU generation NCCL's bandwidth tables are indexed by (tuning.cc: compute capability 7.x,
/// 8.x, 9.x), and the host CPU vendor that picks its LL table between nodes.
enum class GpuGeneration : uint8_t { Volta, Ampere, Hopper };
constexpr std::string_view name_of(GpuGeneration v) {
  switch (v) {
    case GpuGeneration::Volta:
      return "volta";
    case GpuGeneration::Ampere:
      return "ampere";
    case GpuGeneration::Hopper:
      return "hopper";
  }
  return {};
}
enum class CpuVendor : uint8_t { Intel, Amd };
constexpr std::string_view name_of(CpuVendor v) {
  switch (v) {
    case CpuVendor::Intel:
      return "intel";
    case CpuVendor::Amd:
      return "amd";
  }
  return {};
}
[[nodiscard]] const char* to_string(GpuGeneration generation);
[[nodiscard]] const char* to_string(CpuVendor vendor);

/// Where a job's nodes sit in a fabric larger than the job: packed (node n in slot n, as now) or
/// random (a seeded choice of slots, as a batch system that places nodes wherever they are free).
enum class NodePlacement : uint8_t { Packed, Random };
constexpr std::string_view name_of(NodePlacement v) {
  switch (v) {
    case NodePlacement::Packed:
      return "packed";
    case NodePlacement::Random:
      return "random";
  }
  return {};
}

/// The transport of parameter-server pulls and pushes between nodes: rdma (a lossless fabric
/// with priority flow control: no loss, no timeouts) or tcp (drops at a full switch port and
/// retransmits after TCP's minimum timeout; docs/models.md, "Incast").
enum class Transport : uint8_t { Rdma, Tcp };
constexpr std::string_view name_of(Transport v) {
  switch (v) {
    case Transport::Rdma:
      return "rdma";
    case Transport::Tcp:
      return "tcp";
  }
  return {};
}

/// TCP incast at a shallow-buffered switch port (docs/models.md, "Incast"): with transport tcp
/// and a buffer, more concurrent senders into one node than incast_threshold() lets through
/// make each of them pay one tcp_rto_min per synchronized burst.
struct IncastSpec {
  Transport transport = Transport::Rdma;
  double switch_buffer = 0;  ///< bytes of packet buffer per switch port; 0 = unset: no loss
  double tcp_rto_min = 0.2;  ///< s, TCP's minimum retransmission timeout (Linux's default)
  /// Whether the rule can act: tcp over a port of a finite buffer.
  [[nodiscard]] bool enabled() const { return transport == Transport::Tcp && switch_buffer > 0; }
  bool operator==(const IncastSpec&) const = default;
};
/// Bytes each TCP flow keeps in flight at least: two segments of a 1,460-byte MSS (a 1,500-byte
/// MTU), the minimum window the incast studies observe per synchronized sender.
inline constexpr double kTcpMinWindow = 2 * 1460.0;
/// The load a prediction reports for incast: the share of the window the most stalled port had a
/// sender waiting out tcp_rto_min (the predictor's bottleneck names it).
inline constexpr std::string_view kIncastStall = "TCP incast stall";
/// n* = floor((B + C x RTT) / w_min): the most synchronized senders a port of buffer B at C
/// bytes/s with round trip RTT holds at their minimum windows without a drop.
[[nodiscard]] int incast_threshold(double buffer, double capacity, double rtt);

struct ClusterSpec {
  int workers = 1;           ///< total workers N
  int workers_per_node = 1;  ///< GPUs (workers) per node
  Topology topology = Topology::Switch;
  double nic_bw = 1.25e9;            ///< bytes/s each way per node NIC
  double latency = 5e-6;             ///< s, end to end between two nodes
  double intra_node_bw = 12e9;       ///< bytes/s each way per device link inside a node (PCIe 3 x16)
  double intra_node_latency = 1e-6;  ///< s
  IntraNodeLink intra_node_link = IntraNodeLink::NvLink;
  int gpus_per_pcie_switch = 2;  ///< pcie only: GPUs sharing one PCIe switch uplink
  int nics_per_node = 1;         ///< 1 .. workers_per_node; GPU d uses NIC d * nics / workers_per_node
  double ps_nic_bw = 0;          ///< bytes/s of a dedicated server node's NIC; 0 = nic_bw
  /// s from a parameter-server message's last byte sent to its delivery (RPC stack and wire), in
  /// place of the path's latency, for pulls and pushes; unset: the path's latency.
  std::optional<double> rpc_latency;
  IncastSpec incast;          ///< cluster.transport, cluster.switch.buffer, cluster.tcp_rto_min
  double gpu_memory = 0;      ///< bytes of memory per GPU (worker); 0 = unknown: no fit check
  /// bytes each GPU holds outside the framework's caching allocator: the CUDA context and NCCL's
  /// buffers (cluster.gpu.memory_reserved; the default and its sources in docs/memory.md)
  double gpu_memory_reserved = 1.1e9;
  /// share of the caching allocator's pool that holds no tensor at the peak (fragmentation), in
  /// [0, 1): the pool is the allocated bytes / (1 - overhead) (cluster.gpu.allocator_overhead;
  /// an assumption to measure, docs/memory.md)
  double gpu_allocator_overhead = 0.1;
  double gpu_peak_flops = 0;  ///< FLOP/s per GPU at the training precision (spec sheet, dense); 0 = unknown
  /// bytes/s of one GPU's memory (HBM); what the optimizer step, memory-bound, runs at
  /// (scheme/costs.hpp: optimizer_step_time); 0 = unknown: the optimizer step takes no time.
  double gpu_memory_bw = 0;
  /// Measured GEMM times of one GPU (cluster.gpu.gemm), for workload.compute: shapes; empty: the
  /// GEMMs on the roofline of gpu_peak_flops and gpu_memory_bw.
  GemmTable gemm;
  /// FLOP/s of the attention core (flash attention) in the zoo's accounting (4 s^2 h per sequence
  /// forward, twice that backward), for workload.compute: shapes; 0: gpu_peak_flops (roofline).
  double gpu_attention_flops = 0;
  /// FLOP/s of the GEMMs in fp8 (cluster.gpu.peak_flops_fp8, the spec sheet's dense fp8 rate), for
  /// workload.precision: fp8 with workload.compute: shapes and no fp8 rows in the table; 0: unset.
  double gpu_peak_flops_fp8 = 0;
  /// s of GPU time each kernel costs beyond its work (launch and tail), for workload.compute: shapes.
  double gpu_kernel_overhead = 0;
  FatTreeSpec fat_tree;
  BiGraphSpec bigraph;
  TorusSpec torus;
  CustomTopologySpec custom;
  Routing routing = Routing::Ecmp;
  uint64_t routing_seed = 1;  ///< ecmp: the hash picking among equal-cost paths (scenario `seed`)
  NodePlacement node_placement = NodePlacement::Packed;
  /// random: the fabric's node slots the job's nodes are scattered over; 0 = the topology's
  /// capacity (a leaf-spine, which grows with its nodes, needs it)
  int fabric_nodes = 0;
  uint64_t placement_seed = 1;  ///< random: which slots
  /// Ascending from_bytes, distinct; empty: collectives are limited by the links alone (so are
  /// collectives smaller than the first regime's from_bytes).
  std::vector<CollectiveRegime> collective_regimes;
  NcclTuning nccl;  ///< used by training.allreduce.protocol other than `links` (and algorithm auto)
  GpuGeneration gpu_generation = GpuGeneration::Hopper;  ///< picks NCCL's bandwidth tables
  CpuVendor cpu_vendor = CpuVendor::Intel;               ///< picks NCCL's LL table between nodes
  /// Workers (GPUs) the job runs on each node, in node order, for a job spread unevenly over its
  /// nodes as a scheduler places it (cluster.placement: [1, 1, 3, 4]); empty: workers_per_node on
  /// every node, the last holding the rest. When set, workers is its sum and no entry exceeds
  /// workers_per_node, the GPU slots of a node (the job uses the first placement[n] of node n).
  std::vector<int> placement;

  bool operator==(const ClusterSpec&) const = default;
  /// The regime a collective of `bytes` runs in, nullptr when none applies.
  [[nodiscard]] const CollectiveRegime* regime_for(double bytes) const;
  [[nodiscard]] int num_worker_nodes() const {
    return placement.empty() ? (workers + workers_per_node - 1) / workers_per_node
                             : static_cast<int>(placement.size());
  }
  /// Workers on worker node `node` (0 .. num_worker_nodes() - 1).
  [[nodiscard]] int workers_on_node(int node) const {
    if (!placement.empty()) return placement[static_cast<size_t>(node)];
    const int rest = workers - node * workers_per_node;
    return rest < workers_per_node ? rest : workers_per_node;
  }
  /// The most workers any node holds: the busiest node's NIC is shared by that many.
  [[nodiscard]] int busiest_node_workers() const;
};

/// NCCL's channel count for `spec` when cluster.nccl.channels is unset, as its ring search
/// (src/graph/search.cc, ncclTopoCompute) would find it: a channel's path leaves a node through
/// a NIC (one node: through a GPU's intra-node link), and each such link holds as many channels
/// as fit at the fastest speed of NCCL's speed table it sustains (speedArrayInter, or
/// speedArrayIntra in one node; the sm90 tables on Hopper); ncclTopoDupChannels then doubles them
/// when that speed is at least 25 GB/s, except on Hopper below 50 GB/s with more than 4 channels;
/// at most 16 (init.cc: MAXCHANNELS / 2). A simplification of the search: PCIe paths to the NIC
/// and its later passes are not modelled (docs/models.md, "Collectives as NCCL runs them").
[[nodiscard]] int nccl_default_channels(const ClusterSpec& spec);
/// spec.nccl.channels, or nccl_default_channels(spec).
[[nodiscard]] int nccl_channels(const ClusterSpec& spec);
/// bytes/s: the per-channel cap of (ring or tree, protocol): the key, or NCCL's table for the
/// GPU generation and node count (1, 2, more); 0: none.
[[nodiscard]] double nccl_channel_bw(const ClusterSpec& spec, bool tree, NcclProtocol protocol);
/// bytes/s: the collective's cap whatever its channels (LL's llMaxBws): the key or NCCL's table;
/// 0: none.
[[nodiscard]] double nccl_max_bw(const ClusterSpec& spec, bool tree, NcclProtocol protocol);
/// bytes/s of payload bus bandwidth (busbw) the collective may reach under (ring or tree,
/// protocol): min(channels x channel_bw, max_bw), +infinity when neither caps it. NCCL's
/// tuning.cc: busBw = min(links x efficiency, this).
[[nodiscard]] double nccl_bus_bw_cap(const ClusterSpec& spec, bool tree, NcclProtocol protocol);

struct Cluster;

/// One direction of a full-duplex link. Its name (LinkTable::name) is made when asked.
struct Link {
  double bw = 0;       ///< bytes/s
  double latency = 0;  ///< s
  int from = -1;       ///< vertex (node index, or num_nodes + switch index); -1 for bus links
  int to = -1;
};

/// A cluster's links by index, in the order build_cluster lays them out: the fabric's (switch to
/// switch), then each NIC's up and down link node by node, then each PCIe switch's, then each
/// device's bus link (up and down, the host last on every node). Only the fabric's links are
/// stored; a node's links are computed from their index and the node's switch, so a million GPUs
/// cost the table one integer per node, and a link's name ("node3.nic.up", "server1.nic.down",
/// "node0.gpu2.bus.up", "leaf0->spine2") is written only when asked for.
class LinkTable {
 public:
  [[nodiscard]] size_t size() const { return bus_begin_ + 2 * buses_; }
  [[nodiscard]] bool empty() const { return size() == 0; }
  [[nodiscard]] Link operator[](size_t l) const;
  /// "node3.nic.up", "node3.nic1.down" (several NICs), "server0.nic.up", "node0.pcie1.up",
  /// "node0.gpu2.bus.up", "node0.host.bus.down", "leaf0->spine2".
  [[nodiscard]] std::string name(size_t l) const;

  class Iterator {
   public:
    using value_type = Link;
    using difference_type = std::ptrdiff_t;
    Iterator(const LinkTable* table, size_t l) : table_(table), l_(l) {}
    Link operator*() const { return (*table_)[l_]; }
    Iterator& operator++() {
      ++l_;
      return *this;
    }
    bool operator==(const Iterator& other) const { return l_ == other.l_; }

   private:
    const LinkTable* table_;
    size_t l_;
  };
  [[nodiscard]] Iterator begin() const { return {this, 0}; }
  [[nodiscard]] Iterator end() const { return {this, size()}; }

 private:
  friend struct Cluster;
  friend Cluster build_cluster(const ClusterSpec& spec, int extra_nodes);
  [[nodiscard]] int node_of_nic(size_t nic) const;

  std::vector<Link> fabric_;               ///< links [0, nic_begin_)
  std::vector<std::string> switch_names_;  ///< for the fabric's link names
  int num_nodes_ = 0, worker_nodes_ = 0;
  int nics_per_worker_node_ = 1;
  int workers_per_node_ = 1;
  int pcie_per_node_ = 0;
  std::vector<int> node_switch_;       ///< per node (a copy of Cluster::node_switch)
  std::vector<double> custom_nic_bw_;  ///< per node, custom topologies only
  double worker_nic_bw_ = 0, server_nic_bw_ = 0, nic_latency_ = 0;
  double intra_bw_ = 0, bus_latency_ = 0;
  size_t nic_begin_ = 0, pcie_begin_ = 0, bus_begin_ = 0;
  size_t buses_ = 0;  ///< bus links per direction
};

/// How many nodes a topology holds (0 = unbounded: the topology grows with the nodes).
[[nodiscard]] int topology_capacity(const ClusterSpec& spec);
[[nodiscard]] const char* to_string(Topology topology);
/// The slots a random placement chooses from: fabric_nodes, or the topology's capacity.
[[nodiscard]] int fabric_slots(const ClusterSpec& spec);

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
  int num_nodes = 0;  ///< worker nodes first, then extra (server) nodes
  LinkTable links;
  std::vector<uint32_t> nic_up, nic_down;         ///< all NICs, node by node (first_nic[node] + k)
  std::vector<int> first_nic;                     ///< per node, plus one past the last
  std::vector<uint32_t> pcie_up, pcie_down;       ///< pcie: per node * switches_per_node
  std::vector<uint32_t> bus_up, bus_down;         ///< per node * (workers_per_node + 1), host last
  int num_switches = 0;                           ///< switches or torus routers
  std::vector<int> node_switch;                   ///< per node: the switch its NIC attaches to
  std::vector<std::vector<uint32_t>> switch_out;  ///< per switch: links to other switches
  /// Per worker node, plus one past the last: node n runs workers first_worker[n] ..
  /// first_worker[n + 1] - 1 (spec.workers_on_node).
  std::vector<int> first_worker;
  std::vector<int> node_of_worker;  ///< per worker

  [[nodiscard]] Endpoint worker_endpoint(int worker) const;
  /// Empty path (zero latency) when both ends are the same device. Between nodes: a shortest
  /// path; with spec.routing ecmp, among equal-cost ones the choice is a hash of (routing_seed,
  /// from, to), nodes and devices, so a given flow always takes the same path, as ECMP does, and
  /// two flows of one node pair (two GPUs, two NICs) may take different ones. With ideal and
  /// spray a fat-tree is built with bundled uplinks, and the route is unique.
  [[nodiscard]] Path path(Endpoint from, Endpoint to) const;
  /// Switch-level shortest path from switch a to switch b, picking equal-cost hops by `hash`.
  [[nodiscard]] std::vector<uint32_t> switch_route(int a, int b, uint64_t hash) const;
  [[nodiscard]] bool is_server_node(int node) const { return node >= spec.num_worker_nodes(); }
  /// The NIC link index (into nic_up/nic_down) an endpoint's traffic uses.
  [[nodiscard]] int nic_of(Endpoint e) const;

  /// Hops from switch `from` to switch `to` over switch-to-switch links: from the topology's shape
  /// (leaf-spine, k-ary fat-tree, BiGraph, torus), or a breadth-first search (custom).
  [[nodiscard]] int switch_hops(int from, int to) const;

 private:
  // Custom topologies: distance_to_[b][s] = hops from switch s to switch b, filled on first use of
  // destination b; incoming_[s]: the switches with a link into s.
  mutable std::vector<std::vector<int>> distance_to_;
  mutable std::vector<std::vector<int>> incoming_;
};

/// Builds the links of `spec` plus `extra_nodes` single-purpose nodes (dedicated parameter
/// servers, attached after the worker nodes) whose NIC runs at spec.ps_nic_bw (or nic_bw).
/// Asserts the spec was validated (enough room in the topology for all nodes).
[[nodiscard]] Cluster build_cluster(const ClusterSpec& spec, int extra_nodes = 0);

/// The fabric of a built cluster in words, for the heading of a table: "leaf-spine (radix 16):
/// 2 leaves of up to 8 hosts, 8 spines, uplinks at 1/2 of the NIC; 12 nodes".
[[nodiscard]] std::string describe_fabric(const Cluster& c);
/// Keys set to a value that cannot change this cluster's result, each as a sentence naming the
/// key and why: a fat-tree's oversubscription when every node attaches to one switch, another
/// topology's keys, fabric_nodes with packed placement, gpus_per_pcie_switch on NVLink, a server
/// NIC bandwidth without dedicated servers.
[[nodiscard]] std::vector<std::string> ineffective_keys(const Cluster& c);

}  // namespace stepcast::cluster
