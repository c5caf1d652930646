#include "scheme/plan_runner.hpp"

#include "stepcast/error.hpp"

namespace stepcast::scheme {

int PlanRunner::start(const CollectivePlan& plan, double bytes, const CollectiveTerms& terms, int tag) {
  if (plan.stages.empty()) return kNone;
  int slot = 0;
  if (free_.empty()) {
    slot = static_cast<int>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_.back();
    free_.pop_back();
  }
  Slot& s = slots_[static_cast<size_t>(slot)];
  s.plan = &plan;
  s.bytes = bytes * wire_factor(terms);
  s.terms = terms;
  s.bound = transfer_bound(terms);
  s.stage = 0;
  s.tag = tag;
  s.start = engine_.now();
  ++running_;
  start_stage(slot);
  return slot;
}

void PlanRunner::start_stage(int slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  const Stage& stage = s.plan->stages[s.stage];
  const Pattern& pattern = s.plan->patterns[static_cast<size_t>(stage.pattern)];
  s.flows_left = static_cast<int>(pattern.groups.size());
  if (s.flows_left == 0) {
    engine_.schedule(engine_.now() + stage_latency(*s.plan, s.stage, s.terms), StageDone{owner_, slot});
    return;
  }
  for (const FlowGroup& group : pattern.groups) {
    const net::FlowId id = engine_.start_flow(
        {group.path, s.bytes * stage.fraction * group.size_factor, s.bound.of(group.size_factor)}, owner_);
    const size_t i = net::index(id);
    if (i >= slot_of_flow_.size()) slot_of_flow_.resize(i + 1, kNone);
    slot_of_flow_[i] = slot;
  }
}

void PlanRunner::flow_done(net::FlowId flow) {
  const int slot = slot_of_flow_[net::index(flow)];
  STEPCAST_ASSERT(slot != kNone);
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (--s.flows_left > 0) return;
  engine_.schedule(engine_.now() + stage_latency(*s.plan, s.stage, s.terms), StageDone{owner_, slot});
}

std::optional<int> PlanRunner::stage_done(int slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (++s.stage < s.plan->stages.size()) {
    start_stage(slot);
    return std::nullopt;
  }
  free_.push_back(slot);
  --running_;
  return s.tag;
}

}  // namespace stepcast::scheme
