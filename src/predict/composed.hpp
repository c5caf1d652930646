// Private to predict/: the coarse and analytic predictors of a composed layout (composed.cpp).
#pragma once

#include "stepcast/predict/predict.hpp"

namespace stepcast::predict {

/// Assume validate() passed and scheme.parallel.composed().
[[nodiscard]] Result coarse_composed(const workload::Workload& workload, const cluster::ClusterSpec& cluster,
                                     const scheme::SchemeConfig& scheme, const Options& options);
[[nodiscard]] Result analytic_composed(const workload::Workload& workload, const cluster::ClusterSpec& cluster,
                                       const scheme::SchemeConfig& scheme, const Options& options);

}  // namespace stepcast::predict
