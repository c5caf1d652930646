// The exact fast path of synchronous bucketed all-reduce (step_paths.hpp). Why it is exact:
// - Inside a step a worker depends on nothing but its own ops (gradients leave, nothing comes
//   back before the step ends), so with every op duration scaled by the worker's straggler
//   factor f its schedule is the one-worker schedule scaled by f: bucket b is filled at
//   start + f J_b and compute ends at start + f C.
// - Collectives run one at a time, in order, alone on the network: collective (k, b) starts at
//   max(the last worker's fill time, the previous collective's end) and lasts its plan's time
//   alone (CollectiveTiming), whoever waits for it.
// - A worker's step ends at max(its compute end, the step's last collective's end) plus its
//   optimizer step (f times optimizer_step_time, busy); its idle time is the gap between its
//   compute and its optimizer step, split at the latest fill of the step (before it, it waited
//   for slower workers; after it, for the network), as the worker runtime splits it.
// - Collectives of the warm-up steps end before the window opens and those after the measured
//   steps start after it closes, so the window's link bytes are measure_steps steps' worth.
// Cost: O(workers x buckets) a step plus one network solve per distinct stage pattern.
#include <algorithm>

#include "scheme/collective_timing.hpp"
#include "scheme/step_paths.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/detail/scheme/costs.hpp"
#include "stepcast/detail/scheme/fsdp_units.hpp"
#include "stepcast/detail/sim/event_queue.hpp"
#include "stepcast/error.hpp"

namespace stepcast::scheme {

AloneSchedule schedule_alone(const workload::Workload& w) {
  const int num_ops = static_cast<int>(w.ops.size());
  std::vector<std::vector<int>> dependents(num_ops), lane_ops(w.lanes.size());
  std::vector<int> unmet(num_ops);
  for (int op = 0; op < num_ops; ++op) {
    for (int d : w.ops[op].deps) dependents[d].push_back(op);
    lane_ops[w.ops[op].lane].push_back(op);
    unmet[op] = static_cast<int>(w.ops[op].deps.size());
  }
  AloneSchedule s;
  s.op_end.assign(num_ops, 0.0);
  s.op_start.assign(num_ops, 0.0);
  std::vector<size_t> lane_next(w.lanes.size(), 0);
  std::vector<uint8_t> lane_busy(w.lanes.size(), 0);
  int busy = 0;
  double idle_since = 0;
  sim::EventQueue<int> queue;
  auto try_start = [&](double now) {
    for (size_t lane = 0; lane < lane_ops.size(); ++lane) {
      if (lane_busy[lane] || lane_next[lane] >= lane_ops[lane].size()) continue;
      const int op = lane_ops[lane][lane_next[lane]];
      if (unmet[op] > 0) continue;
      if (busy == 0 && now > idle_since) s.idles_inside = true;
      lane_busy[lane] = 1;
      busy++;
      lane_next[lane]++;
      s.op_start[op] = now;
      queue.push(now + w.ops[op].duration, op);
    }
  };
  try_start(0);
  int done = 0;
  while (!queue.empty()) {
    const auto entry = queue.pop();
    const int op = entry.event;
    s.op_end[op] = entry.time;
    lane_busy[w.ops[op].lane] = 0;
    if (--busy == 0) idle_since = entry.time;
    done++;
    for (int d : dependents[op]) unmet[d]--;
    try_start(entry.time);
    s.compute_end = entry.time;
  }
  STEPCAST_ASSERT(done == num_ops);
  return s;
}

std::optional<SimulationResult> simulate_allreduce_fast(const workload::Workload& w,
                                                        const cluster::ClusterSpec& spec,
                                                        const SchemeConfig& scheme,
                                                        const SimulationOptions& options) {
  STEPCAST_ASSERT(workload::validate(w).empty());
  STEPCAST_ASSERT(options.measure_steps >= 1 && options.warmup_steps >= 0);
  const AloneSchedule alone = schedule_alone(w);
  if (alone.idles_inside) return std::nullopt;

  const int n = spec.workers;
  const cluster::Cluster cluster = cluster::build_cluster(spec);
  const std::vector<workload::Bucket> buckets =
      workload::make_buckets(w, scheme.allreduce.bucket_bytes, reduced_share(w, scheme));
  const bool exchanges = n > 1 && !buckets.empty();
  const size_t num_buckets = exchanges ? buckets.size() : 0;
  // Bucket b is filled when the last of its gradients' producers ends.
  std::vector<double> filled(num_buckets, 0.0);
  std::vector<double> duration(num_buckets, 0.0);
  SimulationResult r;
  r.engine = SimulationEngine::Fast;
  std::vector<double> link_bytes(cluster.links.size(), 0.0);
  const AllReducePlanner planner(cluster, exchanges ? scheme.allreduce.algorithm : AllReduceAlgorithm::Ring,
                                 scheme.allreduce.protocol);
  std::vector<CollectiveTiming> timings;
  timings.reserve(planner.plans().size());
  for (const CollectivePlan& plan : planner.plans()) timings.emplace_back(cluster, plan, options.network);
  for (size_t b = 0; b < num_buckets; ++b) {
    for (int t : buckets[b].tensors) {
      // A gradient no op produces is ready when the step's compute ends.
      const int producer = w.tensors[t].producer;
      filled[b] = std::max(filled[b], producer < 0 ? alone.compute_end : alone.op_end[producer]);
    }
    const AllReducePlanner::Choice choice = planner.choose(buckets[b].bytes);
    CollectiveTiming& timing = timings[static_cast<size_t>(choice.plan)];
    duration[b] = timing.time(buckets[b].bytes, choice.terms);
    timing.add_link_bytes(link_bytes, buckets[b].bytes, options.measure_steps, choice.terms);
  }

  const double optimizer = optimizer_step_time(w, spec, scheme);
  const int warmup = options.warmup_steps;
  const int target = warmup + options.measure_steps;
  std::vector<double> start(n, 0.0), factor(n, 1.0), window_begin(n, 0.0);
  std::vector<WorkerTimes> sums(n);
  double collective_end = 0;  // of the last collective so far
  double window_start = 0, end = 0;
  uint64_t events = 0;
  for (int k = 0; k < target; ++k) {
    for (int v = 0; v < n; ++v) factor[v] = straggler_factor(options.seed, v, k, options.compute_cv);
    double last_fill = 0;  // the step's latest bucket fill over all workers
    for (size_t b = 0; b < num_buckets; ++b) {
      double fill = 0;
      for (int v = 0; v < n; ++v) fill = std::max(fill, start[v] + factor[v] * filled[b]);
      last_fill = std::max(last_fill, fill);
      collective_end = std::max(fill, collective_end) + duration[b];
      events += static_cast<uint64_t>(n);
    }
    const bool measured = k >= warmup;
    for (int v = 0; v < n; ++v) {
      const double compute_end = start[v] + factor[v] * alone.compute_end;
      const double exchanged = num_buckets > 0 ? std::max(compute_end, collective_end) : compute_end;
      const double step_end = exchanged + factor[v] * optimizer;
      if (measured) {
        const double idle = exchanged - compute_end;
        const double release = num_buckets > 0 ? std::max(start[v], last_fill) : start[v];
        const double wait = idle > 0 ? std::clamp(release - compute_end, 0.0, idle) : 0.0;
        const double communication = idle > 0 ? idle - wait : 0.0;
        sums[v].compute += std::max(0.0, (step_end - start[v]) - wait - communication);
        sums[v].wait += wait;
        sums[v].communication += communication;
      }
      if (k == warmup - 1) {
        window_begin[v] = step_end;
        window_start = std::max(window_start, step_end);
      }
      if (k == target - 1) end = std::max(end, step_end);
      start[v] = step_end;
    }
    events += static_cast<uint64_t>(n);
  }

  const double m = options.measure_steps;
  r.workers.resize(n);
  for (int v = 0; v < n; ++v) {
    r.workers[v].cycle = (start[v] - window_begin[v]) / m;
    r.workers[v].compute = sums[v].compute / m;
    r.workers[v].communication = sums[v].communication / m;
    r.workers[v].wait = sums[v].wait / m;
  }
  r.window = end - window_start;
  r.events = events;
  for (const CollectiveTiming& timing : timings) {
    r.events += timing.events();
    r.max_link_flows = std::max(r.max_link_flows, timing.max_link_flows());
  }
  add_window_loads(r, cluster, scheme, link_bytes, options.links_kept);
  std::stable_sort(r.loads.begin(), r.loads.end(),
                   [](const ResourceLoad& a, const ResourceLoad& b) { return a.busy > b.busy; });
  return r;
}

}  // namespace stepcast::scheme
