// The advisor's answer as a value (sweep::advise computes it) and its two renderings: words for
// people and JSON for programs.
//
//   report::Advice a = sweep::advise(request);
//   report::write_advice_text(std::cout, a);
#pragma once

#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "stepcast/predict/result.hpp"
#include "stepcast/report/report.hpp"

namespace stepcast::report {

/// One point of the advisor's grid with its prediction.
struct GridPoint {
  Config config;
  predict::Result result;  ///< result.memory.fits(): whether it fits in GPU memory
  int cost = 0;            ///< sum over the varied keys of the value's position in its list (0 = first)
  /// With costs (cluster.cost.gpu_hour on every point): the money Advice::minimised names, in the
  /// scenario's currency; 0 without costs.
  double money = 0;
  bool meets = false;  ///< fits in GPU memory and meets the target (what does not fit meets nothing)
};

/// One change of one varied key from the scenario as given.
struct Change {
  std::string key;
  std::string from;  ///< the scenario's value, as resolved ("10 Gbps")
  std::string to;    ///< the value as given in --vary
  predict::Result result;
  double gain = 0;           ///< samples/s over the scenario as given
  double gain_fraction = 0;  ///< gain / its throughput
};

struct Advice {
  std::string scenario;          ///< name
  std::string target;            ///< in words: "efficiency >= 80.0%"
  double target_efficiency = 0;  ///< 0: not the target
  double target_throughput = 0;  ///< samples/s; 0: not the target
  predict::Result base;          ///< the scenario as given
  std::vector<GridPoint> grid;
  /// What "cheapest" minimised, in words: with costs on every point the money of the job
  /// ("cost to train the job"), else per million tokens, else per thousand samples; without costs
  /// "steps up the --vary lists". Ties on money go to fewer steps up the lists.
  std::string minimised;
  std::string currency;  ///< the points' currency with costs ("" when unnamed or without costs)
  /// The cheapest points that meet the target (several when they tie on cost and throughput);
  /// empty when none does.
  std::vector<std::size_t> cheapest;
  /// The best single changes (several on a tie) among those that fit in GPU memory; empty when
  /// no such change raises throughput.
  std::vector<Change> best_changes;
  /// The grid's highest throughput among the points that fit in GPU memory, for an infeasible
  /// target; empty when none fits.
  std::optional<std::size_t> best_point;
};

/// The answers in words: the scenario as given, the cheapest configuration that meets the target
/// (or that none does, and the best there is), ties, the best single change with its gain, and
/// how many points do not fit in GPU memory (never an answer; each prediction that does not fit
/// is marked "does not fit").
void write_advice_text(std::ostream& out, const Advice& advice);
/// {"scenario", "target": {...}, "as_given": prediction, "cheapest": [point...] (empty when
/// infeasible), "feasible", "minimised", "best_point" (null when no point fits), "best_changes":
/// [...], "grid": [point...]}; a point is {"config", "cost", "money" (null without costs), "fits",
/// "meets", "prediction"}, predictions as in write_json.
void write_advice_json(std::ostream& out, const Advice& advice);

}  // namespace stepcast::report
