#include "net/maxmin_system.hpp"

#include <algorithm>
#include <cmath>

#include "stepcast/error.hpp"

namespace stepcast::net {

MaxMinSystem::MaxMinSystem(std::vector<double> capacities, bool share)
    : capacity_(std::move(capacities)),
      share_(share),
      links_(capacity_.size()),
      load_(capacity_.size(), 0.0),
      level_(capacity_.size(), 0.0),
      held_(capacity_.size(), 0),
      link_bytes_(capacity_.size(), 0.0) {
  for (double c : capacity_) STEPCAST_ASSERT(c > 0 && std::isfinite(c));
}

MaxMinSystem::Added MaxMinSystem::add_flow(const FlowSpec& spec) {
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
  bool alone = true;
  for (const LinkUse& use : flow.path) {
    alone = alone && links_[use.link].weight == 0;
    links_[use.link].weight += use.count;
    counters_.max_link_flows = std::max(counters_.max_link_flows, links_[use.link].weight);
  }
  flow.bytes = flow.remaining = spec.bytes;
  flow.max_rate = spec.max_rate;
  if (flow.max_rate < kInfinity) ++bounded_flows_;
  flow.updated = now_;
  flow.state = FlowState::Active;
  flow.active_slot = static_cast<uint32_t>(active_.size());
  active_.push_back(f);
  return {f, alone};
}

void MaxMinSystem::list(uint32_t f) {
  Flow& flow = flows_[f];
  STEPCAST_ASSERT(!flow.grouped);
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
  book(flow, flow.rate, +1);
}

void MaxMinSystem::add_unlisted(uint32_t f) {
  flows_[f].unlisted_slot = static_cast<uint32_t>(unlisted_.size());
  unlisted_.push_back(f);
}

void MaxMinSystem::list_unlisted() {
  // Unlisted flows never share a link (a flow that meets one lists them all first), so only a
  // flow about to share needs them listed; listing all of them keeps that rule simple and costs
  // each flow at most one listing.
  for (uint32_t f : unlisted_) list(f);
  unlisted_.clear();
}

void MaxMinSystem::book(const Flow& flow, double rate, double sign) {
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

void MaxMinSystem::remove_flow(uint32_t f) {
  Flow& flow = flows_[f];
  STEPCAST_ASSERT(!flow.grouped);
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
  if (flow.listed) book(flow, flow.rate, -1);
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
    if (share_ && links_[link].weight > 0) marked_links_.push_back(link);
  }
  if (flow.max_rate < kInfinity) --bounded_flows_;
  flow.listed = false;
  flow.state = FlowState::Free;
  flow.path.clear();
  flow.next_on_link.clear();
  flow.prev_on_link.clear();
  flow.crossing_slot.clear();
  free_.push_back(f);
}

MaxMinSystem::Alone MaxMinSystem::rate_alone(const Flow& flow) const {
  Alone alone{flow.max_rate, kNoLink};
  for (const LinkUse& use : flow.path) {
    const double share = capacity_[use.link] / use.count;
    if (share < alone.rate) alone = {share, use.link};
  }
  return alone;
}

void MaxMinSystem::next_stamp() {
  if (++stamp_ == 0) {  // wrapped: forget every old stamp
    for (LinkState& link : links_) link.visit = 0;
    for (Flow& flow : flows_) flow.visit = 0;
    stamp_ = 1;
  }
}

}  // namespace stepcast::net
