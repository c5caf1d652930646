#include "stepcast/sweep/collective.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include "stepcast/detail/report/collective_report.hpp"
#include "stepcast/enum_names.hpp"
#include "stepcast/error.hpp"
#include "stepcast/units.hpp"

namespace stepcast::sweep {

struct CollectiveRows {
  std::vector<report::CollectiveReport> reports;
  std::vector<report::Config> configs;  ///< each report's configuration; empty without axes
};
namespace {

using scheme::CollectiveOp;

std::string option_name_of(const CollectiveRequest& request, std::string_view option) {
  return request.option_name ? request.option_name(option) : std::string(option);
}

Error bad(const CollectiveRequest& request, std::string_view option, const std::string& message) {
  return Error({"", 0, option_name_of(request, option)}, message);
}

CollectiveOp op_of(const CollectiveRequest& request) {
  if (const auto op = parse_name<CollectiveOp>(request.op)) return *op;
  std::string supported;
  for (CollectiveOp op : enum_values<CollectiveOp>()) {
    if (!supported.empty()) supported += ", ";
    supported += name_of(op);
  }
  throw bad(request, "op",
            fmt::format("unsupported collective '{}' (supported: {})", request.op, supported));
}

std::vector<double> sizes_of(const CollectiveRequest& request) {
  const SourceLocation where{"", 0, option_name_of(request, "size")};
  const std::string_view text = request.sizes;
  std::vector<double> sizes;
  for (size_t pos = 0; pos <= text.size();) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(pos, comma - pos);
    const double bytes = parse_bytes_with_unit(item, where);
    if (!(bytes > 0)) throw Error(where, fmt::format("expected sizes > 0, got '{}' in '{}'", item, text));
    sizes.push_back(bytes);
    pos = comma + 1;
  }
  return sizes;
}

/// A scenario key set by a named option.
struct Flag {
  std::string key;
  std::string_view option;
};

}  // namespace

CollectiveRun run_collective(const CollectiveRequest& given) {
  CollectiveRequest request = given;
  const bool from_file = !request.scenario.scenario.empty() && request.scenario.scenario_text.empty();
  if (from_file) request.scenario = with_scenario_text(std::move(request.scenario));  // read once
  const CollectiveOp op = op_of(request);
  const std::vector<double> sizes = sizes_of(request);
  const bool own_cluster = request.scenario.scenario.empty() && request.scenario.scenario_text.empty();

  // The collective's own defaults, then the scenario, then `sets`, then the named options.
  std::vector<std::string> overrides;
  if (own_cluster)
    overrides = {"cluster.workers=8", "cluster.nic_bandwidth=100Gbps", "cluster.link_latency=2us"};
  overrides.emplace_back("training.scheme=allreduce");
  overrides.insert(overrides.end(), request.sets.begin(), request.sets.end());
  std::vector<Flag> flags;
  auto set = [&](const std::optional<std::string>& value, std::string key, std::string_view option) {
    if (!value) return;
    overrides.push_back(key + "=" + *value);
    flags.push_back({std::move(key), option});
  };
  for (const Axis& axis : request.axes) {
    if (axis.key == "cluster.workers" && request.workers) {
      throw Error({"", 0, "--sweep"},
                  fmt::format("cluster.workers is swept and {} gives the worker count too: "
                              "every row would run at {}; give the counts one way",
                              option_name_of(request, "workers"), *request.workers));
    }
  }
  std::vector<int> counts;
  // A list of worker counts is a row per count, not a key's value (load_counting checks each).
  if (request.workers && request.workers->find(',') != std::string::npos) {
    counts = parse_worker_list(*request.workers, option_name_of(request, "workers"));
  } else {
    set(request.workers, "cluster.workers", "workers");
  }
  set(request.workers_per_node, "cluster.workers_per_node", "workers_per_node");
  set(request.nic_bandwidth, "cluster.nic_bandwidth", "nic_bandwidth");
  set(request.latency, "cluster.link_latency", "latency");
  // Unnamed, the scenario's algorithm (ring by default), costed by the links unless it says otherwise.
  set(request.algorithm, "training.allreduce.algorithm", "algorithm");
  set(request.protocol, "training.allreduce.protocol", "protocol");

  const auto needs = scenario::Needs::ClusterOnly;
  auto load = [&](const std::vector<std::string>& with) {
    try {
      return own_cluster ? scenario::parse_scenario("{}", "collective", with, needs)
                         : load_scenario(request.scenario, with, needs);
    } catch (const Error& e) {
      // An option's value is the option's error, not its scenario key's.
      for (const Flag& flag : flags) {
        if (e.where().key == flag.key) throw bad(request, flag.option, e.message());
      }
      throw;
    }
  };
  // With a --workers list, the scenario at `with` checked at every count, as the rows run it (it
  // used to be checked at the scenario's own count, 8 by default, and each count set on the
  // cluster unchecked); returned at the first. An error at one count that another count (or the
  // scenario's own) does not have is the count's: it names --workers and the count, before any
  // row is timed.
  auto load_counting = [&](const std::vector<std::string>& with) {
    if (counts.empty()) return load(with);
    std::optional<scenario::Scenario> first;
    for (const int n : counts) {
      std::vector<std::string> at = with;
      at.push_back(fmt::format("cluster.workers={}", n));
      std::optional<Error> failed;
      try {
        scenario::Scenario s = load(at);
        if (!first) first = std::move(s);
        continue;
      } catch (const Error& e) {
        failed = e;
      }
      // The count's fault when another count loads, or the scenario at its own count; else the
      // scenario's (a bad option or key), as it is.
      bool count_at_fault = first.has_value();
      if (!count_at_fault) {
        try {
          (void)load(with);
          count_at_fault = true;
        } catch (const Error&) {
          count_at_fault = false;
        }
      }
      if (!count_at_fault) throw *failed;
      const SourceLocation& where = failed->where();
      throw bad(request, "workers",
                fmt::format("at {} workers (of '{}'): {}{}", n, *request.workers,
                            where.key.empty() ? "" : where.key + ": ", failed->message()));
    }
    return *first;
  };
  const scenario::Scenario base = load_counting(overrides);
  if (op != CollectiveOp::AllReduce && base.scheme.allreduce.algorithm != scheme::AllReduceAlgorithm::Ring) {
    throw bad(request, "algorithm", fmt::format("{} is only modelled with the ring", request.op));
  }
  if (op != CollectiveOp::AllReduce && request.protocol && *request.protocol != "links" &&
      *request.protocol != "auto") {
    throw bad(request, "protocol",
              fmt::format("NCCL's protocol model ({}) times the all-reduce; {} runs as a ring on the links "
                          "(leave --protocol out, or give links)",
                          *request.protocol, request.op));
  }

  auto rows = std::make_shared<CollectiveRows>();
  for (const report::Config& config : grid(request.axes)) {
    scenario::Scenario at = base;
    if (!config.empty()) {
      std::vector<std::string> more = overrides;
      for (const auto& setting : config) more.push_back(setting.key + "=" + setting.value);
      try {
        at = load_counting(more);
      } catch (const Error& e) {
        // A swept value arrives as an override; say it came from --sweep, and at which point (as
        // predict's sweep does).
        SourceLocation where = e.where();
        const bool swept = std::any_of(config.begin(), config.end(),
                                       [&](const report::Input& in) { return in.key == where.key; });
        if (swept && where.file == "--set") where.file = "--sweep";
        throw Error(where, fmt::format("{} (at {})", e.message(), report::config_label(config)));
      }
    }
    // Without a list, the point's own count: a swept cluster.workers is the row's (it used to
    // be the base's at every point).
    const std::vector<int> row_counts = counts.empty() ? std::vector<int>{at.cluster.workers} : counts;
    for (const int n : row_counts) {
      cluster::ClusterSpec spec = at.cluster;
      spec.workers = n;
      for (double bytes : sizes) {
        rows->reports.push_back(
            {.op = op,
             .algorithm = at.scheme.allreduce.algorithm,
             .cluster = spec,
             .bytes = bytes,
             .result = scheme::simulate_collective(spec, bytes, op, at.scheme.allreduce.algorithm,
                                                   scheme::NetworkKind::MaxMin, true,
                                                   at.scheme.allreduce.protocol, request.links_kept),
             .links_shown = request.links_kept});
        if (!request.axes.empty()) rows->configs.push_back(config);
      }
    }
  }
  CollectiveRun run;
  run.single = rows->reports.size() == 1 && request.axes.empty();
  run.rows = std::move(rows);
  return run;
}

void write_json(std::ostream& out, const CollectiveRun& run) {
  if (run.single) {
    report::write_json(out, run.rows->reports.front());
  } else {
    report::write_json(out, run.rows->reports, run.rows->configs);
  }
}

void write_table(std::ostream& out, const CollectiveRun& run) {
  if (run.single) {
    report::write_table(out, run.rows->reports.front());
  } else {
    report::write_table(out, run.rows->reports, run.rows->configs);
  }
}

}  // namespace stepcast::sweep
