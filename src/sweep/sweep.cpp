#include "stepcast/sweep/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/error.hpp"
#include "stepcast/scheme/validate.hpp"
#include "stepcast/detail/text_file.hpp"
#include "stepcast/limits.hpp"
#include "sweep/ranks.hpp"
#include "sweep/result_wire.hpp"

namespace stepcast::sweep {
namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw Error({"", 0, "--sweep"}, fmt::format("{} in '{}'", why, text));
}

bool is_number(std::string_view text) {
  double value = 0;
  const std::string_view s = !text.empty() && text.front() == '+' ? text.substr(1) : text;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

std::optional<long long> integer(std::string_view text) {
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

Axis parse_axis(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) bad(text, "expected KEY=V1,V2,... or KEY=A..B");
  Axis axis{std::string(text.substr(0, eq)), {}};
  const std::string_view values = text.substr(eq + 1);
  if (const size_t dots = values.find(".."); dots != std::string_view::npos) {
    const auto lo = integer(values.substr(0, dots)), hi = integer(values.substr(dots + 2));
    if (!lo || !hi || *lo < 1 || *hi < *lo || *hi > (1LL << 40)) {
      bad(text, "a range is A..B with integers 1 <= A <= B");
    }
    for (long long v = *lo; v <= *hi; v *= 2) axis.values.push_back(std::to_string(v));
    if (axis.values.back() != std::to_string(*hi)) axis.values.push_back(std::to_string(*hi));
    return axis;
  }
  size_t pos = 0;
  while (pos <= values.size()) {
    size_t comma = values.find(',', pos);
    if (comma == std::string_view::npos) comma = values.size();
    std::string value(values.substr(pos, comma - pos));
    if (value.empty()) bad(text, "an empty value");
    if (std::find(axis.values.begin(), axis.values.end(), value) != axis.values.end()) {
      bad(text, fmt::format("{} is given twice", value));
    }
    axis.values.push_back(std::move(value));
    pos = comma + 1;
  }
  return axis;
}

std::vector<int> parse_worker_list(std::string_view text, std::string_view option) {
  using limits::kMaxWorkers;
  const SourceLocation where{"", 0, std::string(option)};
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(pos, comma - pos);
    const auto value = integer(item);
    if (!value || *value < 1 || *value > kMaxWorkers) {
      // The entry at fault, not only the list: in '8,16,bogus,32' the eye finds it less easily.
      const std::string entry = item.empty() ? std::string("an empty entry") : fmt::format("'{}'", item);
      throw Error(where, fmt::format("expected a comma-separated list of integers in [1, {}], got {} in '{}'",
                                     kMaxWorkers, entry, text));
    }
    if (std::find(out.begin(), out.end(), *value) != out.end()) {
      throw Error(where, fmt::format("{} is given twice in '{}'; each count once", *value, text));
    }
    out.push_back(static_cast<int>(*value));
    pos = comma + 1;
  }
  return out;
}

std::vector<report::Config> grid(const std::vector<Axis>& axes, std::size_t max_points) {
  std::size_t points = 1;
  for (size_t a = 0; a < axes.size(); ++a) {
    for (size_t b = 0; b < a; ++b) {
      if (axes[a].key == axes[b].key) throw Error({"", 0, "--sweep"}, fmt::format("{} is swept twice", axes[a].key));
    }
    if (axes[a].values.empty()) throw Error({"", 0, "--sweep"}, fmt::format("{} has no values", axes[a].key));
    points *= axes[a].values.size();
    if (points > max_points) {
      throw Error({"", 0, "--sweep"}, fmt::format("the grid has more than {} configurations", max_points));
    }
  }
  std::vector<report::Config> out(points);
  for (std::size_t i = 0; i < points; ++i) {
    std::size_t rest = i;
    report::Config& config = out[i];
    config.resize(axes.size());
    for (size_t a = axes.size(); a-- > 0;) {
      const std::string& value = axes[a].values[rest % axes[a].values.size()];
      rest /= axes[a].values.size();
      config[a] = {axes[a].key, value, is_number(value)};
    }
  }
  return out;
}

namespace {

// A swept key whose every value gives the same predictions changes nothing in this scenario (an
// FSDP key under a parameter server, a seed where nothing is random): said, since a flat column
// reads as a finding. results[t] holds configuration t's predictions, grid order (first axis
// outermost); the recorded trace, which only the last configuration has, is left out.
template <class Warn>
void warn_about_axes_that_change_nothing(const std::vector<Axis>& axes,
                                         const std::vector<std::vector<predict::Result>>& results, Warn&& warn) {
  auto same = [](const std::vector<predict::Result>& a, const std::vector<predict::Result>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      predict::Result x = a[i], y = b[i];
      x.trace = {};
      y.trace = {};
      if (!(x == y)) return false;
    }
    return true;
  };
  std::size_t stride = results.size();
  for (const Axis& axis : axes) {
    const std::size_t n = axis.values.size();
    stride /= std::max<std::size_t>(n, 1);
    if (n < 2) continue;
    bool changes = false;
    for (std::size_t t = 0; t < results.size() && !changes; ++t) {
      const std::size_t v = (t / stride) % n;
      if (v > 0 && !same(results[t], results[t - v * stride])) changes = true;
    }
    if (!changes) {
      warn(fmt::format("--sweep {}: every value ({}) gives the same predictions; the key changes nothing in "
                       "this scenario",
                       axis.key, fmt::join(axis.values, ", ")));
    }
  }
}

}  // namespace

void describe_run(report::Sweep& sweep, const scenario::Scenario& scenario, const Request& request,
                  const std::vector<int>& counts, const std::function<void(const std::string&)>& warn) {
  // The fabric at the largest count predicted, and the keys that cannot change it; said only where
  // the file's own cluster holds that count (a --sweep may be what makes it fit).
  cluster::ClusterSpec spec = scenario.cluster;
  if (!counts.empty()) spec.workers = counts.back();
  const scheme::SchemeConfig& scheme = scenario.scheme;
  bool buildable = true;
  try {
    scheme::validate(spec, scheme);
  } catch (const Error&) {
    buildable = false;
  }
  if (buildable) {
    const bool dedicated =
        scheme.scheme == scheme::Scheme::ParameterServer && scheme.ps.placement == scheme::PsPlacement::Dedicated;
    const cluster::Cluster cluster = cluster::build_cluster(spec, dedicated ? scheme.ps.count : 0);
    sweep.topology = cluster::describe_fabric(cluster);
    if (counts.size() > 1) sweep.topology += fmt::format(" (at {} workers)", counts.back());
    const bool reshaped = std::any_of(request.axes.begin(), request.axes.end(), [](const Axis& axis) {
      return axis.key.starts_with("cluster.") || axis.key.starts_with("training.ps.");
    });
    if (reshaped) sweep.topology += ", before the sweep's changes";
    if (warn) {
      for (const std::string& note : cluster::ineffective_keys(cluster)) warn(note);
    }
  }
  if (warn && scenario.workload.comm_cpu_per_byte > 0 && scheme.scheme != scheme::Scheme::ParameterServer) {
    warn(
        "workload.comm_cpu_per_byte has no effect: training.scheme is not ps (only a parameter server's pulls and "
        "pushes pay it)");
  }
  // A swept scheme, layout, model or compute method can make them act at some points: no notes then.
  const bool swept_what_decides = std::any_of(request.axes.begin(), request.axes.end(), [](const Axis& axis) {
    for (const char* key : {"training.scheme", "training.parallel.", "workload.model", "workload.transformer",
                            "workload.compute", "include"}) {
      if (axis.key.starts_with(key)) return true;
    }
    return false;
  });
  if (warn && !swept_what_decides) {
    for (const std::string& note : scenario::ineffective_keys(scenario)) warn(note);
  }
  // Incast (docs/models.md, "Incast"): a rule of the fine predictor's parameter-server RPCs over TCP
  // into a finite buffer; say where the keys given cannot act.
  const cluster::IncastSpec& incast = scenario.cluster.incast;
  const bool only_fine = request.predictors.empty()
                             ? scenario.options.predictor == predict::Predictor::Fine
                             : std::all_of(request.predictors.begin(), request.predictors.end(),
                                           [](predict::Predictor p) { return p == predict::Predictor::Fine; });
  if (warn && incast.transport == cluster::Transport::Tcp && !(incast.switch_buffer > 0)) {
    warn("cluster.transport: tcp has no effect without cluster.switch.buffer (a buffer of unknown size drops "
         "nothing)");
  } else if (warn && incast.transport == cluster::Transport::Rdma && incast.switch_buffer > 0) {
    warn("cluster.switch.buffer has no effect with cluster.transport: rdma (a lossless fabric drops nothing)");
  } else if (warn && incast.enabled() && (scheme.scheme != scheme::Scheme::ParameterServer || !only_fine)) {
    warn(
        "TCP incast (cluster.transport, cluster.switch.buffer) acts only on the fine predictor's parameter-server "
        "pulls and pushes");
  }
  if (scenario.workload.compute_source != scenario::ComputeSource::Measured ||
      (!sweep.predictions.empty() && sweep.predictions.front().tokens.tokens_per_s > 0)) {
    sweep.compute_source = scenario::compute_source_text(scenario);
  }
}

int threads_for(int jobs, std::size_t tasks) {
  unsigned n = jobs > 0 ? static_cast<unsigned>(jobs) : std::max(1u, std::thread::hardware_concurrency());
  n = std::min<unsigned>(n, static_cast<unsigned>(std::max<std::size_t>(tasks, 1)));
  return static_cast<int>(std::max(1u, n));
}

Request with_scenario_text(Request request) {
  if (request.scenario_text.empty()) request.scenario_text = read_text_file(request.scenario, "scenario file");
  return request;
}

scenario::Scenario load_scenario(const Request& request, const std::vector<std::string>& overrides,
                                 scenario::Needs needs, const std::vector<int>& worker_sweep) {
  if (request.scenario_text.empty()) {
    return scenario::load_scenario(request.scenario, overrides, needs, worker_sweep);
  }
  return scenario::parse_scenario(request.scenario_text, request.scenario, overrides, needs, worker_sweep);
}

scenario::Scenario base_scenario(const Request& request, scenario::Needs needs,
                                 const std::vector<int>& worker_sweep) {
  try {
    return load_scenario(request, request.overrides, needs, worker_sweep);
  } catch (const Error&) {
    // At the file's own worker count a --set can be refused that every row, at the --workers
    // counts, accepts (a global batch too small for the file's replicas): check it there.
    if (worker_sweep.empty() && !request.workers.empty()) {
      try {
        return load_scenario(request, request.overrides, needs, request.workers);
      } catch (const Error&) {
      }
    }
    const std::vector<report::Config> configs = !request.configs.empty() ? request.configs
                                                : request.axes.empty()   ? std::vector<report::Config>{}
                                                                         : grid(request.axes);
    if (configs.empty() || configs.front().empty()) throw;
    std::vector<std::string> first = request.overrides;
    for (const report::Input& setting : configs.front()) first.push_back(setting.key + "=" + setting.value);
    return load_scenario(request, first, needs, worker_sweep);
  }
}

report::Sweep run(const Request& given) {
  const Request request = with_scenario_text(given);
  // Each row runs at a --workers count: a swept cluster.workers would be replaced in every row,
  // its column naming counts the rows did not run.
  for (const Axis& axis : request.axes) {
    if (axis.key == "cluster.workers" && !request.workers.empty()) {
      throw Error(
          {"", 0, "--sweep"},
          "cluster.workers is swept and --workers gives the worker counts too: every row would run at "
          "the --workers counts; give the counts one way");
    }
  }
  const bool explicit_configs = !request.configs.empty();
  const std::vector<report::Config> configs = explicit_configs ? request.configs : grid(request.axes);
  const bool configured = explicit_configs || !request.axes.empty();
  const scenario::Needs needs = scenario::Needs::Workload;
  const scenario::Scenario base =
      base_scenario(request, needs, configured ? std::vector<int>{} : request.workers);
  const std::vector<int> counts = request.workers.empty() ? std::vector<int>{base.cluster.workers} : request.workers;

  // One task per configuration: it loads its scenario once and predicts every worker count, so
  // the file is parsed and the workload built once per configuration.
  const std::size_t tasks = configs.size();
  const std::vector<predict::Predictor> predictors =
      request.predictors.empty() ? std::vector<predict::Predictor>{base.options.predictor} : request.predictors;
  const std::size_t total = tasks * counts.size() * predictors.size();
  std::vector<std::vector<predict::Result>> results(tasks);
  std::vector<std::exception_ptr> errors(tasks);
  // Under MPI each rank takes every size-th configuration counted from the end, so that rank 0
  // has the last one (the one a trace is recorded for).
  const Ranks ranks = request.distribute ? process_ranks() : Ranks{};
  auto owner = [&](std::size_t t) { return static_cast<int>((tasks - 1 - t) % static_cast<std::size_t>(ranks.size)); };
  std::atomic<std::size_t> next{0};
  std::mutex report_mutex;
  std::size_t done = 0;
  std::set<std::string> noted;
  auto warn = [&](const std::string& text) {
    if (!request.warn) return;
    std::lock_guard<std::mutex> lock(report_mutex);
    request.warn(text);
  };
  auto work = [&] {
    for (std::size_t t; (t = next.fetch_add(1)) < tasks;) {
      if (owner(t) != ranks.rank) continue;
      try {
        std::vector<std::string> overrides = request.overrides;
        for (const report::Input& setting : configs[t]) overrides.push_back(setting.key + "=" + setting.value);
        const scenario::Scenario at_config =
            configs[t].empty() ? base : load_scenario(request, overrides, needs, request.workers);
        const workload::Workload workload = scenario::build_workload(at_config);
        for (const std::string& note : workload.notes) {
          // Said once, however many configurations share it (a clamped GEMM shape).
          bool first = false;
          {
            std::lock_guard<std::mutex> lock(report_mutex);
            first = noted.insert(note).second;
          }
          if (first) warn(note);
        }
        for (size_t c = 0; c < counts.size(); ++c) {
          scenario::Scenario at = at_config;
          at.cluster.workers = counts[c];
          // A profile is replayed at its own worker count and extrapolated at others.
          std::optional<workload::Workload> rebuilt;
          if (!at.workload.profile.empty() && at.cluster.workers != at_config.cluster.workers) {
            rebuilt = scenario::build_workload(at);
          }
          for (size_t p = 0; p < predictors.size(); ++p) {
            predict::Options options = at.options;
            if (!request.predictors.empty()) options.predictor = predictors[p];
            options.record_trace =
                request.record_trace && t + 1 == tasks && c + 1 == counts.size() && p + 1 == predictors.size();
            if (options.record_trace) options.trace_selection = request.trace_selection;
            options.links_kept = request.links_kept;
            results[t].push_back(predict::predict(rebuilt ? *rebuilt : workload, at.cluster, at.scheme, options, warn));
            if (request.progress) {
              std::lock_guard<std::mutex> lock(report_mutex);
              request.progress(++done, total);
            }
          }
        }
      } catch (...) {
        errors[t] = std::current_exception();
      }
    }
  };
  const int threads = threads_for(request.jobs, tasks);
  if (threads == 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(threads));
    for (int i = 0; i < threads; ++i) pool.emplace_back(work);
    for (std::thread& th : pool) th.join();
  }
  if (ranks.size > 1) {
    // Messages between two ranks arrive in the order they were sent: configurations in grid order.
    if (ranks.rank != 0) {
      for (std::size_t t = 0; t < tasks; ++t) {
        if (owner(t) != ranks.rank) continue;
        wire::Outcome o;
        if (errors[t]) {
          o = wire::failure(errors[t]);
        } else {
          o.results = std::move(results[t]);
        }
        detail::send_to_root(0, wire::encode(o));
      }
      return {};
    }
    for (std::size_t t = 0; t < tasks; ++t) {
      if (owner(t) == 0) continue;
      wire::Outcome o = wire::decode(detail::receive_at_root(owner(t), 0));
      if (o.failed) {
        errors[t] = std::make_exception_ptr(Error(o.where, o.message));
      } else {
        results[t] = std::move(o.results);
      }
    }
  }
  for (std::size_t t = 0; t < tasks; ++t) {
    if (!errors[t]) continue;
    if (configs[t].empty()) std::rethrow_exception(errors[t]);
    try {
      std::rethrow_exception(errors[t]);
    } catch (const Error& e) {
      // A swept value arrives as an override; say it came from --sweep.
      SourceLocation where = e.where();
      const bool swept = std::any_of(configs[t].begin(), configs[t].end(),
                                     [&](const report::Input& s) { return s.key == where.key; });
      if (swept && where.file == "--set") where.file = "--sweep";
      throw Error(where, fmt::format("{} (at {})", e.message(), report::config_label(configs[t])));
    }
  }

  if (!explicit_configs) warn_about_axes_that_change_nothing(request.axes, results, warn);

  report::Sweep out;
  out.scenario = base.name;
  for (const auto& key : scenario::resolved_keys(base)) out.inputs.push_back({key.key, key.value, key.is_number});
  for (std::size_t t = 0; t < tasks; ++t) {
    for (predict::Result& r : results[t]) {
      out.predictions.push_back(std::move(r));
      if (configured) out.configs.push_back(configs[t]);
    }
  }
  return out;
}

}  // namespace stepcast::sweep
