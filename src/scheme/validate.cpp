#include "stepcast/scheme/validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheme/stage_programs.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/detail/scheme/placement.hpp"
#include "stepcast/error.hpp"
#include "stepcast/limits.hpp"
#include "stepcast/scheme/rank_layout.hpp"
#include "stepcast/units.hpp"

namespace stepcast::scheme {
namespace {

using cluster::ClusterSpec;
using cluster::Topology;
using limits::kMaxWorkers;

// Library errors carry no file: scenario/ knows which file and line set the key.
[[noreturn]] void fail(std::string_view key, const std::string& message) {
  throw Error({"", 0, std::string(key)}, message);
}

void expect_int(std::string_view key, int value, int min, int max) {
  if (value < min || value > max)
    fail(key, fmt::format("expected an integer in [{}, {}], got {}", min, max, value));
}

// NaN fails every comparison, so each check asks for what is valid rather than rejecting what
// is not.
void expect_non_negative(std::string_view key, double value, std::string_view what, double max) {
  if (!(std::isfinite(value) && value >= 0 && value <= max))
    fail(key, fmt::format("expected a finite {} >= 0 and <= {:g}, got {}", what, max, value));
}
bool plausible_bandwidth(double value) {
  return std::isfinite(value) && value >= limits::kMinBandwidth && value <= limits::kMaxBandwidth;
}
std::string bandwidth_range() {
  return fmt::format("in [{:g}, {:g}] bytes/s", limits::kMinBandwidth, limits::kMaxBandwidth);
}
void expect_bandwidth(std::string_view key, double value) {
  if (!plausible_bandwidth(value))
    fail(key, fmt::format("expected a finite bandwidth > 0 {}, got {}", bandwidth_range(), value));
}
/// 0 stands for `zero_means`.
void expect_optional_bandwidth(std::string_view key, double value, std::string_view zero_means) {
  if (value != 0 && !plausible_bandwidth(value)) {
    fail(key, fmt::format("expected a finite bandwidth >= 0 (0: {}), else {}, got {}", zero_means,
                          bandwidth_range(), value));
  }
}

// A fat-tree's uplinks: at most radix/2 per leaf (its other half of ports holds the hosts), and
// oversubscription, when given with uplinks or uplink_bandwidth, equal to the ratio they make:
// radix/2 x nic_bandwidth = oversubscription x uplinks x uplink_bandwidth.
void check_fat_tree_uplinks(const cluster::ClusterSpec& c) {
  const cluster::FatTreeSpec& ft = c.fat_tree;
  const int half = std::max(1, ft.radix / 2);
  if (ft.uplinks < 0 || ft.uplinks > half) {
    fail("cluster.fat_tree.uplinks",
         fmt::format(
             "expected 0 (from oversubscription) or 1 .. {} (radix {} / 2: a leaf's other ports hold its "
             "hosts), got {}",
             half, ft.radix, ft.uplinks));
  }
  expect_optional_bandwidth("cluster.fat_tree.uplink_bandwidth", ft.uplink_bw, "cluster.nic_bandwidth");
  if (ft.uplinks == 0 && ft.uplink_bw > 0) {
    const double count = half * c.nic_bw / (ft.oversubscription * ft.uplink_bw);
    if (!(std::abs(count - std::round(count)) <= 1e-6 * count && count >= 0.5 && count <= half + 0.5)) {
      fail(
          "cluster.fat_tree.uplink_bandwidth",
          fmt::format("{} makes {} hosts x {} / ({:g} x {}) = {:.3g} uplinks per leaf, not a whole number in "
                      "1 .. {}; give cluster.fat_tree.uplinks",
                      format_bandwidth(ft.uplink_bw), half, format_bandwidth(c.nic_bw), ft.oversubscription,
                      format_bandwidth(ft.uplink_bw), count, half));
    }
  }
  if (ft.oversubscription > 1 && ft.uplinks > 0) {
    const cluster::FatTreeUplinks up = cluster::fat_tree_uplinks(c);
    const double ratio = half * c.nic_bw / (up.count * up.bw);
    if (std::abs(ratio / ft.oversubscription - 1) > 1e-6) {
      fail("cluster.fat_tree.oversubscription",
           fmt::format(
               "{:g} disagrees with cluster.fat_tree.uplinks ({}) at cluster.fat_tree.uplink_bandwidth "
               "({}{}): {} hosts x {} / ({} x {}) is {:.3g}:1; give two of the three keys",
               ft.oversubscription, up.count, format_bandwidth(up.bw), ft.uplink_bw > 0 ? "" : ", the NIC's",
               half, format_bandwidth(c.nic_bw), up.count, format_bandwidth(up.bw), ratio));
    }
  }
}

// An enum cast from an out-of-range integer would fall through every switch of the predictors.
template <NamedEnum E>
void expect_known(std::string_view key, E value) {
  if (!is_named(value)) fail(key, fmt::format("unknown value {}", static_cast<int>(value)));
}

// "node<digits>": the number, or -1 for any other name.
int node_number(const std::string& name) {
  if (name.size() <= 4 || name.rfind("node", 0) != 0 || name.size() > 11) return -1;  // up to 7 digits
  if (!std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; })) return -1;
  return std::stoi(name.substr(4));
}

// The same rules scenario/ applies when it reads a topology file (cluster.custom), for a spec
// built in code: build_cluster trusts them.
void check_custom(const cluster::CustomTopologySpec& custom) {
  constexpr std::string_view kKey = "cluster.custom";
  if (custom.switches.empty()) fail(kKey, "a custom topology needs at least one switch");
  for (size_t i = 0; i < custom.switches.size(); ++i) {
    const std::string& name = custom.switches[i];
    if (name.empty() || node_number(name) >= 0)
      fail(kKey, fmt::format("switch '{}' needs a name other than node<i>", name));
    if (std::find(custom.switches.begin(), custom.switches.begin() + static_cast<long>(i), name) !=
        custom.switches.begin() + static_cast<long>(i)) {
      fail(kKey, fmt::format("duplicate switch '{}'", name));
    }
  }
  const int count = static_cast<int>(custom.switches.size());
  auto switch_index = [&](const std::string& name) {
    return static_cast<int>(std::find(custom.switches.begin(), custom.switches.end(), name) -
                            custom.switches.begin());
  };
  std::map<int, int> links_of_node;
  std::vector<std::vector<int>> adjacent(count);
  for (const cluster::CustomLink& link : custom.links) {
    const int a_node = node_number(link.a), b_node = node_number(link.b);
    const int a = switch_index(link.a), b = switch_index(link.b);
    if ((a_node < 0 && a == count) || (b_node < 0 && b == count)) {
      fail(kKey, fmt::format("unknown endpoint in link {} - {} (not a switch, nor node0, node1, ...)", link.a,
                             link.b));
    }
    if (a_node >= 0 && b_node >= 0)
      fail(kKey, fmt::format("link {} - {}: a node links to a switch", link.a, link.b));
    if (!plausible_bandwidth(link.bw)) {
      fail(kKey, fmt::format("link {} - {}: expected a finite bandwidth > 0 {}, got {}", link.a, link.b,
                             bandwidth_range(), link.bw));
    }
    if (!(std::isfinite(link.latency) && link.latency >= 0 && link.latency <= limits::kMaxLatency)) {
      fail(kKey, fmt::format("link {} - {}: expected a finite latency >= 0 and <= {:g} s, got {}", link.a,
                             link.b, limits::kMaxLatency, link.latency));
    }
    if (a_node >= 0 || b_node >= 0) {
      const int n = std::max(a_node, b_node);
      if (++links_of_node[n] > 1) fail(kKey, fmt::format("node{} has more than one link", n));
    } else {
      adjacent[a].push_back(b);
      adjacent[b].push_back(a);
    }
  }
  // Nodes are numbered from 0 without gaps, so the node count alone says which exist.
  int expected = 0;
  for (const auto& [n, links] : links_of_node) {
    if (n != expected) fail(kKey, fmt::format("node{} has no link", expected));
    ++expected;
  }
  // Every switch must reach every other, or some pairs of nodes could not talk.
  std::vector<char> seen(count, 0);
  std::vector<int> stack{0};
  seen[0] = 1;
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    for (int u : adjacent[v]) {
      if (!seen[u]) {
        seen[u] = 1;
        stack.push_back(u);
      }
    }
  }
  for (int i = 0; i < count; ++i) {
    if (!seen[i]) {
      fail(kKey, fmt::format("switch '{}' is not connected to '{}'", custom.switches[i], custom.switches[0]));
    }
  }
}

void check_cluster_values(const ClusterSpec& c) {
  expect_int("cluster.workers", c.workers, 1, kMaxWorkers);
  expect_int("cluster.workers_per_node", c.workers_per_node, 1, kMaxWorkers);
  expect_int("cluster.fabric_nodes", c.fabric_nodes, 0, 4 * kMaxWorkers);
  expect_known("cluster.topology", c.topology);
  expect_known("cluster.routing", c.routing);
  switch (c.routing) {
    case cluster::Routing::Ecmp:
      break;
    case cluster::Routing::Ideal:
    case cluster::Routing::Spray:
      // An even split is built exactly as bundled uplinks on a fat-tree (cluster.cpp, FatTreeShape);
      // on the others one pair's equal-cost paths share links with other pairs' single paths, and a
      // flow has one path in the network model, so an even split cannot be represented exactly.
      if (c.topology != Topology::FatTree && c.topology != Topology::Switch) {
        fail("cluster.routing",
             fmt::format("{} (an even split of every flow over its equal-cost paths) is built for fat_tree "
                         "(bundled uplinks) and switch (one path) only, not {}: its equal-cost paths share "
                         "links with other routes, which a flow-level split cannot express exactly; use ecmp",
                         cluster::name_of(c.routing), cluster::name_of(c.topology)));
      }
      break;
  }
  expect_bandwidth("cluster.nic_bandwidth", c.nic_bw);
  expect_non_negative("cluster.link_latency", c.latency, "duration (s)", limits::kMaxLatency);
  expect_bandwidth("cluster.intra_node.bandwidth", c.intra_node_bw);
  expect_non_negative("cluster.intra_node.latency", c.intra_node_latency, "duration (s)",
                      limits::kMaxLatency);
  expect_known("cluster.intra_node.link", c.intra_node_link);
  expect_known("cluster.node_placement", c.node_placement);
  expect_int("cluster.intra_node.gpus_per_pcie_switch", c.gpus_per_pcie_switch, 1, kMaxWorkers);
  expect_int("cluster.nics_per_node", c.nics_per_node, 1, kMaxWorkers);
  expect_known("cluster.gpu.generation", c.gpu_generation);
  expect_known("cluster.cpu.vendor", c.cpu_vendor);
  if (c.nccl.channels) expect_int("cluster.nccl.channels", *c.nccl.channels, 1, cluster::kMaxNcclChannels);
  if (!(std::isfinite(c.gpu_memory) && c.gpu_memory >= 0 && c.gpu_memory <= limits::kMaxBytes)) {
    fail("cluster.gpu_memory", fmt::format("expected a finite size in [0, {:g}] bytes (0: unknown), got {}",
                                           limits::kMaxBytes, c.gpu_memory));
  }
  if (!(std::isfinite(c.gpu_memory_reserved) && c.gpu_memory_reserved >= 0 &&
        c.gpu_memory_reserved <= limits::kMaxBytes)) {
    fail("cluster.gpu.memory_reserved", fmt::format("expected a finite size in [0, {:g}] bytes, got {}",
                                                    limits::kMaxBytes, c.gpu_memory_reserved));
  }
  if (!(c.gpu_allocator_overhead >= 0 && c.gpu_allocator_overhead < 1)) {
    fail("cluster.gpu.allocator_overhead",
         fmt::format("expected a fraction in [0, 1), got {}", c.gpu_allocator_overhead));
  }
  if (c.gpu_peak_flops != 0 && !(std::isfinite(c.gpu_peak_flops) && c.gpu_peak_flops >= limits::kMinFlops &&
                                 c.gpu_peak_flops <= limits::kMaxFlops)) {
    fail("cluster.gpu.peak_flops",
         fmt::format("expected 0 (unknown) or a rate in [{:g}, {:g}] FLOP/s, got {}", limits::kMinFlops,
                     limits::kMaxFlops, c.gpu_peak_flops));
  }
  expect_optional_bandwidth("cluster.gpu.memory_bandwidth", c.gpu_memory_bw,
                            "unknown, a free optimizer step");
  // 0 means "same as nic_bw".
  expect_optional_bandwidth("cluster.ps_nic_bandwidth", c.ps_nic_bw, "cluster.nic_bandwidth");
  if (c.rpc_latency) {
    expect_non_negative("cluster.rpc_latency", *c.rpc_latency, "duration (s)", limits::kMaxLatency);
  }
  expect_non_negative("cluster.switch.buffer", c.incast.switch_buffer, "size (bytes)", limits::kMaxBytes);
  expect_non_negative("cluster.tcp_rto_min", c.incast.tcp_rto_min, "duration (s)", limits::kMaxLatency);
  // Only the chosen topology's parameters shape the network; the others may hold anything.
  switch (c.topology) {
    case Topology::Switch:
      break;
    case Topology::FatTree:
      expect_int("cluster.fat_tree.levels", c.fat_tree.levels, 2, 3);
      expect_int("cluster.fat_tree.radix", c.fat_tree.radix, 2, 256);
      if (!(std::isfinite(c.fat_tree.oversubscription) && c.fat_tree.oversubscription >= 1)) {
        fail("cluster.fat_tree.oversubscription",
             fmt::format("expected a finite number >= 1, got {}", c.fat_tree.oversubscription));
      }
      check_fat_tree_uplinks(c);
      break;
    case Topology::BiGraph:
      expect_int("cluster.bigraph.switches_per_half", c.bigraph.switches_per_half, 1, 1024);
      expect_int("cluster.bigraph.hosts_per_switch", c.bigraph.hosts_per_switch, 1, 1024);
      break;
    case Topology::Torus: {
      if (c.torus.dims.empty() || c.torus.dims.size() > 3) {
        fail("cluster.torus.dims",
             fmt::format("expected one to three dimensions, got {}", c.torus.dims.size()));
      }
      int64_t routers = 1;
      for (int d : c.torus.dims) {
        expect_int("cluster.torus.dims", d, 1, 4096);
        routers *= d;
      }
      // The cluster builds every router and its links (4096x4096 took minutes and gigabytes for 2
      // workers), and topology_capacity() counts them in an int.
      if (routers > kMaxRouters) {
        fail("cluster.torus.dims",
             fmt::format("{} routers are more than the simulator can hold (at most {}, a "
                         "router per node)",
                         routers, kMaxRouters));
      }
      break;
    }
    case Topology::Custom:
      check_custom(c.custom);
      break;
  }
  constexpr size_t kMaxRegimes = 64;
  if (c.collective_regimes.size() > kMaxRegimes) {
    fail("cluster.collective_regimes",
         fmt::format("expected at most {} regimes, got {}", kMaxRegimes, c.collective_regimes.size()));
  }
  for (size_t i = 0; i < c.collective_regimes.size(); ++i) {
    const cluster::CollectiveRegime& r = c.collective_regimes[i];
    const std::string label = fmt::format("regime {}: ", i + 1);
    if (!(std::isfinite(r.from_bytes) && r.from_bytes >= 0 && r.from_bytes <= limits::kMaxBytes)) {
      fail("cluster.collective_regimes",
           fmt::format("{}expected a finite size >= 0 and <= {:g} bytes, got {}", label, limits::kMaxBytes,
                       r.from_bytes));
    }
    if (!(std::isfinite(r.step_latency) && r.step_latency >= 0 && r.step_latency <= limits::kMaxLatency)) {
      fail("cluster.collective_regimes",
           fmt::format("{}expected a finite step latency >= 0 and <= {:g} s, got {}", label,
                       limits::kMaxLatency, r.step_latency));
    }
    if (!plausible_bandwidth(r.bw)) {
      fail("cluster.collective_regimes",
           fmt::format("{}expected a finite bandwidth > 0 {}, got {}", label, bandwidth_range(), r.bw));
    }
    // regime_for() picks the last regime at or below a size, so the order must be strict.
    if (i > 0 && !(r.from_bytes > c.collective_regimes[i - 1].from_bytes)) {
      fail("cluster.collective_regimes",
           fmt::format("{}sizes must be strictly ascending: {} follows {}", label, r.from_bytes,
                       c.collective_regimes[i - 1].from_bytes));
    }
  }
  for (const bool tree : {false, true}) {
    for (int p = 0; p < cluster::kNcclProtocols; ++p) {
      const cluster::NcclCost& cost = tree ? c.nccl.tree[p] : c.nccl.ring[p];
      const std::string key = cluster::nccl_key(tree, static_cast<cluster::NcclProtocol>(p));
      auto check_latency = [&](double value, std::string_view field) {
        if (!(std::isfinite(value) && value >= 0 && value <= limits::kMaxLatency)) {
          fail(fmt::format("{}.{}", key, field),
               fmt::format("expected a finite latency >= 0 and <= {:g} s, got {}", limits::kMaxLatency,
                           value));
        }
      };
      check_latency(cost.base_latency, "base_latency");
      check_latency(cost.hop_latency[static_cast<int>(cluster::NcclHop::NvLink)], "hop_latency.nvlink");
      check_latency(cost.hop_latency[static_cast<int>(cluster::NcclHop::Pcie)], "hop_latency.pcie");
      check_latency(cost.hop_latency[static_cast<int>(cluster::NcclHop::Net)], "hop_latency.net");
      if (!(std::isfinite(cost.efficiency) && cost.efficiency >= 0.01 && cost.efficiency <= 1)) {
        fail(key + ".efficiency",
             fmt::format("expected a bandwidth efficiency in [0.01, 1], got {}", cost.efficiency));
      }
      if (cost.channel_bw) expect_optional_bandwidth(key + ".channel_bw", *cost.channel_bw, "no cap");
      if (cost.max_bw) expect_optional_bandwidth(key + ".max_bw", *cost.max_bw, "no cap");
    }
  }
}

void check_scheme_values(const SchemeConfig& s) {
  expect_known("training.scheme", s.scheme);
  expect_known("training.mode", s.mode);
  expect_int("training.ps.count", s.ps.count, 1, kMaxServers);
  expect_known("training.ps.partition", s.ps.partition);
  expect_known("training.ps.placement_strategy", s.ps.placement_strategy);
  expect_known("training.ps.placement", s.ps.placement);
  expect_known("training.ps.order", s.ps.order);
  expect_known("training.ps.barrier", s.ps.barrier);
  expect_known("training.ps.async_start", s.ps.async_start);
  expect_non_negative("training.ps.apply_time", s.ps.apply_time, "duration (s)", limits::kMaxDuration);
  expect_optional_bandwidth("training.ps.apply_bandwidth", s.ps.apply_bw, "free");
  // A per-message cost beyond a latency's range is no RPC stack's.
  expect_non_negative("training.ps.message_overhead", s.ps.message_overhead, "duration (s)",
                      limits::kMaxLatency);
  expect_non_negative("training.ps.slice_size", s.ps.slice_bytes, "size (bytes)", limits::kMaxBytes);
  expect_known("training.allreduce.algorithm", s.allreduce.algorithm);
  expect_known("training.allreduce.protocol", s.allreduce.protocol);
  expect_known("training.fsdp.sharding", s.fsdp.sharding);
  expect_known("training.optimizer", s.optimizer);
  expect_int("training.fsdp.shard_group", s.fsdp.shard_group, 0, kMaxWorkers);
  expect_int("training.fsdp.unit", s.fsdp.unit_blocks, 1, kMaxWorkers);
  expect_int("training.fsdp.prefetch", s.fsdp.prefetch, 0, 64);
  expect_int("training.parallel.tensor", s.parallel.tensor, 1, kMaxWorkers);
  expect_int("training.parallel.pipeline", s.parallel.pipeline, 1, kMaxWorkers);
  expect_int("training.parallel.context", s.parallel.context, 1, kMaxWorkers);
  expect_int("training.parallel.expert", s.parallel.expert, 1, kMaxWorkers);
  expect_int("training.parallel.expert_tensor", s.parallel.expert_tensor, 0, kMaxWorkers);
  expect_int("training.parallel.virtual_stages", s.parallel.virtual_stages, 1, 1024);
  expect_known("training.pipeline.schedule", s.pipeline.schedule);
  expect_known("training.tensor.overlap", s.tensor.overlap);
  {
    std::array<bool, kRankDimensions> seen{};
    for (ParallelDimension d : s.parallel.order) {
      const auto i = static_cast<size_t>(d);
      if (i >= seen.size() || seen[i]) {
        fail("training.parallel.order", "expected each of tp, cp, dp and pp exactly once");
      }
      seen[i] = true;
    }
  }
  if (s.parallel.global_batch < 0 || s.parallel.global_batch > int64_t{1} << 40) {
    fail("workload.global_batch",
         fmt::format("expected an integer in [1, 2^40] or 0 (one micro-batch a step), got {}",
                     s.parallel.global_batch));
  }
  // <= 0 is documented (one bucket per gradient); NaN would make every comparison false.
  if (!(std::isfinite(s.allreduce.bucket_bytes) && s.allreduce.bucket_bytes <= limits::kMaxBytes)) {
    fail("training.allreduce.bucket_size", fmt::format("expected a finite size <= {:g} bytes, got {}",
                                                       limits::kMaxBytes, s.allreduce.bucket_bytes));
  }
}

// The rules across keys, in the order scenario files have always reported them.
void check_rules(const ClusterSpec& c, const SchemeConfig& sc) {
  const bool ps = sc.scheme == Scheme::ParameterServer;
  if (ps && sc.ps.placement == PsPlacement::Colocated && sc.ps.count > c.num_worker_nodes()) {
    // Shard s runs on the host of worker node s, so there must be a node per shard.
    fail("training.ps.count", fmt::format("colocated parameter servers need one worker node each, but "
                                          "training.ps.count = {} and cluster.workers = {} with "
                                          "cluster.workers_per_node = {} gives {} node{} (P > N colocated)",
                                          sc.ps.count, c.workers, c.workers_per_node, c.num_worker_nodes(),
                                          c.num_worker_nodes() == 1 ? "" : "s"));
  }
  if (ps && int64_t{sc.ps.count} * c.workers > kMaxConnections) {
    fail("training.ps.count", fmt::format("training.ps.count x cluster.workers = {} x {} exceeds {} "
                                          "worker-server connections",
                                          sc.ps.count, c.workers, kMaxConnections));
  }
  const bool dedicated = ps && sc.ps.placement == PsPlacement::Dedicated;
  const int nodes = c.num_worker_nodes() + (dedicated ? sc.ps.count : 0);
  const int capacity = cluster::topology_capacity(c);
  if (capacity > 0 && nodes > capacity) {
    fail("cluster.topology",
         fmt::format("the {} topology holds {} nodes, but the job needs {} ({} worker nodes{})",
                     cluster::to_string(c.topology), capacity, nodes, c.num_worker_nodes(),
                     dedicated ? fmt::format(" + {} dedicated servers", sc.ps.count) : ""));
  }
  if (c.node_placement == cluster::NodePlacement::Random) {
    constexpr std::string_view kKey = "cluster.node_placement";
    if (c.topology == Topology::Switch || c.topology == Topology::Custom) {
      fail(kKey,
           fmt::format("random placement needs a fabric with positions (fat_tree, bigraph, torus); on a "
                       "{} topology every node sits the same way",
                       cluster::to_string(c.topology)));
    }
    const int slots = cluster::fabric_slots(c);
    if (slots == 0) {
      fail("cluster.fabric_nodes",
           "a leaf-spine fat_tree grows with its nodes: give the fabric's node slots");
    }
    if (capacity > 0 && slots > capacity) {
      fail("cluster.fabric_nodes", fmt::format("the {} topology holds {} nodes, fewer than fabric_nodes = {}",
                                               cluster::to_string(c.topology), capacity, slots));
    }
    if (slots < nodes) {
      fail("cluster.fabric_nodes",
           fmt::format("the job needs {} nodes, more than the fabric's {} slots", nodes, slots));
    }
  }
  if (c.topology == Topology::Custom && capacity == 0) {
    fail("cluster.custom", "a custom topology needs a link for every node (node0, node1, ...)");
  }
  if (!c.placement.empty()) {
    long long placed = 0;
    for (size_t n = 0; n < c.placement.size(); ++n) {
      const int on_node = c.placement[n];
      if (on_node < 1 || on_node > c.workers_per_node) {
        fail("cluster.placement",
             fmt::format("node {} runs {} workers, but a node has {} GPU slots (cluster.workers_per_node); "
                         "every node runs 1 to that many",
                         n, on_node, c.workers_per_node));
      }
      placed += on_node;
    }
    if (placed != c.workers) {
      fail("cluster.workers",
           fmt::format("cluster.placement runs {} workers on {} nodes, but cluster.workers is {}", placed,
                       c.placement.size(), c.workers));
    }
  }
  if (c.nics_per_node > c.workers_per_node) {
    fail("cluster.nics_per_node",
         fmt::format("a node has {} NICs but only {} workers (cluster.workers_per_node)", c.nics_per_node,
                     c.workers_per_node));
  }
  if (c.topology == Topology::FatTree && c.fat_tree.radix % 2 != 0) {
    fail("cluster.fat_tree.radix", fmt::format("expected an even radix, got {}", c.fat_tree.radix));
  }
  if (sc.scheme == Scheme::AllReduce) {
    const AllReduceAlgorithm algorithm = sc.allreduce.algorithm;
    constexpr std::string_view kKey = "training.allreduce.algorithm";
    if (needs_power_of_two(algorithm) && (c.workers & (c.workers - 1)) != 0) {
      fail(kKey,
           fmt::format("{} needs a power-of-two number of workers, got {}", to_string(algorithm), c.workers));
    }
    if (sc.allreduce.protocol != CollectiveProtocol::Links) {
      constexpr std::string_view kProtocol = "training.allreduce.protocol";
      if (algorithm != AllReduceAlgorithm::Ring && algorithm != AllReduceAlgorithm::Tree &&
          algorithm != AllReduceAlgorithm::Auto) {
        fail(kProtocol, fmt::format("NCCL's protocol model covers its ring and tree (or auto), not {}; use "
                                    "protocol links",
                                    to_string(algorithm)));
      }
      if (!c.collective_regimes.empty()) {
        fail(kProtocol, fmt::format("protocol {} uses NCCL's tuning model (cluster.nccl); "
                                    "cluster.collective_regimes is another calibration of the same costs: "
                                    "use one (protocol links with the regimes)",
                                    to_string(sc.allreduce.protocol)));
      }
    }
    if (algorithm == AllReduceAlgorithm::Hdrm) {
      const int full = 2 * c.bigraph.switches_per_half * c.bigraph.hosts_per_switch;
      if (c.topology != Topology::BiGraph || c.workers_per_node != 1 || c.workers != full) {
        fail(kKey, fmt::format("hdrm maps ranks onto a full BiGraph: it needs cluster.topology = "
                               "bigraph, workers_per_node = 1 and workers = 2 x switches_per_half "
                               "x hosts_per_switch = {} (got {})",
                               full, format_count(c.workers, "worker", "workers")));
      }
    }
  }
  if (sc.mode == Mode::Async && sc.scheme != Scheme::ParameterServer) {
    // A collective is a barrier by construction; asynchrony needs a parameter server.
    fail("training.mode",
         fmt::format("async training needs training.scheme = ps ({} is synchronous)", name_of(sc.scheme)));
  }
  if (ps && sc.mode == Mode::Async && sc.ps.barrier == PsBarrier::Step) {
    fail("training.ps.barrier",
         "barrier = step is a synchronous step's barrier; async training has none "
         "(use training.mode = sync, or leave the barrier per_tensor)");
  }
  if (ps && sc.mode == Mode::Sync && sc.ps.async_start != PsAsyncStart::Spread) {
    fail("training.ps.async_start",
         "async_start sets when asynchronous workers start; synchronous workers all start together "
         "(use training.mode = async, or leave async_start spread)");
  }
  if (sc.scheme == Scheme::Fsdp && sc.fsdp.sharding == FsdpSharding::Hybrid) {
    if (sc.fsdp.shard_group == 0 && !c.placement.empty() &&
        std::any_of(c.placement.begin(), c.placement.end(), [&](int n) { return n != c.workers_per_node; })) {
      fail("training.fsdp.shard_group",
           "hybrid sharding over one node needs every node to run cluster.workers_per_node workers; with an "
           "uneven cluster.placement give the shard group's size");
    }
    // In a parallel layout the shard groups are cut from the data x context groups (layout rules).
    const int group = fsdp_shard_degree(sc.fsdp, c.workers, c.workers_per_node);
    if (!sc.parallel.composed() && (group > c.workers || c.workers % group != 0)) {
      fail("training.fsdp.shard_group",
           fmt::format("hybrid sharding needs shard groups that divide the workers: {} workers in groups "
                       "of {}{}",
                       c.workers, group,
                       sc.fsdp.shard_group == 0 ? " (one node: cluster.workers_per_node)" : ""));
    }
  }
}

Error broken_rule(std::string_view key, const std::string& message) {
  return Error({"", 0, std::string(key)}, message);
}

/// The parallel layout's rules with the cluster (training.parallel.*, training.pipeline.*): the
/// first one broken, nullopt when all hold. Formats a message only for a broken rule.
std::optional<Error> cluster_layout_problem(const ClusterSpec& c, const SchemeConfig& s) {
  const ParallelConfig& par = s.parallel;
  const int v = par.virtual_stages;
  if (v > 1 && s.pipeline.schedule != PipelineSchedule::Interleaved) {
    return broken_rule("training.parallel.virtual_stages",
                       fmt::format("{} chunks per stage need training.pipeline.schedule: interleaved", v));
  }
  if (s.pipeline.schedule == PipelineSchedule::Interleaved && (v < 2 || par.pipeline < 2)) {
    return broken_rule(
        "training.pipeline.schedule",
        fmt::format("interleaved runs v >= 2 model chunks on each of p >= 2 stages "
                    "(training.parallel.virtual_stages, training.parallel.pipeline), got v = {}, p = {}",
                    v, par.pipeline));
  }
  if (!par.composed()) return std::nullopt;
  const long long model = static_cast<long long>(par.tensor) * par.context * par.pipeline;
  if (c.workers % model != 0) {
    // The degree that alone does not divide the workers, if one does not (tensor 3 of 512 workers
    // is the tensor degree's fault, not the pipeline's); else the product's last factor.
    const char* key = c.workers % par.tensor != 0    ? "training.parallel.tensor"
                      : c.workers % par.context != 0 ? "training.parallel.context"
                      : par.pipeline > 1             ? "training.parallel.pipeline"
                      : par.context > 1              ? "training.parallel.context"
                                                     : "training.parallel.tensor";
    return broken_rule(
        key, fmt::format("tensor {} x context {} x pipeline {} = {} GPUs per data-parallel replica does not "
                         "divide {}",
                         par.tensor, par.context, par.pipeline, model,
                         format_count(c.workers, "worker", "workers")));
  }
  switch (s.scheme) {
    case Scheme::ParameterServer:
      return broken_rule(
          "training.scheme",
          "tensor, context and pipeline parallelism and micro-batches run with allreduce (data-parallel "
          "all-reduce) or fsdp (any training.fsdp.sharding: full, grad_op, optimizer or hybrid), not a "
          "parameter server");
    case Scheme::AllReduce:
      break;
    case Scheme::Fsdp:
      break;
  }
  const int gradient_group = static_cast<int>(c.workers / model) * par.context;
  const int etp = par.expert_tensor_degree();
  if (par.expert == 1 && etp != par.tensor) {
    return broken_rule(
        "training.parallel.expert_tensor",
        fmt::format("without expert parallelism (training.parallel.expert 1) the experts are split like the "
                    "dense MLPs, over the tensor group of {}; set expert_tensor to {} or leave it out",
                    par.tensor, par.tensor));
  }
  if (par.expert > 1) {
    // The expert layout folds over each stage's t x c x d ranks: e x ETP of them per expert group.
    const long long stage_ranks = static_cast<long long>(gradient_group) * par.tensor;
    if (stage_ranks % (static_cast<long long>(par.expert) * etp) != 0) {
      return broken_rule(
          par.expert_tensor > 0 ? "training.parallel.expert_tensor" : "training.parallel.expert",
          fmt::format("{} expert-parallel x {} expert-tensor ranks must divide the {} ranks of each stage "
                      "(t = {}, c = {}, d = {})",
                      par.expert, etp, stage_ranks, par.tensor, par.context, gradient_group / par.context));
    }
    if (par.tensor > 1 && !par.sequence) {
      return broken_rule("training.parallel.sequence",
                         "expert parallelism with tensor parallelism needs sequence parallelism (Megatron-LM "
                         "requires it: each tensor rank routes its own share of the tokens); set it to true");
    }
  }
  const int shard = hybrid_shard_ranks(s, static_cast<int>(c.workers), c.workers_per_node);
  if (shard > 0 && (shard > gradient_group || gradient_group % shard != 0)) {
    return broken_rule(
        "training.fsdp.shard_group",
        fmt::format("hybrid sharding's shard groups of {} ranks{} must divide the {} ranks of each data x "
                    "context group (d = {}, c = {}), the ranks that hold the same parameters",
                    shard, s.fsdp.shard_group == 0 ? " (those of a gradient group in one node)" : "",
                    gradient_group, gradient_group / par.context, par.context));
  }
  if (shard > 0 && par.expert > 1 && (static_cast<long long>(par.tensor) * shard) % (par.expert * etp) != 0) {
    // The experts shard within a shard group and replicate over the groups (TorchTitan's HSDP
    // with expert parallelism), so an expert group must sit inside one.
    return broken_rule(
        "training.fsdp.shard_group",
        fmt::format("with expert parallelism hybrid sharding keeps each expert group inside one shard group: "
                    "{} expert-parallel x {} expert-tensor ranks must divide the shard group's {} ranks x "
                    "t = {}",
                    par.expert, etp, shard, par.tensor));
  }
  if ((gradient_group < c.workers || shard > 0) && (s.allreduce.algorithm != AllReduceAlgorithm::Ring ||
                                                    s.allreduce.protocol != CollectiveProtocol::Links)) {
    return broken_rule(
        "training.allreduce.algorithm",
        shard > 0
            ? std::string("hybrid sharding's shard and replica groups run their collectives as rings on "
                          "the links (ring, protocol links): other algorithms and NCCL's protocols are "
                          "modelled over all workers only")
            : fmt::format("the data-parallel groups here hold {} of the {} workers; their collectives run as "
                          "rings on the links (ring, protocol links): other algorithms and NCCL's protocols "
                          "are modelled over all workers only",
                          gradient_group, c.workers));
  }
  return std::nullopt;
}

}  // namespace

void validate(const ClusterSpec& cluster, const SchemeConfig& scheme) {
  // Single values first: the rules below do arithmetic on them.
  check_cluster_values(cluster);
  check_scheme_values(scheme);
  check_rules(cluster, scheme);
  if (std::optional<Error> broken = cluster_layout_problem(cluster, scheme)) throw *broken;
}

void validate(const workload::Workload& workload, const ClusterSpec& cluster, const SchemeConfig& scheme) {
  if (const std::string problem = workload::validate(workload); !problem.empty()) {
    fail("workload", fmt::format("invalid workload '{}': {}", workload.name, problem));
  }
  validate(cluster, scheme);
  if (scheme.fsdp.fp8_all_gather && workload.precision != workload::Precision::FP8) {
    fail("training.fsdp.fp8_all_gather",
         fmt::format("gathers the weights' fp8 copies, which only workload.precision: fp8 keeps (got {})",
                     name_of(workload.precision)));
  }
  if (scheme.grad_reduce_fp32 && scheme.scheme == Scheme::ParameterServer) {
    fail("training.grad_reduce_in_fp32",
         "applies to the collective schemes (allreduce, fsdp); a parameter server's pushes are sized by the "
         "gradients' tensors");
  }
  if (scheme.parallel.composed()) check_layout(workload, cluster, scheme);
  if (scheme.scheme == Scheme::ParameterServer && scheme.ps.slice_bytes > 0) {
    // Every slice is a message each client pulls and pushes every step, with its own state.
    const double pieces = count_pieces(workload, scheme.ps);
    const double messages = pieces * cluster.workers;
    if (pieces > kMaxSlices || messages > kMaxStepMessages) {
      fail(
          "training.ps.slice_size",
          fmt::format("slices of {:g} bytes cut the model's {} tensors into {:g} pieces, {:g} pulls per step "
                      "over {} workers; at most {:g} pieces and {:g} pulls (take a larger slice_size)",
                      scheme.ps.slice_bytes, workload.tensors.size(), pieces, messages, cluster.workers,
                      kMaxSlices, kMaxStepMessages));
    }
  }
}

void validate_custom_topology(const cluster::CustomTopologySpec& custom) { check_custom(custom); }

namespace {

/// check_layout's rules with the workload: the first one broken, nullopt when all hold.
std::optional<Error> workload_layout_problem(const workload::Workload& w, const ClusterSpec& c,
                                             const SchemeConfig& s, const ModelUnits& units) {
  const ParallelConfig& par = s.parallel;
  if (!w.facts.transformer) {
    return broken_rule(
        "workload.model",
        fmt::format("tensor, context and pipeline parallelism and micro-batches split a transformer decoder "
                    "by its blocks; workload '{}' is not one (give a zoo decoder or workload.transformer)",
                    w.name));
  }
  // The stage programs split one forward and one backward op per layer (zoo::to_workload's).
  if (units.foreign_op >= 0) {
    return broken_rule("workload.model",
                       fmt::format("a parallel layout needs a zoo decoder's ops (one forward and one "
                                   "backward op per layer); op '{}' is not one",
                                   w.ops[static_cast<size_t>(units.foreign_op)].name));
  }
  if (!units.one_pass_each) {
    return broken_rule(
        "workload.model",
        "a parallel layout needs a zoo decoder's ops: one forward and one backward op per layer");
  }
  const workload::TransformerShape& shape = *w.facts.transformer;
  const int t = par.tensor;
  if (shape.heads % t != 0 || shape.kv_heads % t != 0) {
    return broken_rule(
        "training.parallel.tensor",
        fmt::format(
            "{} tensor-parallel ranks must split the {} attention heads and {} key/value heads evenly", t,
            shape.heads, shape.kv_heads));
  }
  if (par.expert > 1) {
    if (shape.experts < 2) {
      return broken_rule(
          "training.parallel.expert",
          fmt::format("expert parallelism splits a mixture of experts; workload '{}' has dense "
                      "MLPs (workload.transformer.experts is {})",
                      w.name, shape.experts));
    }
    if (shape.experts % par.expert != 0) {
      return broken_rule(
          "training.parallel.expert",
          fmt::format("{} expert-parallel ranks must split the {} experts of each MoE layer evenly",
                      par.expert, shape.experts));
    }
  }
  if (w.facts.moe_imbalance > 1 && shape.experts > 1) {
    const double most = static_cast<double>(shape.experts) / static_cast<double>(shape.top_k);
    if (w.facts.moe_imbalance > most) {
      return broken_rule(
          "workload.moe.imbalance",
          fmt::format("the busiest of {} experts with top-{} routing receives at most every token, "
                      "{:g} x the mean; got {:g}",
                      shape.experts, shape.top_k, most, w.facts.moe_imbalance));
    }
  }
  if (par.context > 1 && shape.seq_len % (2 * par.context) != 0) {
    return broken_rule(
        "training.parallel.context",
        fmt::format("context parallelism cuts the sequence into 2c = {} chunks (causal load balance), but "
                    "workload.seq_len = {} does not divide by {}",
                    2 * par.context, shape.seq_len, 2 * par.context));
  }
  const int d = data_parallel_degree(par, c.workers);
  const int64_t per_step = static_cast<int64_t>(d) * w.batch_per_worker;
  if (par.global_batch > 0 && par.global_batch % per_step != 0) {
    return broken_rule(
        "workload.global_batch",
        fmt::format(
            "{} sequences do not divide into micro-batches of {} over {} data-parallel replica{} ({} a "
            "round)",
            par.global_batch, w.batch_per_worker, d, d == 1 ? "" : "s", per_step));
  }
  const int64_t m = par.global_batch > 0 ? par.global_batch / per_step : 1;
  using limits::kMaxMicroBatches;
  if (m > kMaxMicroBatches) {
    return broken_rule("workload.global_batch",
                       fmt::format("{} micro-batches a step; at most {} (take a larger workload.micro_batch)",
                                   m, kMaxMicroBatches));
  }
  const int p = par.pipeline;
  if (p > 1) {
    switch (s.pipeline.schedule) {
      case PipelineSchedule::GPipe:
        break;
      case PipelineSchedule::OneFOneB:
      case PipelineSchedule::ZeroBubble:
        if (m < p) {
          return broken_rule(
              "workload.global_batch",
              fmt::format(
                  "{} keeps p = {} micro-batches in flight but the step has {} (global batch {} over {} "
                  "replicas of micro-batch {}); give at least {} sequences",
                  name_of(s.pipeline.schedule), p, m, par.global_batch > 0 ? par.global_batch : per_step, d,
                  w.batch_per_worker, p * per_step));
        }
        break;
      case PipelineSchedule::Interleaved: {
        // Megatron-core's interleaved schedule runs micro-batches in groups of g in [p, m], the
        // last group empty or at least p (a shorter one would wait on itself).
        const int configured = s.pipeline.microbatch_group;
        if (m < p) {
          return broken_rule(
              "workload.global_batch",
              fmt::format("the interleaved schedule runs micro-batches in groups of at least p = {}; the step "
                          "has {} (global batch {} over {} replica{} of micro-batch {}): give at least {} "
                          "sequences",
                          p, m, par.global_batch > 0 ? par.global_batch : per_step, d, d == 1 ? "" : "s",
                          w.batch_per_worker, p * per_step));
        }
        if (configured > 0 && interleaved_group(configured, p, m) == 0) {
          return broken_rule(
              "training.pipeline.microbatch_group",
              fmt::format("a group of {} micro-batches does not fit the interleaved schedule's {} micro-batches "
                          "on p = {} stages: it must be between p and m, and leave a last group of 0 or at "
                          "least p (here {}); 'auto' picks {}",
                          configured, m, p, m % configured, interleaved_group(0, p, m)));
        }
        break;
      }
    }
  }
  // Blocks enough for the chunks (and a layers_per_stage that adds up): the split throws.
  try {
    (void)split_chunks(units, s);
  } catch (const Error& e) {
    return e;
  }
  // The programs' size: m micro-batches through every layer, a few ops each.
  const double ops = static_cast<double>(m) * static_cast<double>(w.ops.size()) * (par.context + 4.0);
  if (ops > 1 << 26) {
    return broken_rule(
        "workload.global_batch",
        fmt::format(
            "{} micro-batches over {} layers make about {:.3g} ops a step; at most {:.3g} (take a larger "
            "workload.micro_batch)",
            m, w.ops.size() / 2, ops, static_cast<double>(1 << 26)));
  }
  return std::nullopt;
}

}  // namespace

void check_layout(const workload::Workload& w, const ClusterSpec& c, const SchemeConfig& s) {
  if (std::optional<Error> broken = workload_layout_problem(w, c, s, ModelUnits(w))) throw *broken;
}

std::optional<Error> layout_problem(const workload::Workload& workload, const ClusterSpec& cluster,
                                    const SchemeConfig& scheme, const ModelUnits& units) {
  if (std::optional<Error> broken = cluster_layout_problem(cluster, scheme)) return broken;
  if (!scheme.parallel.composed()) return std::nullopt;
  return workload_layout_problem(workload, cluster, scheme, units);
}

std::optional<Error> layout_problem(const workload::Workload& workload, const ClusterSpec& cluster,
                                    const SchemeConfig& scheme) {
  if (std::optional<Error> broken = cluster_layout_problem(cluster, scheme)) return broken;
  if (!scheme.parallel.composed()) return std::nullopt;
  return workload_layout_problem(workload, cluster, scheme, ModelUnits(workload));
}

}  // namespace stepcast::scheme
