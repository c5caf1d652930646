// The Python module `stepcast` (pybind11): predictions, sweeps, the advisor, single collectives,
// plans, trace inspection, calibration, Chakra export and the model zoo, over the library's public API, with
// the inputs the command takes and the outputs its --json writes. Depends on sweep/ (predict, advise),
// scenario/, report/ and zoo/. Units are SI, named in the keys as in the JSON (step_time_s,
// throughput_samples_per_s, bytes).
//
//   import stepcast
//   p = stepcast.predict("examples/resnet50-ps.yaml", workers=[1, 8], set={"training.ps.count": 4})
//   p.results[1].throughput_samples_per_s; p.to_dict(); p.to_pandas()
//
// Results are kept as what report/'s JSON writers produce, parsed by Python's json module, so
// to_dict() is `stepcast predict --json` by construction. stepcast::Error becomes stepcast.Error,
// a ValueError carrying file, line and key. Predictions run with the GIL released.
#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <memory>
#include <type_traits>
#include <cstddef>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "stepcast/enum_names.hpp"
#include "stepcast/error.hpp"
#include "stepcast/limits.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/report/advice.hpp"
#include "stepcast/report/html.hpp"
#include "stepcast/report/plan.hpp"
#include "stepcast/report/report.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/sweep/advise.hpp"
#include "stepcast/sweep/calibrate.hpp"
#include "stepcast/sweep/collective.hpp"
#include "stepcast/sweep/export.hpp"
#include "stepcast/sweep/inspect.hpp"
#include "stepcast/sweep/plan.hpp"
#include "stepcast/sweep/sweep.hpp"
#include "stepcast/units.hpp"
#include "stepcast/version.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace py = pybind11;

namespace {

using stepcast::Error;
using stepcast::SourceLocation;

using stepcast::limits::kMaxWorkers;
// What a dict scenario is called in messages (and its name, without a `name` key).
constexpr const char* kDictScenario = "<dict>";

// ---- Python values to the text the scenario reads ------------------------------------------

py::object json_module() { return py::module_::import("json"); }

/// JSON text of a value: valid YAML flow text, with strings quoted and escaped. Values JSON does
/// not know (pathlib.Path, numpy scalars) are written as their str().
std::string json_text(const py::handle& value) {
  return json_module()
      .attr("dumps")(value, py::arg("default") = py::module_::import("builtins").attr("str"),
                     py::arg("allow_nan") = false)
      .cast<std::string>();
}

/// A new dict of a Mapping's items, in its order.
py::dict as_dict(const py::handle& mapping) { return py::dict(py::reinterpret_borrow<py::object>(mapping)); }

bool is_mapping(const py::handle& value) {
  return py::isinstance(value, py::module_::import("collections.abc").attr("Mapping"));
}

bool is_path(const py::handle& value) {
  return py::isinstance<py::str>(value) || py::isinstance<py::bytes>(value) ||
         py::isinstance(value, py::module_::import("os").attr("PathLike"));
}

std::string path_text(const py::handle& value) {
  return py::module_::import("os").attr("fsdecode")(value).cast<std::string>();
}

/// A value as a `--set KEY=VALUE` or `--sweep` value: strings and paths as given, anything else
/// as JSON (4, 2.5, true, [8, 8]), which the scenario reads as YAML.
std::string value_text(const py::handle& value) {
  if (is_path(value)) return path_text(value);
  return json_text(value);
}

/// Block YAML of a mapping, scalars and lists in JSON form: one key per line, so an error's line
/// is that key's.
void emit_yaml(const py::handle& mapping, int indent, std::string& out) {
  for (const auto& item : as_dict(mapping)) {
    if (!py::isinstance<py::str>(item.first)) {
      throw py::type_error("scenario: keys must be strings, got " + py::repr(item.first).cast<std::string>());
    }
    out.append(static_cast<std::size_t>(indent), ' ');
    out += json_text(item.first) + ":";
    if (is_mapping(item.second) && py::len(item.second) > 0) {
      out += '\n';
      emit_yaml(item.second, indent + 2, out);
    } else {
      out += ' ' + (is_mapping(item.second) ? std::string("{}") : json_text(item.second)) + '\n';
    }
  }
}

/// A scenario argument: a file (path) or YAML text made from a dict.
struct ScenarioInput {
  std::string name;  ///< the file, or kDictScenario
  std::string text;  ///< YAML of a dict; "" for a file
};

ScenarioInput scenario_input(const py::handle& scenario) {
  if (is_mapping(scenario)) {
    std::string text;
    emit_yaml(scenario, 0, text);
    return {kDictScenario, text.empty() ? "{}" : text};
  }
  if (is_path(scenario)) return {path_text(scenario), ""};
  throw py::type_error("scenario: expected a path (str or os.PathLike) or a dict, got " +
                       py::repr(py::type::of(scenario)).cast<std::string>());
}

/// A request for `input`, for sweep::run, sweep::advise and sweep::load_scenario.
stepcast::sweep::Request request_for(const ScenarioInput& input) {
  stepcast::sweep::Request request;
  request.scenario = input.name;
  request.scenario_text = input.text;
  return request;
}

/// `set`: a dict {key: value} or a list of "key=value" strings, in order.
std::vector<std::string> overrides_of(const py::handle& set) {
  std::vector<std::string> out;
  if (set.is_none()) return out;
  if (is_mapping(set)) {
    for (const auto& item : as_dict(set)) {
      out.push_back(py::str(item.first).cast<std::string>() + "=" + value_text(item.second));
    }
    return out;
  }
  if (py::isinstance<py::str>(set)) {
    throw py::type_error("set: expected a dict {key: value} or a list of 'key=value' strings, got a str");
  }
  for (const auto& item : set) out.push_back(py::str(item).cast<std::string>());
  return out;
}

/// `sweep` and `vary`: {key: [values]} or {key: "1..32"} / {key: "1,2,4"} (sweep::parse_axis).
std::vector<stepcast::sweep::Axis> axes_of(const py::handle& axes, const std::string& option) {
  std::vector<stepcast::sweep::Axis> out;
  if (axes.is_none()) return out;
  if (!is_mapping(axes))
    throw py::type_error(option + ": expected a dict {key: [values]} or {key: \"A..B\"}");
  for (const auto& item : as_dict(axes)) {
    const std::string key = py::str(item.first).cast<std::string>();
    if (py::isinstance<py::str>(item.second)) {
      try {
        out.push_back(stepcast::sweep::parse_axis(key + "=" + item.second.cast<std::string>()));
      } catch (const Error& e) {
        throw Error({"", 0, option}, e.message());
      }
      continue;
    }
    stepcast::sweep::Axis axis{key, {}};
    for (const auto& value : item.second) {
      std::string text = value_text(value);
      if (text.empty()) throw Error({"", 0, option}, "an empty value of " + key);
      if (std::find(axis.values.begin(), axis.values.end(), text) != axis.values.end()) {
        throw Error({"", 0, option}, text + " is given twice for " + key);
      }
      axis.values.push_back(std::move(text));
    }
    if (axis.values.empty()) throw Error({"", 0, option}, key + " has no values");
    out.push_back(std::move(axis));
  }
  return out;
}

/// `workers` (or plan's `gpus`, `argument`): None, an int or a list of ints, each in
/// [1, kMaxWorkers], each once.
std::vector<int> workers_of(const py::handle& workers, const char* argument = "workers") {
  std::vector<int> out;
  if (workers.is_none()) return out;
  std::vector<py::object> items;
  if (py::isinstance<py::int_>(workers)) {
    items.push_back(py::reinterpret_borrow<py::object>(workers));
  } else {
    for (const auto& w : workers) items.push_back(py::reinterpret_borrow<py::object>(w));
  }
  for (const py::object& item : items) {
    const std::string text = py::repr(item).cast<std::string>();
    if (!py::isinstance<py::int_>(item) || py::isinstance<py::bool_>(item)) {
      throw Error({"", 0, argument}, "expected integers, got " + text);
    }
    const long long value = item.cast<long long>();
    if (value < 1 || value > kMaxWorkers) {
      throw Error({"", 0, argument},
                  "expected integers in [1, " + std::to_string(kMaxWorkers) + "], got " + text);
    }
    if (std::find(out.begin(), out.end(), value) != out.end()) {
      throw Error({"", 0, argument}, text + " is given twice; each count once");
    }
    out.push_back(static_cast<int>(value));
  }
  return out;
}

/// `predictor`: checked here, as the command's --predictor is, so that its error names it.
std::string predictor_of(const py::handle& predictor) {
  const std::string text = py::str(predictor).cast<std::string>();
  if (!stepcast::parse_name<stepcast::predict::Predictor>(text)) {
    throw Error({"", 0, "predictor"}, "expected fine, coarse or analytic, got '" + text + "'");
  }
  return text;
}

/// `seed`: an unsigned 64-bit integer, as the command's --seed.
std::string seed_of(const py::handle& seed) {
  const std::string text = py::repr(seed).cast<std::string>();
  if (!py::isinstance<py::int_>(seed) || py::isinstance<py::bool_>(seed) ||
      seed.cast<py::int_>() < py::int_(0) ||
      seed.cast<py::int_>() > py::int_(py::module_::import("builtins").attr("pow")(2, 64)) - py::int_(1)) {
    throw Error({"", 0, "seed"}, "expected an unsigned 64-bit integer, got " + text);
  }
  return text;
}

int jobs_of(int jobs) {
  if (jobs < 0 || jobs > 1024) throw Error({"", 0, "jobs"}, "expected 0 (all cores) or 1..1024 threads");
  return jobs;
}

/// Calls `fn`, renaming the command-line options the library's errors name ("--vary") to the
/// Python arguments ("vary"); as the command does for its flags, such an error names no file.
template <typename Fn>
auto renaming_options(const std::vector<std::pair<std::string, std::string>>& names, Fn&& fn) {
  try {
    return fn();
  } catch (const Error& e) {
    // The command's option names in the text too ("(at --workers 8)" reads "(at workers 8)").
    std::string message = e.message();
    for (const auto& [option, argument] : names) {
      for (std::size_t at = message.find(option); at != std::string::npos;
           at = message.find(option, at + argument.size())) {
        message.replace(at, option.size(), argument);
      }
    }
    for (const auto& [option, argument] : names) {
      if (e.where().key == option) throw Error({"", 0, argument}, message);
    }
    if (message != e.message()) throw Error(e.where(), message);
    throw;
  }
}

/// The predictors' warnings, raised as Python RuntimeWarnings once the GIL is held again.
void raise_warnings(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) {
    if (PyErr_WarnEx(PyExc_RuntimeWarning, w.c_str(), 1) != 0) throw py::error_already_set();
  }
}

py::object parse_json(const std::string& text) { return json_module().attr("loads")(text); }

py::object deep_copy(const py::handle& value) { return py::module_::import("copy").attr("deepcopy")(value); }

// ---- Result, Prediction, Advice ------------------------------------------------------------

/// One prediction as write_json writes it; attributes are its keys.
struct PyResult {
  py::dict data;
};

// write_json's keys of one prediction (src/report/json.cpp), each an attribute of Result.
constexpr const char* kPredictionKeys[] = {"workers",
                                           "predictor",
                                           "step_time_s",
                                           "throughput_samples_per_s",
                                           "speedup",
                                           "efficiency",
                                           "bottleneck",
                                           "mode",
                                           "gpu_busy_fraction",
                                           "bottleneck_kind",
                                           "bottleneck_resource",
                                           "breakdown_s",
                                           "optimizer_step_s",
                                           "utilization",
                                           "bytes_sent",
                                           "bytes_received",
                                           "events",
                                           "engine",
                                           "saturation_workers",
                                           "compute_cv",
                                           "job",
                                           "cost",
                                           "memory_per_worker_bytes",
                                           "gpu_memory_bytes",
                                           "fits",
                                           "tokens_per_s",
                                           "tokens_per_s_per_worker",
                                           "model_flops_per_s_per_worker",
                                           "mfu",
                                           "mfu_6nd",
                                           "collectives",
                                           "max_link_flows",
                                           "links",
                                           "links_left_out",
                                           "link_classes",
                                           "step_time_samples",
                                           "staleness",
                                           "async_phases_s",
                                           "layout",
                                           "bubble_fraction"};

/// The predictions of one call with everything the command prints from them.
struct PyPrediction {
  stepcast::report::Sweep sweep;
  std::string json;  ///< write_json
  py::list results;  ///< PyResult, one per prediction
};

/// The CSV's cell of an optional quantity: the value, or None where unknown.
py::object optional_number(bool known, double value) {
  return known ? py::object(py::float_(value)) : py::object(py::none());
}

/// A swept value as given: a number when the scenario says it is one ("4", "2.5"), else text.
py::object config_value(const stepcast::report::Input& input) {
  if (input.is_number) {
    try {
      return py::int_(py::str(input.value));
    } catch (const py::error_already_set&) {
      try {
        return py::float_(py::str(input.value));
      } catch (const py::error_already_set&) {
      }
    }
  }
  return py::str(input.value);
}

/// One row per prediction, the columns of `stepcast predict --csv` (report::write_csv) in its
/// order, the swept keys last; None where the CSV has an empty cell.
py::list rows_of(const stepcast::report::Sweep& sweep) {
  py::list rows;
  for (std::size_t i = 0; i < sweep.predictions.size(); ++i) {
    const stepcast::predict::Result& r = sweep.predictions[i];
    const stepcast::predict::StepSpread& spread = r.step_samples;
    const bool samples = spread.samples > 0, job = r.job.samples > 0, tokens = r.tokens.tokens_per_s > 0;
    py::dict row;
    row["workers"] = r.workers;
    row["predictor"] = stepcast::predict::to_string(r.predictor);
    row["step_time_s"] = r.step_time;
    row["throughput_samples_per_s"] = r.throughput;
    row["speedup"] = r.speedup;
    row["efficiency"] = r.efficiency;
    row["compute_s"] = r.breakdown.compute;
    row["communication_exposed_s"] = r.breakdown.communication_exposed;
    row["wait_s"] = r.breakdown.wait;
    row["bytes_sent"] = r.bytes_sent;
    row["bytes_received"] = r.bytes_received;
    row["bottleneck"] = r.bottleneck;
    row["step_samples"] = samples ? py::object(py::int_(spread.samples)) : py::object(py::none());
    row["step_time_mean_s"] = optional_number(samples, spread.mean);
    row["step_time_p50_s"] = optional_number(samples, spread.p50);
    row["step_time_p95_s"] = optional_number(samples, spread.p95);
    row["step_time_min_s"] = optional_number(samples, spread.min);
    row["step_time_max_s"] = optional_number(samples, spread.max);
    row["job_startup_s"] = optional_number(job, r.job.startup_time);
    row["job_time_s"] = optional_number(job, r.job.time);
    row["tokens_per_s"] = optional_number(tokens, r.tokens.tokens_per_s);
    row["tokens_per_s_per_worker"] = optional_number(tokens, r.tokens.tokens_per_s_per_worker);
    row["mfu"] = optional_number(r.tokens.mfu >= 0, r.tokens.mfu);
    row["mfu_6nd"] = optional_number(r.tokens.mfu_6nd >= 0, r.tokens.mfu_6nd);
    row["memory_per_worker_bytes"] = optional_number(r.memory.known, r.memory.allocated());
    row["memory_reserved_bytes"] = optional_number(r.memory.known, r.memory.reserved());
    row["gpu_memory_bytes"] = optional_number(r.memory.gpu_memory > 0, r.memory.gpu_memory);
    row["fits"] = r.memory.known && r.memory.gpu_memory > 0 ? py::object(py::bool_(r.memory.fits()))
                                                            : py::object(py::none());
    const bool layout = !r.layout.empty();
    row["layout"] = layout ? py::object(py::str(r.layout)) : py::object(py::none());
    row["bubble_fraction"] = optional_number(layout, r.bubble_fraction);
    row["tensor_s"] = optional_number(layout, r.breakdown.tensor);
    row["context_s"] = optional_number(layout, r.breakdown.context);
    row["pipeline_s"] = optional_number(layout, r.breakdown.pipeline);
    row["data_s"] = optional_number(layout, r.breakdown.data);
    row["expert_s"] = optional_number(layout, r.breakdown.expert);
    // Tokens and money (cluster.cost.gpu_hour), as write_csv's last columns.
    const bool costs = r.cost.gpu_hour > 0;
    row["job_tokens"] = optional_number(r.job.tokens > 0, r.job.tokens);
    row["cost_per_step"] = optional_number(costs, r.cost.per_step);
    row["cost_per_million_tokens"] =
        optional_number(costs && r.cost.per_million_tokens > 0, r.cost.per_million_tokens);
    row["job_cost"] = optional_number(costs && r.job.time > 0, r.cost.job);
    if (i < sweep.configs.size()) {
      for (const stepcast::report::Input& setting : sweep.configs[i])
        row[py::str(setting.key)] = config_value(setting);
    }
    rows.append(row);
  }
  return rows;
}

std::string csv_of(const stepcast::report::Sweep& sweep) {
  std::ostringstream out;
  stepcast::report::write_csv(out, sweep);
  return out.str();
}

PyPrediction make_prediction(stepcast::report::Sweep sweep) {
  PyPrediction p;
  std::ostringstream out;
  stepcast::report::write_json(out, sweep);
  p.json = out.str();
  p.sweep = std::move(sweep);
  py::object parsed = parse_json(p.json);
  for (const auto& prediction : parsed["predictions"]) {
    p.results.append(py::cast(PyResult{py::reinterpret_borrow<py::dict>(prediction)}));
  }
  return p;
}

/// What `stepcast advise --json` writes, and its text.
/// A command's answer as Python sees it: its JSON (as `--json` prints it), its text, and the JSON
/// as a dict.
struct PyAnswer {
  std::string json;
  std::string text;
  py::dict data;
  /// Writes the command's --report page of the answer; empty for answers without one.
  std::function<void(std::ostream&)> write_report{};
};

/// Runs `run` without the GIL and keeps what `write_json` and `write_text` print of its answer,
/// and the answer itself for `write_html` (the --report page, written on request).
template <class Run, class WriteJson, class WriteText, class WriteHtml = std::nullptr_t>
void answer_into(PyAnswer& out, Run&& run, WriteJson&& write_json, WriteText&& write_text,
                 WriteHtml write_html = nullptr) {
  {
    py::gil_scoped_release release;
    auto answer = std::make_shared<const decltype(run())>(run());
    std::ostringstream json, text;
    write_json(json, *answer);
    write_text(text, *answer);
    out.json = json.str();
    out.text = text.str();
    if constexpr (!std::is_same_v<WriteHtml, std::nullptr_t>) {
      out.write_report = [answer, write_html](std::ostream& page) { write_html(page, *answer); };
    }
  }
  out.data = parse_json(out.json);
}

struct PyAdvice : PyAnswer {};

/// `stepcast plan`'s answer: its JSON (as `--json` prints it), its text, and the JSON as a dict.
struct PyPlan : PyAnswer {};

constexpr const char* kAdviceKeys[] = {"scenario", "target",     "feasible",     "as_given",
                                       "cheapest", "best_point", "best_changes", "grid"};

// ---- The functions -------------------------------------------------------------------------

PyPrediction predict(const py::object& scenario, const py::object& workers, const py::object& set,
                     const py::object& predictor, const py::object& sweep, int jobs, const py::object& seed) {
  const ScenarioInput input = scenario_input(scenario);
  // As `stepcast predict` builds them (src/cli/main.cpp): --set, then --predictor, then --seed.
  const std::vector<std::string> sets = overrides_of(set);
  std::vector<std::string> overrides = sets;
  if (!predictor.is_none()) overrides.push_back("predictor=" + predictor_of(predictor));
  if (!seed.is_none()) overrides.push_back("seed=" + seed_of(seed));
  const std::vector<int> swept = workers_of(workers);
  stepcast::sweep::Request request = request_for(input);
  request.overrides = overrides;
  request.axes = axes_of(sweep, "sweep");
  request.workers = swept;
  request.jobs = jobs_of(jobs);
  std::vector<std::string> warnings;
  request.warn = [&warnings](const std::string& w) { warnings.push_back(w); };
  stepcast::report::Sweep result;
  {
    py::gil_scoped_release release;
    renaming_options({{"--sweep", "sweep"}, {"--workers", "workers"}}, [&] {
      // Checks the scenario once up front (errors name its line), then runs the grid.
      // At the workers counts, and a set valid only with the sweep's values applied is accepted,
      // as `stepcast predict` checks it (sweep::base_scenario).
      const stepcast::scenario::Scenario base =
          stepcast::sweep::base_scenario(request, stepcast::scenario::Needs::Workload,
                                         request.axes.empty() ? swept : std::vector<int>{});
      result = stepcast::sweep::run(request);
      stepcast::sweep::describe_run(result, base, request,
                                    swept.empty() ? std::vector<int>{base.cluster.workers} : swept, request.warn);
      return 0;
    });
  }
  raise_warnings(warnings);
  // The name follows what `set` changed, as the command's does.
  for (const std::string& s : sets) result.scenario += (&s == &sets.front() ? " (" : ", ") + s;
  if (!sets.empty()) result.scenario += ")";
  return make_prediction(std::move(result));
}

py::object collective(const std::string& op_name, const py::object& size, const py::object& workers,
                      const py::object& algorithm, const py::object& scenario, const py::object& set,
                      const py::object& workers_per_node, const py::object& nic_bandwidth,
                      const py::object& latency, const py::object& protocol) {
  // The library runs it as `stepcast collective` does (sweep/collective.hpp); only the arguments'
  // Python types are checked here.
  stepcast::sweep::CollectiveRequest request;
  request.op = op_name;
  if (py::isinstance<py::str>(size)) {
    request.sizes = size.cast<std::string>();
    if (request.sizes.find(',') != std::string::npos) throw Error({"", 0, "size"}, "expected one size");
  } else if ((py::isinstance<py::int_>(size) && !py::isinstance<py::bool_>(size)) ||
             py::isinstance<py::float_>(size)) {
    request.sizes = fmt::format("{}B", size.cast<double>());
  } else {
    throw py::type_error("size: expected bytes (a number) or a size such as '100MB'");
  }
  if (!scenario.is_none()) request.scenario = request_for(scenario_input(scenario));
  request.sets = overrides_of(set);
  const std::vector<int> counts = workers_of(workers);
  if (counts.size() > 1) throw Error({"", 0, "workers"}, "expected one worker count");
  if (!counts.empty()) request.workers = std::to_string(counts.front());
  const std::pair<std::optional<std::string>*, const py::object*> named[] = {
      {&request.algorithm, &algorithm},
      {&request.protocol, &protocol},
      {&request.workers_per_node, &workers_per_node},
      {&request.nic_bandwidth, &nic_bandwidth},
      {&request.latency, &latency}};
  for (const auto& [field, value] : named) {
    if (!value->is_none()) *field = value_text(*value);
  }
  std::string json;
  {
    py::gil_scoped_release release;
    std::ostringstream out;
    stepcast::sweep::write_json(out, stepcast::sweep::run_collective(request));
    json = out.str();
  }
  return parse_json(json);
}

PyAdvice advise(const py::object& scenario, const py::object& vary, std::optional<double> target_efficiency,
                std::optional<double> target_throughput, const py::object& workers, const py::object& set,
                int jobs) {
  const ScenarioInput input = scenario_input(scenario);
  stepcast::sweep::AdviseRequest request;
  request.sweep = request_for(input);
  request.sweep.overrides = overrides_of(set);
  request.sweep.axes = axes_of(vary, "vary");
  request.sweep.workers = workers_of(workers);
  request.sweep.jobs = jobs_of(jobs);
  std::vector<std::string> warnings;
  request.sweep.warn = [&warnings](const std::string& w) { warnings.push_back(w); };
  request.target_efficiency = target_efficiency;
  request.target_throughput = target_throughput;
  PyAdvice a;
  answer_into(
      a,
      [&] {
        return renaming_options({{"--target-efficiency", "target_efficiency"},
                                 {"--target-throughput", "target_throughput"},
                                 {"--vary", "vary"},
                                 {"--sweep", "vary"},
                                 {"--workers", "workers"}},
                                [&] { return stepcast::sweep::advise(request); });
      },
      [](std::ostream& out, const auto& advice) { stepcast::report::write_advice_json(out, advice); },
      [](std::ostream& out, const auto& advice) { stepcast::report::write_advice_text(out, advice); },
      [](std::ostream& out, const auto& advice) { stepcast::report::write_advice_html(out, advice); });
  raise_warnings(warnings);
  return a;
}

/// `stepcast inspect`'s answer.
struct PyInspection : PyAnswer {};

PyInspection inspect(const py::object& trace) {
  if (!py::isinstance<py::str>(trace) &&
      !py::isinstance(trace, py::module_::import("pathlib").attr("PurePath"))) {
    throw py::type_error("trace: expected a path (str or pathlib.Path)");
  }
  const std::string path = py::str(trace).cast<std::string>();
  PyInspection p;
  answer_into(
      p, [&] { return stepcast::sweep::inspect(path); },
      [](std::ostream& out, const auto& inspection) { stepcast::sweep::write_json(out, inspection); },
      [](std::ostream& out, const auto& inspection) { stepcast::sweep::write_table(out, inspection); });
  return p;
}

PyPlan plan(const py::object& scenario, const py::object& gpus, int top, const std::string& rank_by,
            const py::object& set, int jobs) {
  // The library searches as `stepcast plan` does (sweep/plan.hpp); only the arguments' Python
  // types are checked here, and the library's option names renamed to the arguments'.
  const ScenarioInput input = scenario_input(scenario);
  stepcast::sweep::PlanRequest request;
  request.scenario = input.name;
  request.scenario_text = input.text;
  request.overrides = overrides_of(set);
  request.gpus = workers_of(gpus, "gpus");
  if (top < 1 || top > 1000) throw Error({"", 0, "top"}, "expected 1..1000 layouts per GPU count");
  request.top = static_cast<std::size_t>(top);
  request.jobs = jobs_of(jobs);
  request.rank_by = stepcast::report::parse_plan_rank(rank_by, "rank_by");
  std::vector<std::string> warnings;
  request.warn = [&warnings](const std::string& w) { warnings.push_back(w); };
  PyPlan p;
  answer_into(
      p,
      [&] {
        return renaming_options({{"--gpus", "gpus"}, {"--top", "top"}, {"--rank-by", "rank_by"}},
                                [&] { return stepcast::sweep::plan(request); });
      },
      [](std::ostream& out, const auto& answer) { stepcast::report::write_plan_json(out, answer); },
      [](std::ostream& out, const auto& answer) { stepcast::report::write_plan_text(out, answer); },
      [](std::ostream& out, const auto& answer) { stepcast::report::write_plan_html(out, answer); });
  raise_warnings(warnings);
  return p;
}

/// A path argument (str or os.PathLike); None gives "" when `optional`.
std::string path_argument(const py::handle& value, const char* argument, bool optional = false) {
  if (optional && value.is_none()) return "";
  if (!is_path(value)) {
    throw py::type_error(std::string(argument) + ": expected a path (str or os.PathLike), got " +
                         py::repr(py::type::of(value)).cast<std::string>());
  }
  return path_text(value);
}

/// Writes an HTML report (the command's --report page) to `path`, replacing what is there.
void write_report_file(const std::function<void(std::ostream&)>& write, const py::handle& path) {
  const std::string file = path_argument(path, "path");
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw Error({file, 0, "path"}, "cannot open the report for writing");
  write(out);
  out.close();
  if (!out) throw Error({file, 0, "path"}, "cannot write the report");
}

/// A size argument: a number of bytes or a size with a unit ('1MiB'), as the command's text.
std::string size_argument(const py::handle& value, const char* argument) {
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if ((py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value)) ||
      py::isinstance<py::float_>(value)) {
    return fmt::format("{}B", value.cast<double>());
  }
  throw py::type_error(std::string(argument) + ": expected bytes (a number) or a size such as '1MiB'");
}

/// `stepcast calibrate`'s answer (nccl-tests or gemm).
struct PyCalibration : PyAnswer {};

PyCalibration calibrate_nccl_tests(const py::object& log, const py::object& workers, int workers_per_node,
                                   const std::string& format, bool in_place, const py::object& fit,
                                   int max_regimes, const py::object& min_size, const py::object& max_size,
                                   const py::object& output, const std::string& gpu_generation,
                                   const std::string& cpu_vendor, int nics_per_node,
                                   const py::object& nic_bandwidth) {
  // The library fits as `stepcast calibrate nccl-tests` does (sweep/calibrate.hpp); errors name
  // the arguments by their names here (the request's option_name left empty).
  stepcast::sweep::NcclTestsRequest request;
  // One log and its ranks, or a list of each (the same nodes at several node counts).
  const bool several = py::isinstance<py::list>(log) || py::isinstance<py::tuple>(log);
  std::vector<std::string> logs;
  std::vector<int> counts;
  if (several) {
    for (const py::handle item : log) logs.push_back(path_argument(item, "log"));
    if (!(py::isinstance<py::list>(workers) || py::isinstance<py::tuple>(workers))) {
      throw py::type_error("workers: expected a list of rank counts, one per log");
    }
    for (const py::handle item : workers) counts.push_back(item.cast<int>());
    if (logs.empty() || counts.size() != logs.size()) {
      throw py::value_error(fmt::format("workers: expected one rank count per log: {} logs, {} counts",
                                        logs.size(), counts.size()));
    }
  } else {
    logs.push_back(path_argument(log, "log"));
    counts.push_back(workers.cast<int>());
  }
  request.log = logs.front();
  request.workers = counts.front();
  request.more_logs.assign(logs.begin() + 1, logs.end());
  request.more_workers.assign(counts.begin() + 1, counts.end());
  request.gpu_generation = gpu_generation;
  request.cpu_vendor = cpu_vendor;
  request.nics_per_node = nics_per_node;
  if (!nic_bandwidth.is_none()) request.nic_bandwidth = py::str(nic_bandwidth).cast<std::string>();
  request.workers_per_node = workers_per_node;
  request.format = format;
  request.in_place = in_place;
  if (!fit.is_none()) request.fit = py::str(fit).cast<std::string>();
  request.max_regimes = max_regimes;
  request.min_size = size_argument(min_size, "min_size");
  if (!max_size.is_none()) request.max_size = size_argument(max_size, "max_size");
  request.output = path_argument(output, "output", true);
  std::optional<stepcast::sweep::FitSuggestion> suggestion;
  PyCalibration c;
  answer_into(
      c,
      [&] {
        auto result = stepcast::sweep::calibrate_nccl_tests(request);
        suggestion = result.suggestion;
        return result;
      },
      [](std::ostream& out, const auto& result) { stepcast::sweep::write_json(out, result); },
      [](std::ostream& out, const auto& result) { stepcast::sweep::write_table(out, result); });
  // Keywords the fit does not use, as the command warns of its options (given: not the default).
  raise_warnings(stepcast::sweep::unused_options(request));
  if (suggestion) {
    // The command's note on stderr, as a warning in Python's words.
    raise_warnings({fmt::format(
        "the {} fit is {:.0f}% off (median over sizes >= {}); fit='{}' is {:.0f}% off{}", suggestion->method,
        100 * suggestion->error, stepcast::format_bytes(suggestion->min_bytes), suggestion->better,
        100 * suggestion->better_error,
        suggestion->in_sample ? " (in sample: it fits every size)" : " (leave-one-out)")});
  }
  return c;
}

PyCalibration calibrate_gemm(const py::object& table, const py::object& check, const py::object& output) {
  stepcast::sweep::GemmRequest request;
  request.table = path_argument(table, "table");
  request.check = path_argument(check, "check", true);
  request.output = path_argument(output, "output", true);
  PyCalibration c;
  answer_into(
      c, [&] { return stepcast::sweep::calibrate_gemm_table(request); },
      [](std::ostream& out, const auto& result) { stepcast::sweep::write_json(out, result); },
      [](std::ostream& out, const auto& result) { stepcast::sweep::write_table(out, result); });
  return c;
}

/// What `stepcast export` wrote: the files and the command's text.
struct PyExport {
  py::dict data;
  std::string text;
};

PyExport export_workload(const py::object& scenario, const py::object& chakra, const py::object& workers,
                         const py::object& set, int network_dims) {
  // The library writes as `stepcast export` does (sweep/export.hpp).
  stepcast::sweep::ExportRequest request;
  request.chakra = path_argument(chakra, "chakra");
  request.scenario = request_for(scenario_input(scenario));
  request.scenario.overrides = overrides_of(set);
  const std::vector<int> counts = workers_of(workers);
  if (counts.size() > 1) throw Error({"", 0, "workers"}, "expected one worker count");
  if (!counts.empty()) request.workers = counts.front();
  request.network_dims = network_dims;
  stepcast::sweep::Export written;
  PyExport e;
  {
    py::gil_scoped_release release;
    written = stepcast::sweep::export_chakra(request);
    std::ostringstream text;
    stepcast::sweep::write_table(text, written);
    e.text = text.str();
  }
  e.data["scenario"] = written.scenario;
  e.data["ops_per_step"] = written.ops;
  e.data["workers"] = written.workers;
  e.data["summary"] = written.summary;
  e.data["prefix"] = written.prefix;
  py::list files;
  for (const stepcast::report::ChakraFile& f : written.files) {
    py::dict file;
    file["rank"] = f.rank;
    file["role"] = f.role;
    file["nodes"] = f.nodes;
    file["bytes_sent"] = f.bytes_sent;
    file["path"] = f.path;
    files.append(file);
  }
  e.data["files"] = files;
  return e;
}

// What `stepcast zoo list --json` and `zoo show NAME --json` write, parsed: one text for both.
py::object zoo() {
  std::ostringstream out;
  stepcast::report::write_zoo_json(out);
  return parse_json(out.str());
}

py::object zoo_model(const std::string& name) {
  const stepcast::zoo::ModelSpec* m = stepcast::zoo::find_model(name);
  if (m == nullptr) {
    std::string known;
    for (const auto& x : stepcast::zoo::all_models()) known += (known.empty() ? "" : ", ") + x.name;
    throw Error({"", 0, "name"}, "unknown model '" + name + "' (known: " + known + ")");
  }
  std::ostringstream out;
  stepcast::report::write_zoo_model_json(out, *m);
  return parse_json(out.str());
}

py::object to_pandas(const PyPrediction& p) {
  py::object pandas;
  try {
    pandas = py::module_::import("pandas");
  } catch (const py::error_already_set& e) {
    if (!e.matches(PyExc_ImportError)) throw;
    throw py::import_error(
        "Prediction.to_pandas() needs pandas, which is not installed (Debian: apt-get install "
        "python3-pandas; "
        "or pip install pandas); Prediction.rows() gives the same rows as dicts");
  }
  // Columns in the CSV's order (a dict keeps its insertion order; every row has the same keys).
  const py::list rows = rows_of(p.sweep);
  py::list columns;
  if (rows.size() > 0) {
    for (const auto& item : py::dict(rows[0])) columns.append(item.first);
  }
  return pandas.attr("DataFrame")(rows, py::arg("columns") = columns);
}

std::string table_of(const stepcast::report::Sweep& sweep) {
  std::ostringstream out;
  stepcast::report::write_table(out, sweep);
  return out.str();
}

}  // namespace

PYBIND11_MODULE(stepcast, m) {
  m.doc() =
      "stepcast: predict the throughput of distributed deep-learning training.\n\n"
      "predict(), collective(), advise(), plan(), inspect(), calibrate_nccl_tests(), calibrate_gemm(),\n"
      "export(), zoo() and zoo_model() take what the stepcast command\n"
      "takes and return what its --json writes; bad input raises stepcast.Error (a ValueError).";
  m.attr("__version__") = STEPCAST_VERSION;

  // Leaked on purpose: a static py::object would be released after the interpreter is gone.
  static auto* error_type = new py::exception<Error>(m, "Error", PyExc_ValueError);
  error_type->doc() =
      "Bad input (a scenario key, a value, an argument). str() reads 'file:line: key: message'; "
      "the attributes file, line and key say where (None when unknown), message says what.";
  for (const char* attr : {"file", "line", "key", "message"}) error_type->attr(attr) = py::none();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      // `set` is what Python calls the overrides the library knows as --set.
      SourceLocation where = e.where();
      if (where.file == "--set") where.file = "set";
      const std::string prefix = stepcast::to_string(where);
      py::object exception = py::reinterpret_borrow<py::object>(error_type->ptr())(
          prefix.empty() ? e.message() : prefix + ": " + e.message());
      exception.attr("file") = where.file.empty() ? py::object(py::none()) : py::object(py::str(where.file));
      exception.attr("line") = where.line > 0 ? py::object(py::int_(where.line)) : py::object(py::none());
      exception.attr("key") = where.key.empty() ? py::object(py::none()) : py::object(py::str(where.key));
      exception.attr("message") = e.message();
      PyErr_SetObject(error_type->ptr(), exception.ptr());
    }
  });

  auto result =
      py::class_<PyResult>(m, "Result",
                           "One prediction: one configuration at one worker count. Attributes are the "
                           "keys of `stepcast predict --json`'s predictions, units in their names.");
  for (const char* key : kPredictionKeys) {
    result.def_property_readonly(key,
                                 [key](const PyResult& r) { return deep_copy(py::object(r.data[key])); });
  }
  result
      .def_property_readonly(
          "config",
          [](const PyResult& r) {
            return r.data.contains("config") ? deep_copy(py::object(r.data["config"]))
                                             : py::object(py::dict());
          },
          "The swept keys' values as given ({} without a sweep).")
      .def(
          "to_dict", [](const PyResult& r) { return deep_copy(r.data); },
          "The prediction as `stepcast predict --json` writes it.")
      .def("__repr__", [](const PyResult& r) {
        return py::str("<stepcast.Result workers={} predictor={} step_time_s={} throughput_samples_per_s={}>")
            .attr("format")(r.data["workers"], r.data["predictor"], r.data["step_time_s"],
                            r.data["throughput_samples_per_s"]);
      });

  py::class_<PyPrediction>(
      m, "Prediction",
      "The predictions of one predict() call: one Result per configuration x worker count, "
      "configurations in grid order (first swept key outermost), worker counts within.")
      .def_readonly("results", &PyPrediction::results, "list of Result")
      .def_property_readonly(
          "name", [](const PyPrediction& p) { return p.sweep.scenario; }, "The scenario's name (with `set`).")
      .def_property_readonly(
          "scenario", [](const PyPrediction& p) { return py::object(parse_json(p.json)["scenario"]); },
          "Every resolved input, nested by dotted key, as in the JSON.")
      .def_property_readonly(
          "compute_source", [](const PyPrediction& p) { return p.sweep.compute_source; },
          "Where the compute time came from, in words ('' when measured and not said).")
      .def(
          "to_dict", [](const PyPrediction& p) { return parse_json(p.json); },
          "What `stepcast predict --json` prints: {'scenario': {...}, 'predictions': [...]}.")
      .def(
          "to_json", [](const PyPrediction& p) { return p.json; }, "The same as JSON text.")
      .def(
          "rows", [](const PyPrediction& p) { return rows_of(p.sweep); },
          "One dict per prediction with the columns of `stepcast predict --csv`, swept keys last; None "
          "where unknown.")
      .def(
          "to_csv", [](const PyPrediction& p) { return csv_of(p.sweep); }, "What `--csv` writes.")
      .def(
          "report",
          [](const PyPrediction& p, const py::object& path) {
            write_report_file([&p](std::ostream& out) { stepcast::report::write_html_report(out, p.sweep); },
                              path);
          },
          py::arg("path"),
          "Writes the self-contained HTML page of `stepcast predict --report` (scaling charts, the step's "
          "parts, the busiest links) to path.")
      .def("to_pandas", &to_pandas,
           "A pandas.DataFrame of rows(): one row per configuration x worker count, SI units in the column "
           "names, the swept keys as columns. Raises ImportError without pandas.")
      .def(
          "table", [](const PyPrediction& p) { return table_of(p.sweep); }, "The command's table, as text.")
      .def("__len__", [](const PyPrediction& p) { return p.results.size(); })
      .def("__getitem__", [](const PyPrediction& p, const py::object& i) { return py::object(p.results[i]); })
      .def("__iter__", [](const PyPrediction& p) { return p.results.attr("__iter__")(); })
      .def("__repr__", [](const PyPrediction& p) {
        return "<stepcast.Prediction " + p.sweep.scenario + ": " + std::to_string(p.results.size()) +
               " result" + (p.results.size() == 1 ? "" : "s") + ">";
      });

  auto advice =
      py::class_<PyAdvice>(m, "Advice",
                           "The advisor's answer. Attributes are the keys of `stepcast advise --json` "
                           "(points and predictions as dicts).");
  for (const char* key : kAdviceKeys) {
    advice.def_property_readonly(key,
                                 [key](const PyAdvice& a) { return deep_copy(py::object(a.data[key])); });
  }
  advice
      .def(
          "to_dict", [](const PyAdvice& a) { return deep_copy(a.data); },
          "What `stepcast advise --json` prints.")
      .def("to_json", [](const PyAdvice& a) { return a.json; })
      .def(
          "text", [](const PyAdvice& a) { return a.text; }, "The answer in words, as the command prints it.")
      .def(
          "report", [](const PyAdvice& a, const py::object& path) { write_report_file(a.write_report, path); },
          py::arg("path"),
          "Writes the self-contained HTML page of `stepcast advise --report` (the target, the answer, the "
          "runner-ups, the grid's charts) to path.")
      .def("__repr__",
           [](const PyAdvice& a) { return "<stepcast.Advice " + a.text.substr(0, a.text.find('\n')) + ">"; });

  py::class_<PyInspection>(m, "Inspection", "What `stepcast inspect` finds in a trace.")
      .def(
          "to_dict", [](const PyInspection& p) { return deep_copy(p.data); },
          "What `stepcast inspect --json` prints.")
      .def("to_json", [](const PyInspection& p) { return p.json; })
      .def(
          "text", [](const PyInspection& p) { return p.text; }, "The summary as the command prints it.");

  py::class_<PyPlan>(m, "Plan",
                     "`stepcast plan`'s answer: every layout that is valid and fits, ranked, at each GPU "
                     "count.")
      .def(
          "to_dict", [](const PyPlan& p) { return deep_copy(p.data); }, "What `stepcast plan --json` prints.")
      .def("to_json", [](const PyPlan& p) { return p.json; })
      .def(
          "text", [](const PyPlan& p) { return p.text; }, "The answer as the command prints it.")
      .def(
          "report", [](const PyPlan& p, const py::object& path) { write_report_file(p.write_report, path); },
          py::arg("path"),
          "Writes the self-contained HTML page of `stepcast plan --report` (the answer, the runner-ups, "
          "their charts) to path.")
      .def("__repr__",
           [](const PyPlan& p) { return "<stepcast.Plan " + p.text.substr(0, p.text.find('\n')) + ">"; });

  py::class_<PyCalibration>(m, "Calibration",
                            "`stepcast calibrate nccl-tests`' or `stepcast calibrate gemm`'s answer.")
      .def(
          "to_dict", [](const PyCalibration& c) { return deep_copy(c.data); },
          "What the command prints with --json.")
      .def("to_json", [](const PyCalibration& c) { return c.json; })
      .def(
          "text", [](const PyCalibration& c) { return c.text; }, "The answer as the command prints it.")
      .def("__repr__", [](const PyCalibration& c) {
        return "<stepcast.Calibration " + c.text.substr(0, c.text.find('\n')) + ">";
      });

  py::class_<PyExport>(m, "Export", "What `stepcast export` wrote: one Chakra execution trace per rank.")
      .def_property_readonly(
          "files", [](const PyExport& e) { return deep_copy(py::object(e.data["files"])); },
          "One dict per file, in rank order: rank, role ('worker' or 'ps'), nodes, bytes_sent (per step), "
          "path.")
      .def(
          "to_dict", [](const PyExport& e) { return deep_copy(e.data); },
          "scenario, ops_per_step, workers, summary (the scheme in words), prefix and files.")
      .def(
          "text", [](const PyExport& e) { return e.text; }, "What the command prints.")
      .def("__repr__", [](const PyExport& e) {
        return "<stepcast.Export " + std::to_string(py::len(e.data["files"])) + " files, prefix " +
               py::str(e.data["prefix"]).cast<std::string>() + ">";
      });

  m.def(
      "predict", &predict, py::arg("scenario"), py::arg("workers") = py::none(), py::arg("set") = py::none(),
      py::arg("predictor") = py::none(), py::arg("sweep") = py::none(), py::arg("jobs") = 0,
      py::arg("seed") = py::none(),
      "Predicts a scenario (a YAML file's path, or a dict of the same keys, nested or dotted) at each "
      "worker\n"
      "count of `workers` (default: cluster.workers), as `stepcast predict`. set: {key: value} overrides;\n"
      "predictor: 'fine', 'coarse' or 'analytic'; sweep: {key: [values]} or {key: 'A..B'}, a grid;\n"
      "jobs: threads (0: all cores; the output is the same); seed: overrides `seed`. Returns a Prediction.\n"
      "Raises stepcast.Error on bad input.");
  m.def("collective", &collective, py::arg("op") = "allreduce", py::arg("size") = "100MB",
        py::arg("workers") = py::none(), py::arg("algorithm") = py::none(), py::arg("scenario") = py::none(),
        py::arg("set") = py::none(), py::arg("workers_per_node") = py::none(),
        py::arg("nic_bandwidth") = py::none(), py::arg("latency") = py::none(),
        py::arg("protocol") = py::none(),
        "Times one collective alone on the network, as `stepcast collective --json`: op 'allreduce',\n"
        "'allgather', 'reducescatter' or 'broadcast'; size in bytes per worker (a number or '100MB').\n"
        "Without a scenario the cluster is 8 workers, 100Gbps NICs, 2us latency, the ring; workers,\n"
        "algorithm, protocol ('links', 'll', 'll128', 'simple', 'auto'), workers_per_node, nic_bandwidth\n"
        "('25Gbps') and latency ('5us') override the scenario and `set`. Returns a dict: time_s, algbw_GBps, "
        "busbw_GBps, steps, links, ...");
  m.def("advise", &advise, py::arg("scenario"), py::arg("vary"), py::arg("target_efficiency") = py::none(),
        py::arg("target_throughput") = py::none(), py::arg("workers") = py::none(),
        py::arg("set") = py::none(), py::arg("jobs") = 0,
        "The cheapest point of the `vary` grid ({key: [values cheapest first]} or {key: 'A..B'}) that meets\n"
        "target_efficiency (0..1) or target_throughput (samples/s), and the best single change, as\n"
        "`stepcast advise --json`. workers: one count (default: cluster.workers). Returns an Advice.");
  m.def("inspect", &inspect, py::arg("trace"),
        "What a PyTorch profiler (Kineto) trace or a TensorFlow timeline holds, as `stepcast inspect\n"
        "--json`: steps, step time, GPU time split, collectives (or ops and the cost of a PS message).\n"
        "Returns an Inspection (to_dict(), to_json(), text()).");
  m.def("plan", &plan, py::arg("scenario"), py::arg("gpus") = py::none(), py::arg("top") = 10,
        py::arg("rank_by") = "tokens_per_gpu", py::arg("set") = py::none(), py::arg("jobs") = 0,
        "Every parallel layout of a decoder scenario that is valid and fits, at each GPU count of `gpus`\n"
        "(default: cluster.workers), coarse on all, fine on the top `top`, ranked by rank_by\n"
        "('tokens_per_gpu', 'time' or 'cost'), as `stepcast plan --json`. Returns a Plan.");
  m.def("calibrate_nccl_tests", &calibrate_nccl_tests, py::arg("log"), py::arg("workers"),
        py::arg("workers_per_node") = 1, py::arg("format") = "auto", py::arg("in_place") = false,
        py::arg("fit") = py::none(), py::arg("max_regimes") = 4, py::arg("min_size") = "0",
        py::arg("max_size") = py::none(), py::arg("output") = py::none(),
        py::arg("gpu_generation") = "hopper", py::arg("cpu_vendor") = "intel", py::arg("nics_per_node") = 1,
        py::arg("nic_bandwidth") = py::none(),
        "Fits the ring all-reduce's latency and bandwidth to an nccl-tests all_reduce_perf log (or an XLA\n"
        "collective perf table), as `stepcast calibrate nccl-tests --json`: workers ranks, workers_per_node\n"
        "per node; log and workers may be lists (the same nodes at several node counts, fitted together\n"
        "by fit='nccl'); gpu_generation, cpu_vendor, nics_per_node describe the nodes for fit='nccl' "
        "(nic_bandwidth, e.g. '200Gbps': each NIC's known line rate, not "
        "fitted then); format "
        "'auto', 'nccl-tests' or 'xla'; fit 'endpoints' (default), 'least-squares',\n"
        "'regimes' or 'nccl'; min_size / max_size bound the fitted sizes (bytes or '1MiB'); output: write\n"
        "the cluster keys there as YAML. Without fit, a RuntimeWarning names a better fit when the default\n"
        "is more than 10% off. Returns a Calibration (to_dict(), to_json(), text()).");
  m.def("calibrate_gemm", &calibrate_gemm, py::arg("table"), py::arg("check") = py::none(),
        py::arg("output") = py::none(),
        "Checks a GEMM table measured on one GPU (tools/gemm_sweep.py) on held-back rows (check; default\n"
        "TABLE-check.csv when it exists), as `stepcast calibrate gemm --json`; output: write the keys of\n"
        "workload.compute: shapes there as YAML. Returns a Calibration (to_dict(), to_json(), text()).");
  m.def("export", &export_workload, py::arg("scenario"), py::arg("chakra"), py::arg("workers") = py::none(),
        py::arg("set") = py::none(), py::arg("network_dims") = 1,
        "Writes the scenario's multi-worker workload as Chakra execution traces CHAKRA.<rank>.et, one per\n"
        "worker (and PS) rank, for ASTRA-sim, as `stepcast export --chakra`: the same files. workers: one\n"
        "count (default: cluster.workers); network_dims: the ASTRA-sim network's dimensions (1..8).\n"
        "Returns an Export (files, to_dict(), text()).");
  m.def("zoo", &zoo,
        "The built-in models: a list of dicts with name, parameters, tensors, forward_flops (per sample) and "
        "description.");
  m.def("zoo_model", &zoo_model, py::arg("name"),
        "One model: zoo()'s keys plus layers (name, parameters, tensors, forward_flops per sample) and, for "
        "decoders, seq_len, training_flops_per_token, flops_per_token_6n and active_parameters.");
}
