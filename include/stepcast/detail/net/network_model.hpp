// Flow-level network models behind one interface (shaped like SimGrid's resource Model): a flow
// moves bytes along a path of links; concurrent flows share link capacity; the model reports
// when flows complete. Owns the active flows; knows nothing of workers, steps or topology
// beyond link indices and capacities (bytes/s, one direction of a full-duplex link each).
//
//   FlowNetwork net({1e9, 1e9});                          // two links of 1 GB/s
//   FlowId f = net.start_flow({{{0, 1}, {1, 1}}, 5e8}, 0.0);
//   double t = net.next_completion();                      // 0.5 s
//   for (FlowId done : net.advance_to(t)) { ... }
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace stepcast::net {

enum class FlowId : uint32_t {};
[[nodiscard]] inline uint32_t index(FlowId id) { return static_cast<uint32_t>(id); }

/// A link crossed by `count` members of a flow group (1 for a plain point-to-point flow).
struct LinkUse {
  uint32_t link = 0;
  uint32_t count = 1;
  bool operator==(const LinkUse&) const = default;
};

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// A transfer of `bytes` along `path`. A flow may stand for a group of identical transfers that
/// start together and move in lock step (the N sends of one ring all-reduce step): each member
/// gets the same rate, and a link crossed by k members carries k times that rate. An empty path
/// completes at once. `max_rate` bounds the rate of each member whatever the links leave it (a
/// sender that cannot go faster: a collective protocol with few channels); the capacity it does
/// not take is shared among the other flows.
struct FlowSpec {
  std::vector<LinkUse> path;
  double bytes = 0;             ///< per member
  double max_rate = kInfinity;  ///< bytes/s per member, > 0
};

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  /// Starts a flow at `now` (>= the last advance_to time).
  virtual FlowId start_flow(const FlowSpec& flow, double now) = 0;
  /// Earliest completion time among active flows, +inf if none. Changes no observable state.
  [[nodiscard]] virtual double next_completion() const = 0;
  /// Moves all flows forward to t <= next_completion(); returns those that finished at t. A
  /// finished flow may be given more bytes with restart_flow() before any other call; otherwise
  /// it is removed and its bandwidth shared out among the others.
  virtual std::vector<FlowId> advance_to(double t) = 0;
  /// Same, but fills `done` (cleared first) instead of returning a new vector: a caller that
  /// keeps one `done` across calls allocates nothing per completion time.
  virtual void advance_to(double t, std::vector<FlowId>& done) = 0;
  /// Reuses a flow that just finished for `bytes` more on the same path, without re-sharing
  /// bandwidth (a connection sending its next message).
  virtual void restart_flow(FlowId flow, double bytes) = 0;
  /// Current rate of an active flow, bytes/s per member.
  [[nodiscard]] virtual double rate(FlowId flow) const = 0;
  [[nodiscard]] virtual size_t num_active() const = 0;
  /// Bytes carried so far by each link, counting completed transfers.
  [[nodiscard]] virtual const std::vector<double>& link_bytes() const = 0;
  /// Bytes carried by each link up to time t (no earlier than the last advance_to, before the next
  /// completion), with the part of each active transfer moved by then: the difference of two of
  /// these is what a link carried between them, so that a window's utilization cannot pass 1 by
  /// counting whole a transfer that started before it.
  [[nodiscard]] virtual std::vector<double> link_bytes_moved(double t) const = 0;
  /// The most flows (members counted) that shared one link at one time.
  [[nodiscard]] virtual uint32_t max_link_flows() const = 0;
  /// Times bandwidth was re-shared; a cost measure for benchmarks.
  [[nodiscard]] virtual uint64_t recomputations() const = 0;
  /// Flows whose rate was recomputed, summed over all re-shares (incremental re-sharing touches
  /// only the flows connected to the change); a cost measure for benchmarks.
  [[nodiscard]] virtual uint64_t flows_reshared() const = 0;
};

/// How much of the network a change in the set of flows re-shares: only the flows connected to
/// the change through shared links (Incremental), or every flow (Full, the reference).
enum class Resharing : uint8_t { Incremental, Full };

/// Max-min fair sharing (progressive filling) over link capacities, recomputed lazily when the
/// set of active flows changes, and then only for the flows connected to the change. "maxmin" in net.model.
std::unique_ptr<NetworkModel> make_maxmin_network(std::vector<double> capacities,
                                                  Resharing resharing = Resharing::Incremental);
/// No sharing: every flow runs at its path's narrowest link, as if alone. An analytic check
/// and a lower bound on any congested time. "nocontention" in net.model.
std::unique_ptr<NetworkModel> make_no_contention_network(std::vector<double> capacities);

}  // namespace stepcast::net
