// Private to scheme/: the exact cost of a collective plan that runs alone on the network, without
// simulating it stage by stage. A stage's transfers all start together and nothing else is on
// the network, so their max-min rates do not depend on their sizes and the stage's time scales
// with its bytes: one run of each (pattern, rate bound) on a fresh network of the same kind gives
// the stage time per byte, and the collective's time is the sum over its stages plus their
// latencies. The same runs give the link bytes per byte of buffer and the most flows on a link.
// This is what the event-by-event engine computes for a collective alone (tests compare them).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"

namespace stepcast::scheme {

class CollectiveTiming {
 public:
  CollectiveTiming(const cluster::Cluster& cluster, const CollectivePlan& plan, NetworkKind network);

  /// s, from the first transfer's start to the end of the last stage's latency.
  [[nodiscard]] double time(double bytes, const CollectiveTerms& terms);
  /// Adds the bytes each link carries in `count` such collectives of `bytes` (regimes bound
  /// rates, not bytes; a protocol's framing adds bytes).
  void add_link_bytes(std::vector<double>& link_bytes, double bytes, double count,
                      const CollectiveTerms& terms) const;
  /// Most transfers that shared one link direction in the stages timed so far.
  [[nodiscard]] uint32_t max_link_flows() const { return max_link_flows_; }
  /// Flow completions of the timing runs (a cost measure).
  [[nodiscard]] uint64_t events() const { return events_; }

 private:
  /// s per byte of stage (collective bytes x stage fraction) of `pattern` under rate bound `bound`.
  double seconds_per_byte(int pattern, const TransferBound& bound);

  const cluster::Cluster& cluster_;
  const CollectivePlan& plan_;
  NetworkKind network_;
  std::map<std::pair<int, TransferBound>, double> seconds_per_byte_;
  std::vector<double> link_bytes_per_byte_;  // per link, per byte of the collective's buffer
  uint32_t max_link_flows_ = 0;
  uint64_t events_ = 0;
};

/// The network model of `kind` over the cluster's links.
[[nodiscard]] std::unique_ptr<net::NetworkModel> make_network(const cluster::Cluster& cluster,
                                                              NetworkKind kind);
/// The network model of `kind` over links of these capacities (bytes/s).
[[nodiscard]] std::unique_ptr<net::NetworkModel> make_network(std::vector<double> capacities,
                                                              NetworkKind kind);

/// The network reduced to one link per class of interchangeable links under `plans` (links of
/// equal capacity crossed by the same flow groups with the same member counts), the plans'
/// paths rewritten onto it. Returns the classes' capacities; `source` gets each cluster link's
/// class (kNoClass when no plan crosses it). Exact: two such links constrain every allocation
/// alike (fsdp_fast_path.cpp says why).
inline constexpr uint32_t kNoClass = ~uint32_t{0};
[[nodiscard]] std::vector<double> reduce_to_link_classes(const cluster::Cluster& cluster,
                                                         const std::vector<CollectivePlan*>& plans,
                                                         std::vector<uint32_t>& source);

}  // namespace stepcast::scheme
