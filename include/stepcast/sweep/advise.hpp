// The advisor: over a grid of settings (`--vary KEY=V1,V2,...`, each key's values listed from
// cheapest to dearest), the cheapest configuration that meets a target (efficiency or
// throughput), and from the scenario as given, the one change among the varied keys that buys
// the most throughput. Cost is the sum over keys of each value's position in its list (0 for the
// first): the fewest steps up from the cheapest corner. Every answer is a prediction of the grid,
// so re-predicting it gives the same numbers.
//
//   sweep::AdviseRequest r{.sweep = {.scenario = "examples/resnet50-ps.yaml", .workers = {16}}};
//   r.sweep.axes = {sweep::parse_axis("training.ps.count=1..32")};
//   r.target_efficiency = 0.8;
//   report::Advice a = sweep::advise(r);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "stepcast/report/advice.hpp"
#include "stepcast/sweep/sweep.hpp"

namespace stepcast::sweep {

struct AdviseRequest {
  Request sweep;                 ///< axes = the varied keys; one worker count (or none)
  /// One of the two, the other left out: a given 0 is an error like any value out of range (it
  /// used to read as "not given").
  std::optional<double> target_efficiency;  ///< in (0, 1]
  std::optional<double> target_throughput;  ///< samples/s, > 0
};

/// Runs the grid at the request's worker count and answers. A value "V:COST" of an axis (COST a
/// number after the last ':') is V with its own cost: COST per GPU-hour added to the point's
/// cluster.cost.gpu_hour where V is chosen, so that each point has a price and cheapest means least
/// money (report::Advice::minimised). Throws Error (key "--target-*") without a target or with one
/// out of range, (key "--vary") without a varied key or with a negative COST, and (key
/// "--workers") for more than one worker count (vary cluster.workers instead). With
/// request.sweep.distribute the grid and the single changes are split over the MPI ranks (run());
/// rank 0 gets the answer, the same as a serial run's, and the other ranks an empty Advice.
[[nodiscard]] report::Advice advise(const AdviseRequest& request);

}  // namespace stepcast::sweep
