// Private: the max-min flow network behind make_maxmin_network (and, with sharing turned off,
// make_no_contention_network).
//
// Re-sharing is incremental. Every link keeps the list of flows crossing it (a flow that runs
// alone on all its links joins the lists only once another flow meets it), the links of flows
// that started or ended since the last re-share are marked, and only the flows whose rate may
// change are re-filled:
//  - the affected set starts as the new flows and the flows held by a marked link (a flow's
//    rate is set by the link that holds it); progressive filling runs over the set with the
//    capacity the other flows leave on each link;
//  - the result is max-min fair if every flow still has a bottleneck (a saturated link on its
//    path where no flow is faster, or its own bound). Every flow remembers the link that holds it
//    and every link how many flows it holds and at what rate (its level), so this is checked on
//    the links the affected flows cross, in O(1) for a link that holds none of the others;
//  - where it fails, every flow on that link joins the set and the filling runs again. The set
//    only grows, and never beyond the connected component of the change (max-min rates in one
//    component do not depend on any other); past half the active flows or a few rounds the
//    whole component is re-filled instead.
// An incast (N clients to P servers) re-shares about N flows per change, not N x P.
// Resharing::Full re-fills everything on every change; it is kept as the reference the
// incremental mode is tested and benchmarked against.
#pragma once

#include <cstdint>
#include <vector>

#include "stepcast/detail/net/network_model.hpp"

namespace stepcast::net {

class FlowNetwork final : public NetworkModel {
 public:
  FlowNetwork(std::vector<double> capacities, bool share, Resharing resharing = Resharing::Incremental);
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  FlowId start_flow(const FlowSpec& flow, double now) override;
  [[nodiscard]] double next_completion() const override;
  std::vector<FlowId> advance_to(double t) override;
  void advance_to(double t, std::vector<FlowId>& done) override;
  void restart_flow(FlowId flow, double bytes) override;
  [[nodiscard]] double rate(FlowId flow) const override;
  /// Flows still moving bytes: those finished by the last advance_to and not restarted are out.
  [[nodiscard]] size_t num_active() const override { return active_.size() - unrestarted_; }
  [[nodiscard]] const std::vector<double>& link_bytes() const override { return link_bytes_; }
  [[nodiscard]] std::vector<double> link_bytes_moved(double t) const override;
  [[nodiscard]] uint32_t max_link_flows() const override { return max_link_flows_; }
  [[nodiscard]] uint64_t recomputations() const override { return recomputations_; }
  [[nodiscard]] uint64_t flows_reshared() const override { return flows_reshared_; }

 private:
  static constexpr uint32_t kNoLink = ~uint32_t{0};
  static constexpr uint32_t kNotQueued = ~uint32_t{0};
  enum class State : uint8_t { Free, Active, Finished };
  struct Flow {
    std::vector<LinkUse> path;
    // Its entries in the per-link lists of flows (doubly linked through the flows themselves, so
    // joining and leaving a link costs O(1) and no allocation): neighbours of entry i on path[i].
    std::vector<uint64_t> next_on_link, prev_on_link;
    double bytes = 0;             ///< of the current transfer, per member
    double remaining = 0;         ///< bytes per member left at `updated`
    double updated = 0;           ///< time `remaining` refers to
    double rate = 0;              ///< bytes/s per member
    double max_rate = kInfinity;  ///< bytes/s per member, the flow's own bound
    double finish = kInfinity;
    uint32_t active_slot = 0;
    uint32_t heap_slot = kNotQueued;  ///< its index in completions_ while it has a completion time
    uint32_t visit = 0;          ///< component search stamp
    uint32_t unlisted_slot = 0;  ///< its index in unlisted_ while not listed
    uint32_t bottleneck = kNoLink;  ///< the link that holds its rate; kNoLink: its bound (or unset)
    double next_rate = 0;           ///< of the re-share in progress
    uint32_t next_bottleneck = kNoLink;
    bool listed = false;         ///< in the per-link lists (next_on_link/prev_on_link valid)
    State state = State::Free;
  };
  // A level at which progressive filling fixes flows: a link's fair share per unfixed member, or a
  // flow's own bound (is_bound; `id` is then the flow).
  struct LinkShare {
    double share;
    uint32_t id;
    bool is_bound = false;
    bool operator>(const LinkShare& o) const {
      if (share != o.share) return share > o.share;
      if (is_bound != o.is_bound) return is_bound;
      return id > o.id;
    }
  };

  // A link crossed by the affected flows of the re-share in progress (reshare_affected).
  struct AffectedLink {
    uint32_t link = 0;
    uint32_t weight = 0;            ///< members of affected flows crossing it
    uint32_t held_before = 0;       ///< affected flows it held before the re-share
    bool expanded = false;          ///< all of its flows are affected
    double capacity_left = 0;       ///< by the unaffected flows
    double old_load = 0, new_load = 0;  ///< of the affected flows, before and after
    double remaining = 0;           ///< progressive filling: capacity not yet given out
    uint32_t unfixed = 0;           ///< progressive filling: members not yet fixed
    uint32_t first = 0, end = 0;    ///< its affected flows in affected_on_link_[first, end)
  };

  // A list entry names a flow and the index of the link in its path.
  static constexpr uint64_t kNoNode = ~uint64_t{0};
  static uint64_t node_of(uint32_t flow, size_t entry) { return (uint64_t{flow} << 32) | entry; }
  static uint32_t flow_of(uint64_t node) { return static_cast<uint32_t>(node >> 32); }
  static uint32_t entry_of(uint64_t node) { return static_cast<uint32_t>(node); }

  void reap_finished();
  void remove(uint32_t f);
  void reshare() const;
  void collect_component() const;
  void fill_component() const;
  /// Brings the component's link bookkeeping (load, held flows, level) in line with its new rates.
  void commit_component() const;
  /// Re-shares only the flows whose rate may change (see the file comment); false if it gave up
  /// for the whole component, whose links it then leaves in marked_links_.
  bool reshare_affected() const;
  uint32_t affected_link(uint32_t link) const;
  void add_affected(uint32_t f) const;
  void expand(uint32_t local) const;
  void fill_affected() const;
  /// fill_affected when every affected flow crosses one link whose share is the lowest level:
  /// sets their rates to it and one_link_ to that link's local index; false (one_link_ kNoLink)
  /// when that is not the case.
  bool fill_affected_at_one_link() const;
  /// Local indices of links where the filled rates break max-min fairness with unaffected flows.
  void find_violations() const;
  void commit_affected() const;
  /// Adds (sign +1) or takes off (-1) a listed flow's load and hold on its links.
  void book(const Flow& flow, double sign) const;
  /// Sets flow f's finish time from its rate and puts it in (or moves it within) completions_.
  void schedule(uint32_t f) const;
  // An entry of completions_: the flow's finish time is copied in, so that sifting compares
  // entries without reaching into flows_.
  struct Queued {
    double finish;
    uint32_t flow;
    bool operator<(const Queued& o) const { return finish != o.finish ? finish < o.finish : flow < o.flow; }
  };
  /// The flow that completes first: the least (finish, flow) of completions_.
  [[nodiscard]] uint32_t next_to_complete() const { return completions_.front().flow; }
  /// Takes flow f out of completions_.
  void unqueue(uint32_t f) const;
  void sift_up(uint32_t slot) const;
  void sift_down(uint32_t slot) const;
  void place(uint32_t slot, const Queued& entry) const {
    completions_[slot] = entry;
    flows_[entry.flow].heap_slot = slot;
  }
  void account_bytes(const Flow& flow, double bytes);
  /// Enters flow f into the lists of its links.
  void list(uint32_t f);
  /// Lists every active flow that ran alone so far (see unlisted_).
  void list_unlisted();
  /// Its narrowest link shared only among its own members, or its own bound if lower
  /// (bottleneck kNoLink).
  struct Alone {
    double rate;
    uint32_t bottleneck;
  };
  [[nodiscard]] Alone rate_alone(const Flow& flow) const;

  std::vector<double> capacity_;
  bool share_;
  Resharing resharing_;
  mutable std::vector<Flow> flows_;
  std::vector<uint32_t> free_;
  std::vector<uint32_t> active_;
  /// Returned by the last advance_to; those restarted since are Active again and stay in it
  /// (reap_finished skips them), so restarting one is O(1) and the order of the rest is kept.
  std::vector<uint32_t> finished_;
  size_t unrestarted_ = 0;  ///< entries of finished_ still Finished
  /// Flows that started alone on all their links and have met no other flow since: they are in no
  /// link list (no flow shares a link with them, so no re-share can reach them).
  std::vector<uint32_t> unlisted_;
  double now_ = 0;
  mutable bool dirty_ = false;
  /// Every active flow, as a 4-ary min-heap by (finish, flow) that knows each flow's slot: a new
  /// rate moves the flow's one entry in place (no stale entries, no compaction), and flows that
  /// complete at the same time come out in flow order.
  mutable std::vector<Queued> completions_;
  std::vector<double> link_bytes_;
  mutable uint32_t max_link_flows_ = 0;
  uint32_t bounded_flows_ = 0;  ///< active flows with a finite max_rate (none: skip looking)
  mutable uint64_t recomputations_ = 0;
  mutable uint64_t flows_reshared_ = 0;
  struct LinkState {
    uint64_t head = kNoNode;  ///< first entry of the link's list of flows (active or finished)
    uint32_t weight = 0;      ///< members of those flows crossing it
    uint32_t visit = 0;       ///< stamp: reached in the current component search
  };
  mutable std::vector<LinkState> links_;        // one cache line per link touched, not three
  mutable std::vector<uint32_t> marked_links_;  ///< links whose flow set changed
  mutable std::vector<uint32_t> new_flows_;     ///< started (sharing a link) since the last re-share
  mutable uint32_t stamp_ = 0;
  // Solver buffers, reused across recomputations.
  mutable std::vector<uint32_t> component_flows_, component_links_;
  mutable std::vector<double> remaining_capacity_;
  mutable std::vector<uint32_t> unfixed_weight_;
  mutable std::vector<uint8_t> fixed_;
  mutable std::vector<LinkShare> levels_;  ///< progressive filling's min-heap
  // Per link, over the listed flows: the bandwidth they use, how many it holds (their bottleneck
  // is this link) and at what rate. Exact after a component fill; kept by differences otherwise.
  mutable std::vector<double> load_, level_;
  mutable std::vector<uint32_t> held_;
  // Affected-set re-sharing buffers.
  mutable std::vector<uint32_t> affected_flows_;
  mutable std::vector<AffectedLink> affected_links_;
  mutable std::vector<uint32_t> local_of_;  ///< link -> index in affected_links_ (this stamp)
  mutable std::vector<uint32_t> affected_on_link_;
  mutable std::vector<uint32_t> violations_;
  mutable uint32_t one_link_ = kNoLink;  ///< local index of the link the last fill used alone
};

}  // namespace stepcast::net
