// Private: what every predictor does last: speed-up, efficiency and the bottleneck in words.
#pragma once

#include "stepcast/predict/result.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::predict {

/// Fills speedup, efficiency and bottleneck from throughput, utilization and breakdown, and
/// sorts utilization busiest first.
void finish_result(Result& result, const workload::Workload& workload);

}  // namespace stepcast::predict
