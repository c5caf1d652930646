#include "net/flow_groups.hpp"

#include <algorithm>

#include "net/indexed_heap.hpp"

namespace stepcast::net {

FlowGroups::FlowGroups(MaxMinSystem& system, CompletionHeap& completions, bool enabled)
    : system_(system), completions_(completions), enabled_(enabled) {}

void FlowGroups::allocate() {
  if (enabled_ && groups_.empty()) groups_.resize(system_.num_links());
}

double FlowGroups::remaining_at(const Flow& flow, double t) const {
  if (!flow.grouped) return std::max(0.0, flow.remaining - flow.rate * (t - flow.updated));
  if (flow.moving_slot == kNoSlot) return 0;
  const Group& group = groups_[flow.bottleneck];
  return std::max(0.0, group.moving[flow.moving_slot].virtual_finish - clock_at(group, t));
}

void FlowGroups::join(uint32_t f) {
  Flow& flow = system_.flow(f);
  const uint32_t link = flow.bottleneck;
  Group& group = groups_[link];
  if (completions_.queued_flow(f)) completions_.erase_flow(f);
  const double now = system_.now();
  if (group.flows == 0) {
    group.clock = 0;
    group.clock_time = now;
    group.rate = flow.rate;
    group.rebase_at = 0;
  }
  flow.rate = group.rate;
  ++group.flows;
  flow.grouped = true;
  flow.crossing_slot.resize(flow.path.size());
  for (size_t i = 0; i < flow.path.size(); ++i) {
    const LinkUse& use = flow.path[i];
    if (use.link == link) {
      group.weight += use.count;
      flow.crossing_slot[i] = kNoSlot;
    } else {
      flow.crossing_slot[i] = static_cast<uint32_t>(group.crossings.size());
      group.crossings.push_back({use.link, use.count, f, static_cast<uint32_t>(i)});
    }
  }
  if (flow.state != FlowState::Active) return;
  group.rebase_at = std::max(group.rebase_at, kRebaseFactor * flow.remaining);
  rebase_if_due(link);
  push_moving(group, {clock_at(group, now) + flow.remaining, f});
  if (flow.moving_slot == 0) requeue(link);
}

void FlowGroups::leave(uint32_t f) {
  Flow& flow = system_.flow(f);
  const uint32_t link = flow.bottleneck;
  Group& group = groups_[link];
  const double now = system_.now();
  flow.rate = group.rate;
  if (flow.moving_slot != kNoSlot) {
    flow.remaining = remaining_at(flow, now);
    const uint32_t slot = flow.moving_slot;
    flow.moving_slot = kNoSlot;
    erase_moving(group, slot);
  }
  flow.updated = now;
  for (size_t i = 0; i < flow.path.size(); ++i) {
    const uint32_t slot = flow.crossing_slot[i];
    if (slot == kNoSlot) {
      group.weight -= flow.path[i].count;
      continue;
    }
    const Crossing last = group.crossings.back();
    group.crossings.pop_back();
    if (slot < group.crossings.size()) {
      group.crossings[slot] = last;
      system_.flow(last.flow).crossing_slot[last.entry] = slot;
    }
  }
  flow.grouped = false;
  if (--group.flows == 0) {
    group.clock = 0;  // an empty group starts its clock again: its origin moves for free
    group.clock_time = now;
    group.rebase_at = 0;
  }
  requeue(link);
}

void FlowGroups::set_rate(uint32_t link, double rate) {
  Group& group = groups_[link];
  group.clock = clock_at(group, system_.now());
  group.clock_time = system_.now();
  group.rate = rate;
  rebase_if_due(link);
  requeue(link);
}

void FlowGroups::rebase_if_due(uint32_t link) {
  Group& group = groups_[link];
  const double now = system_.now();
  const double clock = clock_at(group, now);
  if (clock <= group.rebase_at) return;
  ++system_.counters().reshares.rebases;
  group.clock = clock;
  group.clock_time = now;
  double most_left = 0;
  for (Moving& m : group.moving) {
    m.virtual_finish -= group.clock;
    most_left = std::max(most_left, m.virtual_finish);
  }
  group.clock = 0;
  group.rebase_at = kRebaseFactor * most_left;
  // Subtracting one value keeps the order but may round two finishes into a tie, which the flow
  // numbers then order: rebuild the heap so that it holds either way, and requeue its first.
  indexed_heap::rebuild(group.moving, moving_placer(group));
  requeue(link);
}

void FlowGroups::push_moving(Group& group, const Moving& entry) {
  indexed_heap::push(group.moving, entry, moving_placer(group));
}

void FlowGroups::erase_moving(Group& group, uint32_t slot) {
  indexed_heap::erase(group.moving, slot, moving_placer(group));
}

}  // namespace stepcast::net
