// Private to scheme/: the exchange of one parallel dimension whose ranks communicate in groups:
// tensor (all-reduce, or all-gather and reduce-scatter with sequence parallelism), context (ring
// attention's steps) and data (the gradient reduction: all-reduce, or reduce-scatter and
// all-gather under the distributed optimizer). Its members issue the same collectives in the same
// order (one stage program); a group's collectives of one stream run one at a time in that order,
// each once every member issued it (NCCL's communicator on one stream). The collective runs its
// group's plan on the flow network (PlanRunner) and ends for every member at once; the last
// member to issue it releases the others from waiting (their wait, not communication).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "scheme/composed_plans.hpp"
#include "scheme/exchange.hpp"
#include "scheme/plan_runner.hpp"

namespace stepcast::scheme {

class GroupExchange final : public Exchange {
 public:
  /// `plans` (its group_of_worker and groups of `dimension`) outlives the exchange; its flows
  /// and events carry `owner`.
  GroupExchange(const StepContext& context, WorkerRuntime& runtime, ParallelDimension dimension,
                const ComposedPlans& plans, int owner);

  [[nodiscard]] int inputs_needed(int /*op*/) const override { return 0; }
  [[nodiscard]] int items_per_step() const override { return 0; }
  void begin(WorkerRuntime& runtime) override;
  void step_started(int /*w*/) override {}
  void gradient_ready(int /*w*/, int /*tensor*/) override {}
  void start_comm(int w, int op, const CommOp& comm) override;
  void flow_done(net::FlowId flow) override { runner_.flow_done(flow); }
  void handle(const Event& event) override;
  void add_loads(SimulationResult& /*result*/, double /*window_start*/) const override {}

 private:
  struct Instance {
    CommOp comm;
    std::vector<std::pair<int, int>> members;  ///< (worker, op) that issued it
  };
  struct Stream {
    int group = 0;
    int64_t next = 0;  ///< the next collective to run, by issue number
    bool running = false;
    std::map<int64_t, Instance> issued;
  };
  void maybe_start(int stream);
  void finish(int stream);

  const StepContext& ctx_;
  WorkerRuntime& runtime_;
  const ParallelDimension dimension_;
  const ComposedPlans& plans_;
  PlanRunner runner_;  // tag = stream
  std::vector<Stream> streams_;
  std::map<std::pair<int, int>, int> stream_index_;  // (group, comm stream) -> streams_
  std::vector<std::map<int, int64_t>> issued_by_;    // worker -> comm stream -> collectives issued
};

}  // namespace stepcast::scheme
