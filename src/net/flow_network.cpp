#include "net/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "stepcast/error.hpp"

namespace stepcast::net {
namespace {
// A flow whose completion time is within this of the time advanced to has completed: it absorbs
// the rounding of remaining/rate, so that a flow never lingers with a few bytes left.
constexpr double kRelativeTimeTolerance = 1e-12;
constexpr double kAbsoluteTimeTolerance = 1e-15;
// Affected-set re-sharing compares rates filled in different orders (and loads kept by
// differences): within this, two rates are equal and a link with this share of its capacity left
// is saturated. Far below what a simulated time can resolve, far above the rounding.
constexpr double kFairnessTolerance = 1e-9;
// Rounds of expanding the affected set before the whole component is re-filled instead.
constexpr int kMaxAffectedRounds = 8;
// A group's clock origin moves once the clock passed this many times the most bytes its flows had
// left at the last move (or joined with since): a flow's bytes left are its virtual finish less the
// clock, so the clock's rounding stays within that many ulps of the largest transfer, while the
// O(flows) move is paid at most once per that many bytes moved (every flow moving at the last
// move has finished by the next).
constexpr double kRebaseFactor = 16;

bool completes_by(double finish, double t) {
  return finish <= t + kAbsoluteTimeTolerance + kRelativeTimeTolerance * std::fabs(t);
}

// 4-ary min-heaps that tell each entry's owner its slot: place(slot, entry) stores the entry and
// records the slot with its owner.
template <class Entry, class Place>
void heap_sift_up(std::vector<Entry>& heap, uint32_t slot, Place place) {
  const Entry entry = heap[slot];
  while (slot > 0) {
    const uint32_t parent = (slot - 1) / 4;
    if (!(entry < heap[parent])) break;
    place(slot, heap[parent]);
    slot = parent;
  }
  place(slot, entry);
}

template <class Entry, class Place>
void heap_sift_down(std::vector<Entry>& heap, uint32_t slot, Place place) {
  const Entry entry = heap[slot];
  const auto n = static_cast<uint32_t>(heap.size());
  for (;;) {
    const uint32_t first = 4 * slot + 1;
    if (first >= n) break;
    uint32_t best = first;
    for (uint32_t c = first + 1; c < std::min(first + 4, n); ++c) {
      if (heap[c] < heap[best]) best = c;
    }
    if (!(heap[best] < entry)) break;
    place(slot, heap[best]);
    slot = best;
  }
  place(slot, entry);
}

/// Puts `entry` at `slot` (whose old entry's owner was told it left) and restores the order.
template <class Entry, class Place>
void heap_replace(std::vector<Entry>& heap, uint32_t slot, const Entry& entry, Place place) {
  const bool up = slot > 0 && entry < heap[(slot - 1) / 4];
  place(slot, entry);
  if (up) {
    heap_sift_up(heap, slot, place);
  } else {
    heap_sift_down(heap, slot, place);
  }
}

/// Removes the entry at `slot` (its owner is told elsewhere).
template <class Entry, class Place>
void heap_erase(std::vector<Entry>& heap, uint32_t slot, Place place) {
  const Entry last = heap.back();
  heap.pop_back();
  if (slot < heap.size()) heap_replace(heap, slot, last, place);
}
}  // namespace

FlowNetwork::FlowNetwork(std::vector<double> capacities, bool share, Resharing resharing)
    : capacity_(std::move(capacities)),
      share_(share),
      resharing_(resharing),
      link_bytes_(capacity_.size(), 0.0),
      links_(capacity_.size()),
      remaining_capacity_(capacity_.size(), 0.0),
      unfixed_weight_(capacity_.size(), 0),
      load_(capacity_.size(), 0.0),
      level_(capacity_.size(), 0.0),
      held_(capacity_.size(), 0),
      local_of_(capacity_.size(), 0),
      groups_enabled_(share && resharing == Resharing::Incremental) {
  for (double c : capacity_) STEPCAST_ASSERT(c > 0 && std::isfinite(c));
}

FlowId FlowNetwork::start_flow(const FlowSpec& spec, double now) {
  reap_finished();
  STEPCAST_ASSERT(spec.bytes >= 0 && std::isfinite(spec.bytes));
  STEPCAST_ASSERT(spec.max_rate > 0);
  STEPCAST_ASSERT(completes_by(now_, now));
  now_ = std::max(now_, now);
  uint32_t f;
  if (!free_.empty()) {
    f = free_.back();
    free_.pop_back();
  } else {
    f = static_cast<uint32_t>(flows_.size());
    flows_.emplace_back();
  }
  Flow& flow = flows_[f];
  // Merge repeated links so each link appears once with the total member count. Callers that
  // reuse one path (a ring's group) pass it sorted and merged, which skips the sort.
  flow.path = spec.path;
  const bool merged =
      std::adjacent_find(flow.path.begin(), flow.path.end(), [](const LinkUse& a, const LinkUse& b) {
        return a.link >= b.link;
      }) == flow.path.end();
  if (!merged)
    std::sort(flow.path.begin(), flow.path.end(),
              [](const LinkUse& a, const LinkUse& b) { return a.link < b.link; });
  size_t out = 0;
  for (size_t i = 0; i < flow.path.size(); ++i) {
    STEPCAST_ASSERT(flow.path[i].link < capacity_.size() && flow.path[i].count > 0);
    if (out > 0 && flow.path[out - 1].link == flow.path[i].link) {
      flow.path[out - 1].count += flow.path[i].count;
    } else {
      flow.path[out++] = flow.path[i];
    }
  }
  flow.path.resize(out);
  flow.rate = 0;  // books nothing on its links until it is filled
  flow.bottleneck = kNoLink;
  bool alone = true;  // no other flow on any of its links
  for (const LinkUse& use : flow.path) {
    alone = alone && links_[use.link].weight == 0;
    links_[use.link].weight += use.count;
    max_link_flows_ = std::max(max_link_flows_, links_[use.link].weight);
  }
  const bool runs_alone = !share_ || (alone && resharing_ == Resharing::Incremental);
  if (!runs_alone) {
    // It shares a link: every flow that may now be reached from it must be in the link lists.
    list_unlisted();
    list(f);
  } else if (share_) {
    // A flow alone stays out of the link lists (a ring step on a fat-tree crosses ~12,000 link
    // directions) until another flow meets one of its links, which lists it first.
    flow.unlisted_slot = static_cast<uint32_t>(unlisted_.size());
    unlisted_.push_back(f);
  }
  flow.bytes = flow.remaining = spec.bytes;
  flow.max_rate = spec.max_rate;
  if (flow.max_rate < kInfinity) ++bounded_flows_;
  flow.updated = now_;
  flow.state = State::Active;
  flow.active_slot = static_cast<uint32_t>(active_.size());
  active_.push_back(f);
  if (flow.path.empty()) {
    flow.rate = kInfinity;
    schedule(f);
  } else if (runs_alone) {
    // Its narrowest link, shared only among its own members: the flow is alone (a ring step's
    // group, a single transfer), or sharing is off. Nothing is re-shared (nor counted as such).
    const Alone alone_rate = rate_alone(flow);
    flow.rate = alone_rate.rate;
    flow.bottleneck = alone_rate.bottleneck;
    schedule(f);
  } else {
    for (const LinkUse& use : flow.path) marked_links_.push_back(use.link);
    new_flows_.push_back(f);
    dirty_ = true;
  }
  return FlowId{f};
}

double FlowNetwork::next_completion() const {
  // Dropping flows that finished and were not restarted is not observable from outside; it has
  // to happen before bandwidth is re-shared.
  const_cast<FlowNetwork*>(this)->reap_finished();
  if (dirty_) reshare();
  return completions_.empty() ? kInfinity : completions_.front().finish;
}

std::vector<FlowId> FlowNetwork::advance_to(double t) {
  std::vector<FlowId> done;
  advance_to(t, done);
  return done;
}

void FlowNetwork::advance_to(double t, std::vector<FlowId>& done) {
  done.clear();
  reap_finished();
  if (dirty_) reshare();
  STEPCAST_ASSERT(completes_by(now_, t));
  now_ = std::max(now_, t);
  while (!completions_.empty() && completes_by(completions_.front().finish, t)) {
    const Queued first = completions_.front();
    const uint32_t f = first.flow;
    if (first.group == kNoLink) {
      unqueue(f);
    } else {
      // The group's first flow to finish: out of its moving heap; the group queues its next.
      Group& group = groups_[first.group];
      flows_[f].moving_slot = kNotQueued;
      erase_moving(group, 0);
      requeue_group(first.group);
    }
    Flow& flow = flows_[f];
    flow.state = State::Finished;
    flow.remaining = 0;
    flow.updated = now_;
    account_bytes(flow, flow.bytes);
    finished_.push_back(f);
    done.push_back(FlowId{f});
  }
  unrestarted_ = finished_.size();
}

void FlowNetwork::restart_flow(FlowId id, double bytes) {
  const uint32_t f = index(id);
  STEPCAST_ASSERT(f < flows_.size() && flows_[f].state == State::Finished);
  STEPCAST_ASSERT(bytes >= 0 && std::isfinite(bytes));
  Flow& flow = flows_[f];
  flow.state = State::Active;
  flow.bytes = flow.remaining = bytes;
  flow.updated = now_;
  --unrestarted_;  // it stays in finished_, which reap_finished skips as it is Active again
  // The set of active flows is unchanged, so the rate stays as it is. A pending re-share
  // reschedules the flow again if it is connected to the change.
  if (!flow.grouped) {
    schedule(f);
    return;
  }
  Group& group = groups_[flow.bottleneck];
  group.rebase_at = std::max(group.rebase_at, kRebaseFactor * bytes);
  rebase_if_due(flow.bottleneck);
  push_moving(group, {clock_at(group, now_) + bytes, f});
  if (flow.moving_slot == 0) requeue_group(flow.bottleneck);
}

double FlowNetwork::rate(FlowId id) const {
  const uint32_t f = index(id);
  STEPCAST_ASSERT(f < flows_.size() && flows_[f].state == State::Active);
  const_cast<FlowNetwork*>(this)->reap_finished();
  if (dirty_) reshare();
  return rate_of(flows_[f]);
}

std::vector<double> FlowNetwork::link_bytes_moved(double t) const {
  const_cast<FlowNetwork*>(this)->reap_finished();
  if (dirty_) reshare();
  STEPCAST_ASSERT(completes_by(now_, t));
  t = std::max(t, now_);
  std::vector<double> moved = link_bytes_;
  for (uint32_t f : active_) {
    const Flow& flow = flows_[f];
    if (flow.state != State::Active || flow.path.empty()) continue;
    // Every rate holds from its last update to t: nothing completes or starts before t.
    const double left = remaining_at(flow, t);
    const double done = std::max(0.0, flow.bytes - left);
    for (const LinkUse& use : flow.path) moved[use.link] += done * use.count;
  }
  return moved;
}

void FlowNetwork::reap_finished() {
  // In the order advance_to returned them, skipping those restarted: the order decides which
  // slots remove() frees first, and so the ids that later flows get.
  for (uint32_t f : finished_) {
    if (flows_[f].state == State::Finished) remove(f);
  }
  finished_.clear();
  unrestarted_ = 0;
}

void FlowNetwork::remove(uint32_t f) {
  Flow& flow = flows_[f];
  const uint32_t slot = flow.active_slot;
  active_[slot] = active_.back();
  flows_[active_[slot]].active_slot = slot;
  active_.pop_back();
  if (!flow.listed && share_) {
    const uint32_t unlisted_slot = flow.unlisted_slot;
    unlisted_[unlisted_slot] = unlisted_.back();
    flows_[unlisted_[unlisted_slot]].unlisted_slot = unlisted_slot;
    unlisted_.pop_back();
  }
  if (flow.grouped) leave_group(f);
  if (flow.listed) book(flow, -1);
  for (size_t i = 0; i < flow.path.size(); ++i) {
    const uint32_t link = flow.path[i].link;
    if (flow.listed) {
      const uint64_t prev = flow.prev_on_link[i], next = flow.next_on_link[i];
      if (prev != kNoNode) {
        flows_[flow_of(prev)].next_on_link[entry_of(prev)] = next;
      } else {
        links_[link].head = next;
      }
      if (next != kNoNode) flows_[flow_of(next)].prev_on_link[entry_of(next)] = prev;
    }
    links_[link].weight -= flow.path[i].count;
    if (links_[link].weight == 0) load_[link] = 0;  // no drift survives an empty link
    // Only the flows left on its links (and those connected to them) may speed up.
    if (share_ && links_[link].weight > 0) {
      marked_links_.push_back(link);
      dirty_ = true;
    }
  }
  if (flow.max_rate < kInfinity) --bounded_flows_;
  if (flow.heap_slot != kNotQueued) unqueue(f);
  flow.listed = false;
  flow.state = State::Free;
  flow.path.clear();
  flow.next_on_link.clear();
  flow.prev_on_link.clear();
  flow.crossing_slot.clear();
  free_.push_back(f);
}

void FlowNetwork::account_bytes(const Flow& flow, double bytes) {
  for (const LinkUse& use : flow.path) link_bytes_[use.link] += bytes * use.count;
}

void FlowNetwork::list(uint32_t f) {
  Flow& flow = flows_[f];
  const size_t n = flow.path.size();
  flow.next_on_link.resize(n);
  flow.prev_on_link.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t link = flow.path[i].link;
    const uint64_t node = node_of(f, i), head = links_[link].head;
    flow.next_on_link[i] = head;
    flow.prev_on_link[i] = kNoNode;
    if (head != kNoNode) flows_[flow_of(head)].prev_on_link[entry_of(head)] = node;
    links_[link].head = node;
  }
  flow.listed = true;
  book(flow, +1);
}

void FlowNetwork::book(const Flow& flow, double sign) const {
  const double rate = rate_of(flow);
  for (const LinkUse& use : flow.path) load_[use.link] += sign * rate * use.count;
  if (flow.bottleneck == kNoLink) return;
  const uint32_t b = flow.bottleneck;
  if (sign > 0) {
    level_[b] = held_[b] == 0 ? rate : std::max(level_[b], rate);
    ++held_[b];
  } else {
    --held_[b];
  }
}

void FlowNetwork::list_unlisted() {
  // Unlisted flows never share a link (a flow that meets one lists them all first), so only a
  // flow about to share needs them listed; listing all of them keeps that rule simple and costs
  // each flow at most one listing.
  for (uint32_t f : unlisted_) list(f);
  unlisted_.clear();
}

FlowNetwork::Alone FlowNetwork::rate_alone(const Flow& flow) const {
  Alone alone{flow.max_rate, kNoLink};
  for (const LinkUse& use : flow.path) {
    const double share = capacity_[use.link] / use.count;
    if (share < alone.rate) alone = {share, use.link};
  }
  return alone;
}

void FlowNetwork::schedule(uint32_t f) const {
  Flow& flow = flows_[f];
  STEPCAST_ASSERT(!flow.grouped);
  flow.finish = flow.rate > 0 ? flow.updated + flow.remaining / flow.rate : kInfinity;
  if (std::isinf(flow.rate)) flow.finish = flow.updated;
  requeue(flow.heap_slot, {flow.finish, f});
}

void FlowNetwork::requeue(uint32_t slot, const Queued& entry) const {
  auto place_entry = [this](uint32_t at, const Queued& e) { place(at, e); };
  if (slot == kNotQueued) {
    completions_.push_back(entry);
    heap_sift_up(completions_, static_cast<uint32_t>(completions_.size() - 1), place_entry);
  } else {
    heap_replace(completions_, slot, entry, place_entry);
  }
}

void FlowNetwork::unqueue(uint32_t f) const { unqueue_slot(flows_[f].heap_slot); }

void FlowNetwork::unqueue_slot(uint32_t slot) const {
  const Queued& entry = completions_[slot];
  (entry.group == kNoLink ? flows_[entry.flow].heap_slot : groups_[entry.group].queue_slot) = kNotQueued;
  heap_erase(completions_, slot, [this](uint32_t at, const Queued& e) { place(at, e); });
}

double FlowNetwork::remaining_at(const Flow& flow, double t) const {
  if (!flow.grouped) return std::max(0.0, flow.remaining - flow.rate * (t - flow.updated));
  if (flow.moving_slot == kNotQueued) return 0;
  const Group& group = groups_[flow.bottleneck];
  return std::max(0.0, group.moving[flow.moving_slot].virtual_finish - clock_at(group, t));
}

void FlowNetwork::bring_to_now(Flow& flow) const {
  flow.remaining = std::max(0.0, flow.remaining - flow.rate * (now_ - flow.updated));
  flow.updated = now_;
}

void FlowNetwork::join_group(uint32_t f) const {
  Flow& flow = flows_[f];
  const uint32_t link = flow.bottleneck;
  Group& group = groups_[link];
  if (flow.heap_slot != kNotQueued) unqueue(f);
  if (group.flows == 0) {
    group.clock = 0;
    group.clock_time = now_;
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
      flow.crossing_slot[i] = kNotQueued;
    } else {
      flow.crossing_slot[i] = static_cast<uint32_t>(group.crossings.size());
      group.crossings.push_back({use.link, use.count, f, static_cast<uint32_t>(i)});
    }
  }
  if (flow.state != State::Active) return;
  group.rebase_at = std::max(group.rebase_at, kRebaseFactor * flow.remaining);
  rebase_if_due(link);
  push_moving(group, {clock_at(group, now_) + flow.remaining, f});
  if (flow.moving_slot == 0) requeue_group(link);
}

void FlowNetwork::leave_group(uint32_t f) const {
  Flow& flow = flows_[f];
  const uint32_t link = flow.bottleneck;
  Group& group = groups_[link];
  flow.rate = group.rate;
  if (flow.moving_slot != kNotQueued) {
    flow.remaining = remaining_at(flow, now_);
    const uint32_t slot = flow.moving_slot;
    flow.moving_slot = kNotQueued;
    erase_moving(group, slot);
  }
  flow.updated = now_;
  for (size_t i = 0; i < flow.path.size(); ++i) {
    const uint32_t slot = flow.crossing_slot[i];
    if (slot == kNotQueued) {
      group.weight -= flow.path[i].count;
      continue;
    }
    const Crossing last = group.crossings.back();
    group.crossings.pop_back();
    if (slot < group.crossings.size()) {
      group.crossings[slot] = last;
      flows_[last.flow].crossing_slot[last.entry] = slot;
    }
  }
  flow.grouped = false;
  if (--group.flows == 0) {
    group.clock = 0;  // an empty group starts its clock again: its origin moves for free
    group.clock_time = now_;
    group.rebase_at = 0;
  }
  requeue_group(link);
}

void FlowNetwork::set_group_rate(uint32_t link, double rate) const {
  Group& group = groups_[link];
  group.clock = clock_at(group, now_);
  group.clock_time = now_;
  group.rate = rate;
  rebase_if_due(link);
  requeue_group(link);
}

void FlowNetwork::rebase_if_due(uint32_t link) const {
  Group& group = groups_[link];
  const double clock = clock_at(group, now_);
  if (clock <= group.rebase_at) return;
  ++counts_.rebases;
  group.clock = clock;
  group.clock_time = now_;
  double most_left = 0;
  for (Moving& m : group.moving) {
    m.virtual_finish -= group.clock;
    most_left = std::max(most_left, m.virtual_finish);
  }
  group.clock = 0;
  group.rebase_at = kRebaseFactor * most_left;
  // Subtracting one value keeps the order but may round two finishes into a tie, which the flow
  // numbers then order: rebuild the heap so that it holds either way, and requeue its first.
  for (auto slot = static_cast<uint32_t>(group.moving.size()); slot-- > 0;)
    heap_sift_down(group.moving, slot, moving_placer(group));
  requeue_group(link);
}

void FlowNetwork::push_moving(Group& group, const Moving& entry) const {
  group.moving.push_back(entry);
  heap_sift_up(group.moving, static_cast<uint32_t>(group.moving.size() - 1), moving_placer(group));
}

void FlowNetwork::erase_moving(Group& group, uint32_t slot) const {
  heap_erase(group.moving, slot, moving_placer(group));
}

void FlowNetwork::requeue_group(uint32_t link) const {
  Group& group = groups_[link];
  if (group.moving.empty()) {
    if (group.queue_slot != kNotQueued) unqueue_slot(group.queue_slot);
    return;
  }
  const Moving& first = group.moving.front();
  requeue(group.queue_slot,
          {group.clock_time + (first.virtual_finish - group.clock) / group.rate, first.flow, link});
}

void FlowNetwork::settle(uint32_t f, bool rate_changed) const {
  Flow& flow = flows_[f];
  if (groupable(flow)) {
    join_group(f);
  } else if (rate_changed || flow.heap_slot == kNotQueued) {
    schedule(f);
  }
}

void FlowNetwork::next_stamp() const {
  if (++stamp_ == 0) {  // wrapped: forget every old stamp
    for (LinkState& link : links_) link.visit = 0;
    for (Flow& flow : flows_) flow.visit = 0;
    std::fill(moved_stamp_.begin(), moved_stamp_.end(), 0);
    stamp_ = 1;
  }
}

void FlowNetwork::collect_component() const {
  component_flows_.clear();
  component_links_.clear();
  next_stamp();
  auto reach_link = [&](uint32_t link) {
    if (links_[link].visit == stamp_ || links_[link].head == kNoNode) return;
    links_[link].visit = stamp_;
    component_links_.push_back(link);
  };
  if (resharing_ == Resharing::Full) {
    for (uint32_t l = 0; l < capacity_.size(); ++l) reach_link(l);
  } else {
    for (uint32_t l : marked_links_) reach_link(l);
  }
  // Breadth-first over links: every flow on a reached link, every link of a reached flow.
  for (size_t i = 0; i < component_links_.size(); ++i) {
    for (uint64_t node = links_[component_links_[i]].head; node != kNoNode;) {
      const uint32_t f = flow_of(node);
      Flow& flow = flows_[f];
      node = flow.next_on_link[entry_of(node)];
      if (flow.visit == stamp_) continue;
      flow.visit = stamp_;
      component_flows_.push_back(f);
      for (const LinkUse& use : flow.path) reach_link(use.link);
    }
  }
  marked_links_.clear();
}

void FlowNetwork::reshare() const {
  dirty_ = false;
  ++recomputations_;
  if (groups_enabled_ && groups_.empty()) {
    // Sized at the first re-share: a network whose flows never share (a collective's stage
    // pattern, solved alone) pays nothing for groups.
    const size_t links = capacity_.size();
    groups_.resize(links);
    joining_weight_.assign(links, 0);
    deferred_weight_.assign(links, 0);
    new_load_.assign(links, 0.0);
    next_level_.assign(links, 0.0);
    moved_stamp_.assign(links, 0);
  }
  // A link is marked once per flow that started or ended on it.
  std::sort(marked_links_.begin(), marked_links_.end());
  marked_links_.erase(std::unique(marked_links_.begin(), marked_links_.end()), marked_links_.end());
  const bool done =
      resharing_ == Resharing::Incremental && ((groups_enabled_ && reshare_groups()) || reshare_affected());
  new_flows_.clear();
  if (done) return;
  ++counts_.component_fills;
  collect_component();
  flows_reshared_ += component_flows_.size();
  fill_component();
  commit_component();
}

void FlowNetwork::commit_component() const {
  // Every flow on a component link is in the component: recount its links from scratch.
  for (uint32_t l : component_links_) {
    load_[l] = 0;
    held_[l] = 0;
  }
  for (uint32_t f : component_flows_) {
    Flow& flow = flows_[f];
    flow.bottleneck = flow.next_bottleneck;
    settle(f, true);
    book(flow, +1);
  }
}

void FlowNetwork::fill_component() const {
  // Bring the component's flows to now_ at their old rates before the rates change (out of their
  // groups: every flow a component link holds is in the component).
  for (uint32_t f : component_flows_) {
    if (flows_[f].grouped) {
      leave_group(f);
    } else {
      bring_to_now(flows_[f]);
    }
  }
  if (component_flows_.size() == 1) {
    // A flow alone (a ring step's group, a single transfer) runs at its narrowest link.
    Flow& flow = flows_[component_flows_.front()];
    const Alone alone = rate_alone(flow);
    flow.rate = alone.rate;
    flow.next_bottleneck = alone.bottleneck;
    return;
  }
  // Progressive filling: repeatedly take the lowest level, a link's fair share per unfixed member
  // or a flow's own bound, fix the flows it holds to that rate (every unfixed flow crossing the
  // link, or the bounded flow), and take their use off their links. The heap holds one entry per
  // link and update plus one per bounded flow; stale link entries are skipped. Every flow on a
  // component link is in the component, so the links start at full capacity.
  // The heap lives in levels_, kept across re-shares (std::make_heap/push_heap/pop_heap, as
  // std::priority_queue would do on it, so the order of equal levels is unchanged).
  if (fixed_.size() < flows_.size()) fixed_.resize(flows_.size(), 0);
  std::vector<LinkShare>& heap = levels_;
  heap.clear();
  for (uint32_t f : component_flows_) fixed_[f] = 0;
  if (bounded_flows_ > 0) {
    for (uint32_t f : component_flows_) {
      if (flows_[f].max_rate < kInfinity) heap.push_back({flows_[f].max_rate, f, true});
    }
  }
  for (uint32_t l : component_links_) {
    remaining_capacity_[l] = capacity_[l];
    unfixed_weight_[l] = links_[l].weight;
    heap.push_back({remaining_capacity_[l] / unfixed_weight_[l], l});
  }
  std::make_heap(heap.begin(), heap.end(), std::greater<>());
  size_t unfixed = component_flows_.size();
  auto fix = [&](uint32_t f, double rate, uint32_t skip_link) {
    fixed_[f] = 1;
    --unfixed;
    Flow& flow = flows_[f];
    flow.rate = rate;
    flow.next_bottleneck = skip_link;
    for (const LinkUse& use : flow.path) {
      remaining_capacity_[use.link] = std::max(0.0, remaining_capacity_[use.link] - rate * use.count);
      unfixed_weight_[use.link] -= use.count;
      if (unfixed_weight_[use.link] > 0 && use.link != skip_link) {
        heap.push_back({remaining_capacity_[use.link] / unfixed_weight_[use.link], use.link});
        std::push_heap(heap.begin(), heap.end(), std::greater<>());
      }
    }
  };
  while (unfixed > 0 && !heap.empty()) {
    const LinkShare top = heap.front();
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    heap.pop_back();
    if (top.is_bound) {
      if (!fixed_[top.id]) fix(top.id, top.share, kNoLink);
      continue;
    }
    const uint32_t l = top.id;
    if (unfixed_weight_[l] == 0 || top.share != remaining_capacity_[l] / unfixed_weight_[l]) continue;
    for (uint64_t node = links_[l].head; node != kNoNode;) {
      const uint32_t f = flow_of(node);
      node = flows_[f].next_on_link[entry_of(node)];
      if (!fixed_[f]) fix(f, top.share, l);
    }
  }
}

bool FlowNetwork::reshare_affected() const {
  next_stamp();
  affected_flows_.clear();
  affected_links_.clear();
  // What may change first: the new flows and the flows held by a link whose set of flows
  // changed. A flow held elsewhere keeps its rate unless its own link is disturbed, which the
  // check below finds.
  for (uint32_t f : new_flows_) {
    if (flows_[f].visit != stamp_) add_affected(f);
  }
  unit_links_.clear();
  for (uint32_t l : marked_links_) {
    // The flows of its group stay in it as a unit unless they share another link with the change.
    const uint32_t grouped = groups_enabled_ ? groups_[l].flows : 0;
    if (grouped > 0) {
      const uint32_t local = affected_link(l);
      affected_links_[local].unit = true;
      unit_links_.push_back(local);
    }
    uint32_t to_find =
        held_[l] - grouped;  // a link that holds none (a client's unsaturated uplink) is not walked
    for (uint64_t node = links_[l].head; node != kNoNode && to_find > 0;) {
      const uint32_t f = flow_of(node);
      node = flows_[f].next_on_link[entry_of(node)];
      if (flows_[f].bottleneck != l || flows_[f].grouped) continue;
      --to_find;
      if (flows_[f].visit != stamp_) add_affected(f);
    }
  }
  for (int round = 0;; ++round) {
    entangle();
    fill_affected();
    find_violations();
    if (violations_.empty() && !entangle_crowded()) break;
    if (round == kMaxAffectedRounds || 2 * affected_flows_.size() > active_.size()) {
      // Most of the component is in already: filling it whole is cheaper than more rounds.
      marked_links_.clear();
      for (const AffectedLink& a : affected_links_) marked_links_.push_back(a.link);
      return false;
    }
    for (uint32_t local : violations_) expand(local);
  }
  marked_links_.clear();
  ++counts_.affected_fills;
  flows_reshared_ += affected_flows_.size();
  for (uint32_t u : unit_links_) {
    flows_reshared_ += affected_links_[u].unit_flows;
    if (affected_links_[u].unit_weight > 0) ++counts_.unit_groups;
  }
  commit_affected();
  return true;
}

void FlowNetwork::entangle() const {
  if (unit_links_.empty()) return;
  do {
    entangled_.clear();
    for (uint32_t u : unit_links_) {
      for (const Crossing& c : groups_[affected_links_[u].link].crossings) {
        if ((held_[c.link] > 0 || links_[c.link].visit == stamp_) && flows_[c.flow].visit != stamp_) {
          flows_[c.flow].visit = stamp_;
          entangled_.push_back(c.flow);
        }
      }
    }
    for (uint32_t f : entangled_) add_affected(f);
  } while (!entangled_.empty());
}

bool FlowNetwork::entangle_crowded() const {
  if (unit_links_.empty()) return false;
  // The units' new levels on the links their flows cross, tried out on load_ and undone.
  load_before_.clear();
  for (uint32_t u : unit_links_) {
    const AffectedLink& a = affected_links_[u];
    const double delta = a.unit_rate - a.unit_old_rate;
    for (const Crossing& c : groups_[a.link].crossings) {
      if (moved_stamp_[c.link] != stamp_) {
        moved_stamp_[c.link] = stamp_;
        load_before_.emplace_back(c.link, load_[c.link]);
      }
      load_[c.link] += c.count * delta;
    }
  }
  crowded_.clear();
  for (const auto& [link, before] : load_before_) {
    if (load_[link] > before && !(load_[link] < capacity_[link] * (1 - kFairnessTolerance)))
      crowded_.push_back(link);
    load_[link] = before;
    moved_stamp_[link] = 0;
  }
  if (crowded_.empty()) return false;
  std::sort(crowded_.begin(), crowded_.end());
  entangled_.clear();
  for (uint32_t u : unit_links_) {
    for (const Crossing& c : groups_[affected_links_[u].link].crossings) {
      if (flows_[c.flow].visit != stamp_ && std::binary_search(crowded_.begin(), crowded_.end(), c.link)) {
        flows_[c.flow].visit = stamp_;
        entangled_.push_back(c.flow);
      }
    }
  }
  for (uint32_t f : entangled_) add_affected(f);
  return true;
}

uint32_t FlowNetwork::affected_link(uint32_t link) const {
  if (links_[link].visit != stamp_) {
    links_[link].visit = stamp_;
    local_of_[link] = static_cast<uint32_t>(affected_links_.size());
    AffectedLink a;
    a.link = link;
    a.capacity_left = capacity_[link] - load_[link];
    affected_links_.push_back(a);
  }
  return local_of_[link];
}

void FlowNetwork::add_affected(uint32_t f) const {
  Flow& flow = flows_[f];
  flow.visit = stamp_;
  affected_flows_.push_back(f);
  // Bring it to now_ at its old rate before the rate changes (out of its group, if in one).
  if (flow.grouped) {
    leave_group(f);
  } else {
    bring_to_now(flow);
  }
  for (const LinkUse& use : flow.path) {
    AffectedLink& a = affected_links_[affected_link(use.link)];
    a.weight += use.count;
    a.old_load += flow.rate * use.count;
    a.capacity_left += flow.rate * use.count;
    if (flow.bottleneck == use.link) ++a.held_before;
  }
}

void FlowNetwork::expand(uint32_t local) const {
  if (affected_links_[local].expanded) return;
  affected_links_[local].expanded = true;
  for (uint64_t node = links_[affected_links_[local].link].head; node != kNoNode;) {
    const uint32_t f = flow_of(node);
    node = flows_[f].next_on_link[entry_of(node)];
    if (flows_[f].visit != stamp_) add_affected(f);
  }
}

bool FlowNetwork::fill_affected_at_one_link() const {
  one_link_ = kNoLink;
  if (affected_links_.empty()) return false;
  // The link every affected flow would have to cross: the one most of them cross.
  uint32_t widest = 0;
  for (uint32_t i = 1; i < affected_links_.size(); ++i) {
    if (affected_links_[i].weight > affected_links_[widest].weight) widest = i;
  }
  const AffectedLink& at = affected_links_[widest];
  if (at.weight != affected_flows_.size()) return false;
  auto remaining_of = [this](const AffectedLink& a) {
    // Every flow on it affected: its whole capacity, exact whatever drift load_ has.
    return links_[a.link].weight == a.weight ? capacity_[a.link] : std::max(0.0, a.capacity_left);
  };
  const double share = remaining_of(at) / at.weight;
  // Each crosses it once, and no flow's own bound is below the share (a bound equal to it comes
  // after the link).
  for (uint32_t f : affected_flows_) {
    const Flow& flow = flows_[f];
    if (flow.max_rate < share) return false;
    const auto use =
        std::find_if(flow.path.begin(), flow.path.end(), [&](const LinkUse& u) { return u.link == at.link; });
    if (use == flow.path.end() || use->count != 1) return false;
  }
  // Every other link's share strictly above: progressive filling pops this link first and fixes
  // every affected flow at its share. (A tie could hand some flows another bottleneck.)
  for (uint32_t i = 0; i < affected_links_.size(); ++i) {
    if (i == widest) continue;
    const AffectedLink& a = affected_links_[i];
    if (!(remaining_of(a) > share * a.weight)) return false;
  }
  for (AffectedLink& a : affected_links_) {
    a.remaining = std::max(0.0, remaining_of(a) - share * a.weight);
    a.unfixed = 0;
  }
  for (uint32_t f : affected_flows_) {
    flows_[f].next_rate = share;
    flows_[f].next_bottleneck = at.link;
  }
  one_link_ = widest;
  return true;
}

void FlowNetwork::fill_affected() const {
  // The common change in an incast: the flows one link holds, each also crossing a link of its
  // own with room to spare. Their new rate is that link's share, found without the heap.
  if (unit_links_.empty() && fill_affected_at_one_link()) return;
  one_link_ = kNoLink;
  // The affected flows of each link, contiguous (counting sort by link), so that fixing a link
  // walks its affected flows and not its whole list.
  for (AffectedLink& a : affected_links_) a.first = a.end = 0;
  for (uint32_t f : affected_flows_) {
    for (const LinkUse& use : flows_[f].path) ++affected_links_[local_of_[use.link]].end;
  }
  uint32_t offset = 0;
  for (AffectedLink& a : affected_links_) {
    a.first = offset;
    offset += a.end;
    a.end = a.first;
  }
  affected_on_link_.resize(offset);
  for (uint32_t f : affected_flows_) {
    for (const LinkUse& use : flows_[f].path)
      affected_on_link_[affected_links_[local_of_[use.link]].end++] = f;
  }
  // Progressive filling over the affected flows, as in fill_component, on what the others leave.
  if (fixed_.size() < flows_.size()) fixed_.resize(flows_.size(), 0);
  std::vector<LinkShare>& heap = levels_;
  heap.clear();
  for (uint32_t f : affected_flows_) {
    fixed_[f] = 0;
    if (flows_[f].max_rate < kInfinity) heap.push_back({flows_[f].max_rate, f, true});
  }
  size_t unfixed = affected_flows_.size();
  for (uint32_t i = 0; i < affected_links_.size(); ++i) {
    AffectedLink& a = affected_links_[i];
    if (a.unit) {
      const Group& group = groups_[a.link];
      a.unit_weight = group.weight;
      a.unit_flows = group.flows;
      a.unit_old_rate = group.rate;
      if (a.unit_weight > 0) ++unfixed;
    }
    // Every flow on it re-filled: its whole capacity, exact whatever drift load_ has.
    a.remaining = links_[a.link].weight == a.weight + a.unit_weight
                      ? capacity_[a.link]
                      : std::max(0.0, a.capacity_left + a.unit_old_rate * a.unit_weight);
    a.unfixed = a.weight + a.unit_weight;
    if (a.unfixed > 0) heap.push_back({a.remaining / a.unfixed, i});
  }
  std::make_heap(heap.begin(), heap.end(), std::greater<>());
  auto fix = [&](uint32_t f, double rate, uint32_t held_by) {
    fixed_[f] = 1;
    --unfixed;
    Flow& flow = flows_[f];
    flow.next_rate = rate;
    flow.next_bottleneck = held_by == kNoLink ? kNoLink : affected_links_[held_by].link;
    for (const LinkUse& use : flow.path) {
      AffectedLink& a = affected_links_[local_of_[use.link]];
      a.remaining = std::max(0.0, a.remaining - rate * use.count);
      a.unfixed -= use.count;
    }
  };
  // One entry per link, updated lazily: fixing flows at the lowest level never lowers another
  // link's share (it takes off at most that level per unit of weight, and the link's share was
  // at least that level), so a link's entry can only be stale by being too low. Popping a stale
  // entry puts the link back at its current share; fixing a flow pushes nothing.
  while (unfixed > 0 && !heap.empty()) {
    const LinkShare top = heap.front();
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    heap.pop_back();
    if (top.is_bound) {
      if (!fixed_[top.id]) fix(top.id, top.share, kNoLink);
      continue;
    }
    const AffectedLink& a = affected_links_[top.id];
    if (a.unfixed == 0) continue;
    if (const double share = a.remaining / a.unfixed; top.share != share) {
      heap.push_back({share, top.id});
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
      continue;
    }
    for (uint32_t k = a.first; k < a.end; ++k) {
      if (!fixed_[affected_on_link_[k]]) fix(affected_on_link_[k], top.share, top.id);
    }
    if (a.unit_weight > 0) {
      AffectedLink& unit = affected_links_[top.id];
      unit.unit_rate = top.share;
      unit.remaining = std::max(0.0, unit.remaining - top.share * unit.unit_weight);
      unit.unfixed -= unit.unit_weight;
      --unfixed;
    }
  }
}

void FlowNetwork::find_violations() const {
  // Affected flows held by a link are saturating it and no affected flow on it is faster; what is
  // left to check is the unaffected flows on the same links.
  violations_.clear();
  for (uint32_t i = 0; i < affected_links_.size(); ++i) {
    const AffectedLink& a = affected_links_[i];
    const uint32_t l = a.link;
    if (links_[l].weight == a.weight + a.unit_weight) continue;  // every flow on it is re-filled
    double fastest = 0, slowest_held = kInfinity;
    if (a.unit_weight > 0) fastest = slowest_held = a.unit_rate;
    if (one_link_ != kNoLink) {
      // Filled at one link: every affected flow has its share, and only that link holds them.
      fastest = flows_[affected_flows_.front()].next_rate;
      if (i == one_link_) slowest_held = fastest;
    } else {
      for (uint32_t k = a.first; k < a.end; ++k) {
        const Flow& flow = flows_[affected_on_link_[k]];
        fastest = std::max(fastest, flow.next_rate);
        if (flow.next_bottleneck == l) slowest_held = std::min(slowest_held, flow.next_rate);
      }
    }
    // Unaffected flows it holds keep their rate: it must stay saturated with none faster.
    if (held_[l] > a.held_before + a.unit_flows) {
      const bool saturated = a.remaining <= kFairnessTolerance * capacity_[l];
      if (!saturated || fastest > level_[l] * (1 + kFairnessTolerance)) {
        violations_.push_back(i);
        continue;
      }
    }
    // Affected flows it now holds must be no slower than any unaffected flow on it. If it held
    // flows before, none on it was faster than its level; otherwise look.
    if (slowest_held == kInfinity) continue;
    if (held_[l] > 0 && slowest_held >= level_[l] * (1 - kFairnessTolerance)) continue;
    double fastest_other = 0;
    for (uint64_t node = links_[l].head; node != kNoNode;) {
      const Flow& flow = flows_[flow_of(node)];
      node = flow.next_on_link[entry_of(node)];
      const bool in_unit = a.unit_weight > 0 && flow.grouped && flow.bottleneck == l;
      if (flow.visit != stamp_ && !in_unit) fastest_other = std::max(fastest_other, rate_of(flow));
    }
    if (slowest_held < fastest_other * (1 - kFairnessTolerance)) violations_.push_back(i);
  }
}

void FlowNetwork::commit_affected() const {
  for (uint32_t f : affected_flows_) {
    const Flow& flow = flows_[f];
    if (flow.bottleneck != kNoLink) --held_[flow.bottleneck];
  }
  // Units first, so that flows joining their groups take the new level. The links their flows
  // cross are not affected links (entangle): their load moves here, by the difference.
  for (uint32_t u : unit_links_) {
    AffectedLink& a = affected_links_[u];
    if (a.unit_weight == 0) continue;
    const double delta = a.unit_rate - a.unit_old_rate;
    for (const Crossing& c : groups_[a.link].crossings) load_[c.link] += c.count * delta;
    set_group_rate(a.link, a.unit_rate);
    level_[a.link] = a.unit_rate;  // every flow it holds is re-filled, at this level
    a.old_load += a.unit_old_rate * a.unit_weight;
    a.new_load += a.unit_rate * a.unit_weight;
  }
  for (uint32_t f : affected_flows_) {
    Flow& flow = flows_[f];
    const bool changed = flow.next_rate != flow.rate;
    flow.rate = flow.next_rate;
    flow.bottleneck = flow.next_bottleneck;
    // A flow of its own whose rate is unchanged keeps its completion entry (its remaining bytes
    // were only brought to now_ at that same rate). One that joins a group whose other flows keep
    // their rate takes the group's, within the fairness tolerance of its own (find_violations).
    settle(f, changed);
  }
  for (uint32_t f : affected_flows_) {
    const Flow& flow = flows_[f];
    const double rate = rate_of(flow);
    for (const LinkUse& use : flow.path) affected_links_[local_of_[use.link]].new_load += rate * use.count;
    if (flow.bottleneck != kNoLink) {
      const uint32_t b = flow.bottleneck;
      level_[b] = held_[b] == 0 ? rate : std::max(level_[b], rate);
      ++held_[b];
    }
  }
  for (const AffectedLink& a : affected_links_) {
    // A link whose flows are all re-filled is recounted exactly; others by the difference.
    load_[a.link] = links_[a.link].weight == a.weight + a.unit_weight
                        ? a.new_load
                        : load_[a.link] + (a.new_load - a.old_load);
  }
}

bool FlowNetwork::reshare_groups() const {
  next_stamp();  // flows: new; links: changed (links_[].visit), load remembered (moved_stamp_)
  for (uint32_t f : new_flows_) {
    if (flows_[f].max_rate != kInfinity) return false;
    flows_[f].visit = stamp_;
    for (const LinkUse& use : flows_[f].path) {
      joining_weight_[use.link] = deferred_weight_[use.link] = 0;
      new_load_[use.link] = 0;
    }
  }
  // A changed link is one whose level moves: one that holds flows (each grouped) and whose set of
  // flows changed, or one that new flows that cross no such link join.
  changed_links_.clear();
  auto change = [&](uint32_t l) {
    if (links_[l].visit == stamp_) return;
    links_[l].visit = stamp_;
    changed_links_.push_back(l);
  };
  for (uint32_t l : marked_links_) {
    if (held_[l] == 0) continue;
    if (groups_[l].flows != held_[l]) return false;  // it holds flows of their own (bounded ones)
    joining_weight_[l] = 0;
    change(l);
  }
  const size_t held_changed = changed_links_.size();
  // A new flow that crosses one link holding flows joins it (of two, which holds it takes filling).
  deferred_.clear();
  for (uint32_t f : new_flows_) {
    Flow& flow = flows_[f];
    flow.next_bottleneck = kNoLink;
    for (const LinkUse& use : flow.path) {
      if (held_[use.link] == 0) continue;
      if (flow.next_bottleneck != kNoLink) return false;
      flow.next_bottleneck = use.link;
    }
    if (flow.next_bottleneck == kNoLink) {
      deferred_.push_back(f);
      for (const LinkUse& use : flow.path) deferred_weight_[use.link] += use.count;
      continue;
    }
    for (const LinkUse& use : flow.path) {
      if (use.link == flow.next_bottleneck) joining_weight_[use.link] += use.count;
    }
  }
  // Its level: its capacity, less what the flows held elsewhere take, over its members. Those flows
  // must be no faster than it; they were no faster than its old level, so only a lower level needs
  // a look at them. Every new flow on it joins it.
  auto slower_than = [&](uint32_t l, double level) {
    for (uint64_t node = links_[l].head; node != kNoNode;) {
      const Flow& flow = flows_[flow_of(node)];
      node = flow.next_on_link[entry_of(node)];
      if (flow.visit == stamp_) {
        if (flow.next_bottleneck != l && next_level_[flow.next_bottleneck] > level) return false;
      } else if (flow.bottleneck != l && rate_of(flow) > level) {
        return false;
      }
    }
    return true;
  };
  for (size_t k = 0; k < held_changed; ++k) {
    const uint32_t l = changed_links_[k];
    const Group& group = groups_[l];
    const uint32_t members = group.weight + joining_weight_[l];
    if (links_[l].weight == members) {
      next_level_[l] = capacity_[l] / members;
      continue;
    }
    const double others = load_[l] - group.rate * group.weight;
    const double level = next_level_[l] = (capacity_[l] - others) / members;
    if (!(level > 0) || (level < group.rate && !slower_than(l, level))) return false;
  }
  // A new flow that crosses none joins the link where the room left per such flow is strictly the
  // least, after the other new flows took theirs; all such flows on that link must join it.
  for (uint32_t f : new_flows_) {
    const Flow& flow = flows_[f];
    if (flow.next_bottleneck == kNoLink) continue;
    for (const LinkUse& use : flow.path) {
      if (use.link != flow.next_bottleneck)
        new_load_[use.link] += use.count * next_level_[flow.next_bottleneck];
    }
  }
  auto room_left = [&](uint32_t l) { return std::max(0.0, capacity_[l] - load_[l] - new_load_[l]); };
  for (uint32_t f : deferred_) {
    Flow& flow = flows_[f];
    double lowest = kInfinity;
    bool tie = false;
    for (const LinkUse& use : flow.path) {
      const double level = room_left(use.link) / deferred_weight_[use.link];
      tie = level == lowest || (tie && level > lowest);
      if (level < lowest) {
        lowest = level;
        flow.next_bottleneck = use.link;
      }
    }
    if (flow.next_bottleneck == kNoLink || tie) return false;
    change(flow.next_bottleneck);
    for (const LinkUse& use : flow.path) {
      if (use.link == flow.next_bottleneck) joining_weight_[use.link] += use.count;
    }
  }
  for (size_t k = held_changed; k < changed_links_.size(); ++k) {
    const uint32_t l = changed_links_[k];
    if (deferred_weight_[l] != joining_weight_[l]) return false;
    next_level_[l] = room_left(l) / joining_weight_[l];
  }
  for (size_t k = held_changed; k < changed_links_.size(); ++k) {
    const uint32_t l = changed_links_[k];
    if (!(next_level_[l] > 0) || !slower_than(l, next_level_[l])) return false;
  }
  // The other links their flows cross must hold nothing, not be changed, and keep room to spare
  // at the new levels: then every flow elsewhere keeps its bottleneck and rate, and the new
  // levels are max-min fair.
  load_before_.clear();
  auto add_load = [&](uint32_t link, double delta) {
    if (held_[link] > 0 || links_[link].visit == stamp_) return false;
    if (moved_stamp_[link] != stamp_) {
      moved_stamp_[link] = stamp_;
      load_before_.emplace_back(link, load_[link]);
    }
    load_[link] += delta;
    return true;
  };
  bool room = true;
  for (size_t k = 0; room && k < held_changed; ++k) {
    const uint32_t l = changed_links_[k];
    const double delta = next_level_[l] - groups_[l].rate;
    for (const Crossing& c : groups_[l].crossings) {
      if (!(room = add_load(c.link, c.count * delta))) break;
    }
  }
  for (size_t k = 0; room && k < new_flows_.size(); ++k) {
    const Flow& flow = flows_[new_flows_[k]];
    for (const LinkUse& use : flow.path) {
      // A changed link it does not join counted it in its level already.
      if (links_[use.link].visit == stamp_) continue;
      if (!(room = add_load(use.link, use.count * next_level_[flow.next_bottleneck]))) break;
    }
  }
  for (size_t k = 0; room && k < load_before_.size(); ++k) {
    const auto [link, before] = load_before_[k];
    room = load_[link] <= before || load_[link] < capacity_[link] * (1 - kFairnessTolerance);
  }
  if (!room) {
    for (const auto& [link, before] : load_before_) load_[link] = before;
    return false;
  }
  for (size_t k = 0; k < changed_links_.size(); ++k) {
    const uint32_t l = changed_links_[k];
    const Group& group = groups_[l];
    const uint32_t members = group.weight + joining_weight_[l];
    // New flows held elsewhere cross only the links deferred flows joined.
    const double new_others = k < held_changed ? 0.0 : new_load_[l];
    load_[l] = links_[l].weight == members
                   ? next_level_[l] * members
                   : load_[l] + new_others + next_level_[l] * members - group.rate * group.weight;
    level_[l] = next_level_[l];
    flows_reshared_ += group.flows;
    if (group.flows > 0) set_group_rate(l, next_level_[l]);
  }
  for (uint32_t f : new_flows_) {
    Flow& flow = flows_[f];
    bring_to_now(flow);
    flow.bottleneck = flow.next_bottleneck;
    flow.rate = next_level_[flow.bottleneck];
    ++held_[flow.bottleneck];
    join_group(f);
  }
  flows_reshared_ += new_flows_.size();
  ++counts_.level_moves;
  marked_links_.clear();
  return true;
}

std::unique_ptr<NetworkModel> make_maxmin_network(std::vector<double> capacities, Resharing resharing) {
  return std::make_unique<FlowNetwork>(std::move(capacities), true, resharing);
}

std::unique_ptr<NetworkModel> make_no_contention_network(std::vector<double> capacities) {
  return std::make_unique<FlowNetwork>(std::move(capacities), false);
}

}  // namespace stepcast::net
