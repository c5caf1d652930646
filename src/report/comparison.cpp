// compare_predictors and disagreement_warning: the predictors of one configuration side by side
// (`predict --predictor all`), for the table, the JSON and the warnings.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "stepcast/report/report.hpp"
#include "stepcast/units.hpp"

namespace stepcast::report {
namespace {

constexpr predict::Predictor kPredictors[] = {predict::Predictor::Fine, predict::Predictor::Coarse,
                                              predict::Predictor::Analytic};

// Coarse this far from fine on an asynchronous parameter server gets the note on phases.
constexpr double kCoarseAsyncNote = 0.10;

std::size_t slot(predict::Predictor predictor) { return static_cast<std::size_t>(predictor); }

/// x / reference - 1, or nothing when either is missing or the reference is not a positive rate.
/// Predictors that agree to the last few bits (a closed form both compute) differ by rounding:
/// below this relative difference they are equal, not "7.11e-13%" apart.
constexpr double kSameRate = 1e-9;

double beyond_rounding(double relative) { return std::fabs(relative) < kSameRate ? 0.0 : relative; }

std::optional<double> relative_to(const Sweep& sweep, int index, int reference) {
  if (index < 0 || reference < 0) return std::nullopt;
  const double base = sweep.predictions[static_cast<std::size_t>(reference)].throughput;
  if (!(base > 0) || !std::isfinite(base)) return std::nullopt;
  return beyond_rounding(sweep.predictions[static_cast<std::size_t>(index)].throughput / base - 1);
}

}  // namespace

std::vector<PredictorComparison> compare_predictors(const Sweep& sweep) {
  std::vector<PredictorComparison> all;
  std::map<std::pair<std::string, int>, std::size_t> index_of;  // (config label, workers) -> all[]
  for (std::size_t i = 0; i < sweep.predictions.size(); ++i) {
    const predict::Result& r = sweep.predictions[i];
    const std::string label = i < sweep.configs.size() ? config_label(sweep.configs[i]) : std::string();
    auto [it, fresh] = index_of.try_emplace({label, r.workers}, all.size());
    if (fresh) all.push_back({.first = i, .workers = r.workers});
    int& entry = all[it->second].prediction[slot(r.predictor)];
    if (entry < 0) entry = static_cast<int>(i);  // a repeated predictor keeps its first
  }
  std::vector<PredictorComparison> out;
  for (PredictorComparison& c : all) {
    double low = std::numeric_limits<double>::infinity(), high = -low;
    int ran = 0;
    for (int index : c.prediction) {
      if (index < 0) continue;
      ++ran;
      const double throughput = sweep.predictions[static_cast<std::size_t>(index)].throughput;
      low = std::min(low, throughput);
      high = std::max(high, throughput);
    }
    if (ran < 2) continue;
    // A zero or non-finite rate next to another is as far apart as it gets.
    c.spread = high == low                      ? 0.0
               : low > 0 && std::isfinite(high) ? beyond_rounding(high / low - 1)
                                                : std::numeric_limits<double>::infinity();
    const int fine = c.prediction[slot(predict::Predictor::Fine)];
    c.coarse_vs_fine = relative_to(sweep, c.prediction[slot(predict::Predictor::Coarse)], fine);
    c.analytic_vs_fine = relative_to(sweep, c.prediction[slot(predict::Predictor::Analytic)], fine);
    out.push_back(c);
  }
  return out;
}

std::string disagreement_warning(const Sweep& sweep, const PredictorComparison& comparison) {
  if (!comparison.disagrees()) return "";
  const std::string config =
      comparison.first < sweep.configs.size() ? config_label(sweep.configs[comparison.first]) : std::string();
  std::string text = fmt::format("predictors differ by {} (over {:.0f}%) at {}{}:", format_percent(comparison.spread),
                                 100 * kPredictorDisagreement, format_count(comparison.workers, "worker", "workers"),
                                 config.empty() ? std::string() : " (" + config + ")");
  const int fine = comparison.prediction[slot(predict::Predictor::Fine)];
  bool first = true;
  for (predict::Predictor predictor : kPredictors) {
    const int index = comparison.prediction[slot(predictor)];
    if (index < 0) continue;
    text += fmt::format("{} {} {}{}", first ? "" : ",", predict::to_string(predictor),
                        format_number(sweep.predictions[static_cast<std::size_t>(index)].throughput),
                        first ? " samples/s" : "");
    if (predictor != predict::Predictor::Fine) {
      if (const std::optional<double> vs_fine = relative_to(sweep, index, fine)) {
        text += " (" + format_signed_percent(*vs_fine) + " vs fine)";
      }
    }
    first = false;
  }
  // Asynchronous parameter servers (fine measured staleness): near the servers' knee fine's step
  // depends on the workers' phases, which coarse takes out of step (docs/validation.md).
  const int coarse = comparison.prediction[slot(predict::Predictor::Coarse)];
  if (fine >= 0 && coarse >= 0 && sweep.predictions[static_cast<std::size_t>(fine)].staleness.pushes > 0 &&
      comparison.coarse_vs_fine.has_value() && std::fabs(*comparison.coarse_vs_fine) > kCoarseAsyncNote) {
    text +=
        "; asynchronous workers: where the servers' NICs are near saturation fine's step depends on the "
        "workers' start phases (see training.ps.async_start), while coarse takes them out of step";
    const predict::AsyncPhases& range = sweep.predictions[static_cast<std::size_t>(coarse)].async_phases;
    if (range.convoy > 0) {
      text += fmt::format(" ({} a step; {} in a convoy, all pulling then all pushing)",
                          format_duration(range.out_of_step), format_duration(range.convoy));
    }
  }
  return text;
}

}  // namespace stepcast::report
