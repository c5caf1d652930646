// Private to scheme/: the sharded-data-parallel exchange (PyTorch FSDP/FSDP2, DeepSpeed ZeRO).
// The model's parameters are cut into units (FsdpConfig::unit_blocks model blocks each; see
// fsdp_units); a unit's parameters are all-gathered over its shard group before its forward ops
// (and again before its backward ops with full sharding and reshard_after_forward), and its
// gradients are reduce-scattered once its backward ops produced them all (then, with hybrid
// sharding, the reduced shard is all-reduced across groups). ZeRO-1 gathers the updated
// parameters after the optimizer step instead.
//
// Collectives run on two streams, as FSDP issues them: all-gathers on one, reduce-scatters (and
// HSDP's all-reduces) on the other. A stream runs its collectives one at a time in issue order;
// a collective starts when every worker issued it and its stream is free, and runs the stages of
// its plan on the flow network (plan_group_ring), so the two streams share NVLink and NICs.
// Issue rules, with p = prefetch:
// - forward gather of unit u: when unit u - p's first forward op starts (p >= 1), when unit
//   u - 1's forward ops all ended (p = 0), at step start for the first units;
// - backward gather of the unit j-th in backward order: when the unit (j - p)-th in backward order
//   starts its backward (p >= 1), when the previous one's backward ended (p = 0), when the forward
//   ended for the first units;
// - reduce-scatter of unit u: when its last gradient is produced;
// - ZeRO-1's gathers: all units, in forward order, once the worker's optimizer step on its shard
//   ended (worker_runtime.hpp), or when the optimizer step takes no time, once the step's last
//   reduce-scatter ended.
// A worker's step ends when its ops, its optimizer step and every collective of its step ended.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "scheme/exchange.hpp"
#include "scheme/plan_runner.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/detail/scheme/fsdp_units.hpp"

namespace stepcast::scheme {

class FsdpExchange final : public Exchange {
 public:
  FsdpExchange(const StepContext& context, WorkerRuntime& runtime, int owner);

  [[nodiscard]] int inputs_needed(int op) const override { return inputs_[static_cast<size_t>(op)]; }
  [[nodiscard]] int items_per_step() const override { return items_per_step_; }
  void begin(WorkerRuntime& runtime) override;
  void step_started(int w) override;
  void gradient_ready(int w, int tensor) override;
  void op_started(int w, int op) override;
  void op_finished(int w, int op) override;
  void flow_done(net::FlowId flow) override;
  void handle(const Event& event) override;
  [[nodiscard]] int items_after_optimizer() const override;
  void optimizer_done(int w) override;
  void add_loads(SimulationResult& /*result*/, double /*window_start*/) const override {}

 private:
  enum class Kind : uint8_t { GatherForward, GatherBackward, GatherAfterStep, ReduceScatter, AllReduce };
  struct Collective {
    Kind kind;
    int unit;
  };
  struct Stream {
    const CollectivePlan* plan_of_kind[5] = {};
    std::vector<Collective> sequence;  ///< one step's collectives, in issue order
    std::vector<int> position;         ///< (kind, unit) -> index in sequence, -1 if absent
    std::map<int64_t, int> joined;     ///< collective (step x sequence + index) -> workers issued
    int64_t next = 0;                  ///< next collective to run
    bool running = false;
    double start = 0;
    int thread = 0;  ///< trace thread
  };

  [[nodiscard]] const CollectivePlan& plan(const Stream& s, Kind kind) const {
    return *s.plan_of_kind[static_cast<int>(kind)];
  }
  /// Worker w issues a collective; by_worker: its progress did (a barrier for the others).
  void issue(int w, Kind kind, int unit, bool by_worker = true);
  void maybe_start(int stream);
  void collective_done(int stream);
  void finished(int stream, const Collective& c, int step, bool last_of_step);
  /// Bytes of the collective's buffer: the unit's parameters, or for HSDP's all-reduce its shard.
  [[nodiscard]] double buffer_bytes(const Collective& c) const;
  [[nodiscard]] int stream_of(Kind kind) const;

  const StepContext& ctx_;
  WorkerRuntime& runtime_;
  std::vector<FsdpUnit> units_;
  FsdpPlans own_plans_;
  const FsdpPlans& plans_;
  bool gather_forward_ = false, gather_backward_ = false, gather_after_step_ = false;
  bool reduce_ = false, replicate_ = false;
  std::vector<int> inputs_;                             // op -> inputs a step waits for (0 or 1)
  std::vector<std::vector<int>> forward_units_of_op_;   // op -> units whose parameters it reads
  std::vector<std::vector<int>> backward_units_of_op_;  // op -> units whose gradients it produces
  std::vector<int> unit_of_tensor_;
  std::vector<int> backward_rank_;  // unit -> position in backward order
  std::vector<int> unit_at_rank_;   // position in backward order -> unit
  int forward_ops_ = 0;             // ops that read a unit's parameters
  int items_per_step_ = 0;
  Stream streams_[2];
  PlanRunner runner_;  // tag = stream
  double gathered_share_ = 1;  // of a unit's bytes its all-gathers move (gathered_share)
  double reduced_share_ = 1;   // of a unit's bytes its reductions move (reduced_share)

  struct WorkerState {
    std::vector<int> forward_left, backward_left, gradients_left;  // per unit
    std::vector<uint8_t> forward_started, backward_started;        // per unit
    int forward_done = 0;
    std::vector<int> reduced_by;  // trace: unit -> span of the op that produced its last gradient
  };
  std::vector<WorkerState> workers_;
};

}  // namespace stepcast::scheme
