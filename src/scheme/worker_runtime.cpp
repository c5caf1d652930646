#include "scheme/worker_runtime.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "stepcast/detail/scheme/costs.hpp"

namespace stepcast::scheme {

WorkerRuntime::WorkerRuntime(const StepContext& context)
    : ctx_(context),
      target_steps_(context.options.warmup_steps + context.options.measure_steps),
      // A stage program holds its optimizer step as an op of its own.
      optimizer_time_(context.composed != nullptr
                          ? 0.0
                          : optimizer_step_time(context.workload, context.cluster.spec, context.scheme)),
      // Without warm-up the window is the whole run, open from the start (so a shard's apply time
      // counts from the first step, not only the apply still running at the end).
      window_start_(context.options.warmup_steps == 0 ? 0.0 : -1.0) {
  auto add_program = [&](const workload::Workload& w, const StageProgram* stage) {
    Program p;
    p.ops = &w;
    p.stage = stage;
    p.num_ops = static_cast<int>(w.ops.size());
    const auto n = static_cast<size_t>(p.num_ops);
    p.duration.resize(n);
    p.lane.resize(n);
    p.lane_ops.resize(w.lanes.size());
    std::vector<int> dependents_of(n, 0);
    std::vector<int> produced_by(n, 0);
    for (int op = 0; op < p.num_ops; ++op) {
      const workload::Op& o = w.ops[static_cast<size_t>(op)];
      p.duration[static_cast<size_t>(op)] = o.duration;
      p.lane[static_cast<size_t>(op)] = o.lane;
      for (int d : o.deps) {
        ++dependents_of[static_cast<size_t>(d)];
        if (stage != nullptr && stage->is_comm(d)) p.comm_deps.values.push_back(d);
      }
      p.comm_deps.close_list();
      if (stage == nullptr || !stage->is_comm(op)) p.lane_ops[o.lane].push_back(op);
    }
    for (const workload::Tensor& t : w.tensors) {
      if (t.producer >= 0) ++produced_by[static_cast<size_t>(t.producer)];
    }
    // Filled in the order a vector per op would have been: by op, then by tensor.
    auto lay_out = [n](OpLists& lists, const std::vector<int>& counts) {
      lists.offsets.resize(n + 1);
      for (size_t op = 0; op < n; ++op) lists.offsets[op + 1] = lists.offsets[op] + counts[op];
      lists.values.resize(static_cast<size_t>(lists.offsets[n]));
    };
    lay_out(p.dependents, dependents_of);
    lay_out(p.produced, produced_by);
    std::fill(dependents_of.begin(), dependents_of.end(), 0);
    std::fill(produced_by.begin(), produced_by.end(), 0);
    for (int op = 0; op < p.num_ops; ++op) {
      for (int d : w.ops[static_cast<size_t>(op)].deps) {
        const auto i = static_cast<size_t>(d);
        p.dependents.values[static_cast<size_t>(p.dependents.offsets[i] + dependents_of[i]++)] = op;
      }
    }
    for (int t = 0; t < static_cast<int>(w.tensors.size()); ++t) {
      const int producer = w.tensors[static_cast<size_t>(t)].producer;
      if (producer >= 0) {
        const auto i = static_cast<size_t>(producer);
        p.produced.values[static_cast<size_t>(p.produced.offsets[i] + produced_by[i]++)] = t;
      } else {
        p.unproduced.push_back(t);
      }
    }
    programs_.push_back(std::move(p));
  };
  if (ctx_.composed != nullptr) {
    for (const StageProgram& stage : ctx_.composed->programs) add_program(stage.ops, &stage);
    program_of_.resize(static_cast<size_t>(ctx_.workers()));
    for (int w = 0; w < ctx_.workers(); ++w) {
      program_of_[static_cast<size_t>(w)] =
          ctx_.composed->layout->coordinates(ctx_.composed->rank_of_worker[static_cast<size_t>(w)])
              [ParallelDimension::Pipeline];
    }
  } else {
    add_program(ctx_.workload, nullptr);
  }
  workers_.resize(ctx_.workers());
  for (int w = 0; w < ctx_.workers(); ++w) {
    Worker& worker = workers_[static_cast<size_t>(w)];
    const Program& p = programs_[program_of(w)];
    worker.unmet.resize(static_cast<size_t>(p.num_ops));
    worker.lane_next.resize(p.lane_ops.size());
    worker.lane_busy.resize(p.lane_ops.size());
    worker.step_ends.reserve(target_steps_ + 1);
    if (p.stage != nullptr) {
      worker.issued_at.assign(static_cast<size_t>(p.num_ops), 0.0);
      worker.released_at.assign(static_cast<size_t>(p.num_ops), 0.0);
      worker.ended_at.assign(static_cast<size_t>(p.num_ops), 0.0);
    }
    if (ctx_.trace != nullptr) {
      worker.op_span.assign(static_cast<size_t>(p.num_ops), kNone);
      worker.started_at.assign(static_cast<size_t>(p.num_ops), -1.0);
      worker.waited_for.assign(static_cast<size_t>(p.num_ops), kNone);
      worker.waited_at.assign(static_cast<size_t>(p.num_ops), 0.0);
    }
  }
}

int WorkerRuntime::items_per_step() const {
  int items = 0;
  for (const Exchange* e : exchanges_) items += e->items_per_step();
  return items;
}

void WorkerRuntime::count_unmet_at_start(size_t program) {
  Program& p = programs_[program];
  p.unmet_at_start.resize(static_cast<size_t>(p.num_ops));
  for (int op = 0; op < p.num_ops; ++op) {
    int inputs = 0;
    for (const Exchange* e : exchanges_) inputs += e->inputs_needed(op);
    const auto i = static_cast<size_t>(op);
    p.unmet_at_start[i] = static_cast<int>(p.ops->ops[i].deps.size()) + inputs;
    if (p.unmet_at_start[i] == 0 && is_comm(p, op)) p.comms_due_at_start.push_back(op);
  }
}

void WorkerRuntime::start_step(int w) {
  Worker& worker = workers_[w];
  const Program& p = programs_[program_of(w)];
  const double now = ctx_.engine.now();
  worker.compute_scale = straggler_factor(ctx_.options.seed, w, worker.step, ctx_.options.compute_cv);
  worker.step_start = now;
  if (worker.step == 0) worker.first_start = now;
  worker.idle_since = now;
  worker.release = now;
  worker.communication = worker.wait = 0;
  worker.exposed.fill(0);
  worker.bubble = 0;
  worker.ops_done = 0;
  worker.optimizer = optimizer_time_ > 0 ? Worker::Optimizer::Pending : Worker::Optimizer::Done;
  std::fill(worker.lane_next.begin(), worker.lane_next.end(), 0);
  if (p.unmet_at_start.empty() && p.num_ops > 0) count_unmet_at_start(program_of(w));
  std::copy(p.unmet_at_start.begin(), p.unmet_at_start.end(), worker.unmet.begin());
  worker.due_comms.insert(worker.due_comms.end(), p.comms_due_at_start.begin(), p.comms_due_at_start.end());
  worker.outstanding = items_per_step();
  for (Exchange* e : exchanges_) e->step_started(w);
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

void WorkerRuntime::split_idle(int w, int op) {
  Worker& worker = workers_[w];
  const Program& p = programs_[program_of(w)];
  const StageProgram& stage = *p.stage;
  const double start = worker.idle_since;
  double end = ctx_.engine.now();
  if (!(end > start)) return;
  // The communication op the interval waited for: the op itself when it ends the step, else its
  // latest communication dependency (the later in the program on a tie).
  auto latest_comm_dep = [&](int o) {
    int found = kNone;
    double latest = -1;
    for (int d : p.comm_deps[o]) {
      if (worker.ended_at[static_cast<size_t>(d)] >= latest) {
        latest = worker.ended_at[static_cast<size_t>(d)];
        found = d;
      }
    }
    return found;
  };
  int at = stage.is_comm(op) ? op : latest_comm_dep(op);
  while (at != kNone && end > start) {
    const auto i = static_cast<size_t>(at);
    const CommOp& comm = stage.comms[static_cast<size_t>(stage.comm_of_op[i])];
    const auto d = static_cast<size_t>(comm.dimension);
    // [release, end]: its transfer; [issue, release]: others; before its issue: its own wait.
    const double released = std::clamp(worker.released_at[i], start, end);
    const double issued = std::clamp(worker.issued_at[i], start, released);
    worker.exposed[d] += end - released;
    worker.communication += end - released;
    worker.wait += released - issued;
    if (comm.dimension == ParallelDimension::Pipeline) worker.bubble += released - issued;
    end = issued;
    at = latest_comm_dep(at);
  }
  // What no communication op explains (a dependency that ended before the interval began): waiting.
  worker.wait += std::max(0.0, end - start);
}

void WorkerRuntime::start_op(int w, int op, int lane) {
  Worker& worker = workers_[w];
  const Program& p = programs_[program_of(w)];
  const double now = ctx_.engine.now();
  if (worker.busy_lanes == 0) {
    if (p.stage != nullptr) {
      split_idle(w, op);
    } else {
      close_idle(w);
    }
  }
  worker.lane_busy[lane] = 1;
  worker.busy_lanes++;
  const double duration = p.duration[static_cast<size_t>(op)] * worker.compute_scale;
  if (ctx_.trace != nullptr) {
    worker.op_span[op] = kNone;
    if (ctx_.layout.keeps(w, worker.step)) {
      worker.op_span[op] = ctx_.span({.process = w,
                                      .thread = lane,
                                      .name = p.ops->ops[op].name,
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
  for (Exchange* e : exchanges_) e->op_started(w, op);
}

void WorkerRuntime::try_start_ops(int w) {
  Worker& worker = workers_[w];
  const Program& p = programs_[program_of(w)];
  // Communication first, in the order it got due (a stream runs its collectives in the order they
  // are issued): issuing takes no lane, and what it unblocks may be on a lane.
  while (!worker.due_comms.empty()) {
    const int op = worker.due_comms.front();
    worker.due_comms.pop_front();
    const StageProgram& stage = *p.stage;
    worker.issued_at[static_cast<size_t>(op)] = worker.released_at[static_cast<size_t>(op)] = ctx_.engine.now();
    exchanges_[static_cast<size_t>(stage.comms[static_cast<size_t>(stage.comm_of_op[op])].dimension)]->start_comm(
        w, op, stage.comms[static_cast<size_t>(stage.comm_of_op[op])]);
  }
  for (size_t lane = 0; lane < p.lane_ops.size(); ++lane) {
    if (worker.lane_busy[lane]) continue;
    const std::vector<int>& ops = p.lane_ops[lane];
    const int next = worker.lane_next[lane];
    if (next < static_cast<int>(ops.size()) && worker.unmet[ops[next]] == 0) {
      worker.lane_next[lane]++;
      start_op(w, ops[next], static_cast<int>(lane));
    }
  }
}

void WorkerRuntime::satisfy(int w, int op) {
  Worker& worker = workers_[w];
  if (--worker.unmet[op] == 0 && is_comm(programs_[program_of(w)], op)) worker.due_comms.push_back(op);
}

void WorkerRuntime::ended(int w, int op, int source) {
  // What follows an op's end, compute or communication: its dependents, its gradients.
  Worker& worker = workers_[w];
  const Program& p = programs_[program_of(w)];
  worker.ops_done++;
  work_done_++;
  if (p.stage != nullptr) worker.ended_at[static_cast<size_t>(op)] = ctx_.engine.now();
  worker.last_ended = op;
  for (int d : p.dependents[op]) {
    if (source != kNone) {
      unmet_input(w, d, source);
    } else {
      satisfy(w, d);
    }
  }
  if (ctx_.trace != nullptr) worker.finishing_span = worker.op_span[op];
  for (Exchange* e : exchanges_) e->op_finished(w, op);
  for (int t : p.produced[op]) {
    for (Exchange* e : exchanges_) e->gradient_ready(w, t);
  }
  if (worker.ops_done == p.num_ops) {
    for (int t : p.unproduced) {
      for (Exchange* e : exchanges_) e->gradient_ready(w, t);
    }
  }
  worker.finishing_span = kNone;
  try_start_ops(w);
  maybe_finish_step(w);
}

void WorkerRuntime::op_done(int w, int op) {
  Worker& worker = workers_[w];
  const Program& p = programs_[program_of(w)];
  const int lane = p.lane[static_cast<size_t>(op)];
  worker.lane_busy[lane] = 0;
  worker.busy_lanes--;
  if (worker.busy_lanes == 0) worker.idle_since = ctx_.engine.now();
  // Host work owed while the op ran goes before the lane's next op.
  if (lane == 0 && worker.host_owed > 0) start_host_work(w);
  ended(w, op);
}

void WorkerRuntime::comm_done(int w, int op, int source) {
  Worker& worker = workers_[w];
  if (ctx_.trace != nullptr) {
    worker.op_span[op] = kNone;
    const StageProgram& stage = *programs_[program_of(w)].stage;
    const CommOp& comm = stage.comms[static_cast<size_t>(stage.comm_of_op[op])];
    const TraceLayout& layout = ctx_.layout;
    int thread = kNone;
    switch (comm.dimension) {
      case ParallelDimension::Tensor:
        thread = layout.tensor;
        break;
      case ParallelDimension::Context:
        thread = layout.context;
        break;
      case ParallelDimension::Data:
      case ParallelDimension::ExpertData:
      case ParallelDimension::DataReplicate:
        thread = comm.stream == 0 ? layout.data_gathers : layout.data_reductions;
        break;
      case ParallelDimension::Expert:
      case ParallelDimension::ExpertTensor:
        thread = layout.experts;
        break;
      case ParallelDimension::Pipeline:
        // A message is drawn on its sender's track; the receive is the arrow into the op it fed.
        if (comm.kind == CommKind::Send) {
          thread = stage.ops.ops[static_cast<size_t>(op)].kind == workload::OpKind::Forward ? layout.to_next_stage
                                                                                             : layout.to_previous_stage;
        }
        break;
    }
    if (thread != kNone && layout.keeps(w, worker.step)) {
      // From when its transfers began: a collective released behind its stream's earlier ones
      // would overlap them on the track (Perfetto draws only nested or disjoint slices).
      const double start =
          std::max(worker.released_at[static_cast<size_t>(op)], worker.started_at[static_cast<size_t>(op)]);
      worker.op_span[op] = ctx_.span({.process = w,
                                      .thread = thread,
                                      .name = stage.ops.ops[static_cast<size_t>(op)].name,
                                      .category = to_string(comm.dimension),
                                      .start = start,
                                      .duration = ctx_.engine.now() - start,
                                      .step = worker.step,
                                      .bytes = comm.bytes});
    }
  }
  ended(w, op, source);
}

void WorkerRuntime::comm_released(int w, int op, double since) {
  Worker& worker = workers_[w];
  worker.released_at[static_cast<size_t>(op)] = std::max(since, worker.issued_at[static_cast<size_t>(op)]);
  worker.release = std::max(worker.release, ctx_.engine.now());
}

void WorkerRuntime::comm_started(int w, int op) {
  Worker& worker = workers_[w];
  if (!worker.started_at.empty()) worker.started_at[static_cast<size_t>(op)] = ctx_.engine.now();
}

void WorkerRuntime::unmet_input(int w, int op, int source) {
  Worker& worker = workers_[w];
  satisfy(w, op);
  if (worker.unmet[op] == 0 && source != kNone) {
    worker.waited_for[op] = source;
    worker.waited_at[op] = ctx_.engine.now();
  }
}

void WorkerRuntime::input_arrived(int w, int tensor, int source) {
  for (int consumer : ops_of(w).tensors[tensor].consumers) unmet_input(w, consumer, source);
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
  for (Exchange* e : exchanges_) e->optimizer_done(w);
  maybe_finish_step(w);
}

void WorkerRuntime::maybe_finish_step(int w) {
  Worker& worker = workers_[w];
  if (worker.ops_done < programs_[program_of(w)].num_ops || worker.host_running) return;
  switch (worker.optimizer) {
    case Worker::Optimizer::Pending: {
      int after = 0;
      for (const Exchange* e : exchanges_) after += e->items_after_optimizer();
      if (worker.outstanding <= after) start_optimizer(w);
      return;
    }
    case Worker::Optimizer::Running:
      return;
    case Worker::Optimizer::Done:
      break;
  }
  if (worker.outstanding > 0) return;
  if (programs_[program_of(w)].stage != nullptr) {
    if (worker.busy_lanes == 0) split_idle(w, worker.last_ended);
  } else {
    close_idle(w);
  }
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
    for (size_t d = 0; d < worker.exposed.size(); ++d) worker.measured_exposed[d] += worker.exposed[d];
    worker.measured_bubble += worker.bubble;
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
  double total = 0;
  for (int w = 0; w < static_cast<int>(workers_.size()); ++w) {
    total += static_cast<double>(target_steps_) * (programs_[program_of(w)].num_ops + items_per_step());
  }
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
    for (size_t d = 0; d < times.exposed.size(); ++d) times.exposed[d] = worker.measured_exposed[d] / m;
    times.bubble = worker.measured_bubble / m;
    out.push_back(times);
  }
  return out;
}

}  // namespace stepcast::scheme
