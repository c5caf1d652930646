// Private to scheme/: what every scheme's workers share. Each worker runs the step's op graph on
// its lanes (a lane runs one op at a time, in program order; an op starts once its dependencies
// and the inputs its exchange owes it are in), with this step's straggler factor on every op
// duration. Then the worker's optimizer step runs (costs.hpp: optimizer_step_time, scaled by the
// straggler factor; skipped when it takes no time), once the exchange finished every item of the
// step but those that follow it (Exchange::items_after_optimizer); it keeps the worker busy. A
// step ends when every op, the optimizer step, the host work and every item of the step
// are done; the next starts at once. Idle time (no lane busy) is split into waiting for other
// workers (until the latest barrier the worker depended on was released) and communication (the
// rest). Host work (add_host_work: the CPU an exchange's transfers cost,
// Workload::comm_cpu_per_byte) runs on the first lane, the one that computes: at once when that
// lane is free, else right after the op running there, before the lane's next op; it is busy
// time, like an op.
// Owns the measured window: it opens when every worker finished its warm-up steps.
#pragma once

#include <cstdint>
#include <vector>

#include "scheme/exchange.hpp"

namespace stepcast::scheme {

class WorkerRuntime {
 public:
  explicit WorkerRuntime(const StepContext& context);
  void attach(Exchange& exchange) { exchange_ = &exchange; }

  // Driven by the engine.
  void start_step(int w);
  void op_done(int w, int op);
  void optimizer_done(int w);
  void host_work_done(int w);

  // Driven by the exchange.
  /// One input every consumer of `tensor` waits for arrived at worker w; `source` is the trace
  /// span that brought it (kNone if not recorded), drawn as a flow to an op that waited for it.
  void input_arrived(int w, int tensor, int source = kNone);
  /// One input op `op` waits for arrived at worker w (`source` as for input_arrived).
  void op_input_arrived(int w, int op, int source = kNone);
  /// One item of worker w's step finished.
  void item_done(int w);
  /// Worker w's first lane owes `seconds` of host CPU to communication (see the file comment).
  void add_host_work(int w, double seconds);
  /// Worker w waited for others (a barrier) until now.
  void release(int w);
  void release_all();

  [[nodiscard]] int step(int w) const { return workers_[w].step; }
  /// s of a worker's optimizer step before its straggler factor; 0: it is skipped.
  [[nodiscard]] double optimizer_time() const { return optimizer_time_; }
  /// While worker w's op is ending (the exchange's op_finished and gradient_ready): its trace
  /// span, or kNone when not recorded.
  [[nodiscard]] int finishing_span(int w) const { return workers_[w].finishing_span; }
  /// Ops and exchange items done so far over those of every worker's steps (0..1): the run's
  /// progress, for SimulationOptions::progress.
  [[nodiscard]] double fraction_done() const;
  [[nodiscard]] bool all_done() const { return finished_ == static_cast<int>(workers_.size()); }
  /// Workers that finished their last step.
  [[nodiscard]] int finished() const { return finished_; }
  /// Start of the measured window, or -1 while warm-up steps are still running.
  [[nodiscard]] double window_start() const { return window_start_; }
  /// Link bytes when the window opened (empty if it opened at time 0).
  [[nodiscard]] const std::vector<double>& link_bytes_at_window() const { return link_bytes_at_window_; }
  /// Mean per measured step of each worker.
  [[nodiscard]] std::vector<WorkerTimes> times() const;

 private:
  void try_start_ops(int w);
  void maybe_finish_step(int w);
  void start_optimizer(int w);
  void start_host_work(int w);
  /// Worker w is busy from now for `duration` (s), on its first lane's trace track as `what`;
  /// returns when it ends.
  double occupy(int w, const char* what, double duration);
  void close_idle(int w);
  void unmet_input(int w, int op, int source);

  const StepContext& ctx_;
  Exchange* exchange_ = nullptr;
  const int num_ops_;
  const int target_steps_;
  const double optimizer_time_;
  std::vector<std::vector<int>> dependents_;  // op -> ops that list it in deps
  std::vector<std::vector<int>> lane_ops_;    // lane -> ops in program order
  std::vector<std::vector<int>> produced_;    // op -> tensors whose gradient it produces
  std::vector<int> unproduced_;               // tensors no op produces: ready when compute ends

  struct Worker {
    int step = 0;
    double compute_scale = 1;    // this step's straggler factor on every op duration
    std::vector<int> unmet;      // op -> deps and inputs still missing
    std::vector<int> lane_next;  // lane -> position in lane_ops_
    std::vector<uint8_t> lane_busy;
    int busy_lanes = 0;
    int ops_done = 0;
    int outstanding = 0;  // items of this step not finished
    enum class Optimizer : uint8_t { Pending, Running, Done } optimizer = Optimizer::Pending;
    double host_owed = 0;       // s of host work waiting for the first lane
    bool host_running = false;  // host work holds the first lane
    double step_start = 0;
    double first_start = 0;  // of its first step
    double idle_since = 0;
    double release = 0;                  // latest time a barrier this worker waited on was released
    double communication = 0, wait = 0;  // idle time of the current step
    std::vector<double> step_ends;
    // Trace only: op -> its span this step; the span of the input it got last and when.
    std::vector<int> op_span, waited_for;
    std::vector<double> waited_at;
    int finishing_span = kNone;
    double measured_compute = 0, measured_communication = 0, measured_wait = 0;
  };
  std::vector<Worker> workers_;
  uint64_t work_done_ = 0;  // ops and items finished, all workers
  int finished_ = 0;        // workers past the last step
  int past_warmup_ = 0;     // workers past the warm-up steps
  double window_start_;
  std::vector<double> link_bytes_at_window_;
};

}  // namespace stepcast::scheme
