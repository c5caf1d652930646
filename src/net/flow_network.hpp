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
//
// Flows held by one link share its level, so they move as a group on the link's virtual clock
// (the bytes per member any of them moved since the clock's origin, as a fair-queueing virtual
// time): a flow in the group finishes when the clock reaches its own virtual finish, the group has
// one entry in the completion queue (for its first flow to finish), and a new level is one clock
// update, not one per flow. When a change only moves the levels of some links (each changed link
// holds every flow on it, every new flow joins one of them, and every other link their flows cross
// holds nothing and keeps room to spare), the groups take their new levels in time proportional to
// the links their flows cross, with no filling. Otherwise the flows leave their groups, are
// re-filled one by one as above, and join the group of the link that then holds them.
// Resharing::Full re-fills everything on every change and keeps no groups; it is kept as the
// reference the incremental mode is tested and benchmarked against.
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

  /// How the re-shares went, for tests and benchmarks.
  struct ReshareCounts {
    uint64_t level_moves = 0;      ///< changes that only moved the levels of groups (no filling)
    uint64_t affected_fills = 0;   ///< changes re-filled over an affected set
    uint64_t component_fills = 0;  ///< changes re-filled over a whole connected component
    uint64_t unit_groups = 0;      ///< groups re-filled as one inside affected fills
    uint64_t rebases = 0;          ///< group clock origins moved
  };
  [[nodiscard]] const ReshareCounts& reshare_counts() const { return counts_; }

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
    uint32_t visit = 0;               ///< component search stamp
    uint32_t unlisted_slot = 0;       ///< its index in unlisted_ while not listed
    uint32_t bottleneck = kNoLink;    ///< the link that holds its rate; kNoLink: its bound (or unset)
    double next_rate = 0;             ///< of the re-share in progress
    uint32_t next_bottleneck = kNoLink;
    // In the group of its bottleneck link (grouped): its rate is the group's, its progress the
    // group's clock (its virtual finish is its entry in the group's moving heap), and `rate`,
    // `remaining`, `updated`, `finish` and `heap_slot` are unused.
    uint32_t moving_slot = kNotQueued;    ///< its index in the group's moving heap while it moves
    std::vector<uint32_t> crossing_slot;  ///< per path entry: its index in the group's crossings
    bool grouped = false;
    bool listed = false;  ///< in the per-link lists (next_on_link/prev_on_link valid)
    State state = State::Free;
  };
  // The flows a link holds, moving together at its level (see the file comment).
  struct Moving {
    double virtual_finish;
    uint32_t flow;
    bool operator<(const Moving& o) const {
      return virtual_finish != o.virtual_finish ? virtual_finish < o.virtual_finish : flow < o.flow;
    }
  };
  // Another link a grouped flow crosses (entry: its index in the flow's path).
  struct Crossing {
    uint32_t link, count, flow, entry;
  };
  struct Group {
    double clock = 0;       ///< bytes per member moved since the origin, at clock_time
    double clock_time = 0;  ///< s
    double rate = 0;        ///< bytes/s per member: the link's level
    double rebase_at = 0;   ///< clock past which the origin moves (rounding stays below the transfers')
    uint32_t weight = 0;    ///< members its flows put on the link
    uint32_t flows = 0;     ///< grouped flows, moving or finished and not yet reaped
    uint32_t queue_slot = kNotQueued;  ///< its entry in completions_, for its first flow to finish
    std::vector<Moving> moving;        ///< 4-ary min-heap of the flows moving bytes
    std::vector<Crossing> crossings;   ///< every other link its flows cross, once per (flow, link)
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
    uint32_t weight = 0;                ///< members of affected flows crossing it
    uint32_t held_before = 0;           ///< affected flows it held before the re-share
    bool expanded = false;              ///< all of its flows are affected
    double capacity_left = 0;           ///< by the unaffected flows
    double old_load = 0, new_load = 0;  ///< of the affected flows, before and after
    double remaining = 0;               ///< progressive filling: capacity not yet given out
    uint32_t unfixed = 0;               ///< progressive filling: members not yet fixed
    uint32_t first = 0, end = 0;        ///< its affected flows in affected_on_link_[first, end)
    // Its group re-filled as one (a unit): the flows of the group that share no other link with
    // the re-share stay in it and take the level the filling gives the link.
    bool unit = false;
    uint32_t unit_weight = 0;  ///< members the unit puts on the link (at the last filling)
    uint32_t unit_flows = 0;   ///< its flows
    double unit_old_rate = 0;  ///< the group's rate before
    double unit_rate = 0;      ///< progressive filling: the level it was fixed at
  };

  // A list entry names a flow and the index of the link in its path.
  static constexpr uint64_t kNoNode = ~uint64_t{0};
  static uint64_t node_of(uint32_t flow, size_t entry) { return (uint64_t{flow} << 32) | entry; }
  static uint32_t flow_of(uint64_t node) { return static_cast<uint32_t>(node >> 32); }
  static uint32_t entry_of(uint64_t node) { return static_cast<uint32_t>(node); }

  void reap_finished();
  void remove(uint32_t f);
  void reshare() const;
  /// A fresh search stamp for links_ and flows_ (visit).
  void next_stamp() const;
  void collect_component() const;
  void fill_component() const;
  /// Brings the component's link bookkeeping (load, held flows, level) in line with its new rates.
  void commit_component() const;
  /// Re-shares only the flows whose rate may change (see the file comment); false if it gave up
  /// for the whole component, whose links it then leaves in marked_links_.
  bool reshare_affected() const;
  uint32_t affected_link(uint32_t link) const;
  void add_affected(uint32_t f) const;
  /// Takes out of the units (as affected flows of their own) every flow that crosses a link of the
  /// re-share or one that holds flows; repeated until none is left.
  void entangle() const;
  /// After a filling: takes out of the units the flows that cross a link without room for their
  /// new level; true if it took any.
  bool entangle_crowded() const;
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
  // An entry of completions_: a flow of its own, or a group (group: its link) for its first flow
  // to finish. The finish time is copied in, so that sifting compares entries without reaching
  // into flows_; equal times come out in flow order either way.
  struct Queued {
    double finish;
    uint32_t flow;
    uint32_t group = kNoLink;
    bool operator<(const Queued& o) const { return finish != o.finish ? finish < o.finish : flow < o.flow; }
  };
  /// Takes flow f (not grouped) out of completions_.
  void unqueue(uint32_t f) const;
  void unqueue_slot(uint32_t slot) const;
  /// Puts a new entry in completions_ or moves the one at `slot` to its new key.
  void requeue(uint32_t slot, const Queued& entry) const;
  void place(uint32_t slot, const Queued& entry) const {
    completions_[slot] = entry;
    (entry.group == kNoLink ? flows_[entry.flow].heap_slot : groups_[entry.group].queue_slot) = slot;
  }
  // Groups (see the file comment).
  [[nodiscard]] double clock_at(const Group& group, double t) const {
    return group.clock + group.rate * (t - group.clock_time);
  }
  [[nodiscard]] double rate_of(const Flow& flow) const {
    return flow.grouped ? groups_[flow.bottleneck].rate : flow.rate;
  }
  /// Bytes per member flow f has left to move at t (>= its last update).
  [[nodiscard]] double remaining_at(const Flow& flow, double t) const;
  /// Brings a flow of its own to now_ at its current rate.
  void bring_to_now(Flow& flow) const;
  /// Puts flow f (brought to now_, its rate set) in the group of its bottleneck; the group's rate,
  /// if it has flows already, becomes f's.
  void join_group(uint32_t f) const;
  /// Takes flow f out of its group, back to a rate and remaining bytes of its own (at now_).
  void leave_group(uint32_t f) const;
  /// Moves the group's clock to now_ and gives it a new rate.
  void set_group_rate(uint32_t link, double rate) const;
  /// Moves the group's clock origin to the present once its clock passed Group::rebase_at.
  void rebase_if_due(uint32_t link) const;
  /// The group's moving heap: stores an entry at a slot and tells its flow.
  [[nodiscard]] auto moving_placer(Group& group) const {
    return [this, &group](uint32_t slot, const Moving& m) {
      group.moving[slot] = m;
      flows_[m.flow].moving_slot = slot;
    };
  }
  void push_moving(Group& group, const Moving& entry) const;
  void erase_moving(Group& group, uint32_t slot) const;
  /// Keeps the group's entry in completions_ in line with its first flow to finish.
  void requeue_group(uint32_t link) const;
  /// The re-share where only the levels of the changed links move (see the file comment); false,
  /// having changed nothing, when the change is not of that kind.
  bool reshare_groups() const;
  /// Joins the group of its new bottleneck, or takes its own place in completions_ if not
  /// grouped (rate_changed: its old entry, if any, is stale).
  void settle(uint32_t f, bool rate_changed) const;
  [[nodiscard]] bool groupable(const Flow& flow) const {
    return groups_enabled_ && flow.bottleneck != kNoLink && flow.max_rate == kInfinity && flow.listed;
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
  mutable ReshareCounts counts_;
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
  mutable std::vector<uint32_t> unit_links_;  ///< local indices of the links re-filled as units
  mutable std::vector<uint32_t> entangled_, crowded_;
  mutable uint32_t one_link_ = kNoLink;  ///< local index of the link the last fill used alone
  bool groups_enabled_;                  ///< incremental re-sharing with sharing on
  mutable std::vector<Group> groups_;    ///< per link
  // reshare_groups buffers: the changed links; the new flows that cross no link holding flows
  // (deferred); per link, the members joining its group, the members of deferred flows crossing
  // it, the load of the new flows that cross it and are held elsewhere, and its next level; the
  // links whose load moved, with their load before.
  mutable std::vector<uint32_t> changed_links_, deferred_;
  mutable std::vector<uint32_t> joining_weight_, deferred_weight_;
  mutable std::vector<double> new_load_, next_level_;
  mutable std::vector<uint32_t> moved_stamp_;  ///< stamp_ of the re-share that saved its load
  mutable std::vector<std::pair<uint32_t, double>> load_before_;
};

}  // namespace stepcast::net
