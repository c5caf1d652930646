#include "predict/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "stepcast/error.hpp"

namespace stepcast::predict {
namespace {
// Below this, no single resource explains the step time: latency and dependencies do.
constexpr double kSaturatedBusy = 0.5;
// Exposed communication or waiting above this share of the step is worth naming.
constexpr double kNoticeableLoss = 0.05;
}  // namespace

void finish_result(Result& r, const workload::Workload& workload) {
  finish_result(r, workload.step_time_alone(), workload.batch_per_worker);
}

void finish_result(Result& r, double alone_step_time, int batch_per_worker) {
  // Speed-up against one worker training alone at its measured rate: the number users compare
  // with ("one GPU does X samples/s"), not against a one-worker run of the distributed setup.
  const double alone = batch_per_worker / alone_step_time;
  r.speedup = r.throughput / alone;
  r.efficiency = r.workers > 0 ? r.speedup / r.workers : 0;
  std::stable_sort(r.utilization.begin(), r.utilization.end(),
                   [](const Utilization& a, const Utilization& b) { return a.busy > b.busy; });
  if (!r.utilization.empty() && r.utilization.front().busy >= kSaturatedBusy) {
    const Utilization& top = r.utilization.front();
    r.bottleneck = fmt::format("{} {:.0f}% busy", top.resource, 100 * std::min(top.busy, 1.0));
    // Compute-bound but still losing time: name what the lost time waits on, since that is what
    // limits scaling.
    const double lost =
        (r.breakdown.communication_exposed + r.breakdown.wait) / std::max(r.step_time, 1e-300);
    if (top.resource.find("compute") != std::string::npos && lost >= kNoticeableLoss &&
        r.utilization.size() > 1) {
      const Utilization& next = r.utilization[1];
      r.bottleneck +=
          fmt::format("; {:.0f}% of step lost to {} ({} {:.0f}% busy)", 100 * lost,
                      r.breakdown.wait > r.breakdown.communication_exposed ? "waiting" : "communication",
                      next.resource, 100 * std::min(next.busy, 1.0));
    }
    return;
  }
  const double step = std::max(r.step_time, 1e-300);
  if (r.breakdown.wait >= r.breakdown.communication_exposed) {
    r.bottleneck =
        fmt::format("waiting for other workers or servers ({:.0f}% of step)", 100 * r.breakdown.wait / step);
  } else {
    r.bottleneck = fmt::format("network latency, no link saturated ({:.0f}% of step exposed)",
                               100 * r.breakdown.communication_exposed / step);
  }
}

StepSpread step_spread(std::vector<double> step_times) {
  StepSpread s;
  s.samples = step_times.size();
  s.step_times = step_times;
  if (step_times.empty()) return s;
  std::sort(step_times.begin(), step_times.end());
  const auto quantile = [&](double q) {
    const double pos = q * static_cast<double>(step_times.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, step_times.size() - 1);
    return step_times[lo] + (pos - static_cast<double>(lo)) * (step_times[hi] - step_times[lo]);
  };
  s.mean =
      std::accumulate(step_times.begin(), step_times.end(), 0.0) / static_cast<double>(step_times.size());
  s.p50 = quantile(0.5);
  s.p95 = quantile(0.95);
  s.min = step_times.front();
  s.max = step_times.back();
  return s;
}

namespace {

// Busy fractions of like-named resources over the run of all samples: weighted by step time.
std::vector<Utilization> weighted_busy(const std::vector<Result>& results,
                                       const std::vector<Utilization> Result::*field) {
  std::vector<Utilization> out;
  double total = 0;
  for (const Result& r : results) {
    total += r.step_time;
    for (const Utilization& u : r.*field) {
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const Utilization& o) { return o.resource == u.resource; });
      if (it == out.end()) {
        out.push_back({u.resource, 0});
        it = out.end() - 1;
      }
      it->busy += u.busy * r.step_time;
    }
  }
  for (Utilization& u : out) u.busy = total > 0 ? u.busy / total : 0;
  return out;
}

}  // namespace

Result predict_over_samples(const workload::Workload& workload, bool record_trace,
                            const PredictStep& predict_step) {
  const std::size_t k = workload.num_samples();
  STEPCAST_ASSERT(k > 0);
  // The representative step: its samples are the op durations (a Kineto conversion's own step).
  std::size_t rep = 0;
  for (std::size_t i = 0; i < k; ++i) {
    const bool same = std::all_of(workload.ops.begin(), workload.ops.end(), [&](const workload::Op& op) {
      return i < op.samples.size() && op.samples[i] == op.duration;
    });
    if (same) {
      rep = i;
      break;
    }
  }
  std::vector<Result> results;
  results.reserve(k);
  std::vector<double> times;
  double alone = 0;  // s, summed over the sample steps
  for (std::size_t i = 0; i < k; ++i) {
    const workload::Workload step = workload::with_sample(workload, i);
    results.push_back(predict_step(step, record_trace && i == rep));
    times.push_back(results.back().step_time);
    alone += step.step_time_alone();
  }
  const double n = static_cast<double>(k);
  Result r;
  r.workers = results.front().workers;
  r.predictor = results.front().predictor;
  // "full" if any step needed the full engine (a traced one does), as the costlier path.
  r.engine = results.front().engine;
  for (const Result& s : results) {
    if (s.engine == "full") r.engine = s.engine;
  }
  double seconds_per_sample = 0;
  r.step_samples = step_spread(std::move(times));
  r.step_time = r.step_samples.mean;
  for (const Result& s : results) {
    r.breakdown.compute += s.breakdown.compute / n;
    r.breakdown.communication_exposed += s.breakdown.communication_exposed / n;
    r.breakdown.wait += s.breakdown.wait / n;
    r.bytes_sent += s.bytes_sent / n;
    r.bytes_received += s.bytes_received / n;
    r.events += s.events;
    r.max_link_flows = std::max(r.max_link_flows, s.max_link_flows);
    seconds_per_sample += s.throughput > 0 ? 1.0 / s.throughput : 0;
  }
  r.throughput = seconds_per_sample > 0 ? n / seconds_per_sample : 0;
  r.utilization = weighted_busy(results, &Result::utilization);
  std::size_t max_links = 0;
  for (const Result& s : results) max_links = std::max(max_links, s.links.size());
  r.links = weighted_busy(results, &Result::links);
  std::stable_sort(r.links.begin(), r.links.end(),
                   [](const Utilization& a, const Utilization& b) { return a.busy > b.busy; });
  if (r.links.size() > max_links) r.links.resize(max_links);
  r.trace = std::move(results[rep].trace);
  finish_result(r, alone / n, workload.batch_per_worker);
  return r;
}

}  // namespace stepcast::predict
