#include "predict/summary.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace stepcast::predict {
namespace {
// Below this, no single resource explains the step time: latency and dependencies do.
constexpr double kSaturatedBusy = 0.5;
// Exposed communication or waiting above this share of the step is worth naming.
constexpr double kNoticeableLoss = 0.05;
}  // namespace

void finish_result(Result& r, const workload::Workload& workload) {
  // Speed-up against one worker training alone at its measured rate: the number users compare
  // with ("one GPU does X samples/s"), not against a one-worker run of the distributed setup.
  const double alone = workload.batch_per_worker / workload.step_time_alone();
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

}  // namespace stepcast::predict
