#include "net/component_fill.hpp"

namespace stepcast::net {
namespace {
// The component as progressive filling sees it: links by their global number, each with every
// flow in its list (all in the component).
struct ComponentView {
  MaxMinSystem& system;
  std::vector<FillLink>& links;

  const std::vector<LinkUse>& path(uint32_t f) { return system.flow(f).path; }
  uint32_t slot(uint32_t link) { return link; }
  FillLink& at(uint32_t link) { return links[link]; }
  void set_rate(uint32_t f, double rate, uint32_t held_by) {
    Flow& flow = system.flow(f);
    flow.rate = rate;
    flow.next_bottleneck = held_by;
  }
  MaxMinSystem::LinkFlows<Flow> flows_on(uint32_t link) { return system.flows_on(link); }
  uint32_t fix_rest(uint32_t /*link*/, double /*rate*/) { return 0; }
};
}  // namespace

ComponentFill::ComponentFill(MaxMinSystem& system, FlowGroups& groups) : system_(system), groups_(groups) {}

void ComponentFill::refill(bool all_links) {
  ++system_.counters().reshares.component_fills;
  collect(all_links);
  system_.counters().flows_reshared += flows_.size();
  fill();
  commit();
}

void ComponentFill::collect(bool all_links) {
  flows_.clear();
  links_.clear();
  system_.next_stamp();
  const uint32_t stamp = system_.stamp();
  auto reach_link = [&](uint32_t l) {
    LinkState& link = system_.link(l);
    if (link.visit == stamp || !link.has_flows()) return;
    link.visit = stamp;
    links_.push_back(l);
  };
  if (all_links) {
    const auto num_links = static_cast<uint32_t>(system_.num_links());
    for (uint32_t l = 0; l < num_links; ++l) reach_link(l);
  } else {
    for (uint32_t l : system_.marked_links()) reach_link(l);
  }
  // Breadth-first over links: every flow on a reached link, every link of a reached flow.
  for (size_t i = 0; i < links_.size(); ++i) {
    for (auto [f, flow] : system_.flows_on(links_[i])) {
      if (flow.visit == stamp) continue;
      flow.visit = stamp;
      flows_.push_back(f);
      for (const LinkUse& use : flow.path) reach_link(use.link);
    }
  }
  system_.marked_links().clear();
}

void ComponentFill::fill() {
  // Bring the component's flows to now at their old rates before the rates change (out of their
  // groups: every flow a component link holds is in the component).
  for (uint32_t f : flows_) {
    if (system_.flow(f).grouped) {
      groups_.leave(f);
    } else {
      system_.flow(f).bring_to(system_.now());
    }
  }
  if (flows_.size() == 1) {
    // A flow alone (a ring step's group, a single transfer) runs at its narrowest link.
    Flow& flow = system_.flow(flows_.front());
    const MaxMinSystem::Alone alone = system_.rate_alone(flow);
    flow.rate = alone.rate;
    flow.next_bottleneck = alone.bottleneck;
    return;
  }
  // Every flow on a component link is in the component, so the links start at full capacity. The
  // heap holds one entry per link and update plus one per bounded flow; stale link entries are
  // skipped. It lives in levels_, kept across re-shares.
  if (fixed_.size() < system_.num_flow_slots()) fixed_.resize(system_.num_flow_slots(), 0);
  if (fill_links_.size() < system_.num_links()) fill_links_.resize(system_.num_links());
  std::vector<Level>& heap = levels_;
  heap.clear();
  for (uint32_t f : flows_) fixed_[f] = 0;
  if (system_.bounded_flows() > 0) {
    for (uint32_t f : flows_) {
      const double max_rate = system_.flow(f).max_rate;
      if (max_rate < kInfinity) heap.push_back({max_rate, f, true});
    }
  }
  for (uint32_t l : links_) {
    FillLink& link = fill_links_[l];
    link.remaining = system_.capacity(l);
    link.unfixed = system_.link(l).weight;
    heap.push_back({link.remaining / link.unfixed, l});
  }
  ComponentView view{system_, fill_links_};
  progressive_fill<StaleLevels::Skip>(view, heap, fixed_, flows_.size());
}

void ComponentFill::commit() {
  // Every flow on a component link is in the component: recount its links from scratch.
  for (uint32_t l : links_) {
    system_.load(l) = 0;
    system_.held(l) = 0;
  }
  for (uint32_t f : flows_) {
    Flow& flow = system_.flow(f);
    flow.bottleneck = flow.next_bottleneck;
    groups_.settle(f, true);
    system_.book(flow, groups_.rate_of(flow), +1);
  }
}

void FullResharer::reshare() {
  system_.new_flows().clear();  // a change reaches the whole component of its links anyway
  component_.refill(true);
}

}  // namespace stepcast::net
