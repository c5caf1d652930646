#include "net/incremental_resharer.hpp"

#include <algorithm>
#include <span>

namespace stepcast::net {
namespace {
// Affected-set re-sharing compares rates filled in different orders (and loads kept by
// differences): within this, two rates are equal and a link with this share of its capacity left
// is saturated. Far below what a simulated time can resolve, far above the rounding.
constexpr double kFairnessTolerance = 1e-9;
// Rounds of expanding the affected set before the whole component is re-filled instead.
constexpr int kMaxAffectedRounds = 8;
}  // namespace

struct IncrementalResharer::AffectedView {
  IncrementalResharer& r;

  const std::vector<LinkUse>& path(uint32_t f) { return r.system_.flow(f).path; }
  uint32_t slot(uint32_t link) { return r.local_of_[link]; }
  FillLink& at(uint32_t local) { return r.affected_links_[local]; }
  void set_rate(uint32_t f, double rate, uint32_t held_by) {
    Flow& flow = r.system_.flow(f);
    flow.next_rate = rate;
    flow.next_bottleneck = held_by == kNoLink ? kNoLink : r.affected_links_[held_by].link;
  }
  std::span<const uint32_t> flows_on(uint32_t local) {
    const AffectedLink& a = r.affected_links_[local];
    return {r.affected_on_link_.data() + a.first, a.end - a.first};
  }
  uint32_t fix_rest(uint32_t local, double rate) {
    AffectedLink& unit = r.affected_links_[local];
    if (unit.unit_weight == 0) return 0;
    unit.unit_rate = rate;
    unit.remaining = std::max(0.0, unit.remaining - rate * unit.unit_weight);
    unit.unfixed -= unit.unit_weight;
    return 1;
  }
};

IncrementalResharer::IncrementalResharer(MaxMinSystem& system, FlowGroups& groups)
    : system_(system), groups_(groups), component_(system, groups) {}

void IncrementalResharer::reshare() {
  if (local_of_.empty()) {
    // Sized at the first re-share: a network whose flows never share (a collective's stage
    // pattern, solved alone) pays nothing for them.
    const size_t links = system_.num_links();
    groups_.allocate();
    local_of_.assign(links, 0);
    joining_weight_.assign(links, 0);
    deferred_weight_.assign(links, 0);
    new_load_.assign(links, 0.0);
    next_level_.assign(links, 0.0);
    load_saved_.assign(links, 0);
  }
  const bool done = (groups_.enabled() && move_levels()) || fill_affected_set();
  system_.new_flows().clear();
  if (!done) component_.refill(false);
}

uint32_t IncrementalResharer::next_save_round() {
  if (++save_round_ == 0) {  // wrapped: forget every old round
    std::fill(load_saved_.begin(), load_saved_.end(), 0);
    save_round_ = 1;
  }
  return save_round_;
}

// ---- Affected-set fills ---------------------------------------------------------------------

bool IncrementalResharer::fill_affected_set() {
  system_.next_stamp();
  const uint32_t stamp = system_.stamp();
  affected_flows_.clear();
  affected_links_.clear();
  // What may change first: the new flows and the flows held by a link whose set of flows
  // changed. A flow held elsewhere keeps its rate unless its own link is disturbed, which the
  // check below finds.
  for (uint32_t f : system_.new_flows()) {
    if (system_.flow(f).visit != stamp) add_affected(f);
  }
  unit_links_.clear();
  for (uint32_t l : system_.marked_links()) {
    // The flows of its group stay in it as a unit unless they share another link with the change.
    const uint32_t grouped = groups_.flows_in(l);
    if (grouped > 0) {
      const uint32_t local = affected_link(l);
      affected_links_[local].unit = true;
      unit_links_.push_back(local);
    }
    // A link that holds none (a client's unsaturated uplink) is not walked.
    uint32_t to_find = system_.held(l) - grouped;
    if (to_find == 0) continue;
    for (const auto [f, flow] : system_.flows_on(l)) {
      if (flow.bottleneck != l || flow.grouped) continue;
      if (flow.visit != stamp) add_affected(f);
      if (--to_find == 0) break;
    }
  }
  for (int round = 0;; ++round) {
    entangle();
    fill();
    find_violations();
    if (violations_.empty() && !entangle_crowded()) break;
    if (round == kMaxAffectedRounds || 2 * affected_flows_.size() > system_.active().size()) {
      // Most of the component is in already: filling it whole is cheaper than more rounds.
      std::vector<uint32_t>& marked = system_.marked_links();
      marked.clear();
      for (const AffectedLink& a : affected_links_) marked.push_back(a.link);
      return false;
    }
    for (uint32_t local : violations_) expand(local);
  }
  system_.marked_links().clear();
  NetworkCounters& counters = system_.counters();
  ++counters.reshares.affected_fills;
  counters.flows_reshared += affected_flows_.size();
  for (uint32_t u : unit_links_) {
    counters.flows_reshared += affected_links_[u].unit_flows;
    if (affected_links_[u].unit_weight > 0) ++counters.reshares.unit_groups;
  }
  commit();
  return true;
}

void IncrementalResharer::entangle() {
  if (unit_links_.empty()) return;
  const uint32_t stamp = system_.stamp();
  do {
    entangled_.clear();
    for (uint32_t u : unit_links_) {
      for (const FlowGroups::Crossing& c : groups_.group(affected_links_[u].link).crossings) {
        Flow& flow = system_.flow(c.flow);
        if ((system_.held(c.link) > 0 || system_.link(c.link).visit == stamp) && flow.visit != stamp) {
          flow.visit = stamp;
          entangled_.push_back(c.flow);
        }
      }
    }
    for (uint32_t f : entangled_) add_affected(f);
  } while (!entangled_.empty());
}

bool IncrementalResharer::entangle_crowded() {
  if (unit_links_.empty()) return false;
  // The units' new levels on the links their flows cross, tried out on the loads and undone.
  const uint32_t round = next_save_round();
  load_before_.clear();
  for (uint32_t u : unit_links_) {
    const AffectedLink& a = affected_links_[u];
    const double delta = a.unit_rate - a.unit_old_rate;
    for (const FlowGroups::Crossing& c : groups_.group(a.link).crossings) {
      if (load_saved_[c.link] != round) {
        load_saved_[c.link] = round;
        load_before_.emplace_back(c.link, system_.load(c.link));
      }
      system_.load(c.link) += c.count * delta;
    }
  }
  crowded_.clear();
  for (const auto& [link, before] : load_before_) {
    const double load = system_.load(link);
    if (load > before && !(load < system_.capacity(link) * (1 - kFairnessTolerance)))
      crowded_.push_back(link);
    system_.load(link) = before;
  }
  if (crowded_.empty()) return false;
  std::sort(crowded_.begin(), crowded_.end());
  const uint32_t stamp = system_.stamp();
  entangled_.clear();
  for (uint32_t u : unit_links_) {
    for (const FlowGroups::Crossing& c : groups_.group(affected_links_[u].link).crossings) {
      Flow& flow = system_.flow(c.flow);
      if (flow.visit != stamp && std::binary_search(crowded_.begin(), crowded_.end(), c.link)) {
        flow.visit = stamp;
        entangled_.push_back(c.flow);
      }
    }
  }
  for (uint32_t f : entangled_) add_affected(f);
  return true;
}

uint32_t IncrementalResharer::affected_link(uint32_t link) {
  LinkState& state = system_.link(link);
  if (state.visit != system_.stamp()) {
    state.visit = system_.stamp();
    local_of_[link] = static_cast<uint32_t>(affected_links_.size());
    AffectedLink a;
    a.link = link;
    a.capacity_left = system_.capacity(link) - system_.load(link);
    affected_links_.push_back(a);
  }
  return local_of_[link];
}

void IncrementalResharer::add_affected(uint32_t f) {
  Flow& flow = system_.flow(f);
  flow.visit = system_.stamp();
  affected_flows_.push_back(f);
  // Bring it to now at its old rate before the rate changes (out of its group, if in one).
  if (flow.grouped) {
    groups_.leave(f);
  } else {
    flow.bring_to(system_.now());
  }
  for (const LinkUse& use : flow.path) {
    AffectedLink& a = affected_links_[affected_link(use.link)];
    a.weight += use.count;
    a.old_load += flow.rate * use.count;
    a.capacity_left += flow.rate * use.count;
    if (flow.bottleneck == use.link) ++a.held_before;
  }
}

void IncrementalResharer::expand(uint32_t local) {
  if (affected_links_[local].expanded) return;
  affected_links_[local].expanded = true;
  const uint32_t stamp = system_.stamp();
  for (const auto [f, flow] : system_.flows_on(affected_links_[local].link)) {
    if (flow.visit != stamp) add_affected(f);
  }
}

bool IncrementalResharer::fill_at_one_link() {
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
    // Every flow on it affected: its whole capacity, exact whatever drift the loads have.
    return system_.link(a.link).weight == a.weight ? system_.capacity(a.link)
                                                   : std::max(0.0, a.capacity_left);
  };
  const double share = remaining_of(at) / at.weight;
  // Each crosses it once, and no flow's own bound is below the share (a bound equal to it comes
  // after the link).
  for (uint32_t f : affected_flows_) {
    const Flow& flow = system_.flow(f);
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
    system_.flow(f).next_rate = share;
    system_.flow(f).next_bottleneck = at.link;
  }
  one_link_ = widest;
  return true;
}

void IncrementalResharer::fill() {
  // The common change in an incast: the flows one link holds, each also crossing a link of its
  // own with room to spare. Their new rate is that link's share, found without the heap.
  if (unit_links_.empty() && fill_at_one_link()) return;
  one_link_ = kNoLink;
  // The affected flows of each link, contiguous (counting sort by link), so that fixing a link
  // walks its affected flows and not its whole list.
  for (AffectedLink& a : affected_links_) a.first = a.end = 0;
  for (uint32_t f : affected_flows_) {
    for (const LinkUse& use : system_.flow(f).path) ++affected_links_[local_of_[use.link]].end;
  }
  uint32_t offset = 0;
  for (AffectedLink& a : affected_links_) {
    a.first = offset;
    offset += a.end;
    a.end = a.first;
  }
  affected_on_link_.resize(offset);
  for (uint32_t f : affected_flows_) {
    for (const LinkUse& use : system_.flow(f).path)
      affected_on_link_[affected_links_[local_of_[use.link]].end++] = f;
  }
  // Progressive filling over the affected flows, on what the others leave. One entry per link,
  // updated lazily (StaleLevels::Requeue): fixing a flow pushes nothing.
  if (fixed_.size() < system_.num_flow_slots()) fixed_.resize(system_.num_flow_slots(), 0);
  std::vector<Level>& heap = levels_;
  heap.clear();
  for (uint32_t f : affected_flows_) {
    fixed_[f] = 0;
    const double max_rate = system_.flow(f).max_rate;
    if (max_rate < kInfinity) heap.push_back({max_rate, f, true});
  }
  size_t unfixed = affected_flows_.size();
  for (uint32_t i = 0; i < affected_links_.size(); ++i) {
    AffectedLink& a = affected_links_[i];
    if (a.unit) {
      const FlowGroups::Group& group = groups_.group(a.link);
      a.unit_weight = group.weight;
      a.unit_flows = group.flows;
      a.unit_old_rate = group.rate;
      if (a.unit_weight > 0) ++unfixed;
    }
    // Every flow on it re-filled: its whole capacity, exact whatever drift the loads have.
    a.remaining = system_.link(a.link).weight == a.weight + a.unit_weight
                      ? system_.capacity(a.link)
                      : std::max(0.0, a.capacity_left + a.unit_old_rate * a.unit_weight);
    a.unfixed = a.weight + a.unit_weight;
    if (a.unfixed > 0) heap.push_back({a.remaining / a.unfixed, i});
  }
  AffectedView view{*this};
  progressive_fill<StaleLevels::Requeue>(view, heap, fixed_, unfixed);
}

void IncrementalResharer::find_violations() {
  // Affected flows held by a link are saturating it and no affected flow on it is faster; what is
  // left to check is the unaffected flows on the same links.
  violations_.clear();
  const uint32_t stamp = system_.stamp();
  for (uint32_t i = 0; i < affected_links_.size(); ++i) {
    const AffectedLink& a = affected_links_[i];
    const uint32_t l = a.link;
    if (system_.link(l).weight == a.weight + a.unit_weight) continue;  // every flow on it is re-filled
    double fastest = 0, slowest_held = kInfinity;
    if (a.unit_weight > 0) fastest = slowest_held = a.unit_rate;
    if (one_link_ != kNoLink) {
      // Filled at one link: every affected flow has its share, and only that link holds them.
      fastest = system_.flow(affected_flows_.front()).next_rate;
      if (i == one_link_) slowest_held = fastest;
    } else {
      for (uint32_t k = a.first; k < a.end; ++k) {
        const Flow& flow = system_.flow(affected_on_link_[k]);
        fastest = std::max(fastest, flow.next_rate);
        if (flow.next_bottleneck == l) slowest_held = std::min(slowest_held, flow.next_rate);
      }
    }
    // Unaffected flows it holds keep their rate: it must stay saturated with none faster.
    const uint32_t held = system_.held(l);
    const double level = system_.level(l);
    if (held > a.held_before + a.unit_flows) {
      const bool saturated = a.remaining <= kFairnessTolerance * system_.capacity(l);
      if (!saturated || fastest > level * (1 + kFairnessTolerance)) {
        violations_.push_back(i);
        continue;
      }
    }
    // Affected flows it now holds must be no slower than any unaffected flow on it. If it held
    // flows before, none on it was faster than its level; otherwise look.
    if (slowest_held == kInfinity) continue;
    if (held > 0 && slowest_held >= level * (1 - kFairnessTolerance)) continue;
    double fastest_other = 0;
    for (const auto& listed : system_.flows_on(l)) {
      const Flow& flow = listed.flow;
      const bool in_unit = a.unit_weight > 0 && flow.grouped && flow.bottleneck == l;
      if (flow.visit != stamp && !in_unit) fastest_other = std::max(fastest_other, groups_.rate_of(flow));
    }
    if (slowest_held < fastest_other * (1 - kFairnessTolerance)) violations_.push_back(i);
  }
}

void IncrementalResharer::commit() {
  for (uint32_t f : affected_flows_) {
    const Flow& flow = system_.flow(f);
    if (flow.bottleneck != kNoLink) --system_.held(flow.bottleneck);
  }
  // Units first, so that flows joining their groups take the new level. The links their flows
  // cross are not affected links (entangle): their load moves here, by the difference.
  for (uint32_t u : unit_links_) {
    AffectedLink& a = affected_links_[u];
    if (a.unit_weight == 0) continue;
    const double delta = a.unit_rate - a.unit_old_rate;
    for (const FlowGroups::Crossing& c : groups_.group(a.link).crossings)
      system_.load(c.link) += c.count * delta;
    groups_.set_rate(a.link, a.unit_rate);
    system_.level(a.link) = a.unit_rate;  // every flow it holds is re-filled, at this level
    a.old_load += a.unit_old_rate * a.unit_weight;
    a.new_load += a.unit_rate * a.unit_weight;
  }
  for (uint32_t f : affected_flows_) {
    Flow& flow = system_.flow(f);
    const bool changed = flow.next_rate != flow.rate;
    flow.rate = flow.next_rate;
    flow.bottleneck = flow.next_bottleneck;
    // A flow of its own whose rate is unchanged keeps its completion entry (its remaining bytes
    // were only brought to now at that same rate). One that joins a group whose other flows keep
    // their rate takes the group's, within the fairness tolerance of its own (find_violations).
    groups_.settle(f, changed);
  }
  for (uint32_t f : affected_flows_) {
    const Flow& flow = system_.flow(f);
    const double rate = groups_.rate_of(flow);
    for (const LinkUse& use : flow.path) affected_links_[local_of_[use.link]].new_load += rate * use.count;
    if (flow.bottleneck != kNoLink) {
      const uint32_t b = flow.bottleneck;
      uint32_t& held = system_.held(b);
      system_.level(b) = held == 0 ? rate : std::max(system_.level(b), rate);
      ++held;
    }
  }
  for (const AffectedLink& a : affected_links_) {
    // A link whose flows are all re-filled is recounted exactly; others by the difference.
    double& load = system_.load(a.link);
    load = system_.link(a.link).weight == a.weight + a.unit_weight ? a.new_load
                                                                   : load + (a.new_load - a.old_load);
  }
}

// ---- Level moves ----------------------------------------------------------------------------

bool IncrementalResharer::move_levels() {
  // A fresh stamp: on flows, new; on links, changed.
  system_.next_stamp();
  const uint32_t stamp = system_.stamp();
  const std::vector<uint32_t>& new_flows = system_.new_flows();
  for (uint32_t f : new_flows) {
    Flow& flow = system_.flow(f);
    if (flow.max_rate != kInfinity) return false;
    flow.visit = stamp;
    for (const LinkUse& use : flow.path) {
      joining_weight_[use.link] = deferred_weight_[use.link] = 0;
      new_load_[use.link] = 0;
    }
  }
  // A changed link is one whose level moves: one that holds flows (each grouped) and whose set of
  // flows changed, or one that new flows that cross no such link join.
  changed_links_.clear();
  auto change = [&](uint32_t l) {
    LinkState& link = system_.link(l);
    if (link.visit == stamp) return;
    link.visit = stamp;
    changed_links_.push_back(l);
  };
  for (uint32_t l : system_.marked_links()) {
    const uint32_t held = system_.held(l);
    if (held == 0) continue;
    if (groups_.group(l).flows != held) return false;  // it holds flows of their own (bounded ones)
    joining_weight_[l] = 0;
    change(l);
  }
  const size_t held_changed = changed_links_.size();
  // A new flow that crosses one link holding flows joins it (of two, which holds it takes filling).
  deferred_.clear();
  for (uint32_t f : new_flows) {
    Flow& flow = system_.flow(f);
    flow.next_bottleneck = kNoLink;
    for (const LinkUse& use : flow.path) {
      if (system_.held(use.link) == 0) continue;
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
    for (const auto& listed : system_.flows_on(l)) {
      const Flow& flow = listed.flow;
      if (flow.visit == stamp) {
        if (flow.next_bottleneck != l && next_level_[flow.next_bottleneck] > level) return false;
      } else if (flow.bottleneck != l && groups_.rate_of(flow) > level) {
        return false;
      }
    }
    return true;
  };
  for (size_t k = 0; k < held_changed; ++k) {
    const uint32_t l = changed_links_[k];
    const FlowGroups::Group& group = groups_.group(l);
    const uint32_t members = group.weight + joining_weight_[l];
    if (system_.link(l).weight == members) {
      next_level_[l] = system_.capacity(l) / members;
      continue;
    }
    const double others = system_.load(l) - group.rate * group.weight;
    const double level = next_level_[l] = (system_.capacity(l) - others) / members;
    if (!(level > 0) || (level < group.rate && !slower_than(l, level))) return false;
  }
  // A new flow that crosses none joins the link where the room left per such flow is strictly the
  // least, after the other new flows took theirs; all such flows on that link must join it.
  for (uint32_t f : new_flows) {
    const Flow& flow = system_.flow(f);
    if (flow.next_bottleneck == kNoLink) continue;
    for (const LinkUse& use : flow.path) {
      if (use.link != flow.next_bottleneck)
        new_load_[use.link] += use.count * next_level_[flow.next_bottleneck];
    }
  }
  auto room_left = [&](uint32_t l) {
    return std::max(0.0, system_.capacity(l) - system_.load(l) - new_load_[l]);
  };
  for (uint32_t f : deferred_) {
    Flow& flow = system_.flow(f);
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
  const uint32_t round = next_save_round();
  load_before_.clear();
  auto add_load = [&](uint32_t link, double delta) {
    if (system_.held(link) > 0 || system_.link(link).visit == stamp) return false;
    if (load_saved_[link] != round) {
      load_saved_[link] = round;
      load_before_.emplace_back(link, system_.load(link));
    }
    system_.load(link) += delta;
    return true;
  };
  bool room = true;
  for (size_t k = 0; room && k < held_changed; ++k) {
    const uint32_t l = changed_links_[k];
    const FlowGroups::Group& group = groups_.group(l);
    const double delta = next_level_[l] - group.rate;
    for (const FlowGroups::Crossing& c : group.crossings) {
      if (!(room = add_load(c.link, c.count * delta))) break;
    }
  }
  for (size_t k = 0; room && k < new_flows.size(); ++k) {
    const Flow& flow = system_.flow(new_flows[k]);
    for (const LinkUse& use : flow.path) {
      // A changed link it does not join counted it in its level already.
      if (system_.link(use.link).visit == stamp) continue;
      if (!(room = add_load(use.link, use.count * next_level_[flow.next_bottleneck]))) break;
    }
  }
  for (size_t k = 0; room && k < load_before_.size(); ++k) {
    const auto [link, before] = load_before_[k];
    const double load = system_.load(link);
    room = load <= before || load < system_.capacity(link) * (1 - kFairnessTolerance);
  }
  if (!room) {
    for (const auto& [link, before] : load_before_) system_.load(link) = before;
    return false;
  }
  NetworkCounters& counters = system_.counters();
  for (size_t k = 0; k < changed_links_.size(); ++k) {
    const uint32_t l = changed_links_[k];
    const FlowGroups::Group& group = groups_.group(l);
    const uint32_t members = group.weight + joining_weight_[l];
    // New flows held elsewhere cross only the links deferred flows joined.
    const double new_others = k < held_changed ? 0.0 : new_load_[l];
    double& load = system_.load(l);
    load = system_.link(l).weight == members
               ? next_level_[l] * members
               : load + new_others + next_level_[l] * members - group.rate * group.weight;
    system_.level(l) = next_level_[l];
    counters.flows_reshared += group.flows;
    if (group.flows > 0) groups_.set_rate(l, next_level_[l]);
  }
  for (uint32_t f : new_flows) {
    Flow& flow = system_.flow(f);
    flow.bring_to(system_.now());
    flow.bottleneck = flow.next_bottleneck;
    flow.rate = next_level_[flow.bottleneck];
    ++system_.held(flow.bottleneck);
    groups_.join(f);
  }
  counters.flows_reshared += new_flows.size();
  ++counters.reshares.level_moves;
  system_.marked_links().clear();
  return true;
}

}  // namespace stepcast::net
