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
//
// A composed run gives each worker its stage's program (StageProgram): its communication ops take
// no lane; each is handed to its dimension's exchange once its dependencies are done
// (Exchange::start_comm), is released when what it waits for from others is there (the last
// member of its group issued the collective; the other stage started sending the message:
// comm_released) and ends when the exchange calls comm_done. An idle interval is split along the
// chain of what the op ending it waited for, latest dependency first: a communication op's time
// from its release to its end is that dimension's exposed communication (WorkerTimes::exposed),
// from its issue to its release waiting for others (wait; for another pipeline stage, the
// bubble), and before its issue what it waited for in turn. Only times decide it, never the
// order of events at one instant, so identical ranks split alike.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "scheme/exchange.hpp"

namespace stepcast::scheme {

class WorkerRuntime {
 public:
  explicit WorkerRuntime(const StepContext& context);
  /// Adds an exchange. A composed run attaches one per parallel dimension, in ParallelDimension
  /// order (a communication op goes to the one of its dimension); other runs attach one.
  void attach(Exchange& exchange) { exchanges_.push_back(&exchange); }

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
  /// Worker w's communication op `op` ended (Exchange::start_comm). `source`: the trace span of
  /// what brought it (a message's send), drawn as an arrow to the op that waited for it.
  void comm_done(int w, int op, int source = kNone);
  /// The trace span of worker w's communication op `op` once it ended (kNone when not recorded).
  [[nodiscard]] int comm_span(int w, int op) const { return workers_[w].op_span.empty() ? kNone : workers_[w].op_span[op]; }
  /// What worker w's communication op `op` waits for from others is there: its group's last
  /// member issued it, or the message it receives started from the other stage at `since` (<=
  /// now; the issue time when that was earlier). Also releases w from waiting, as release().
  void comm_released(int w, int op, double since);
  /// Worker w's communication op `op` starts moving bytes now: released, it may still have queued
  /// behind its stream's earlier collectives. Only a trace reads it (its span starts here).
  void comm_started(int w, int op);
  /// Worker w's first lane owes `seconds` of host CPU to communication (see the file comment).
  void add_host_work(int w, double seconds);
  /// Worker w waited for others (a barrier) until now.
  void release(int w);
  void release_all();

  [[nodiscard]] int step(int w) const { return workers_[w].step; }
  /// The op graph worker w runs: its stage's program, or the workload.
  [[nodiscard]] const workload::Workload& ops_of(int w) const { return *programs_[program_of(w)].ops; }
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
  /// Composed runs: splits worker w's idle interval ending now along what `op` (starting now, or
  /// ending the step) waited for (the file comment).
  void split_idle(int w, int op);
  /// Fills a program's unmet_at_start and comms_due_at_start (the exchanges' inputs per op do
  /// not change from step to step).
  void count_unmet_at_start(size_t program);
  void unmet_input(int w, int op, int source);
  /// One dependency or input of op `op` of worker w is done.
  void satisfy(int w, int op);
  void start_op(int w, int op, int lane);
  void ended(int w, int op, int source = kNone);
  [[nodiscard]] int items_per_step() const;

  /// An op graph as the runtime walks it: the workload or one stage's program.
  /// Lists of ints for every op, in one array (an op's list at offsets[op]..offsets[op + 1]):
  /// a stage program of a deep pipeline has millions of ops, and a vector per op scatters them
  /// over the heap, so the walk from one op to the next missed the cache on every list.
  struct OpLists {
    std::vector<int> offsets{0};
    std::vector<int> values;
    [[nodiscard]] std::span<const int> operator[](int op) const {
      const auto i = static_cast<size_t>(op);
      return {values.data() + offsets[i], values.data() + offsets[i + 1]};
    }
    /// Appends the next op's list.
    void close_list() { offsets.push_back(static_cast<int>(values.size())); }
  };
  struct Program {
    const workload::Workload* ops = nullptr;
    const StageProgram* stage = nullptr;   // composed runs: its communication ops
    int num_ops = 0;
    // What the event loop reads of each op, kept apart from workload::Op (names, samples) so
    // that it stays in cache.
    std::vector<double> duration;            // op -> s on its lane
    std::vector<int> lane;                   // op -> its lane
    OpLists dependents;                      // op -> ops that list it in deps
    OpLists comm_deps;                       // op -> its deps that are communication ops, in deps order
    std::vector<std::vector<int>> lane_ops;  // lane -> compute ops in program order
    OpLists produced;                        // op -> tensors whose gradient it produces
    std::vector<int> unproduced;             // tensors no op produces: ready when compute ends
    // op -> deps and exchange inputs at a step's start, and the communication ops due then;
    // counted at the first step, once the exchanges are attached.
    std::vector<int> unmet_at_start;
    std::vector<int> comms_due_at_start;
  };
  [[nodiscard]] size_t program_of(int w) const {
    return program_of_.empty() ? 0 : static_cast<size_t>(program_of_[static_cast<size_t>(w)]);
  }
  [[nodiscard]] bool is_comm(const Program& p, int op) const { return p.stage != nullptr && p.stage->is_comm(op); }

  const StepContext& ctx_;
  std::vector<Exchange*> exchanges_;
  const int target_steps_;
  const double optimizer_time_;
  std::vector<Program> programs_;
  std::vector<int> program_of_;  // worker -> index into programs_ (empty: all program 0)

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
    // Composed runs: the split of idle time (split_idle), and each op's times this step.
    std::array<double, kParallelDimensions> exposed{}, measured_exposed{};
    double bubble = 0, measured_bubble = 0;
    std::deque<int> due_comms;  // communication ops whose dependencies are done, in the order they got due
    std::vector<double> issued_at, released_at, ended_at;  // op -> s (communication ops: all three)
    int last_ended = kNone;  // the op whose end is being handled
    std::vector<double> step_ends;
    // Trace only: op -> its span this step; the span of the input it got last and when.
    std::vector<int> op_span, waited_for;
    std::vector<double> started_at;  // communication op -> when its transfers began (comm_started)
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
