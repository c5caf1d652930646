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

bool completes_by(double finish, double t) {
  return finish <= t + kAbsoluteTimeTolerance + kRelativeTimeTolerance * std::fabs(t);
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
      local_of_(capacity_.size(), 0) {
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
    const uint32_t f = next_to_complete();
    unqueue(f);
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
  schedule(f);
}

double FlowNetwork::rate(FlowId id) const {
  const uint32_t f = index(id);
  STEPCAST_ASSERT(f < flows_.size() && flows_[f].state == State::Active);
  const_cast<FlowNetwork*>(this)->reap_finished();
  if (dirty_) reshare();
  return flows_[f].rate;
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
    // Every rate holds from `updated` to t: nothing completes or starts before t.
    const double left = std::max(0.0, flow.remaining - flow.rate * (t - flow.updated));
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
  for (const LinkUse& use : flow.path) load_[use.link] += sign * flow.rate * use.count;
  if (flow.bottleneck == kNoLink) return;
  const uint32_t b = flow.bottleneck;
  if (sign > 0) {
    level_[b] = held_[b] == 0 ? flow.rate : std::max(level_[b], flow.rate);
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
  flow.finish = flow.rate > 0 ? flow.updated + flow.remaining / flow.rate : kInfinity;
  if (std::isinf(flow.rate)) flow.finish = flow.updated;
  if (flow.heap_slot == kNotQueued) {
    completions_.push_back({flow.finish, f});
    flow.heap_slot = static_cast<uint32_t>(completions_.size() - 1);
    sift_up(flow.heap_slot);
    return;
  }
  Queued& entry = completions_[flow.heap_slot];
  const bool earlier = flow.finish < entry.finish;
  entry.finish = flow.finish;
  if (earlier) {
    sift_up(flow.heap_slot);
  } else {
    sift_down(flow.heap_slot);
  }
}

void FlowNetwork::unqueue(uint32_t f) const {
  const uint32_t slot = flows_[f].heap_slot;
  flows_[f].heap_slot = kNotQueued;
  const Queued last = completions_.back();
  completions_.pop_back();
  if (last.flow == f) return;
  place(slot, last);
  // The flow moved into the hole may belong above or below it.
  sift_up(slot);
  sift_down(flows_[last.flow].heap_slot);
}

void FlowNetwork::sift_up(uint32_t slot) const {
  const Queued entry = completions_[slot];
  while (slot > 0) {
    const uint32_t parent = (slot - 1) / 4;
    if (!(entry < completions_[parent])) break;
    place(slot, completions_[parent]);
    slot = parent;
  }
  place(slot, entry);
}

void FlowNetwork::sift_down(uint32_t slot) const {
  const Queued entry = completions_[slot];
  const auto n = static_cast<uint32_t>(completions_.size());
  for (;;) {
    const uint32_t first = 4 * slot + 1;
    if (first >= n) break;
    uint32_t best = first;
    for (uint32_t c = first + 1; c < std::min(first + 4, n); ++c) {
      if (completions_[c] < completions_[best]) best = c;
    }
    if (!(completions_[best] < entry)) break;
    place(slot, completions_[best]);
    slot = best;
  }
  place(slot, entry);
}

void FlowNetwork::collect_component() const {
  component_flows_.clear();
  component_links_.clear();
  if (++stamp_ == 0) {  // wrapped: forget every old stamp
    for (LinkState& link : links_) link.visit = 0;
    for (Flow& flow : flows_) flow.visit = 0;
    stamp_ = 1;
  }
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
  const bool done = resharing_ == Resharing::Incremental && reshare_affected();
  new_flows_.clear();
  if (done) return;
  collect_component();
  flows_reshared_ += component_flows_.size();
  fill_component();
  commit_component();
  for (uint32_t f : component_flows_) schedule(f);
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
    book(flow, +1);
  }
}

void FlowNetwork::fill_component() const {
  // Bring the component's flows to now_ at their old rates before the rates change.
  for (uint32_t f : component_flows_) {
    Flow& flow = flows_[f];
    flow.remaining = std::max(0.0, flow.remaining - flow.rate * (now_ - flow.updated));
    flow.updated = now_;
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
  if (++stamp_ == 0) {  // wrapped: forget every old stamp
    for (LinkState& link : links_) link.visit = 0;
    for (Flow& flow : flows_) flow.visit = 0;
    stamp_ = 1;
  }
  affected_flows_.clear();
  affected_links_.clear();
  // What may change first: the new flows and the flows held by a link whose set of flows
  // changed. A flow held elsewhere keeps its rate unless its own link is disturbed, which the
  // check below finds.
  for (uint32_t f : new_flows_) {
    if (flows_[f].visit != stamp_) add_affected(f);
  }
  // A link is marked once per flow that started or ended on it.
  std::sort(marked_links_.begin(), marked_links_.end());
  marked_links_.erase(std::unique(marked_links_.begin(), marked_links_.end()), marked_links_.end());
  for (uint32_t l : marked_links_) {
    uint32_t to_find = held_[l];  // a link that holds none (a client's unsaturated uplink) is not walked
    for (uint64_t node = links_[l].head; node != kNoNode && to_find > 0;) {
      const uint32_t f = flow_of(node);
      node = flows_[f].next_on_link[entry_of(node)];
      if (flows_[f].bottleneck != l) continue;
      --to_find;
      if (flows_[f].visit != stamp_) add_affected(f);
    }
  }
  for (int round = 0;; ++round) {
    fill_affected();
    find_violations();
    if (violations_.empty()) break;
    if (round == kMaxAffectedRounds || 2 * affected_flows_.size() > active_.size()) {
      // Most of the component is in already: filling it whole is cheaper than more rounds.
      marked_links_.clear();
      for (const AffectedLink& a : affected_links_) marked_links_.push_back(a.link);
      return false;
    }
    for (uint32_t local : violations_) expand(local);
  }
  marked_links_.clear();
  flows_reshared_ += affected_flows_.size();
  commit_affected();
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
  // Bring it to now_ at its old rate before the rate changes.
  flow.remaining = std::max(0.0, flow.remaining - flow.rate * (now_ - flow.updated));
  flow.updated = now_;
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
    const auto use = std::find_if(flow.path.begin(), flow.path.end(),
                                  [&](const LinkUse& u) { return u.link == at.link; });
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
  if (fill_affected_at_one_link()) return;
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
    for (const LinkUse& use : flows_[f].path) affected_on_link_[affected_links_[local_of_[use.link]].end++] = f;
  }
  // Progressive filling over the affected flows, as in fill_component, on what the others leave.
  if (fixed_.size() < flows_.size()) fixed_.resize(flows_.size(), 0);
  std::vector<LinkShare>& heap = levels_;
  heap.clear();
  for (uint32_t f : affected_flows_) {
    fixed_[f] = 0;
    if (flows_[f].max_rate < kInfinity) heap.push_back({flows_[f].max_rate, f, true});
  }
  for (uint32_t i = 0; i < affected_links_.size(); ++i) {
    AffectedLink& a = affected_links_[i];
    // Every flow on it affected: its whole capacity, exact whatever drift load_ has.
    a.remaining = links_[a.link].weight == a.weight ? capacity_[a.link] : std::max(0.0, a.capacity_left);
    a.unfixed = a.weight;
    heap.push_back({a.remaining / a.unfixed, i});
  }
  std::make_heap(heap.begin(), heap.end(), std::greater<>());
  size_t unfixed = affected_flows_.size();
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
  }
}

void FlowNetwork::find_violations() const {
  // Affected flows held by a link are saturating it and no affected flow on it is faster; what is
  // left to check is the unaffected flows on the same links.
  violations_.clear();
  for (uint32_t i = 0; i < affected_links_.size(); ++i) {
    const AffectedLink& a = affected_links_[i];
    const uint32_t l = a.link;
    if (links_[l].weight == a.weight) continue;  // every flow on it is affected
    double fastest = 0, slowest_held = kInfinity;
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
    if (held_[l] > a.held_before) {
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
      if (flow.visit != stamp_) fastest_other = std::max(fastest_other, flow.rate);
    }
    if (slowest_held < fastest_other * (1 - kFairnessTolerance)) violations_.push_back(i);
  }
}

void FlowNetwork::commit_affected() const {
  for (uint32_t f : affected_flows_) {
    const Flow& flow = flows_[f];
    if (flow.bottleneck != kNoLink) --held_[flow.bottleneck];
    for (const LinkUse& use : flow.path) affected_links_[local_of_[use.link]].new_load += flow.next_rate * use.count;
  }
  for (const AffectedLink& a : affected_links_) {
    // A link whose flows are all affected is recounted exactly; others by the difference.
    load_[a.link] = links_[a.link].weight == a.weight ? a.new_load : load_[a.link] + (a.new_load - a.old_load);
  }
  for (uint32_t f : affected_flows_) {
    Flow& flow = flows_[f];
    const bool changed = flow.next_rate != flow.rate;
    flow.rate = flow.next_rate;
    flow.bottleneck = flow.next_bottleneck;
    if (flow.bottleneck != kNoLink) {
      const uint32_t b = flow.bottleneck;
      level_[b] = held_[b] == 0 ? flow.rate : std::max(level_[b], flow.rate);
      ++held_[b];
    }
    // A flow whose rate is unchanged keeps its completion entry (its remaining bytes were only
    // brought to now_ at that same rate).
    if (changed) schedule(f);
  }
}

std::unique_ptr<NetworkModel> make_maxmin_network(std::vector<double> capacities, Resharing resharing) {
  return std::make_unique<FlowNetwork>(std::move(capacities), true, resharing);
}

std::unique_ptr<NetworkModel> make_no_contention_network(std::vector<double> capacities) {
  return std::make_unique<FlowNetwork>(std::move(capacities), false);
}

}  // namespace stepcast::net
