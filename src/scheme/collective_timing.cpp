#include "scheme/collective_timing.hpp"

#include <algorithm>

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

CollectiveTiming::CollectiveTiming(const cluster::Cluster& cluster, const CollectivePlan& plan,
                                   NetworkKind network)
    : cluster_(cluster),
      plan_(plan),
      network_(network),
      link_bytes_per_byte_(link_bytes_per_byte(plan, cluster.links.size())) {}

double CollectiveTiming::seconds_per_byte(int pattern, const TransferBound& bound) {
  const auto key = std::make_pair(pattern, bound);
  if (auto it = seconds_per_byte_.find(key); it != seconds_per_byte_.end()) return it->second;
  const std::unique_ptr<net::NetworkModel> net = make_network(cluster_, network_);
  const Pattern& p = plan_.patterns[pattern];
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
