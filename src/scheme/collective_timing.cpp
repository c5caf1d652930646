#include "scheme/collective_timing.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <span>
#include <unordered_map>

#include "stepcast/detail/hash.hpp"

namespace stepcast::scheme {
namespace {

// Timing runs move 2^30 bytes per unit of size factor: large enough that the network's absolute
// completion tolerance (1e-15 s) is negligible, and a power of two so scaling back is exact.
constexpr double kTimingBytes = 0x1.0p30;

}  // namespace

std::unique_ptr<net::NetworkModel> make_network(const cluster::Cluster& c, NetworkKind kind) {
  std::vector<double> capacities;
  capacities.reserve(c.links.size());
  for (const cluster::Link l : c.links) capacities.push_back(l.bw);
  return make_network(std::move(capacities), kind);
}

std::unique_ptr<net::NetworkModel> make_network(std::vector<double> capacities, NetworkKind kind) {
  switch (kind) {
    case NetworkKind::MaxMin:
      return net::make_maxmin_network(std::move(capacities));
    case NetworkKind::NoContention:
      return net::make_no_contention_network(std::move(capacities));
  }
  return nullptr;
}

std::vector<double> reduce_to_link_classes(const cluster::Cluster& cluster,
                                           const std::vector<CollectivePlan*>& plans,
                                           std::vector<uint32_t>& source) {
  // (plan, pattern, group, members on the link): two links of one capacity crossed by the same
  // groups with the same member counts constrain every allocation alike.
  struct Use {
    uint32_t plan, pattern, group, members;
    bool operator==(const Use&) const = default;
  };
  auto each_use = [&](auto&& visit) {
    for (size_t k = 0; k < plans.size(); ++k) {
      const CollectivePlan& plan = *plans[k];
      for (size_t p = 0; p < plan.patterns.size(); ++p) {
        const Pattern& pattern = plan.patterns[p];
        for (size_t g = 0; g < pattern.groups.size(); ++g) {
          for (const net::LinkUse& u : pattern.groups[g].path) {
            visit(u.link,
                  Use{static_cast<uint32_t>(k), static_cast<uint32_t>(p), static_cast<uint32_t>(g), u.count});
          }
        }
      }
    }
  };
  // Each link's uses in the plans' order, in one array (a count per link, then their places): a
  // list per link held about 50 bytes a link, a hundred MB at 2^20 GPUs.
  const size_t links = cluster.links.size();
  std::vector<uint32_t> end(links + 1, 0);
  each_use([&](uint32_t link, const Use&) { ++end[link + 1]; });
  for (size_t l = 0; l < links; ++l) end[l + 1] += end[l];
  std::vector<Use> uses(end[links]);
  each_use([&](uint32_t link, const Use& u) { uses[end[link]++] = u; });  // then end[l]: where l's uses end
  auto uses_of = [&](size_t l) {
    const uint32_t from = l == 0 ? 0 : end[l - 1];
    return std::span<const Use>(uses.data() + from, end[l] - from);
  };
  // Classes numbered in link order; a link's class is found by the hash of its capacity and uses,
  // then compared with the first link of each class of that hash.
  std::unordered_map<uint64_t, std::vector<uint32_t>> classes_of_hash;
  std::vector<uint32_t> first_link;  // class -> its first link
  source.assign(links, kNoClass);
  std::vector<double> capacities;
  for (size_t l = 0; l < links; ++l) {
    const std::span<const Use> mine = uses_of(l);
    if (mine.empty()) continue;
    const double bw = cluster.links[l].bw;
    uint64_t hash = mix64(std::bit_cast<uint64_t>(bw));
    for (const Use& u : mine) {
      hash = mix64(hash ^ (uint64_t{u.plan} << 48 ^ uint64_t{u.pattern} << 32 ^ u.group));
      hash = mix64(hash ^ u.members);
    }
    std::vector<uint32_t>& candidates = classes_of_hash[hash];
    uint32_t found = kNoClass;
    for (uint32_t c : candidates) {
      const uint32_t other = first_link[c];
      const std::span<const Use> theirs = uses_of(other);
      if (cluster.links[other].bw == bw &&
          std::equal(mine.begin(), mine.end(), theirs.begin(), theirs.end())) {
        found = c;
        break;
      }
    }
    if (found == kNoClass) {
      found = static_cast<uint32_t>(capacities.size());
      capacities.push_back(bw);
      first_link.push_back(static_cast<uint32_t>(l));
      candidates.push_back(found);
    }
    source[l] = found;
  }
  for (CollectivePlan* plan : plans) {
    for (Pattern& pattern : plan->patterns) {
      for (FlowGroup& group : pattern.groups) {
        std::map<uint32_t, uint32_t> reduced;  // class -> members (equal for every link of a class)
        for (const net::LinkUse& u : group.path) reduced[source[u.link]] = u.count;
        std::vector<net::LinkUse> path;  // a fresh vector: the cluster-wide path's memory goes
        path.reserve(reduced.size());
        for (auto [link, count] : reduced) path.push_back({link, count});
        group.path = std::move(path);
      }
    }
  }
  return capacities;
}

CollectiveTiming::CollectiveTiming(const cluster::Cluster& cluster, const CollectivePlan& plan,
                                   NetworkKind network)
    : cluster_(cluster),
      plan_(plan),
      network_(network),
      link_bytes_per_byte_(link_bytes_per_byte(plan, cluster.links.size())) {}

double CollectiveTiming::seconds_per_byte(int pattern, const TransferBound& bound) {
  const auto key = std::make_pair(pattern, bound);
  if (auto it = seconds_per_byte_.find(key); it != seconds_per_byte_.end()) return it->second;
  // The pattern alone on the network reduced to its classes of interchangeable links: the same
  // times, with a network of a few links where the whole cluster's held 70 bytes a link.
  CollectivePlan alone{.patterns = {plan_.patterns[pattern]}, .stages = {}};
  std::vector<uint32_t> source;
  const std::unique_ptr<net::NetworkModel> net =
      make_network(reduce_to_link_classes(cluster_, {&alone}, source), network_);
  const Pattern& p = alone.patterns.front();
  for (const FlowGroup& g : p.groups)
    net->start_flow({g.path, kTimingBytes * g.size_factor, bound.of(g.size_factor)}, 0.0);
  double end = 0;
  size_t left = p.groups.size();
  while (left > 0) {
    end = net->next_completion();
    const size_t done = net->advance_to(end).size();
    events_ += done;
    left -= done;
  }
  max_link_flows_ = std::max(max_link_flows_, net->max_link_flows());
  const double per_byte = end / kTimingBytes;
  seconds_per_byte_.emplace(key, per_byte);
  return per_byte;
}

double CollectiveTiming::time(double bytes, const CollectiveTerms& terms) {
  const TransferBound bound = transfer_bound(terms);
  const double wire = bytes * wire_factor(terms);
  double t = 0;
  for (size_t i = 0; i < plan_.stages.size(); ++i) {
    const Stage& stage = plan_.stages[i];
    t += wire * stage.fraction * seconds_per_byte(stage.pattern, bound) + stage_latency(plan_, i, terms);
  }
  return t;
}

void CollectiveTiming::add_link_bytes(std::vector<double>& link_bytes, double bytes, double count,
                                      const CollectiveTerms& terms) const {
  const double wire = bytes * wire_factor(terms);
  for (size_t l = 0; l < link_bytes.size(); ++l) link_bytes[l] += count * wire * link_bytes_per_byte_[l];
}

}  // namespace stepcast::scheme
