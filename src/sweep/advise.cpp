#include "stepcast/sweep/advise.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/units.hpp"

namespace stepcast::sweep {
namespace {

std::string resolved_value(const scenario::Scenario& s, const std::string& key) {
  for (const auto& k : scenario::resolved_keys(s)) {
    if (k.key == key) return k.value;
  }
  return "";
}

// "400Gbps:0.3": the value and its own cost (money per GPU-hour added to cluster.cost.gpu_hour
// when it is chosen); a value without a ':' and a number after the last one has none.
std::pair<std::string, std::optional<double>> split_cost(const std::string& value) {
  const std::size_t colon = value.rfind(':');
  if (colon == std::string::npos || colon == 0) return {value, std::nullopt};
  const std::string number = value.substr(colon + 1);
  double cost = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), cost);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size())
    return {value, std::nullopt};
  if (!(std::isfinite(cost) && cost >= 0 && cost <= limits::kMaxGpuHour)) {
    throw Error({"", 0, "--vary"},
                fmt::format("'{}': expected a cost per GPU-hour in [0, {:g}] after the ':', got '{}'", value,
                            limits::kMaxGpuHour, number));
  }
  return {value.substr(0, colon), cost};
}

}  // namespace

report::Advice advise(const AdviseRequest& given) {
  AdviseRequest request = given;
  request.sweep = with_scenario_text(std::move(request.sweep));  // read once: it is loaded several times
  // A target given is one the flag takes, 0 included: a 0 (or a negative or NaN) that read as "no
  // target" was ignored beside the other target, or named the wrong flag without it.
  const std::optional<double> efficiency = request.target_efficiency, throughput = request.target_throughput;
  if (efficiency && !(*efficiency > 0 && *efficiency <= 1)) {
    throw Error({"", 0, "--target-efficiency"},
                fmt::format("expected a fraction in (0, 1], got {}", *efficiency));
  }
  if (throughput && !(*throughput > 0 && std::isfinite(*throughput))) {
    throw Error({"", 0, "--target-throughput"},
                fmt::format("expected a finite throughput > 0 in samples/s, got {}", *throughput));
  }
  const bool by_efficiency = efficiency.has_value();
  if (by_efficiency == throughput.has_value()) {
    throw Error({"", 0, "--target-efficiency"},
                "give one target: --target-efficiency (0..1) or --target-throughput (samples/s)");
  }
  if (request.sweep.axes.empty()) {
    throw Error({"", 0, "--vary"}, "nothing to choose from: give at least one --vary KEY=V1,V2,...");
  }
  if (request.sweep.workers.size() > 1) {
    throw Error({"", 0, "--workers"},
                "the advisor predicts at one worker count; vary cluster.workers instead");
  }

  // Per-value costs ("--vary KEY=V1:COST1,V2:COST2"): the values without them, and each value's
  // cost per GPU-hour (0 where not given) once any is given.
  std::vector<Axis> axes = request.sweep.axes;
  std::vector<std::vector<double>> value_costs(axes.size());
  bool per_value = false;
  for (std::size_t k = 0; k < axes.size(); ++k) {
    for (std::string& value : axes[k].values) {
      auto [plain, cost] = split_cost(value);
      per_value = per_value || cost.has_value();
      value_costs[k].push_back(cost.value_or(0));
      value = std::move(plain);
    }
  }

  // Two runs, each split over the MPI ranks when request.sweep.distribute: the grid, then the
  // scenario as given with every single change from it. Only rank 0 gets their predictions.
  report::Advice a;
  Request grid_request = request.sweep;
  grid_request.axes = axes;
  grid_request.record_trace = false;
  grid_request.configs.clear();
  report::Sweep s = run(grid_request);

  const scenario::Scenario base = load_scenario(request.sweep, request.sweep.overrides);
  struct Candidate {
    std::string key, current, value;
  };
  std::vector<Candidate> candidates;
  Request changes_request = request.sweep;
  changes_request.axes.clear();
  changes_request.record_trace = false;
  changes_request.configs = {report::Config{}};  // the scenario as given
  for (const Axis& axis : axes) {
    const std::string current = resolved_value(base, axis.key);
    for (const std::string& value : axis.values) {
      std::vector<std::string> overrides = request.sweep.overrides;
      overrides.push_back(axis.key + "=" + value);
      if (resolved_value(load_scenario(request.sweep, overrides), axis.key) == current) continue;
      candidates.push_back({axis.key, current, value});
      changes_request.configs.push_back({report::Input{axis.key, value, false}});
    }
  }
  report::Sweep changed = run(changes_request);
  if (request.sweep.distribute && process_ranks().rank != 0) return a;  // rank 0 answers
  a.base = changed.predictions.front();
  for (size_t i = 0; i < s.predictions.size(); ++i) {
    report::GridPoint p{s.configs[i], std::move(s.predictions[i]), 0, false};
    for (size_t k = 0; k < axes.size(); ++k) {
      const auto& vals = axes[k].values;
      p.cost += static_cast<int>(std::find(vals.begin(), vals.end(), p.config[k].value) - vals.begin());
    }
    if (per_value) {
      // Its price: the scenario's per GPU-hour and its values' own costs.
      predict::Options priced;
      priced.cost = {p.result.cost.gpu_hour, base.options.cost.currency};  // the point's own, 0 when none
      for (size_t k = 0; k < axes.size(); ++k) {
        const auto& vals = axes[k].values;
        const auto at =
            static_cast<size_t>(std::find(vals.begin(), vals.end(), p.config[k].value) - vals.begin());
        priced.cost.gpu_hour += value_costs[k][at];
      }
      predict::account_cost(p.result, priced);
    }
    // A configuration that does not fit in GPU memory cannot run: it meets no target.
    p.meets = p.result.memory.fits() &&
              (by_efficiency ? p.result.efficiency >= *efficiency : p.result.throughput >= *throughput);
    a.grid.push_back(std::move(p));
  }
  for (size_t i = 0; i < a.grid.size(); ++i) {
    if (!a.grid[i].result.memory.fits()) continue;
    if (!a.best_point || a.grid[i].result.throughput > a.grid[*a.best_point].result.throughput)
      a.best_point = i;
  }
  // Money when every point has a price (cluster.cost.gpu_hour): the job's cost when every point
  // has a job, else per million tokens for language models, else per thousand samples; the same
  // measure on every point, so that they compare.
  const auto priced = [&](auto has) { return std::all_of(a.grid.begin(), a.grid.end(), has); };
  if (!a.grid.empty() &&
      (per_value || priced([](const report::GridPoint& p) { return p.result.cost.gpu_hour > 0; }))) {
    a.currency = base.options.cost.currency;
    if (priced([](const report::GridPoint& p) { return p.result.job.time > 0; })) {
      a.minimised = "cost to train the job";
      for (auto& p : a.grid) p.money = p.result.cost.job;
    } else if (priced([](const report::GridPoint& p) { return p.result.tokens.tokens_per_s > 0; })) {
      a.minimised = "cost per million tokens";
      for (auto& p : a.grid) p.money = p.result.cost.per_million_tokens;
    } else {
      a.minimised = "cost per thousand samples";
      for (auto& p : a.grid) {
        const predict::Result& r = p.result;
        p.money = r.throughput > 0 ? r.cost.per_step / (r.throughput * r.step_time) * 1000 : 0;
      }
    }
  } else {
    a.minimised = "steps up the --vary lists";
  }
  // Cheapest that meets the target: least money (with costs), then least cost (steps up the
  // lists), then most throughput; equal on all is a tie.
  const auto key = [](const report::GridPoint& p) {
    return std::tuple(p.money, p.cost, -p.result.throughput);
  };
  for (size_t i = 0; i < a.grid.size(); ++i) {
    if (!a.grid[i].meets) continue;
    if (a.cheapest.empty() || key(a.grid[i]) < key(a.grid[a.cheapest.front()])) {
      a.cheapest = {i};
    } else if (key(a.grid[i]) == key(a.grid[a.cheapest.front()])) {
      a.cheapest.push_back(i);
    }
  }

  // One change from the scenario as given: each varied key to each of its other values.
  for (size_t i = 0; i < candidates.size(); ++i) {
    report::Change c{candidates[i].key,
                     candidates[i].current,
                     candidates[i].value,
                     std::move(changed.predictions[i + 1]),
                     0,
                     0};
    c.gain = c.result.throughput - a.base.throughput;
    c.gain_fraction = a.base.throughput > 0 ? c.gain / a.base.throughput : 0;
    if (!(c.gain > 0) || !c.result.memory.fits()) continue;
    if (a.best_changes.empty() || c.gain > a.best_changes.front().gain) {
      a.best_changes = {std::move(c)};
    } else if (c.gain == a.best_changes.front().gain) {
      a.best_changes.push_back(std::move(c));
    }
  }

  a.scenario = s.scenario;
  a.target_efficiency = efficiency.value_or(0);
  a.target_throughput = throughput.value_or(0);
  a.target = by_efficiency ? fmt::format("efficiency >= {:.1f}%", 100 * *efficiency)
                           : fmt::format("throughput >= {:.1f} samples/s", *throughput);
  return a;
}

}  // namespace stepcast::sweep
