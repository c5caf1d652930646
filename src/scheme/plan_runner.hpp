// Private to scheme/: the one place a collective plan runs on the step engine, for every exchange
// (bucketed all-reduce, sharded data parallelism, the parallel dimensions) and for the stand-alone
// collective. A running collective walks its plan's stages one after another: the flow groups of
// a stage start together, the stage ends when the last of them ends and then its latency passes
// (stage_latency: the links', a size regime's or an NCCL protocol's), and the next stage starts.
// A stage without transfers lasts its latency alone. A plan without stages ends as it starts.
//
// Several collectives may run at once (one per stream of an exchange, one per group of a parallel
// dimension); each holds a slot. The runner's flows and StageDone events carry the owner it was
// made for (StepEngine::start_flow), so the engine's caller routes them back to it.
//
//   PlanRunner runner(engine, owner);
//   const int slot = runner.start(plan, bytes, terms, tag);   // kNone: it ended at once
//   ... on a flow of this owner: runner.flow_done(id);
//   ... on StageDone{owner, slot}: if (auto tag = runner.stage_done(slot)) finished(*tag);
#pragma once

#include <optional>
#include <vector>

#include "scheme/exchange.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"

namespace stepcast::scheme {

class PlanRunner {
 public:
  PlanRunner(StepEngine& engine, int owner) : engine_(engine), owner_(owner) {}
  PlanRunner(const PlanRunner&) = delete;
  PlanRunner& operator=(const PlanRunner&) = delete;

  /// Starts a collective of `bytes` (per member: the buffer all-reduced, the output gathered, the
  /// input scattered) under `terms` at the engine's now. `plan` must outlive the collective.
  /// `tag` is the caller's name for it, handed back when it ends. Returns its slot, or kNone
  /// when the plan has no stage (it ended now; the caller finishes it at once).
  [[nodiscard]] int start(const CollectivePlan& plan, double bytes, const CollectiveTerms& terms, int tag);
  /// One of this runner's flows ended: when it was its stage's last, the stage's latency starts.
  void flow_done(net::FlowId flow);
  /// The StageDone of `slot` came due: starts the next stage, or when that was the last, frees the
  /// slot and returns the collective's tag.
  [[nodiscard]] std::optional<int> stage_done(int slot);
  /// s: when the collective in `slot` started.
  [[nodiscard]] double start_time(int slot) const { return slots_[static_cast<size_t>(slot)].start; }
  /// Collectives running now.
  [[nodiscard]] int running() const { return running_; }

 private:
  struct Slot {
    const CollectivePlan* plan = nullptr;
    double bytes = 0;  ///< wire bytes per member: the buffer times the protocol's framing
    CollectiveTerms terms;
    TransferBound bound;
    size_t stage = 0;
    int flows_left = 0;
    int tag = 0;
    double start = 0;
  };
  void start_stage(int slot);

  StepEngine& engine_;
  int owner_;
  std::vector<Slot> slots_;
  std::vector<int> free_;
  std::vector<int> slot_of_flow_;  // flow index -> slot
  int running_ = 0;
};

}  // namespace stepcast::scheme
