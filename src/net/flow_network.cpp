#include "net/flow_network.hpp"

#include <algorithm>
#include <cmath>

#include "stepcast/error.hpp"

namespace stepcast::net {
namespace {
// A flow whose completion time is within this of the time advanced to has completed: it absorbs
// the rounding of remaining/rate, so that a flow never lingers with a few bytes left.
constexpr double kRelativeTimeTolerance = 1e-12;
constexpr double kAbsoluteTimeTolerance = 1e-15;

bool completes_by(double finish, double t) {
  return finish <= t + kAbsoluteTimeTolerance + kRelativeTimeTolerance * std::fabs(t);
}
}  // namespace

FlowNetwork::Core::Core(std::vector<double> capacities, bool share, Resharing resharing)
    : system(std::move(capacities), share),
      groups(system, completions, share && resharing == Resharing::Incremental),
      resharer(share ? make_resharer(resharing, system, groups) : nullptr) {}

FlowNetwork::FlowNetwork(std::vector<double> capacities, bool share, Resharing resharing)
    : share_(share), resharing_(resharing), core_(std::move(capacities), share, resharing) {}

FlowId FlowNetwork::start_flow(const FlowSpec& spec, double now) {
  core_.reap_finished();
  MaxMinSystem& system = core_.system;
  STEPCAST_ASSERT(spec.bytes >= 0 && std::isfinite(spec.bytes));
  STEPCAST_ASSERT(spec.max_rate > 0);
  STEPCAST_ASSERT(completes_by(system.now(), now));
  system.set_now(std::max(system.now(), now));
  const auto [f, alone] = system.add_flow(spec);
  Flow& flow = system.flow(f);
  const bool runs_alone = !share_ || (alone && resharing_ == Resharing::Incremental);
  if (!runs_alone) {
    // It shares a link: every flow that may now be reached from it must be in the link lists.
    system.list_unlisted();
    system.list(f);
  } else if (share_) {
    // A flow alone stays out of the link lists (a ring step on a fat-tree crosses ~12,000 link
    // directions) until another flow meets one of its links, which lists it first.
    system.add_unlisted(f);
  }
  if (flow.path.empty()) {
    flow.rate = kInfinity;
    core_.completions.schedule_flow(f, flow.finish_time());
  } else if (runs_alone) {
    // Its narrowest link, shared only among its own members: the flow is alone (a ring step's
    // group, a single transfer), or sharing is off. Nothing is re-shared (nor counted as such).
    const MaxMinSystem::Alone alone_rate = system.rate_alone(flow);
    flow.rate = alone_rate.rate;
    flow.bottleneck = alone_rate.bottleneck;
    core_.completions.schedule_flow(f, flow.finish_time());
  } else {
    system.mark_new(f);
  }
  return FlowId{f};
}

double FlowNetwork::next_completion() const {
  // Dropping flows that finished and were not restarted is not observable from outside; it has
  // to happen before bandwidth is re-shared.
  core_.settle();
  return core_.completions.next_finish();
}

std::vector<FlowId> FlowNetwork::advance_to(double t) {
  std::vector<FlowId> done;
  advance_to(t, done);
  return done;
}

void FlowNetwork::advance_to(double t, std::vector<FlowId>& done) {
  done.clear();
  core_.settle();
  MaxMinSystem& system = core_.system;
  CompletionHeap& completions = core_.completions;
  STEPCAST_ASSERT(completes_by(system.now(), t));
  system.set_now(std::max(system.now(), t));
  while (!completions.empty() && completes_by(completions.front().finish, t)) {
    const CompletionHeap::Entry first = completions.front();
    const uint32_t f = first.flow;
    if (first.group == CompletionHeap::kNoGroup) {
      completions.erase_flow(f);
    } else {
      core_.groups.finish_first(first.group, f);
    }
    Flow& flow = system.flow(f);
    flow.state = FlowState::Finished;
    flow.remaining = 0;
    flow.updated = system.now();
    system.account_bytes(flow, flow.bytes);
    core_.finished.push_back(f);
    done.push_back(FlowId{f});
  }
  core_.unrestarted = core_.finished.size();
}

void FlowNetwork::restart_flow(FlowId id, double bytes) {
  const uint32_t f = index(id);
  MaxMinSystem& system = core_.system;
  STEPCAST_ASSERT(f < system.num_flow_slots() && system.flow(f).state == FlowState::Finished);
  STEPCAST_ASSERT(bytes >= 0 && std::isfinite(bytes));
  Flow& flow = system.flow(f);
  flow.state = FlowState::Active;
  flow.bytes = flow.remaining = bytes;
  flow.updated = system.now();
  --core_.unrestarted;  // it stays in `finished`, which reap_finished skips as it is Active again
  // The set of active flows is unchanged, so the rate stays as it is. A pending re-share
  // reschedules the flow again if it is connected to the change.
  if (flow.grouped) {
    core_.groups.restart(f, bytes);
  } else {
    core_.completions.schedule_flow(f, flow.finish_time());
  }
}

double FlowNetwork::rate(FlowId id) const {
  const uint32_t f = index(id);
  STEPCAST_ASSERT(f < core_.system.num_flow_slots() && core_.system.flow(f).state == FlowState::Active);
  core_.settle();
  return core_.groups.rate_of(core_.system.flow(f));
}

std::vector<double> FlowNetwork::link_bytes_moved(double t) const {
  core_.settle();
  const MaxMinSystem& system = core_.system;
  STEPCAST_ASSERT(completes_by(system.now(), t));
  t = std::max(t, system.now());
  std::vector<double> moved = system.link_bytes();
  for (uint32_t f : system.active()) {
    const Flow& flow = system.flow(f);
    if (flow.state != FlowState::Active || flow.path.empty()) continue;
    // Every rate holds from its last update to t: nothing completes or starts before t.
    const double left = core_.groups.remaining_at(flow, t);
    const double done = std::max(0.0, flow.bytes - left);
    for (const LinkUse& use : flow.path) moved[use.link] += done * use.count;
  }
  return moved;
}

void FlowNetwork::Core::reshare() {
  STEPCAST_ASSERT(resharer != nullptr);
  ++system.counters().recomputations;
  // A link is marked once per flow that started or ended on it.
  std::vector<uint32_t>& marked = system.marked_links();
  std::sort(marked.begin(), marked.end());
  marked.erase(std::unique(marked.begin(), marked.end()), marked.end());
  resharer->reshare();
}

void FlowNetwork::Core::reap_finished() {
  // In the order advance_to returned them, skipping those restarted: the order decides which
  // slots remove() frees first, and so the ids that later flows get.
  for (uint32_t f : finished) {
    if (system.flow(f).state == FlowState::Finished) remove(f);
  }
  finished.clear();
  unrestarted = 0;
}

void FlowNetwork::Core::remove(uint32_t f) {
  if (system.flow(f).grouped) groups.leave(f);
  if (completions.queued_flow(f)) completions.erase_flow(f);
  system.remove_flow(f);
}

std::unique_ptr<NetworkModel> make_maxmin_network(std::vector<double> capacities, Resharing resharing) {
  return std::make_unique<FlowNetwork>(std::move(capacities), true, resharing);
}

std::unique_ptr<NetworkModel> make_no_contention_network(std::vector<double> capacities) {
  return std::make_unique<FlowNetwork>(std::move(capacities), false);
}

}  // namespace stepcast::net
