// Private: groups of flows on a link's virtual clock, the progress side of incremental re-sharing
// (Resharing::Full keeps none). Flows held by one link share its level, so they move as a group on
// the link's clock (the bytes per member any of them moved since the clock's origin, as a
// fair-queueing virtual time): a flow in the group finishes when the clock reaches its own virtual
// finish, the group has one entry in the completion heap (for its first flow to finish), and a new
// level is one clock update, not one per flow. A re-share settles each flow it filled in the group
// of its bottleneck (settle), the incremental resharer moves the groups' levels, and the network
// asks them for rates, bytes left and the next flow to finish.
//
//   FlowGroups groups(system, completions, /*enabled=*/true);
//   groups.settle(f, true);         // after a re-share: into its bottleneck's group, or queued alone
//   groups.set_rate(link, 2.5e8);   // the whole group moves at the link's new level
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "net/completion_heap.hpp"
#include "net/maxmin_system.hpp"

namespace stepcast::net {

class FlowGroups {
 public:
  // A flow moving in a group, by its virtual finish (the clock reading at which it is done).
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
    double clock = 0;            ///< bytes per member moved since the origin, at clock_time
    double clock_time = 0;       ///< s
    double rate = 0;             ///< bytes/s per member: the link's level
    double rebase_at = 0;        ///< clock past which the origin moves (rounding stays below the transfers')
    uint32_t weight = 0;         ///< members its flows put on the link
    uint32_t flows = 0;          ///< grouped flows, moving or finished and not yet reaped
    std::vector<Moving> moving;  ///< 4-ary min-heap of the flows moving bytes
    std::vector<Crossing> crossings;  ///< every other link its flows cross, once per (flow, link)
  };

  /// Borrows `system` and `completions`, which must outlive it. Disabled: no flow is ever grouped.
  FlowGroups(MaxMinSystem& system, CompletionHeap& completions, bool enabled);
  FlowGroups(const FlowGroups&) = delete;
  FlowGroups& operator=(const FlowGroups&) = delete;

  [[nodiscard]] bool enabled() const { return enabled_; }
  /// One group per link, made at the first re-share: a network whose flows never share (a
  /// collective's stage pattern, solved alone) pays nothing for groups.
  void allocate();
  [[nodiscard]] const Group& group(uint32_t link) const { return groups_[link]; }
  /// Flows a link's group holds (0 while disabled).
  [[nodiscard]] uint32_t flows_in(uint32_t link) const { return enabled_ ? groups_[link].flows : 0; }

  /// Bytes/s per member: the group's level if grouped, else its own.
  [[nodiscard]] double rate_of(const Flow& flow) const {
    return flow.grouped ? groups_[flow.bottleneck].rate : flow.rate;
  }
  /// Bytes per member a flow (grouped or not) has left to move at t (>= its last update).
  [[nodiscard]] double remaining_at(const Flow& flow, double t) const;
  [[nodiscard]] bool groupable(const Flow& flow) const {
    return enabled_ && flow.bottleneck != kNoLink && flow.max_rate == kInfinity && flow.listed;
  }

  /// After a re-share set flow f's rate and bottleneck: joins the group of its bottleneck, or takes
  /// its own place in the completion heap if not groupable (rate_changed: its old entry, if any,
  /// is stale).
  void settle(uint32_t f, bool rate_changed) {
    Flow& flow = system_.flow(f);
    if (groupable(flow)) {
      join(f);
    } else if (rate_changed || !completions_.queued_flow(f)) {
      completions_.schedule_flow(f, flow.finish_time());
    }
  }
  /// Puts flow f (brought to now, its rate set) in the group of its bottleneck; the group's rate,
  /// if it has flows already, becomes f's.
  void join(uint32_t f);
  /// Takes flow f out of its group, back to a rate and remaining bytes of its own (at now).
  void leave(uint32_t f);
  /// Moves the group's clock to now and gives it a new rate.
  void set_rate(uint32_t link, double rate);
  // The two calls of every completion (inline: a connection that always restarts makes these
  // the network's hot path).
  /// Flow f (grouped, just finished) moves `bytes` more at the group's level.
  void restart(uint32_t f, double bytes) {
    const uint32_t link = system_.flow(f).bottleneck;
    Group& group = groups_[link];
    group.rebase_at = std::max(group.rebase_at, kRebaseFactor * bytes);
    rebase_if_due(link);
    push_moving(group, {clock_at(group, system_.now()) + bytes, f});
    if (system_.flow(f).moving_slot == 0) requeue(link);
  }
  /// Flow f, the group's first to finish, is done: out of its moving heap; the group queues its next.
  void finish_first(uint32_t link, uint32_t f) {
    system_.flow(f).moving_slot = kNoSlot;
    erase_moving(groups_[link], 0);
    requeue(link);
  }

 private:
  // A group's clock origin moves once the clock passed this many times the most bytes its flows
  // had left at the last move (or joined with since): a flow's bytes left are its virtual finish
  // less the clock, so the clock's rounding stays within that many ulps of the largest transfer,
  // while the O(flows) move is paid at most once per that many bytes moved (every flow moving at
  // the last move has finished by the next).
  static constexpr double kRebaseFactor = 16;

  [[nodiscard]] static double clock_at(const Group& group, double t) {
    return group.clock + group.rate * (t - group.clock_time);
  }
  /// Moves the group's clock origin to the present once its clock passed Group::rebase_at.
  void rebase_if_due(uint32_t link);
  /// The group's moving heap: stores an entry at a slot and tells its flow.
  [[nodiscard]] auto moving_placer(Group& group) {
    return [this, &group](uint32_t slot, const Moving& m) {
      group.moving[slot] = m;
      system_.flow(m.flow).moving_slot = slot;
    };
  }
  // Out of line: the sifting loops run best in functions of their own.
  void push_moving(Group& group, const Moving& entry);
  void erase_moving(Group& group, uint32_t slot);
  /// Keeps the group's entry in the completion heap in line with its first flow to finish.
  void requeue(uint32_t link) {
    const Group& group = groups_[link];
    if (group.moving.empty()) {
      completions_.erase_group(link);
      return;
    }
    const Moving& first = group.moving.front();
    completions_.schedule_group(link, first.flow,
                                group.clock_time + (first.virtual_finish - group.clock) / group.rate);
  }

  MaxMinSystem& system_;
  CompletionHeap& completions_;
  bool enabled_;
  std::vector<Group> groups_;  ///< per link
};

}  // namespace stepcast::net
