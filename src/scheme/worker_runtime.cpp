#include "scheme/worker_runtime.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "stepcast/detail/scheme/costs.hpp"

namespace stepcast::scheme {

WorkerRuntime::WorkerRuntime(const StepContext& context)
    : ctx_(context),
      num_ops_(static_cast<int>(context.workload.ops.size())),
      target_steps_(context.options.warmup_steps + context.options.measure_steps),
      optimizer_time_(optimizer_step_time(context.workload, context.cluster.spec, context.scheme)),
      // Without warm-up the window is the whole run, open from the start (so a shard's apply time
      // counts from the first step, not only the apply still running at the end).
      window_start_(context.options.warmup_steps == 0 ? 0.0 : -1.0) {
  const workload::Workload& w = ctx_.workload;
  dependents_.resize(num_ops_);
  lane_ops_.resize(w.lanes.size());
  produced_.resize(num_ops_);
  for (int op = 0; op < num_ops_; ++op) {
    for (int d : w.ops[op].deps) dependents_[d].push_back(op);
    lane_ops_[w.ops[op].lane].push_back(op);
  }
  for (int t = 0; t < static_cast<int>(w.tensors.size()); ++t) {
    if (w.tensors[t].producer >= 0) {
      produced_[w.tensors[t].producer].push_back(t);
    } else {
      unproduced_.push_back(t);
    }
  }
  workers_.resize(ctx_.workers());
  for (Worker& worker : workers_) {
    worker.unmet.resize(num_ops_);
    worker.lane_next.resize(w.lanes.size());
    worker.lane_busy.resize(w.lanes.size());
    worker.step_ends.reserve(target_steps_ + 1);
    if (ctx_.trace != nullptr) {
      worker.op_span.assign(num_ops_, kNone);
      worker.waited_for.assign(num_ops_, kNone);
      worker.waited_at.assign(num_ops_, 0.0);
    }
  }
}

void WorkerRuntime::start_step(int w) {
  Worker& worker = workers_[w];
  const double now = ctx_.engine.now();
  worker.compute_scale = straggler_factor(ctx_.options.seed, w, worker.step, ctx_.options.compute_cv);
  worker.step_start = now;
  if (worker.step == 0) worker.first_start = now;
  worker.idle_since = now;
  worker.release = now;
  worker.communication = worker.wait = 0;
  worker.ops_done = 0;
  worker.optimizer = optimizer_time_ > 0 ? Worker::Optimizer::Pending : Worker::Optimizer::Done;
  std::fill(worker.lane_next.begin(), worker.lane_next.end(), 0);
  for (int op = 0; op < num_ops_; ++op) {
    worker.unmet[op] = static_cast<int>(ctx_.workload.ops[op].deps.size()) + exchange_->inputs_needed(op);
  }
  worker.outstanding = exchange_->items_per_step();
  exchange_->step_started(w);
  try_start_ops(w);
}

void WorkerRuntime::close_idle(int w) {
  // Split the idle interval that ends now into waiting for others (until the last barrier this
  // worker depended on was released) and waiting for the network (the rest).
  Worker& worker = workers_[w];
  const double idle = ctx_.engine.now() - worker.idle_since;
  if (idle <= 0) return;
  const double wait = std::clamp(worker.release - worker.idle_since, 0.0, idle);
  worker.wait += wait;
  worker.communication += idle - wait;
}

void WorkerRuntime::try_start_ops(int w) {
  Worker& worker = workers_[w];
  const double now = ctx_.engine.now();
  for (size_t lane = 0; lane < lane_ops_.size(); ++lane) {
    if (worker.lane_busy[lane] || worker.lane_next[lane] >= static_cast<int>(lane_ops_[lane].size()))
      continue;
    const int op = lane_ops_[lane][worker.lane_next[lane]];
    if (worker.unmet[op] > 0) continue;
    if (worker.busy_lanes == 0) close_idle(w);
    worker.lane_busy[lane] = 1;
    worker.busy_lanes++;
    worker.lane_next[lane]++;
    const double duration = ctx_.workload.ops[op].duration * worker.compute_scale;
    if (ctx_.trace != nullptr) {
      worker.op_span[op] = kNone;
      if (ctx_.layout.keeps(w, worker.step)) {
        worker.op_span[op] = ctx_.span({.process = w,
                                        .thread = static_cast<int>(lane),
                                        .name = ctx_.workload.ops[op].name,
                                        .category = "compute",
                                        .start = now,
                                        .duration = duration,
                                        .step = worker.step});
        // The input it got last, if that is what it was waiting for (it starts as it arrives).
        if (worker.waited_for[op] != kNone && worker.waited_at[op] == now) {
          ctx_.flow(worker.waited_for[op], worker.op_span[op], "input");
        }
      }
      worker.waited_for[op] = kNone;
    }
    ctx_.engine.schedule(now + duration, OpDone{w, op});
    exchange_->op_started(w, op);
  }
}

void WorkerRuntime::op_done(int w, int op) {
  Worker& worker = workers_[w];
  const int lane = ctx_.workload.ops[op].lane;
  worker.lane_busy[lane] = 0;
  worker.busy_lanes--;
  if (worker.busy_lanes == 0) worker.idle_since = ctx_.engine.now();
  // Host work owed while the op ran goes before the lane's next op.
  if (lane == 0 && worker.host_owed > 0) start_host_work(w);
  worker.ops_done++;
  work_done_++;
  for (int d : dependents_[op]) worker.unmet[d]--;
  if (ctx_.trace != nullptr) worker.finishing_span = worker.op_span[op];
  exchange_->op_finished(w, op);
  for (int t : produced_[op]) exchange_->gradient_ready(w, t);
  if (worker.ops_done == num_ops_) {
    for (int t : unproduced_) exchange_->gradient_ready(w, t);
  }
  worker.finishing_span = kNone;
  try_start_ops(w);
  maybe_finish_step(w);
}

void WorkerRuntime::unmet_input(int w, int op, int source) {
  Worker& worker = workers_[w];
  if (--worker.unmet[op] == 0 && source != kNone) {
    worker.waited_for[op] = source;
    worker.waited_at[op] = ctx_.engine.now();
  }
}

void WorkerRuntime::input_arrived(int w, int tensor, int source) {
  for (int consumer : ctx_.workload.tensors[tensor].consumers) unmet_input(w, consumer, source);
  try_start_ops(w);
}

void WorkerRuntime::op_input_arrived(int w, int op, int source) {
  unmet_input(w, op, source);
  try_start_ops(w);
}

void WorkerRuntime::add_host_work(int w, double seconds) {
  Worker& worker = workers_[w];
  worker.host_owed += seconds;
  if (!worker.lane_busy[0]) start_host_work(w);
}

void WorkerRuntime::start_host_work(int w) {
  Worker& worker = workers_[w];
  const double duration = worker.host_owed;
  worker.host_owed = 0;
  worker.lane_busy[0] = 1;
  worker.host_running = true;
  ctx_.engine.schedule(occupy(w, "host: communication", duration), HostWorkDone{w});
}

double WorkerRuntime::occupy(int w, const char* what, double duration) {
  Worker& worker = workers_[w];
  const double now = ctx_.engine.now();
  if (worker.busy_lanes == 0) close_idle(w);
  worker.busy_lanes++;
  if (ctx_.trace != nullptr && ctx_.layout.keeps(w, worker.step)) {
    ctx_.span({.process = w,
               .thread = 0,
               .name = what,
               .category = "compute",
               .start = now,
               .duration = duration,
               .step = worker.step});
  }
  return now + duration;
}

void WorkerRuntime::host_work_done(int w) {
  Worker& worker = workers_[w];
  worker.lane_busy[0] = 0;
  worker.host_running = false;
  if (--worker.busy_lanes == 0) worker.idle_since = ctx_.engine.now();
  if (worker.host_owed > 0) {
    start_host_work(w);
    return;
  }
  try_start_ops(w);
  maybe_finish_step(w);
}

void WorkerRuntime::item_done(int w) {
  workers_[w].outstanding--;
  work_done_++;
  maybe_finish_step(w);
}

void WorkerRuntime::release(int w) {
  Worker& worker = workers_[w];
  worker.release = std::max(worker.release, ctx_.engine.now());
}

void WorkerRuntime::release_all() {
  const double now = ctx_.engine.now();
  for (Worker& worker : workers_) worker.release = std::max(worker.release, now);
}

void WorkerRuntime::start_optimizer(int w) {
  Worker& worker = workers_[w];
  worker.optimizer = Worker::Optimizer::Running;
  ctx_.engine.schedule(occupy(w, "optimizer step", optimizer_time_ * worker.compute_scale), OptimizerDone{w});
}

void WorkerRuntime::optimizer_done(int w) {
  Worker& worker = workers_[w];
  worker.optimizer = Worker::Optimizer::Done;
  if (--worker.busy_lanes == 0) worker.idle_since = ctx_.engine.now();
  exchange_->optimizer_done(w);
  maybe_finish_step(w);
}

void WorkerRuntime::maybe_finish_step(int w) {
  Worker& worker = workers_[w];
  if (worker.ops_done < num_ops_ || worker.host_running) return;
  switch (worker.optimizer) {
    case Worker::Optimizer::Pending:
      if (worker.outstanding <= exchange_->items_after_optimizer()) start_optimizer(w);
      return;
    case Worker::Optimizer::Running:
      return;
    case Worker::Optimizer::Done:
      break;
  }
  if (worker.outstanding > 0) return;
  close_idle(w);
  // The step is busy (some lane running an op) or idle, and every idle interval was split into
  // waiting and communication, so the busy wall time is what is left. (Summing op durations
  // would count overlapping lanes twice.)
  const double now = ctx_.engine.now();
  const double cycle = now - worker.step_start;
  const double compute = std::max(0.0, cycle - worker.wait - worker.communication);
  worker.step_ends.push_back(now);
  const int warmup = ctx_.options.warmup_steps;
  if (ctx_.trace != nullptr && ctx_.layout.keeps(w, worker.step)) {
    ctx_.span({.process = w,
               .thread = ctx_.layout.steps,
               .name = fmt::format("{} {}", worker.step < warmup ? "warm-up" : "step", worker.step),
               .category = "step",
               .start = worker.step_start,
               .duration = cycle,
               .step = worker.step});
  }
  worker.step++;
  if (worker.step > warmup && worker.step <= target_steps_) {
    worker.measured_compute += compute;
    worker.measured_communication += worker.communication;
    worker.measured_wait += worker.wait;
  }
  if (worker.step == target_steps_) finished_++;
  // Counted, not scanned: the window opens when the last worker finishes its warm-up.
  if (worker.step == warmup && ++past_warmup_ == static_cast<int>(workers_.size()) && window_start_ < 0) {
    window_start_ = now;
    link_bytes_at_window_ = ctx_.engine.network().link_bytes_moved(now);
    if (ctx_.trace != nullptr) ctx_.trace->instants.push_back({-1, "measured window opens", now});
  }
  // The next step starts now, but after everything else that happens now: what it requests
  // (a parameter server's pulls) must see every delivery of this instant, not only those of
  // workers processed before it, or identical workers would diverge on the order of a tie.
  ctx_.engine.schedule(now, StartStep{w});
}

double WorkerRuntime::fraction_done() const {
  const double total = static_cast<double>(workers_.size()) * target_steps_ *
                       (num_ops_ + (exchange_ != nullptr ? exchange_->items_per_step() : 0));
  return total > 0 ? std::min(1.0, static_cast<double>(work_done_) / total) : 1.0;
}

std::vector<WorkerTimes> WorkerRuntime::times() const {
  std::vector<WorkerTimes> out;
  out.reserve(workers_.size());
  const int m = ctx_.options.measure_steps;
  const int w0 = ctx_.options.warmup_steps;
  for (const Worker& worker : workers_) {
    WorkerTimes times;
    // Without warm-up, from the worker's first start (asynchronous workers start at offsets).
    const double begin = w0 == 0 ? worker.first_start : worker.step_ends[w0 - 1];
    times.cycle = (worker.step_ends[w0 + m - 1] - begin) / m;
    times.compute = worker.measured_compute / m;
    times.communication = worker.measured_communication / m;
    times.wait = worker.measured_wait / m;
    out.push_back(times);
  }
  return out;
}

}  // namespace stepcast::scheme
