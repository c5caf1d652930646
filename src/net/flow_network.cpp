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
constexpr uint32_t kNoLink = ~uint32_t{0};

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
      unfixed_weight_(capacity_.size(), 0) {
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
    flow.rate = rate_alone(flow);
    schedule(f);
  } else {
    flow.rate = 0;
    for (const LinkUse& use : flow.path) marked_links_.push_back(use.link);
    dirty_ = true;
  }
  return FlowId{f};
}

double FlowNetwork::next_completion() const {
  // Dropping flows that finished and were not restarted is not observable from outside; it has
  // to happen before bandwidth is re-shared.
  const_cast<FlowNetwork*>(this)->reap_finished();
  if (dirty_) reshare();
  while (!completions_.empty()) {
    const Completion& c = next_entry();
    const Flow& flow = flows_[c.flow];
    if (flow.state == State::Active && flow.generation == c.generation) return c.time;
    pop_entry();
  }
  return kInfinity;
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
  while (!completions_.empty() && completes_by(next_entry().time, t)) {
    const Completion c = next_entry();
    pop_entry();
    Flow& flow = flows_[c.flow];
    if (flow.state != State::Active || flow.generation != c.generation) continue;
    flow.state = State::Finished;
    flow.remaining = 0;
    flow.updated = now_;
    account_bytes(flow, flow.bytes);
    finished_.push_back(c.flow);
    done.push_back(FlowId{c.flow});
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
    // Only the flows left on its links (and those connected to them) may speed up.
    if (share_ && links_[link].weight > 0) {
      marked_links_.push_back(link);
      dirty_ = true;
    }
  }
  if (flow.max_rate < kInfinity) --bounded_flows_;
  flow.listed = false;
  flow.state = State::Free;
  flow.generation++;
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
}

void FlowNetwork::list_unlisted() {
  // Unlisted flows never share a link (a flow that meets one lists them all first), so only a
  // flow about to share needs them listed; listing all of them keeps that rule simple and costs
  // each flow at most one listing.
  for (uint32_t f : unlisted_) list(f);
  unlisted_.clear();
}

double FlowNetwork::rate_alone(const Flow& flow) const {
  double rate = flow.max_rate;
  for (const LinkUse& use : flow.path) rate = std::min(rate, capacity_[use.link] / use.count);
  return rate;
}

void FlowNetwork::schedule(uint32_t f) const {
  Flow& flow = flows_[f];
  flow.generation++;
  flow.finish = flow.rate > 0 ? flow.updated + flow.remaining / flow.rate : kInfinity;
  if (std::isinf(flow.rate)) flow.finish = flow.updated;
  completions_.push_back({flow.finish, f, flow.generation});
  std::push_heap(completions_.begin(), completions_.end(), std::greater<>());
}

void FlowNetwork::pop_entry() const {
  std::pop_heap(completions_.begin(), completions_.end(), std::greater<>());
  completions_.pop_back();
}

void FlowNetwork::compact_completions() const {
  // Rescheduling a component leaves the old entries of its flows behind; drop them once they
  // outnumber the live ones so the heap stays proportional to the active flows.
  if (completions_.size() <= 2 * active_.size() + 64) return;
  // In place, without a second vector: every Active flow has exactly one entry of its current
  // generation (schedule pushes one per generation), and (time, flow) orders the live entries
  // totally, so the completions come out as from a heap rebuilt from the active flows.
  const auto stale = [this](const Completion& c) {
    const Flow& flow = flows_[c.flow];
    return flow.state != State::Active || flow.generation != c.generation;
  };
  completions_.erase(std::remove_if(completions_.begin(), completions_.end(), stale), completions_.end());
  std::make_heap(completions_.begin(), completions_.end(), std::greater<>());
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
  collect_component();
  flows_reshared_ += component_flows_.size();
  fill_component();
  for (uint32_t f : component_flows_) schedule(f);
  compact_completions();
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
    flow.rate = rate_alone(flow);
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

std::unique_ptr<NetworkModel> make_maxmin_network(std::vector<double> capacities, Resharing resharing) {
  return std::make_unique<FlowNetwork>(std::move(capacities), true, resharing);
}

std::unique_ptr<NetworkModel> make_no_contention_network(std::vector<double> capacities) {
  return std::make_unique<FlowNetwork>(std::move(capacities), false);
}

}  // namespace stepcast::net
