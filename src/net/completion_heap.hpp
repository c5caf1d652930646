// Private: the flow network's completion heap, which answers next_completion() and orders the
// finishes of advance_to(). Holds one entry per flow of its own and one per group of flows (a link's
// group, for its first flow to finish; see flow_groups.hpp), each with its finish time (s), in a
// 4-ary min-heap by (finish, flow) that knows every entry's slot: a new rate moves the one entry in
// place (no stale entries, no compaction), and flows that complete at the same time come out in
// flow order. It knows nothing of rates or links: callers give the finish times.
//
//   CompletionHeap heap;
//   heap.schedule_flow(3, 0.5);          // flow 3 finishes at 0.5 s
//   heap.schedule_group(7, 4, 0.25);     // link 7's group: its flow 4 finishes first, at 0.25 s
//   heap.front();                        // {0.25, flow 4, group 7}
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace stepcast::net {

class CompletionHeap {
 public:
  static constexpr uint32_t kNoGroup = ~uint32_t{0};

  struct Entry {
    double finish;              ///< s
    uint32_t flow;              ///< the flow that finishes (a group's first)
    uint32_t group = kNoGroup;  ///< the group's link, or kNoGroup for a flow of its own
    // The finish time is copied in, so that sifting compares entries without reaching into the
    // flows; equal times come out in flow order.
    bool operator<(const Entry& o) const { return finish != o.finish ? finish < o.finish : flow < o.flow; }
  };

  /// Queues flow `flow` (of its own) to finish at `finish`, or moves its entry there.
  void schedule_flow(uint32_t flow, double finish) {
    if (flow >= flow_slot_.size()) grow(flow_slot_, flow);
    schedule(flow_slot_[flow], {finish, flow});
  }
  /// Queues the group of link `group` for its flow `first` finishing at `finish`, or moves its entry.
  void schedule_group(uint32_t group, uint32_t first, double finish) {
    if (group >= group_slot_.size()) grow(group_slot_, group);
    schedule(group_slot_[group], {finish, first, group});
  }
  /// Takes out the entry of a flow of its own; it must be queued.
  void erase_flow(uint32_t flow) { erase_at(flow_slot_[flow]); }
  /// Takes out the entry of a group, if it has one.
  void erase_group(uint32_t group) {
    if (queued_group(group)) erase_at(group_slot_[group]);
  }
  [[nodiscard]] bool queued_flow(uint32_t flow) const {
    return flow < flow_slot_.size() && flow_slot_[flow] != kNotQueued;
  }
  [[nodiscard]] bool queued_group(uint32_t group) const {
    return group < group_slot_.size() && group_slot_[group] != kNotQueued;
  }
  [[nodiscard]] bool empty() const { return heap_.empty(); }
  [[nodiscard]] size_t size() const { return heap_.size(); }
  /// The earliest entry; the heap must not be empty.
  [[nodiscard]] const Entry& front() const { return heap_.front(); }
  /// The earliest finish time, +inf if nothing is queued.
  [[nodiscard]] double next_finish() const {
    return heap_.empty() ? std::numeric_limits<double>::infinity() : heap_.front().finish;
  }

 private:
  static constexpr uint32_t kNotQueued = ~uint32_t{0};
  /// Pushes `entry`, or moves the one at `slot` to it.
  void schedule(uint32_t slot, Entry entry);
  /// Makes room for the slot of owner `index` (rare: out of the inlined path).
  static void grow(std::vector<uint32_t>& slots, uint32_t index);
  void erase_at(uint32_t slot);
  /// Stores an entry at a slot and records the slot with its owner.
  void place(uint32_t slot, const Entry& entry) {
    heap_[slot] = entry;
    (entry.group == kNoGroup ? flow_slot_[entry.flow] : group_slot_[entry.group]) = slot;
  }

  std::vector<Entry> heap_;
  std::vector<uint32_t> flow_slot_;   ///< per flow: its slot in heap_, kNotQueued if none
  std::vector<uint32_t> group_slot_;  ///< per group (link): its slot in heap_, kNotQueued if none
};

}  // namespace stepcast::net
