#include "stepcast/cluster/cluster.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <numeric>

#include "stepcast/detail/hash.hpp"
#include "stepcast/error.hpp"
#include "stepcast/units.hpp"

namespace stepcast::cluster {
namespace {

// Bus links per node: one per GPU plus one for the host CPU (a co-located server).
int bus_index(const ClusterSpec& spec, Endpoint e) {
  const int slots = spec.workers_per_node + 1;
  const int device = e.device == kHostDevice ? spec.workers_per_node : e.device;
  return e.node * slots + device;
}

// The switches above a fat-tree's leaves (edges) as built: per-switch links with ecmp; with ideal
// and spray, one bundle switch for all spines, one per pod for its aggregation switches and one
// for all cores, whose links carry the summed capacity of the links they stand for.
//
// Why a bundle is exact for an even split: a flow split evenly over the equal-cost paths puts
// 1/count of itself on each uplink of its leaf (edge), 1/(count x k/2) on each aggregation->core
// link of its pod and each core->aggregation link of the pod it enters, and 1/count on each
// aggregation->edge link into its edge switch. So every uplink of a leaf carries the same load
// (the leaf's outgoing traffic / count), and likewise for the other tiers: the links of a
// bundle, all of one capacity, have identical constraints in max-min, which are the single
// constraint "load <= summed capacity". Switches are non-blocking crossbars, so nothing else
// binds. (On a BiGraph, torus or custom fabric the equal-cost paths of one pair share links with
// other pairs' single paths, so their loads differ and no bundle is exact: validate rejects
// ideal and spray there.)
struct FatTreeShape {
  int half = 1;          // hosts per leaf (edge), k/2
  int spines = 1;        // leaf-spine: switches above the leaves
  int aggs_per_pod = 1;  // three levels: aggregation switches per pod
  int cores = 1;
  double leaf_up_bw = 0;  // bytes/s of one leaf (edge) <-> spine (aggregation) link
  double pod_up_bw = 0;   // bytes/s of one aggregation <-> core link
};

bool bundled(const ClusterSpec& spec) {
  switch (spec.routing) {
    case Routing::Ecmp:
      return false;
    case Routing::Ideal:
    case Routing::Spray:
      return spec.topology == Topology::FatTree;
  }
  return false;
}

FatTreeShape fat_tree_shape(const ClusterSpec& spec) {
  const FatTreeUplinks up = fat_tree_uplinks(spec);
  FatTreeShape shape;
  shape.half = std::max(1, spec.fat_tree.radix / 2);
  if (bundled(spec)) {
    shape.leaf_up_bw = up.count * up.bw;
    shape.pod_up_bw = up.count * shape.half * up.bw;
  } else {
    shape.spines = shape.aggs_per_pod = up.count;
    shape.cores = up.count * shape.half;
    shape.leaf_up_bw = shape.pod_up_bw = up.bw;
  }
  return shape;
}

class Builder {
 public:
  Builder(Cluster& c, std::vector<Link>& fabric) : c_(c), fabric_(fabric) {}

  /// A link from switch a to switch b (their names are the table's switch names).
  uint32_t add_link(double bw, int a, int b) {
    fabric_.push_back({bw, 0, c_.num_nodes + a, c_.num_nodes + b});
    const auto id = static_cast<uint32_t>(fabric_.size() - 1);
    c_.switch_out[a].push_back(id);
    return id;
  }
  /// Both directions between switches a and b.
  void connect_switches(int a, int b, double bw) {
    add_link(bw, a, b);
    add_link(bw, b, a);
  }
  void set_switches(int count) {
    c_.num_switches = count;
    c_.switch_out.assign(count, {});
  }

 private:
  Cluster& c_;
  std::vector<Link>& fabric_;
};

// Switch names for link labels.
std::vector<std::string> build_fabric(Cluster& c, Builder& b) {
  const ClusterSpec& spec = c.spec;
  // A random placement builds the whole fabric of its slots and attaches the nodes afterwards.
  const bool scattered = spec.node_placement == NodePlacement::Random;
  const int nodes = scattered ? fabric_slots(spec) : c.num_nodes;
  std::vector<std::string> names;
  c.node_switch.assign(nodes, 0);
  switch (spec.topology) {
    case Topology::Switch: {
      b.set_switches(1);
      names = {"switch"};
      break;
    }
    case Topology::FatTree: {
      const int k = spec.fat_tree.radix;
      const FatTreeShape shape = fat_tree_shape(spec);
      const int half = shape.half;
      const bool bundle = bundled(spec);
      if (spec.fat_tree.levels == 2) {
        // Leaf-spine: k/2 hosts per leaf, `spines` spines, one link from every leaf to every spine
        // (bundled: one "spine" standing for all of them).
        const int leaves = (nodes + half - 1) / half;
        const int spines = shape.spines;
        b.set_switches(leaves + spines);
        for (int l = 0; l < leaves; ++l) names.push_back(fmt::format("leaf{}", l));
        for (int s = 0; s < spines; ++s)
          names.push_back(bundle ? std::string("spine") : fmt::format("spine{}", s));
        for (int n = 0; n < nodes; ++n) c.node_switch[n] = n / half;
        for (int l = 0; l < leaves; ++l) {
          for (int s = 0; s < spines; ++s) b.connect_switches(l, leaves + s, shape.leaf_up_bw);
        }
      } else {
        // k-ary fat-tree (Al-Fares et al.): k pods of k/2 edge and `aggs` aggregation switches
        // (k/2 when not oversubscribed), aggs x k/2 core switches; core switch j of group g links
        // aggregation switch g of each pod. Fewer uplinks thin the edge tier only: an
        // aggregation switch has k/2 edge links and k/2 core links, as in the full tree.
        // Only the pods that hold nodes are built: no shortest path between two of them crosses
        // another pod, and the equal-cost choices at every switch keep their order, so routes
        // are the same as in the whole fabric (radix 256 for 8 workers: one pod and the cores,
        // not 2.6 GB). Switch names keep their whole-fabric numbers. Bundled (ideal, spray): a
        // pod's aggregation switches are one ("agg<pod>"), the cores one ("core").
        const int aggs_per_pod = shape.aggs_per_pod, core_links = bundle ? 1 : half;
        const int pods = std::clamp((nodes + half * half - 1) / (half * half), 1, k);
        const int edges = pods * half, aggs = pods * aggs_per_pod, cores = shape.cores;
        b.set_switches(edges + aggs + cores);
        for (int e = 0; e < edges; ++e) names.push_back(fmt::format("edge{}", e));
        for (int a = 0; a < aggs; ++a) names.push_back(fmt::format("agg{}", a));
        for (int x = 0; x < cores; ++x)
          names.push_back(bundle ? std::string("core") : fmt::format("core{}", x));
        for (int n = 0; n < nodes; ++n) c.node_switch[n] = n / half;
        for (int p = 0; p < pods; ++p) {
          for (int e = 0; e < half; ++e) {
            for (int a = 0; a < aggs_per_pod; ++a) {
              const int edge = p * half + e, agg = edges + p * aggs_per_pod + a;
              b.connect_switches(edge, agg, shape.leaf_up_bw);
            }
          }
          for (int a = 0; a < aggs_per_pod; ++a) {
            for (int j = 0; j < core_links; ++j) {
              const int agg = edges + p * aggs_per_pod + a, core = edges + aggs + a * core_links + j;
              b.connect_switches(agg, core, shape.pod_up_bw);
            }
          }
        }
      }
      break;
    }
    case Topology::BiGraph: {
      // Hosts fill half A's switches, then half B's; every A switch links every B switch.
      const int s = spec.bigraph.switches_per_half, h = spec.bigraph.hosts_per_switch;
      b.set_switches(2 * s);
      for (int i = 0; i < s; ++i) names.push_back(fmt::format("A{}", i));
      for (int i = 0; i < s; ++i) names.push_back(fmt::format("B{}", i));
      for (int n = 0; n < nodes; ++n) c.node_switch[n] = n / h;
      for (int i = 0; i < s; ++i) {
        for (int j = 0; j < s; ++j) b.connect_switches(i, s + j, spec.nic_bw);
      }
      break;
    }
    case Topology::Torus: {
      // A router per position; node n sits at position n; neighbours in each dimension.
      const std::vector<int>& dims = spec.torus.dims;
      const int positions = std::accumulate(dims.begin(), dims.end(), 1, std::multiplies<>());
      b.set_switches(positions);
      for (int r = 0; r < positions; ++r) names.push_back(fmt::format("router{}", r));
      for (int n = 0; n < nodes; ++n) c.node_switch[n] = n;
      int stride = 1;
      for (int d : dims) {
        for (int r = 0; r < positions; ++r) {
          const int coordinate = (r / stride) % d;
          const int next = r + (((coordinate + 1) % d) - coordinate) * stride;
          // A dimension of 2 has one neighbour, not two links to the same one.
          if (d > 2 || coordinate == 0) {
            if (d > 1) b.connect_switches(r, next, spec.nic_bw);
          }
        }
        stride *= d;
      }
      break;
    }
    case Topology::Custom: {
      const CustomTopologySpec& custom = spec.custom;
      b.set_switches(static_cast<int>(custom.switches.size()));
      names = custom.switches;
      auto switch_index = [&](const std::string& name) {
        return static_cast<int>(std::find(names.begin(), names.end(), name) - names.begin());
      };
      for (const CustomLink& link : custom.links) {
        const int a = switch_index(link.a), z = switch_index(link.b);
        const int count = static_cast<int>(names.size());
        if (a < count && z < count) {
          b.connect_switches(a, z, link.bw);
        } else {
          // A node's NIC link: the node attaches to the switch at the other end.
          const bool node_first = a == count;
          const std::string& node = node_first ? link.a : link.b;
          const int n = std::stoi(node.substr(4));
          if (n < nodes) c.node_switch[n] = node_first ? z : a;
        }
      }
      break;
    }
  }
  if (scattered) {
    // Node n takes slot chosen[n]: the first num_nodes of a seeded shuffle of the slots.
    std::vector<int> slots(static_cast<size_t>(nodes));
    std::iota(slots.begin(), slots.end(), 0);
    for (int i = nodes - 1; i > 0; --i) {
      const uint64_t key = mix64(spec.placement_seed ^ mix64(static_cast<uint64_t>(i)));
      std::swap(slots[static_cast<size_t>(i)],
                slots[static_cast<size_t>(key % static_cast<uint64_t>(i + 1))]);
    }
    std::vector<int> slot_switch = std::move(c.node_switch);
    c.node_switch.resize(static_cast<size_t>(c.num_nodes));
    for (int n = 0; n < c.num_nodes; ++n) c.node_switch[n] = slot_switch[static_cast<size_t>(slots[n])];
  }
  return names;
}

/// The NIC bandwidth of each of `nodes` nodes in a custom topology: its link's (the first that
/// names it), nic_bw for a node without one.
std::vector<double> custom_nic_bw(const ClusterSpec& spec, int nodes) {
  std::vector<double> bw(static_cast<size_t>(nodes), spec.nic_bw);
  std::vector<uint8_t> seen(static_cast<size_t>(nodes), 0);
  for (const CustomLink& link : spec.custom.links) {
    for (const std::string* end : {&link.a, &link.b}) {
      if (end->rfind("node", 0) != 0 || end->size() == 4) continue;
      const std::string digits = end->substr(4);
      if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) continue;
      const int n = std::stoi(digits);
      if (*end != fmt::format("node{}", n)) continue;  // "node03" is not node 3's
      if (n < nodes && !seen[static_cast<size_t>(n)]) {
        seen[static_cast<size_t>(n)] = 1;
        bw[static_cast<size_t>(n)] = link.bw;
      }
    }
  }
  return bw;
}

}  // namespace

const char* to_string(NcclProtocol protocol) {
  switch (protocol) {
    case NcclProtocol::LL:
      return "LL";
    case NcclProtocol::LL128:
      return "LL128";
    case NcclProtocol::Simple:
      return "Simple";
  }
  return "?";
}

std::string nccl_key(bool tree, NcclProtocol protocol) {
  return std::string("cluster.nccl.") + (tree ? "tree." : "ring.") + name_c_str(protocol);
}

const char* to_string(Topology topology) {
  return name_c_str(topology);
}

const CollectiveRegime* ClusterSpec::regime_for(double bytes) const {
  // Regimes are few (a handful of protocol switches): a linear scan from the top is enough.
  for (auto it = collective_regimes.rbegin(); it != collective_regimes.rend(); ++it) {
    if (bytes >= it->from_bytes) return &*it;
  }
  return nullptr;
}

FatTreeUplinks fat_tree_uplinks(const ClusterSpec& spec) {
  // A leaf's hosts over its uplinks is the oversubscription: k/2 x nic_bw = oversubscription x
  // count x bw. Given two of (oversubscription, uplinks, uplink_bandwidth), the third follows;
  // validate() rejects three that disagree and a bandwidth that makes a fractional count.
  const FatTreeSpec& ft = spec.fat_tree;
  const int half = std::max(1, ft.radix / 2);
  const double hosts_bw = half * spec.nic_bw;
  FatTreeUplinks up;
  if (ft.uplinks > 0) {
    up.count = ft.uplinks;
    up.bw = ft.uplink_bw > 0 ? ft.uplink_bw : spec.nic_bw;
  } else if (ft.uplink_bw > 0) {
    up.bw = ft.uplink_bw;
    up.count = std::max(1, static_cast<int>(std::lround(hosts_bw / (ft.oversubscription * up.bw))));
  } else {
    // Full-speed uplinks, k/2 / oversubscription of them; where that is not a whole number (3:1
    // of 8 hosts), the nearest count at the bandwidth that keeps the ratio exact.
    up.count = std::max(1, static_cast<int>(std::lround(half / ft.oversubscription)));
    const bool whole = std::abs(half / ft.oversubscription - up.count) <= 1e-9 * up.count;
    up.bw = whole ? spec.nic_bw : hosts_bw / (ft.oversubscription * up.count);
  }
  return up;
}

int fabric_slots(const ClusterSpec& spec) {
  return spec.fabric_nodes > 0 ? spec.fabric_nodes : topology_capacity(spec);
}

int topology_capacity(const ClusterSpec& spec) {
  switch (spec.topology) {
    case Topology::Switch:
      return 0;
    case Topology::FatTree: {
      if (spec.fat_tree.levels == 2) return 0;
      const int k = spec.fat_tree.radix;
      return k * (k / 2) * (k / 2);
    }
    case Topology::BiGraph:
      return 2 * spec.bigraph.switches_per_half * spec.bigraph.hosts_per_switch;
    case Topology::Torus: {
      int n = 1;
      for (int d : spec.torus.dims) n *= d;
      return n;
    }
    case Topology::Custom: {
      int n = 0;
      for (const CustomLink& link : spec.custom.links) {
        n += static_cast<int>(link.a.rfind("node", 0) == 0) + static_cast<int>(link.b.rfind("node", 0) == 0);
      }
      return n;
    }
  }
  return 0;
}

Endpoint Cluster::worker_endpoint(int worker) const {
  const int node = node_of_worker[static_cast<size_t>(worker)];
  return {node, worker - first_worker[static_cast<size_t>(node)]};
}

int incast_threshold(double buffer, double capacity, double rtt) {
  // The buffer plus what the wire holds, in minimum windows; capped so that a huge buffer stays an int.
  const double windows = std::floor((buffer + capacity * rtt) / kTcpMinWindow);
  return static_cast<int>(std::min(windows, 1e9));
}

int ClusterSpec::busiest_node_workers() const {
  if (placement.empty()) return workers < workers_per_node ? workers : workers_per_node;
  return *std::max_element(placement.begin(), placement.end());
}

namespace {
/// Switch hops from `from` to `to` (from != to) on a fat tree of `shape`, or -1 where the shape
/// does not say (a destination that is not a leaf: the search over the links does).
int fat_tree_hops(const Cluster& c, const FatTreeShape& shape, int from, int to) {
  const int half = shape.half;
  if (c.spec.fat_tree.levels == 2) {
    const int leaves = c.num_switches - shape.spines;
    if (to >= leaves) return -1;
    return from >= leaves ? 1 : 2;  // spine -> leaf, or leaf -> spine -> leaf
  }
  const int pods = (c.num_switches - shape.cores) / (half + shape.aggs_per_pod);
  const int edges = pods * half;
  if (to >= edges) return -1;
  const int pod = to / half;
  if (from < edges) return from / half == pod ? 2 : 4;  // up to an aggregation switch (and a core)
  if (from < edges + pods * shape.aggs_per_pod) return (from - edges) / shape.aggs_per_pod == pod ? 1 : 3;
  return 2;  // core -> aggregation -> edge
}
}  // namespace

int Cluster::switch_hops(int from, int to) const {
  if (from == to) return 0;
  // Nodes attach to leaves (edge switches), so a route's destination is one; the shapes below
  // give the hops to it from any switch, as the search over the links would.
  switch (spec.topology) {
    case Topology::Switch:
      break;
    case Topology::FatTree: {
      const int hops = fat_tree_hops(*this, fat_tree_shape(spec), from, to);
      if (hops >= 0) return hops;
      break;
    }
    case Topology::BiGraph: {
      const int half = spec.bigraph.switches_per_half;
      return (from < half) == (to < half) ? 2 : 1;
    }
    case Topology::Torus: {
      int hops = 0, stride = 1;
      for (int d : spec.torus.dims) {
        const int dx = std::abs((from / stride) % d - (to / stride) % d);
        hops += std::min(dx, d - dx);
        stride *= d;
      }
      return hops;
    }
    case Topology::Custom:
      break;
  }
  // Breadth-first search backwards from `to` over switch-to-switch links, kept per destination.
  if (distance_to_.empty()) distance_to_.resize(num_switches);
  std::vector<int>& dist = distance_to_[to];
  if (dist.empty()) {
    if (incoming_.empty()) {
      incoming_.resize(num_switches);
      for (int s = 0; s < num_switches; ++s) {
        for (uint32_t l : switch_out[s]) incoming_[links[l].to - num_nodes].push_back(s);
      }
    }
    dist.assign(num_switches, -1);
    std::deque<int> queue{to};
    dist[to] = 0;
    while (!queue.empty()) {
      const int v = queue.front();
      queue.pop_front();
      for (int u : incoming_[v]) {
        if (dist[u] < 0) {
          dist[u] = dist[v] + 1;
          queue.push_back(u);
        }
      }
    }
  }
  return dist[from];
}

std::vector<uint32_t> Cluster::switch_route(int a, int b, uint64_t hash) const {
  std::vector<uint32_t> route;
  if (a == b) return route;
  // A fat tree's shape once for the route, not once per candidate hop (a path per pair of a
  // parameter server's clients and shards asks for many).
  const bool fat_tree = spec.topology == Topology::FatTree;
  const FatTreeShape shape = fat_tree ? fat_tree_shape(spec) : FatTreeShape{};
  auto hops = [&](int from) {
    if (from == b) return 0;
    const int h = fat_tree ? fat_tree_hops(*this, shape, from, b) : -1;
    return h >= 0 ? h : switch_hops(from, b);
  };
  int left = hops(a);
  STEPCAST_ASSERT(left >= 0);
  int v = a;
  std::vector<uint32_t> candidates;
  while (v != b) {
    candidates.clear();
    for (uint32_t l : switch_out[v]) {
      if (hops(links[l].to - num_nodes) == left - 1) candidates.push_back(l);
    }
    hash = mix64(hash);
    const uint32_t chosen = candidates[hash % candidates.size()];
    route.push_back(chosen);
    v = links[chosen].to - num_nodes;
    --left;
  }
  return route;
}

int Cluster::nic_of(Endpoint e) const {
  const int nics = first_nic[e.node + 1] - first_nic[e.node];
  const int device = e.device == kHostDevice ? 0 : e.device;
  return first_nic[e.node] + std::min(nics - 1, device * nics / std::max(1, spec.workers_per_node));
}

namespace {
int pcie_switch_index(const ClusterSpec& spec, Endpoint e) {
  const int per_node = (spec.workers_per_node + spec.gpus_per_pcie_switch - 1) / spec.gpus_per_pcie_switch;
  return e.node * per_node + e.device / spec.gpus_per_pcie_switch;
}
}  // namespace

Path Cluster::path(Endpoint from, Endpoint to) const {
  Path p;
  if (from == to) return p;
  const bool pcie = spec.intra_node_link == IntraNodeLink::Pcie;
  // On PCIe a GPU leaves its PCIe switch through the shared uplink unless the other end sits
  // under the same switch.
  auto leaves_switch = [&](Endpoint gpu, Endpoint other) {
    return pcie && gpu.device != kHostDevice && !is_server_node(gpu.node) &&
           !(other.node == gpu.node && other.device != kHostDevice &&
             pcie_switch_index(spec, other) == pcie_switch_index(spec, gpu));
  };
  if (from.node == to.node) {
    // Device to device inside a node: up the sender's link, down the receiver's.
    p.links.push_back(bus_up[bus_index(spec, from)]);
    if (leaves_switch(from, to)) p.links.push_back(pcie_up[pcie_switch_index(spec, from)]);
    if (leaves_switch(to, from)) p.links.push_back(pcie_down[pcie_switch_index(spec, to)]);
    p.links.push_back(bus_down[bus_index(spec, to)]);
  } else {
    // Between nodes a GPU reaches its NIC directly (GPUDirect) on NVLink machines, through its
    // PCIe switch uplink on PCIe machines.
    if (leaves_switch(from, to)) p.links.push_back(pcie_up[pcie_switch_index(spec, from)]);
    p.links.push_back(nic_up[nic_of(from)]);
    // ECMP hashes each flow (its 5-tuple; here its endpoints: nodes and devices, so two GPUs'
    // or two NICs' flows between the same nodes are hashed apart). Bundled fat-trees (ideal,
    // spray) and one switch have one shortest route, which the hash cannot change.
    const auto pair = [](int a, int b) {
      return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
    };
    const uint64_t hash =
        mix64(spec.routing_seed ^ mix64(pair(from.node, to.node)) ^ mix64(~pair(from.device, to.device)));
    for (uint32_t l : switch_route(node_switch[from.node], node_switch[to.node], hash)) p.links.push_back(l);
    p.links.push_back(nic_down[nic_of(to)]);
    if (leaves_switch(to, from)) p.links.push_back(pcie_down[pcie_switch_index(spec, to)]);
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
  c.node_of_worker.reserve(static_cast<size_t>(spec.workers));
  for (int n = 0; n < worker_nodes; ++n) {
    c.first_worker.push_back(static_cast<int>(c.node_of_worker.size()));
    c.node_of_worker.insert(c.node_of_worker.end(), static_cast<size_t>(spec.workers_on_node(n)), n);
  }
  c.first_worker.push_back(static_cast<int>(c.node_of_worker.size()));
  STEPCAST_ASSERT(static_cast<int>(c.node_of_worker.size()) == spec.workers);
  const int capacity = topology_capacity(spec);
  STEPCAST_ASSERT(capacity == 0 || c.num_nodes <= capacity);
  LinkTable& t = c.links;
  Builder builder(c, t.fabric_);
  t.switch_names_ = build_fabric(c, builder);
  // Half the end-to-end latency on each NIC hop so a node-to-node path pays exactly `latency`.
  t.num_nodes_ = c.num_nodes;
  t.worker_nodes_ = worker_nodes;
  t.nics_per_worker_node_ = spec.nics_per_node;
  t.workers_per_node_ = spec.workers_per_node;
  t.node_switch_ = c.node_switch;
  t.worker_nic_bw_ = spec.nic_bw;
  t.server_nic_bw_ = spec.ps_nic_bw > 0 ? spec.ps_nic_bw : spec.nic_bw;
  if (spec.topology == Topology::Custom) t.custom_nic_bw_ = custom_nic_bw(spec, c.num_nodes);
  t.nic_latency_ = spec.latency / 2;
  t.intra_bw_ = spec.intra_node_bw;
  // The bus hop inside a node: half the intra-node latency each way, so GPU-to-GPU pays it once.
  t.bus_latency_ = spec.intra_node_latency / 2;
  // Each NIC's up link, then its down link, node by node; then the PCIe switches' and the buses'.
  t.nic_begin_ = t.fabric_.size();
  auto next = static_cast<uint32_t>(t.nic_begin_);
  c.first_nic.reserve(static_cast<size_t>(c.num_nodes) + 1);
  for (int n = 0; n < c.num_nodes; ++n) {
    const int nics = n >= worker_nodes ? 1 : spec.nics_per_node;
    c.first_nic.push_back(static_cast<int>(c.nic_up.size()));
    for (int k = 0; k < nics; ++k) {
      c.nic_up.push_back(next++);
      c.nic_down.push_back(next++);
    }
  }
  c.first_nic.push_back(static_cast<int>(c.nic_up.size()));
  t.pcie_begin_ = next;
  if (spec.intra_node_link == IntraNodeLink::Pcie) {
    t.pcie_per_node_ = (spec.workers_per_node + spec.gpus_per_pcie_switch - 1) / spec.gpus_per_pcie_switch;
    for (int n = 0; n < worker_nodes; ++n) {
      for (int k = 0; k < t.pcie_per_node_; ++k) {
        c.pcie_up.push_back(next++);
        c.pcie_down.push_back(next++);
      }
    }
  }
  t.bus_begin_ = next;
  t.buses_ = static_cast<size_t>(worker_nodes) * static_cast<size_t>(spec.workers_per_node + 1);
  c.bus_up.reserve(t.buses_);
  c.bus_down.reserve(t.buses_);
  for (size_t i = 0; i < t.buses_; ++i) {
    c.bus_up.push_back(next++);
    c.bus_down.push_back(next++);
  }
  STEPCAST_ASSERT(next == t.size());
  return c;
}

int LinkTable::node_of_nic(size_t nic) const {
  const size_t worker_nics = static_cast<size_t>(worker_nodes_) * static_cast<size_t>(nics_per_worker_node_);
  if (nic < worker_nics) return static_cast<int>(nic / static_cast<size_t>(nics_per_worker_node_));
  return worker_nodes_ + static_cast<int>(nic - worker_nics);
}

Link LinkTable::operator[](size_t l) const {
  if (l < nic_begin_) return fabric_[l];
  if (l < pcie_begin_) {
    const size_t nic = (l - nic_begin_) / 2;
    const int node = node_of_nic(nic);
    const auto n = static_cast<size_t>(node);
    const double bw = !custom_nic_bw_.empty() ? custom_nic_bw_[n]
                      : node >= worker_nodes_ ? server_nic_bw_
                                              : worker_nic_bw_;
    const int sw = num_nodes_ + node_switch_[n];
    if ((l - nic_begin_) % 2 == 0) return {bw, nic_latency_, node, sw};
    return {bw, nic_latency_, sw, node};
  }
  if (l < bus_begin_) return {intra_bw_, 0, -1, -1};
  STEPCAST_ASSERT(l < size());
  return {intra_bw_, bus_latency_, -1, -1};
}

std::string LinkTable::name(size_t l) const {
  if (l < nic_begin_) {
    const Link& link = fabric_[l];
    return switch_names_[static_cast<size_t>(link.from - num_nodes_)] + "->" +
           switch_names_[static_cast<size_t>(link.to - num_nodes_)];
  }
  const char* way = (l - nic_begin_) % 2 == 0 ? "up" : "down";
  if (l < pcie_begin_) {
    const size_t nic = (l - nic_begin_) / 2;
    const int node = node_of_nic(nic);
    if (node >= worker_nodes_) return fmt::format("server{}.nic.{}", node - worker_nodes_, way);
    if (nics_per_worker_node_ == 1) return fmt::format("node{}.nic.{}", node, way);
    return fmt::format("node{}.nic{}.{}", node, nic % static_cast<size_t>(nics_per_worker_node_), way);
  }
  if (l < bus_begin_) {
    const size_t k = (l - pcie_begin_) / 2, per_node = static_cast<size_t>(pcie_per_node_);
    return fmt::format("node{}.pcie{}.{}", k / per_node, k % per_node, way);
  }
  const size_t k = (l - bus_begin_) / 2, per_node = static_cast<size_t>(workers_per_node_) + 1;
  const size_t device = k % per_node;
  if (device + 1 == per_node) return fmt::format("node{}.host.bus.{}", k / per_node, way);
  return fmt::format("node{}.gpu{}.bus.{}", k / per_node, device, way);
}

std::string describe_fabric(const Cluster& c) {
  const ClusterSpec& spec = c.spec;
  const FatTreeUplinks up = fat_tree_uplinks(spec);
  const int half = std::max(1, spec.fat_tree.radix / 2);
  const double ratio = half * spec.nic_bw / (up.count * up.bw);
  const char* leaf = spec.fat_tree.levels == 2 ? "leaf" : "edge switch";
  std::string uplinks;
  if (up.count != half || up.bw != spec.nic_bw) {
    uplinks = fmt::format(", {} per {} at {}", format_count(up.count, "uplink", "uplinks"), leaf,
                          format_bandwidth(up.bw));
    if (std::abs(ratio - 1) > 1e-9) uplinks += fmt::format(" ({:.3g}:1 oversubscribed)", ratio);
  }
  if (bundled(spec)) {
    uplinks +=
        fmt::format(", {} routing: each {}'s uplinks bundled into one link", name_of(spec.routing), leaf);
  }
  std::string shape;
  switch (spec.topology) {
    case Topology::Switch:
      shape = "one switch";
      break;
    case Topology::FatTree: {
      const FatTreeShape ft = fat_tree_shape(spec);
      if (spec.fat_tree.levels == 2) {
        shape = fmt::format("leaf-spine (radix {}): {} of up to {} hosts, {}{}", spec.fat_tree.radix,
                            format_count(c.num_switches - ft.spines, "leaf", "leaves"), half,
                            format_count(up.count, "spine", "spines"), uplinks);
      } else {
        const int pods = (c.num_switches - ft.cores) / (half + ft.aggs_per_pod);
        shape = fmt::format(
            "3-level fat-tree (radix {}): {} of {} edge and {} aggregation switches, {}, {} hosts "
            "per edge switch{}",
            spec.fat_tree.radix, format_count(pods, "pod", "pods"), half, up.count,
            format_count(up.count * half, "core", "cores"), half, uplinks);
      }
      break;
    }
    case Topology::BiGraph:
      shape = fmt::format("BiGraph: 2 halves of {}, {} hosts per switch",
                          format_count(spec.bigraph.switches_per_half, "switch", "switches"),
                          spec.bigraph.hosts_per_switch);
      break;
    case Topology::Torus: {
      std::string dims;
      for (int d : spec.torus.dims) {
        if (!dims.empty()) dims += 'x';
        dims += std::to_string(d);
      }
      shape = fmt::format("torus {} ({})", dims, format_count(c.num_switches, "router", "routers"));
      break;
    }
    case Topology::Custom:
      shape = fmt::format("custom: {}", format_count(c.num_switches, "switch", "switches"));
      break;
  }
  const int worker_nodes = spec.num_worker_nodes();
  shape += "; " + format_count(worker_nodes, "worker node", "worker nodes");
  if (c.num_nodes > worker_nodes)
    shape += " and " + format_count(c.num_nodes - worker_nodes, "server node", "server nodes");
  switch (spec.node_placement) {
    case NodePlacement::Packed:
      break;
    case NodePlacement::Random:
      shape += fmt::format(" scattered over {} slots", fabric_slots(spec));
      break;
  }
  return shape;
}

std::vector<std::string> ineffective_keys(const Cluster& c) {
  std::vector<std::string> notes;
  const ClusterSpec& spec = c.spec;
  const bool one_switch = std::all_of(c.node_switch.begin(), c.node_switch.begin() + c.num_nodes,
                                      [&](int s) { return s == c.node_switch.front(); });
  const FatTreeSpec& ft = spec.fat_tree;
  if (spec.topology == Topology::FatTree && one_switch &&
      (ft.oversubscription > 1 || ft.uplinks > 0 || ft.uplink_bw > 0)) {
    std::vector<std::string> keys;
    if (ft.oversubscription > 1)
      keys.push_back(fmt::format("cluster.fat_tree.oversubscription ({:g})", ft.oversubscription));
    if (ft.uplinks > 0) keys.push_back(fmt::format("cluster.fat_tree.uplinks ({})", ft.uplinks));
    if (ft.uplink_bw > 0)
      keys.push_back(fmt::format("cluster.fat_tree.uplink_bandwidth ({})", format_bandwidth(ft.uplink_bw)));
    notes.push_back(fmt::format(
        "{} {} no effect: all {} nodes attach to one {} switch (radix {} gives {} hosts each), so no "
        "traffic crosses its uplinks; a smaller cluster.fat_tree.radix spreads them",
        fmt::join(keys, " and "), keys.size() == 1 ? "has" : "have", c.num_nodes,
        ft.levels == 2 ? "leaf" : "edge", ft.radix, std::max(1, ft.radix / 2)));
  }
  // One switch has one route between two nodes: no equal-cost paths to hash or split.
  if (spec.topology == Topology::Switch && spec.routing != Routing::Ecmp) {
    notes.push_back(
        fmt::format("cluster.routing ({}) has no effect: one switch has a single path between two "
                    "nodes",
                    name_of(spec.routing)));
  }
  // Another topology's keys: set away from their defaults, they describe a fabric not built.
  const auto other_topology = [&](Topology owner, bool changed, const char* keys) {
    if (spec.topology != owner && changed) {
      notes.push_back(
          fmt::format("{} has no effect: cluster.topology is {}", keys, to_string(spec.topology)));
    }
  };
  other_topology(Topology::FatTree, spec.fat_tree != FatTreeSpec{}, "cluster.fat_tree.*");
  other_topology(Topology::BiGraph, spec.bigraph != BiGraphSpec{}, "cluster.bigraph.*");
  other_topology(Topology::Torus, spec.torus != TorusSpec{}, "cluster.torus.dims");
  if (spec.fabric_nodes > 0 && spec.node_placement == NodePlacement::Packed) {
    notes.emplace_back(
        "cluster.fabric_nodes has no effect: cluster.node_placement is packed (nodes fill the "
        "fabric in order; random scatters them over fabric_nodes slots)");
  }
  if (spec.intra_node_link != IntraNodeLink::Pcie &&
      spec.gpus_per_pcie_switch != ClusterSpec{}.gpus_per_pcie_switch) {
    notes.emplace_back(
        "cluster.intra_node.gpus_per_pcie_switch has no effect: cluster.intra_node.link is nvlink");
  }
  if (spec.ps_nic_bw > 0 && c.num_nodes == spec.num_worker_nodes()) {
    notes.emplace_back(
        "cluster.ps_nic_bandwidth has no effect: no parameter server has a node of its own "
        "(training.ps.placement: dedicated gives it one)");
  }
  return notes;
}

}  // namespace stepcast::cluster
