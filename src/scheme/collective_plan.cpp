#include "stepcast/detail/scheme/collective_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <map>
#include <optional>
#include <unordered_map>

#include "stepcast/error.hpp"

namespace stepcast::scheme {
namespace {

using cluster::Cluster;

struct Transfer {
  int from = 0;  ///< worker
  int to = 0;
  double size_factor = 1;
};

std::vector<net::LinkUse> merge(std::vector<net::LinkUse> uses) {
  std::sort(uses.begin(), uses.end(),
            [](const net::LinkUse& a, const net::LinkUse& b) { return a.link < b.link; });
  std::vector<net::LinkUse> merged;
  for (const net::LinkUse& u : uses) {
    if (!merged.empty() && merged.back().link == u.link) {
      merged.back().count += u.count;
    } else {
      merged.push_back(u);
    }
  }
  return merged;
}

/// Groups transfers by size and routes them; `route` gives the links of one transfer.
template <class Route>
Pattern make_pattern(const Cluster& c, const std::vector<Transfer>& transfers, Route route) {
  std::map<double, std::vector<net::LinkUse>> by_size;
  std::map<double, int> members;
  Pattern pattern;
  for (const Transfer& t : transfers) {
    if (c.worker_endpoint(t.from).node != c.worker_endpoint(t.to).node) pattern.crosses_nodes = true;
    cluster::Path p = route(t);
    pattern.latency = std::max(pattern.latency, p.latency);
    auto& uses = by_size[t.size_factor];
    for (uint32_t l : p.links) uses.push_back({l, 1});
    members[t.size_factor]++;
  }
  for (auto& [factor, uses] : by_size) pattern.groups.push_back({merge(std::move(uses)), factor, members[factor]});
  // Each group's path holds a link once: one group's counts are the links' (a ring's, the usual
  // case, with every rank's transfers at 2^20), several groups' add up link by link.
  std::vector<net::LinkUse> summed;
  if (pattern.groups.size() > 1) {
    for (const FlowGroup& g : pattern.groups) summed.insert(summed.end(), g.path.begin(), g.path.end());
    summed = merge(std::move(summed));
  }
  const std::vector<net::LinkUse>& per_link = pattern.groups.size() == 1 ? pattern.groups.front().path : summed;
  for (const net::LinkUse& u : per_link) pattern.max_link_members = std::max(pattern.max_link_members, u.count);
  return pattern;
}

Pattern make_pattern(const Cluster& c, const std::vector<Transfer>& transfers) {
  return make_pattern(c, transfers, [&c](const Transfer& t) {
    return c.path(c.worker_endpoint(t.from), c.worker_endpoint(t.to));
  });
}

/// Ring over `ranks` (worker indices in ring order): each sends to the next.
std::vector<Transfer> ring_shift(const std::vector<int>& ranks) {
  std::vector<Transfer> t;
  const size_t n = ranks.size();
  if (n < 2) return t;
  for (size_t i = 0; i < n; ++i) t.push_back({ranks[i], ranks[(i + 1) % n], 1});
  return t;
}

/// A step of `pattern` paying the pattern's slowest path latency (links) or one hop of its class
/// (NCCL's model). Every plan makes its stages here, so none is left without its latency.
Stage stage_of(const CollectivePlan& plan, int pattern, double fraction) {
  const Pattern& p = plan.patterns[static_cast<size_t>(pattern)];
  return {pattern, fraction, p.latency, p.crosses_nodes ? StageHop::Inter : StageHop::Intra};
}

/// `count` steps of `pattern`.
void add_stages(CollectivePlan& plan, int pattern, int count, double fraction,
                std::optional<StageHop> hop = std::nullopt) {
  if (count <= 0) return;
  const int stages = std::min(count, kMaxSimulatedSteps);
  for (int i = 0; i < stages; ++i) {
    const int steps = count / stages + (i < count % stages ? 1 : 0);
    Stage stage = stage_of(plan, pattern, steps == 1 ? fraction : fraction * steps);
    stage.steps = steps;
    if (hop) stage.hop = *hop;
    plan.stages.push_back(stage);
  }
}

/// The workers of each node, in node order (the last node may hold fewer; with cluster.placement
/// any node may).
std::vector<std::vector<int>> workers_by_node(const Cluster& c) {
  std::vector<std::vector<int>> nodes(static_cast<size_t>(c.spec.num_worker_nodes()));
  for (int w = 0; w < c.spec.workers; ++w)
    nodes[static_cast<size_t>(c.node_of_worker[static_cast<size_t>(w)])].push_back(w);
  return nodes;
}

/// The NICs of a worker node its GPUs are spread over (Cluster::nic_of).
int nics(const Cluster& c) { return std::max(1, std::min(c.spec.nics_per_node, c.spec.workers_per_node)); }

/// The rings (and tree pairs) a plan runs: one per NIC of a node, each moving its share of the
/// data over its own NIC, as NCCL's channels do; with fewer NCCL channels than NICs
/// (cluster.nccl.channels) only that many, so the other NICs stay idle between nodes. More
/// channels than NICs share the NICs' rings: their links carry the same bytes, and only the
/// protocols' per-channel caps (CollectiveTerms::bus_bw_cap) count them. In one node the rings
/// meet on the same GPU links whatever their number, so they stay one per NIC there.
int channels(const Cluster& c) {
  // Inside one node every channel's ring is a rotation of the same ring (the same GPU pairs), so
  // the count only splits the bytes; held to the most channels NCCL launches, so that a node of
  // thousands of NICs does not make NICs x GPUs transfers (16,384 of each: 2^28, bad_alloc).
  if (c.spec.num_worker_nodes() <= 1) return std::min(nics(c), cluster::kMaxNcclChannels);
  return std::min(nics(c), cluster::nccl_channels(c.spec));
}

/// The local GPUs (0 .. m - 1) of a node using NIC `nic`, as Cluster::nic_of assigns them.
std::vector<int> gpus_of_nic(const Cluster& c, int m, int nic) {
  std::vector<int> gpus;
  const int k = nics(c), g = c.spec.workers_per_node;
  for (int d = 0; d < m; ++d) {
    if (std::min(k - 1, d * k / g) == nic) gpus.push_back(d);
  }
  return gpus;
}

int add_pattern(CollectivePlan& plan, Pattern p) {
  plan.patterns.push_back(std::move(p));
  return static_cast<int>(plan.patterns.size()) - 1;
}

std::vector<int> identity(int n) {
  std::vector<int> r(n);
  for (int i = 0; i < n; ++i) r[i] = i;
  return r;
}

/// NCCL's rings: the GPUs of a node adjacent, nodes in order. With K channels (one per NIC) there
/// are K rings, each moving 1 / K of the data; ring k leaves every node from a GPU of NIC k (the
/// node's GPUs rotated to end there), so each NIC carries one ring each way.
std::vector<Transfer> channel_rings(const Cluster& c) {
  const int k = channels(c);
  std::vector<Transfer> shift;
  for (int channel = 0; channel < k; ++channel) {
    std::vector<int> ring;
    for (const std::vector<int>& node : workers_by_node(c)) {
      const int m = static_cast<int>(node.size());
      const std::vector<int> exits = gpus_of_nic(c, m, channel);
      const int exit = exits.empty() ? m - 1 : exits.back();
      for (int i = 1; i <= m; ++i) ring.push_back(node[(exit + i) % m]);
    }
    for (Transfer t : ring_shift(ring)) {
      t.size_factor = 1.0 / k;
      shift.push_back(t);
    }
  }
  return shift;
}

/// Ring steps of an all-reduce (2 (N-1)) or all-gather / reduce-scatter (N-1); for NCCL's latency
/// model as many of them are node-to-node hops of a chunk's path as it crosses nodes (2 (M-1)
/// or M-1 for M nodes), the rest hops inside a node.
void add_ring_stages(CollectivePlan& plan, int pattern, int steps, int inter_steps, double fraction) {
  add_stages(plan, pattern, inter_steps, fraction, StageHop::Inter);
  add_stages(plan, pattern, steps - inter_steps, fraction, StageHop::Intra);
}

CollectivePlan ring_plan(const Cluster& c, CollectiveOp op) {
  CollectivePlan plan;
  const int n = c.spec.workers;
  if (n < 2) return plan;
  const int nodes = c.spec.num_worker_nodes();
  switch (op) {
    case CollectiveOp::AllReduce:
      add_ring_stages(plan, add_pattern(plan, make_pattern(c, channel_rings(c))), 2 * (n - 1),
                      2 * (nodes - 1), 1.0 / n);
      break;
    case CollectiveOp::AllGather:
    case CollectiveOp::ReduceScatter:
      add_ring_stages(plan, add_pattern(plan, make_pattern(c, channel_rings(c))), n - 1, nodes - 1, 1.0 / n);
      break;
    case CollectiveOp::Broadcast: {
      // Pipelined along the ring from rank 0 as NCCL runs it: in chunks small beside the message,
      // so every hop of the chain carries the whole message at once, S / B (NCCL's bus bandwidth
      // of a broadcast is its algorithm bandwidth; measured on 8 A100: 155 GB/s against the
      // all-reduce's 158 GB/s of bus bandwidth at 32 MiB), and the chain's other N - 2 hops add
      // their latency (NCCL's (N - 1) steps of latency). It was 64 fixed chunks: 2 S / B at 64 ranks.
      std::vector<Transfer> chain;
      for (int i = 0; i + 1 < n; ++i) chain.push_back({i, i + 1, 1});
      const int pattern = add_pattern(plan, make_pattern(c, chain));
      add_stages(plan, pattern, 1, 1.0);
      add_stages(plan, pattern, n - 2, 0.0);
      break;
    }
  }
  return plan;
}

/// Recursive halving (reduce-scatter) then recursive doubling (all-gather) over ranks mapped to
/// workers by `worker_of_rank`; `route` routes one transfer.
template <class Route>
CollectivePlan halving_doubling_plan(const Cluster& c, const std::vector<int>& worker_of_rank, Route route) {
  CollectivePlan plan;
  const int n = static_cast<int>(worker_of_rank.size());
  if (n < 2) return plan;
  STEPCAST_ASSERT(std::has_single_bit(static_cast<unsigned>(n)));
  std::vector<int> pattern_of_distance;
  for (int d = n / 2; d >= 1; d /= 2) {
    std::vector<Transfer> t;
    for (int r = 0; r < n; ++r) t.push_back({worker_of_rank[r], worker_of_rank[r ^ d], 1});
    pattern_of_distance.push_back(add_pattern(plan, make_pattern(c, t, route)));
  }
  // Reduce-scatter: step k exchanges half of what is left: S/2, S/4, ..., S/N.
  double fraction = 0.5;
  for (int p : pattern_of_distance) {
    plan.stages.push_back(stage_of(plan, p, fraction));
    fraction /= 2;
  }
  // All-gather mirrors it: S/N, ..., S/2.
  for (size_t i = pattern_of_distance.size(); i-- > 0;) {
    const Stage stage = plan.stages[i];
    plan.stages.push_back(stage);
  }
  return plan;
}

/// NCCL's tree all-reduce. Inside a node a chain through its GPUs; across nodes a double binary
/// tree over the nodes: tree A a binary heap (children of node i: 2i+1, 2i+2), tree B its mirror
/// (node i at position M-1-i), so a node is interior in at most one of them. Each channel (one per
/// NIC) runs both, so there are T = 2 K trees, each reducing 1 / T of the data up to its root and
/// broadcasting it back; a node's chain of tree u starts at a GPU of NIC u's (its leader, which
/// alone talks to other nodes), A's chain ascending from the first GPU of that NIC, B's descending
/// from the last, so the two trees of one NIC meet no link inside the node.
///
/// Each way is pipelined in kTreeChunks chunks over the levels of the tree (the chain's edges,
/// then the node tree's from the leaves up; the reverse on the way down): in step s the edges of
/// levels s - C + 1 .. s move a chunk each. Only the first `depth` steps (filling the pipeline)
/// pay a hop's latency; later steps overlap theirs with the chunks behind them, so the latency is
/// 2 ((G-1) intra + floor(log2 M) inter hops), NCCL's tree latency.
CollectivePlan tree_plan(const Cluster& c) {
  CollectivePlan plan;
  const int n = c.spec.workers;
  if (n < 2) return plan;
  const std::vector<std::vector<int>> nodes = workers_by_node(c);
  const int num_nodes = static_cast<int>(nodes.size());
  const int g = c.spec.busiest_node_workers();  // the longest chain
  const int k = channels(c), trees = 2 * k;
  const int node_depth = std::bit_width(static_cast<unsigned>(num_nodes)) - 1;  // edge levels of the heap
  const int chain_levels = g - 1, depth = chain_levels + node_depth;
  // Reduce-direction edges by level: chain levels 0 .. G-2 (level G-2 ends at the leader), then
  // node levels, deepest first.
  std::vector<std::vector<Transfer>> level_edges(depth);
  for (int u = 0; u < trees; ++u) {
    const bool mirrored = u % 2 == 1;
    const int nic = (u / 2 + u % 2) % k;
    std::vector<int> leader(num_nodes);
    for (int node = 0; node < num_nodes; ++node) {
      const int m = static_cast<int>(nodes[node].size());
      const std::vector<int> gpus = gpus_of_nic(c, m, nic);
      const int lead = gpus.empty() ? (mirrored ? m - 1 : 0) : (mirrored ? gpus.back() : gpus.front());
      leader[node] = nodes[node][lead];
      // chain[0] is the leader; chain[i + 1] sends to chain[i] at level G-2-i.
      for (int i = 0; i + 1 < m; ++i) {
        const int from = mirrored ? (lead - i - 1 + m) % m : (lead + i + 1) % m;
        const int to = mirrored ? (lead - i + m) % m : (lead + i) % m;
        level_edges[chain_levels - 1 - i].push_back({nodes[node][from], nodes[node][to], 1.0 / trees});
      }
    }
    for (int pos = 1; pos < num_nodes; ++pos) {
      const int parent = (pos - 1) / 2;
      const int heap_depth = std::bit_width(static_cast<unsigned>(pos + 1)) - 1;
      const int child_node = mirrored ? num_nodes - 1 - pos : pos;
      const int parent_node = mirrored ? num_nodes - 1 - parent : parent;
      level_edges[chain_levels + node_depth - heap_depth].push_back(
          {leader[child_node], leader[parent_node], 1.0 / trees});
    }
  }
  const int chunks = kTreeChunks;
  const double fraction = 1.0 / chunks;
  for (const bool down : {false, true}) {
    // Way down: the same edges reversed, levels in the opposite order.
    auto edges_at = [&](int step_level) {
      std::vector<Transfer> edges = level_edges[down ? depth - 1 - step_level : step_level];
      if (down) {
        for (Transfer& t : edges) std::swap(t.from, t.to);
      }
      return edges;
    };
    std::map<std::pair<int, int>, int> pattern_of_levels;
    for (int step = 0; step + 1 < depth + chunks; ++step) {
      const int lo = std::max(0, step - chunks + 1), hi = std::min(step, depth - 1);
      auto [it, added] = pattern_of_levels.try_emplace({lo, hi}, -1);
      if (added) {
        std::vector<Transfer> active;
        for (int level = lo; level <= hi; ++level) {
          for (const Transfer& t : edges_at(level)) active.push_back(t);
        }
        it->second = add_pattern(plan, make_pattern(c, active));
      }
      Stage stage{it->second, fraction, 0.0, StageHop::Pipelined};
      if (step < depth) {
        // Filling: this step's new level sets the pace of the chunk at the front.
        const Pattern front = make_pattern(c, edges_at(step));
        stage.latency = front.latency;
        stage.hop = front.crosses_nodes ? StageHop::Inter : StageHop::Intra;
      }
      plan.stages.push_back(stage);
    }
  }
  return plan;
}

CollectivePlan hierarchical_plan(const Cluster& c) {
  CollectivePlan plan;
  const std::vector<std::vector<int>> by_node = workers_by_node(c);
  const int g = c.spec.busiest_node_workers();
  const int nodes = static_cast<int>(by_node.size());
  // Inside each node: a ring over its GPUs (all nodes at once). Across nodes: G rings, ring j
  // over GPU j of every node that has one, each reducing 1/G of the data (they share the NICs).
  // A node with fewer GPUs (the last one, or any with cluster.placement) takes part in fewer.
  std::vector<Transfer> intra, inter;
  for (const std::vector<int>& local : by_node) {
    for (const Transfer& t : ring_shift(local)) intra.push_back(t);
  }
  for (int j = 0; j < g; ++j) {
    std::vector<int> across;
    for (const std::vector<int>& local : by_node) {
      if (j < static_cast<int>(local.size())) across.push_back(local[static_cast<size_t>(j)]);
    }
    for (const Transfer& t : ring_shift(across)) inter.push_back(t);
  }
  const int local_steps = g - 1, remote_steps = nodes - 1;
  if (local_steps > 0) {
    const int p = add_pattern(plan, make_pattern(c, intra));
    add_stages(plan, p, local_steps, 1.0 / g);  // reduce-scatter inside the node
  }
  if (remote_steps > 0) {
    const int p = add_pattern(plan, make_pattern(c, inter));
    add_stages(plan, p, 2 * remote_steps, 1.0 / (g * nodes));  // ring all-reduce of S/G
  }
  if (local_steps > 0) add_stages(plan, plan.stages.front().pattern, local_steps, 1.0 / g);  // all-gather
  return plan;
}

}  // namespace

/// EFLOPS-style rank mapping for halving-doubling on a full BiGraph: s switches per half, h
/// hosts per switch, n = 2 s h ranks, one worker per node. In a step across the halves the hosts
/// of a switch must reach distinct switches of the other half, one A-B link each; a switch has
/// s such links, so at most g = min(h, s) of its hosts cross at once.
///
/// A rank's low 1 + log2 s + log2 g bits (its "cross" part c) place it among g hosts of each
/// switch; its high log2(h / g) bits (v) say which g of the h. The half is the parity of c, so
/// every step that flips a bit of c crosses the halves (never two switches of one half, which
/// would take two hops through the other half). Bits of c: c0, then j (log2 g bits), m (log2 g),
/// t (log2 s - log2 g). Half A: switch (m, t), host j. Half B: switch (j, t), host m. A step
/// that flips one bit of c joins A switch (m, t) and B switch (j', t') by one transfer at most
/// among the ranks of one v: the two switches fix m, t and j (j' and t' up to the flipped bit),
/// hence the A end. Ranks of different v on the same switches would share the link, which is
/// why hdrm_plan runs a step on c in one round per v. (Half A's
/// switches are the cosets of one subgroup of the even ranks, half B's of another meeting it
/// only in 0 (Z_2 linear algebra), which needs g <= s.) Flipping a bit of v moves to another
/// host of the same switch: one NIC each way per host, through the switch.
std::vector<int> hdrm_mapping(const Cluster& c) {
  const int n = c.spec.workers;
  const int h = c.spec.bigraph.hosts_per_switch, s = c.spec.bigraph.switches_per_half;
  const int g = std::min(h, s);
  const int lane_bits = std::countr_zero(static_cast<unsigned>(g));
  std::vector<int> worker_of_rank(n);
  for (int r = 0; r < n; ++r) {
    const int cross = r % (2 * s * g), group = r / (2 * s * g);
    const int half = std::popcount(static_cast<unsigned>(cross)) & 1;
    const int j = (cross >> 1) & (g - 1), m = (cross >> (1 + lane_bits)) & (g - 1);
    const int t = cross >> (1 + 2 * lane_bits);
    const int switch_index = (half == 0 ? m : j) + g * t;
    const int host = group * g + (half == 0 ? j : m);
    const int node = (half * s + switch_index) * h + host;
    worker_of_rank[r] = c.first_worker[static_cast<size_t>(node)];  // first GPU of the node
  }
  return worker_of_rank;
}

namespace {

/// Halving-doubling over hdrm_mapping. The high bits (v) come first, every rank at once, inside
/// the switches; then each bit of c in h / g rounds, round v by the ranks with that v (a step
/// on c keeps v, so a round's pairs stay in it). With h <= s that is one round: log2 n steps
/// each way, every link direction one transfer, the closed form 2 log2(n) a + 2 (n-1)/n S/B.
/// With h > s the rounds add steps but keep one transfer per link; the cross steps come last,
/// where transfers are smallest, so they cost 2 (1 - 1/(2 s g)) S/B and the steps inside the
/// switches 2 (1 - g/h) S/B.
CollectivePlan hdrm_plan(const Cluster& c) {
  CollectivePlan plan;
  const int n = c.spec.workers;
  if (n < 2) return plan;
  const int s = c.spec.bigraph.switches_per_half, h = c.spec.bigraph.hosts_per_switch;
  const int g = std::min(h, s), cross_ranks = 2 * s * g;
  const std::vector<int> worker_of_rank = hdrm_mapping(c);
  auto exchange = [&](int distance, int round) {  // round -1: every rank
    std::vector<Transfer> t;
    for (int r = 0; r < n; ++r) {
      if (round < 0 || r / cross_ranks == round)
        t.push_back({worker_of_rank[r], worker_of_rank[r ^ distance], 1});
    }
    return add_pattern(plan, make_pattern(c, t));
  };
  // Reduce-scatter: step k exchanges half of what is left: S/2, S/4, ..., S/N.
  double fraction = 0.5;
  for (int d = n / 2; d >= 1; d /= 2, fraction /= 2) {
    if (d >= cross_ranks) {
      const int pattern = exchange(d, -1);
      plan.stages.push_back(stage_of(plan, pattern, fraction));
    } else {
      for (int round = 0; round < h / g; ++round) {
        const int pattern = exchange(d, round);
        plan.stages.push_back(stage_of(plan, pattern, fraction));
      }
    }
  }
  // All-gather mirrors it.
  for (size_t i = plan.stages.size(); i-- > 0;) {
    const Stage stage = plan.stages[i];
    plan.stages.push_back(stage);
  }
  return plan;
}

}  // namespace

const char* to_string(CollectiveOp op) {
  return name_c_str(op);
}

const char* to_string(AllReduceAlgorithm algorithm) {
  return name_c_str(algorithm);
}

const char* to_string(CollectiveProtocol protocol) {
  // Reports spell NCCL's protocols as NCCL does (LL, LL128, Simple: cluster::to_string), the
  // others as scenario files do.
  switch (protocol) {
    case CollectiveProtocol::Links:
    case CollectiveProtocol::Auto:
      return name_c_str(protocol);
    case CollectiveProtocol::LL:
      return cluster::to_string(cluster::NcclProtocol::LL);
    case CollectiveProtocol::LL128:
      return cluster::to_string(cluster::NcclProtocol::LL128);
    case CollectiveProtocol::Simple:
      return cluster::to_string(cluster::NcclProtocol::Simple);
  }
  return "?";
}

double stage_latency(const CollectivePlan& plan, size_t index, const CollectiveTerms& terms) {
  const Stage& stage = plan.stages[index];
  if (terms.protocol != nullptr) {
    double latency = 0;
    switch (stage.hop) {
      case StageHop::Intra:
        latency = terms.protocol->hop_latency[static_cast<int>(terms.intra_hop)];
        break;
      case StageHop::Inter:
        latency = terms.protocol->hop_latency[static_cast<int>(cluster::NcclHop::Net)];
        break;
      case StageHop::Pipelined:
        break;
    }
    latency *= stage.steps;
    if (index + 1 == plan.stages.size()) latency += terms.protocol->base_latency;
    return latency;
  }
  const bool floored = terms.regime != nullptr && stage.hop != StageHop::Pipelined;
  return stage.steps * (floored ? std::max(stage.latency, terms.regime->step_latency) : stage.latency);
}

CollectiveCost collective_cost(const Cluster& c, const CollectivePlan& plan, const CollectiveTerms& terms) {
  const TransferBound bound = transfer_bound(terms);
  std::vector<double> per_byte(plan.patterns.size(), 0.0);  // of a stage with fraction 1
  for (size_t p = 0; p < plan.patterns.size(); ++p) {
    for (const FlowGroup& g : plan.patterns[p].groups) {
      double rate = bound.of(g.size_factor);
      for (const net::LinkUse& u : g.path) rate = std::min(rate, c.links[u.link].bw / u.count);
      if (!g.path.empty()) per_byte[p] = std::max(per_byte[p], g.size_factor / rate);
    }
  }
  CollectiveCost cost;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const Stage& stage = plan.stages[i];
    cost.latency += stage_latency(plan, i, terms);
    cost.seconds_per_byte += stage.fraction * per_byte[stage.pattern] * wire_factor(terms);
  }
  return cost;
}

std::vector<PatternCost> pattern_costs(const Cluster& c, const CollectivePlan& plan) {
  std::vector<PatternCost> costs(plan.patterns.size());
  std::vector<bool> moves(plan.patterns.size(), false);
  for (size_t p = 0; p < plan.patterns.size(); ++p) {
    for (const FlowGroup& g : plan.patterns[p].groups) {
      if (g.path.empty()) continue;
      double rate = net::kInfinity;
      for (const net::LinkUse& u : g.path) rate = std::min(rate, c.links[u.link].bw / u.count);
      costs[p].links_seconds_per_byte = std::max(costs[p].links_seconds_per_byte, g.size_factor / rate);
      moves[p] = true;
    }
  }
  for (const Stage& stage : plan.stages) costs[static_cast<size_t>(stage.pattern)].fraction += stage.fraction;
  std::vector<PatternCost> out;
  for (size_t p = 0; p < costs.size(); ++p) {
    if (moves[p]) out.push_back(costs[p]);
  }
  return out;
}

void add_link_bytes(const CollectivePlan& plan, double bytes, std::vector<double>& per_link) {
  // Stages that repeat a pattern (a ring's 2(N - 1) steps, merged into at most 1,024 stages of
  // every rank's transfers) load the same links: their fractions first, then each pattern's links
  // once (at 2^20 ranks the walk per stage was most of a DDP prediction).
  std::vector<double> fraction_of(plan.patterns.size(), 0.0);
  for (const Stage& stage : plan.stages) fraction_of[static_cast<size_t>(stage.pattern)] += stage.fraction;
  for (size_t p = 0; p < plan.patterns.size(); ++p) {
    if (fraction_of[p] == 0) continue;
    const double moved = bytes * fraction_of[p];
    for (const FlowGroup& group : plan.patterns[p].groups) {
      for (const net::LinkUse& use : group.path) per_link[use.link] += moved * group.size_factor * use.count;
    }
  }
}

std::vector<double> link_bytes_per_byte(const CollectivePlan& plan, size_t links) {
  std::vector<double> per_byte(links, 0.0);
  add_link_bytes(plan, 1.0, per_byte);
  return per_byte;
}

/// A group's rings as NCCL's channels lay them when the group spans nodes: one per NIC its members
/// use in a node (at most the channels NCCL launches), each moving 1 / K of the data and leaving
/// every node from a member on its own NIC (the node's members, in group order, rotated to end
/// there), so each of those NICs carries one ring each way, as channel_rings does for all
/// workers. Inside one node, or with one NIC, the plain ring in group order.
std::vector<Transfer> group_channel_rings(const Cluster& c, const std::vector<int>& group) {
  std::vector<int> nodes;  // in order of first appearance
  std::vector<std::vector<int>> members;
  std::unordered_map<int, size_t> index_of_node;  // a group may span all 131,072 nodes of 2^20 GPUs
  for (int w : group) {
    const int node = c.node_of_worker[static_cast<size_t>(w)];
    const auto [it, added] = index_of_node.try_emplace(node, nodes.size());
    if (added) {
      nodes.push_back(node);
      members.emplace_back();
    }
    members[it->second].push_back(w);
  }
  // Channels: the NICs the first node's members use; every node must offer as many.
  auto nics_of = [&](const std::vector<int>& ws) {
    std::vector<int> out;
    for (int w : ws) {
      const int nic = c.nic_of(c.worker_endpoint(w));
      if (std::find(out.begin(), out.end(), nic) == out.end()) out.push_back(nic);
    }
    return out;
  };
  std::vector<std::vector<int>> node_nics;
  node_nics.reserve(members.size());
  for (const std::vector<int>& ws : members) node_nics.push_back(nics_of(ws));
  const auto k = static_cast<int>(
      std::min<size_t>(node_nics.front().size(), static_cast<size_t>(cluster::nccl_channels(c.spec))));
  bool even = nodes.size() > 1 && k > 1;
  for (const std::vector<int>& nics : node_nics) even = even && static_cast<int>(nics.size()) >= k;
  if (!even) return ring_shift(group);
  std::vector<Transfer> shift;
  for (int channel = 0; channel < k; ++channel) {
    std::vector<int> ring;
    for (size_t node = 0; node < members.size(); ++node) {
      const std::vector<int>& ws = members[node];
      const int nic = node_nics[node][static_cast<size_t>(channel)];
      const auto m = static_cast<int>(ws.size());
      int exit = m - 1;
      for (int i = 0; i < m; ++i) {
        if (c.nic_of(c.worker_endpoint(ws[static_cast<size_t>(i)])) == nic) exit = i;
      }
      for (int i = 1; i <= m; ++i) ring.push_back(ws[static_cast<size_t>((exit + i) % m)]);
    }
    for (Transfer t : ring_shift(ring)) {
      t.size_factor = 1.0 / k;
      shift.push_back(t);
    }
  }
  return shift;
}

CollectivePlan plan_group_ring(const Cluster& c, CollectiveOp op,
                               const std::vector<std::vector<int>>& groups) {
  CollectivePlan plan;
  if (groups.empty() || groups.front().size() < 2) return plan;
  const int g = static_cast<int>(groups.front().size());
  std::vector<Transfer> shift;
  for (const std::vector<int>& group : groups) {
    STEPCAST_ASSERT(static_cast<int>(group.size()) == g);
    for (const Transfer& t : group_channel_rings(c, group)) shift.push_back(t);
  }
  const int pattern = add_pattern(plan, make_pattern(c, shift));
  switch (op) {
    case CollectiveOp::AllReduce:
      add_stages(plan, pattern, 2 * (g - 1), 1.0 / g);
      break;
    case CollectiveOp::AllGather:
    case CollectiveOp::ReduceScatter:
      add_stages(plan, pattern, g - 1, 1.0 / g);
      break;
    case CollectiveOp::Broadcast:
      STEPCAST_ASSERT(false && "no grouped broadcast");
      break;
  }
  return plan;
}

CollectivePlan plan_group_shift(const Cluster& c, const std::vector<std::vector<int>>& groups) {
  CollectivePlan plan;
  if (groups.empty() || groups.front().size() < 2) return plan;
  std::vector<Transfer> shift;
  for (const std::vector<int>& group : groups) {
    for (const Transfer& t : ring_shift(group)) shift.push_back(t);
  }
  add_stages(plan, add_pattern(plan, make_pattern(c, shift)), 1, 1.0);
  return plan;
}

CollectivePlan plan_group_all_to_all(const Cluster& c, const std::vector<std::vector<int>>& groups,
                                     double busiest, bool into_busiest) {
  CollectivePlan plan;
  if (groups.empty() || groups.front().size() < 2) return plan;
  const auto g = static_cast<double>(groups.front().size());
  STEPCAST_ASSERT(busiest >= 1 && busiest <= g);
  const double others = (g - busiest) / (g - 1);
  std::vector<Transfer> transfers;
  for (const std::vector<int>& group : groups) {
    for (size_t from = 0; from < group.size(); ++from) {
      for (size_t to = 0; to < group.size(); ++to) {
        if (from == to) continue;
        const bool busy = (into_busiest ? to : from) == 0;
        if (!busy && !(others > 0)) continue;  // every token went to the busiest member
        transfers.push_back({group[from], group[to], busy ? busiest : others});
      }
    }
  }
  add_stages(plan, add_pattern(plan, make_pattern(c, transfers)), 1, 1.0 / g);
  return plan;
}

CollectivePlan plan_transfers(const Cluster& c, const std::vector<std::pair<int, int>>& pairs) {
  CollectivePlan plan;
  std::vector<Transfer> transfers;
  for (const auto& [from, to] : pairs) transfers.push_back({from, to, 1});
  add_stages(plan, add_pattern(plan, make_pattern(c, transfers)), 1, 1.0);
  return plan;
}

bool needs_power_of_two(AllReduceAlgorithm algorithm) {
  return algorithm == AllReduceAlgorithm::HalvingDoubling || algorithm == AllReduceAlgorithm::Hdrm;
}

CollectivePlan plan_collective(const Cluster& c, CollectiveOp op, AllReduceAlgorithm algorithm) {
  if (op != CollectiveOp::AllReduce || algorithm == AllReduceAlgorithm::Ring) return ring_plan(c, op);
  if (algorithm == AllReduceAlgorithm::Auto) {
    throw Error({"", 0, "training.allreduce.algorithm"},
                "auto chooses an algorithm for each collective's size: plan it with AllReducePlanner");
  }
  const int n = c.spec.workers;
  // A public entry point (simulate_collective, a caller's own Cluster): a bad spec is bad input,
  // so it throws as validate() does rather than reaching the plans' assertions.
  if (needs_power_of_two(algorithm) && !std::has_single_bit(static_cast<unsigned>(std::max(n, 1)))) {
    throw Error({"", 0, "training.allreduce.algorithm"},
                fmt::format("{} needs a power-of-two number of workers, got {}", to_string(algorithm), n));
  }
  if (algorithm == AllReduceAlgorithm::Hdrm &&
      (c.spec.topology != cluster::Topology::BiGraph || c.spec.workers_per_node != 1 ||
       n != 2 * c.spec.bigraph.switches_per_half * c.spec.bigraph.hosts_per_switch)) {
    throw Error({"", 0, "training.allreduce.algorithm"},
                "hdrm maps ranks onto a full BiGraph: it needs cluster.topology = bigraph, "
                "workers_per_node = 1 and workers = 2 x switches_per_half x hosts_per_switch");
  }
  switch (algorithm) {
    case AllReduceAlgorithm::HalvingDoubling:
      return halving_doubling_plan(c, identity(n), [&c](const Transfer& t) {
        return c.path(c.worker_endpoint(t.from), c.worker_endpoint(t.to));
      });
    case AllReduceAlgorithm::Hierarchical:
      return hierarchical_plan(c);
    case AllReduceAlgorithm::Tree:
      return tree_plan(c);
    case AllReduceAlgorithm::Hdrm: {
      STEPCAST_ASSERT(c.spec.topology == cluster::Topology::BiGraph && c.spec.workers_per_node == 1);
      return hdrm_plan(c);
    }
    case AllReduceAlgorithm::Ring:
    case AllReduceAlgorithm::Auto:
      break;
  }
  return ring_plan(c, op);
}

namespace {

CollectiveTerms terms_for(const Cluster& c, AllReduceAlgorithm algorithm, CollectiveProtocol protocol,
                          double bytes) {
  CollectiveTerms terms;
  terms.intra_hop = c.spec.intra_node_link == cluster::IntraNodeLink::Pcie ? cluster::NcclHop::Pcie
                                                                           : cluster::NcclHop::NvLink;
  const bool tree = algorithm == AllReduceAlgorithm::Tree;
  const cluster::NcclCost* costs = tree ? c.spec.nccl.tree : c.spec.nccl.ring;
  auto use = [&](cluster::NcclProtocol p) {
    terms.protocol = &costs[static_cast<int>(p)];
    terms.bus_bw_cap = cluster::nccl_bus_bw_cap(c.spec, tree, p);
  };
  switch (protocol) {
    case CollectiveProtocol::Links:
      terms.regime = c.spec.regime_for(bytes);
      break;
    case CollectiveProtocol::LL:
      use(cluster::NcclProtocol::LL);
      break;
    case CollectiveProtocol::LL128:
      use(cluster::NcclProtocol::LL128);
      break;
    case CollectiveProtocol::Simple:
      use(cluster::NcclProtocol::Simple);
      break;
    case CollectiveProtocol::Auto:
      STEPCAST_ASSERT(false && "auto is resolved by the planner");
      break;
  }
  return terms;
}

}  // namespace

AllReducePlanner::AllReducePlanner(const Cluster& cluster, AllReduceAlgorithm algorithm,
                                   CollectiveProtocol protocol)
    : cluster_(cluster), protocol_(protocol) {
  if (algorithm == AllReduceAlgorithm::Auto) {
    algorithms_ = {AllReduceAlgorithm::Ring, AllReduceAlgorithm::Tree};
  } else {
    algorithms_ = {algorithm};
  }
  for (AllReduceAlgorithm a : algorithms_)
    plans_.push_back(plan_collective(cluster, CollectiveOp::AllReduce, a));
  candidates_ = {protocol_};
  if (protocol_ == CollectiveProtocol::Auto) {
    candidates_ = {CollectiveProtocol::LL, CollectiveProtocol::LL128, CollectiveProtocol::Simple};
  }
  const bool a_choice = plans_.size() > 1 || candidates_.size() > 1;
  if (a_choice && protocol_ != CollectiveProtocol::Links) {
    for (size_t i = 0; i < plans_.size(); ++i) {
      for (CollectiveProtocol p : candidates_) {
        nccl_costs_.push_back(collective_cost(cluster, plans_[i], terms_for(cluster, algorithms_[i], p, 0)));
      }
    }
  }
}

AllReducePlanner::Choice AllReducePlanner::choose(double bytes) const {
  Choice best;
  double best_time = net::kInfinity;
  for (size_t i = 0; i < plans_.size(); ++i) {
    for (size_t k = 0; k < candidates_.size(); ++k) {
      const CollectiveProtocol p = candidates_[k];
      const CollectiveTerms terms = terms_for(cluster_, algorithms_[i], p, bytes);
      double t = 0;  // a single candidate needs no time
      if (!nccl_costs_.empty()) {
        t = nccl_costs_[i * candidates_.size() + k].time(bytes);
      } else if (plans_.size() > 1 || candidates_.size() > 1) {
        t = collective_cost(cluster_, plans_[i], terms).time(bytes);  // links: the regime depends on the size
      }
      if (t < best_time) {
        best_time = t;
        best = {static_cast<int>(i), algorithms_[i], p, terms};
      }
    }
  }
  return best;
}

}  // namespace stepcast::scheme
