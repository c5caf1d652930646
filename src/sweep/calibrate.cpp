// `calibrate nccl-tests` and `calibrate gemm` as one library call each (sweep/calibrate.hpp): the
// command and the Python module only convert their arguments and print what these return.
#include "stepcast/sweep/calibrate.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/calibrate/collective_log.hpp"
#include "stepcast/detail/calibrate/gemm_calibration.hpp"
#include "stepcast/detail/calibrate/ring_calibration.hpp"
#include "stepcast/detail/output_file.hpp"
#include "stepcast/detail/report/calibration_report.hpp"
#include "stepcast/enum_names.hpp"
#include "stepcast/error.hpp"
#include "stepcast/limits.hpp"
#include "stepcast/units.hpp"

namespace stepcast::sweep {

struct NcclTestsReport {
  report::CalibrationReport value;
};

struct GemmReport {
  report::GemmCalibrationReport value;
};

namespace {

using limits::kMaxWorkers;

template <class Request>
std::string option_name_of(const Request& request, std::string_view option) {
  return request.option_name ? request.option_name(option) : std::string(option);
}

/// Runs `fn`, giving an error that names a command-line option ("--workers-per-node", as
/// calibrate/ and report/ name them) the request's name of that option, where and why unchanged.
template <class Request, class Fn>
auto naming_options(const Request& request, Fn&& fn) {
  try {
    return fn();
  } catch (const Error& e) {
    const std::string& key = e.where().key;
    if (key.size() <= 2 || key.compare(0, 2, "--") != 0) throw;
    std::string option = key.substr(2);
    for (char& c : option) {
      if (c == '-') c = '_';
    }
    SourceLocation where = e.where();
    where.key = option_name_of(request, option);
    throw Error(where, e.message());
  }
}

/// Writes `text` to `path`, an error naming the option `option` when it cannot.
template <class Request>
void write_output(const Request& request, const std::string& path, const std::string& text) {
  const std::string option = option_name_of(request, "output");
  std::ofstream out = open_output(path, option);
  out << text;
  if (!out.flush()) throw Error({path, 0, option}, "cannot write file");
}

/// The value of a choice option, or an error naming it and listing the choices.
template <NamedEnum E>
E choice_of(const NcclTestsRequest& request, const std::string& text, std::string_view option) {
  if (const auto value = parse_name<E>(text)) return *value;
  std::string names;
  for (E value : enum_values<E>()) names += (names.empty() ? "" : ", ") + std::string(name_of(value));
  throw Error({"", 0, option_name_of(request, option)},
              fmt::format("expected one of {}, got '{}'", names, text));
}

/// The fit the request runs: --fit, else nccl where only it applies (several sweeps, or the NICs'
/// bandwidth given), else endpoints.
std::string fit_name(const NcclTestsRequest& request) {
  return request.fit.value_or(!request.more_logs.empty() || !request.nic_bandwidth.empty() ? "nccl"
                                                                                           : "endpoints");
}

}  // namespace

std::vector<std::string> unused_options(const NcclTestsRequest& request,
                                        const std::function<bool(std::string_view option)>& given) {
  using calibrate::FitMethod;
  const std::optional<FitMethod> method = parse_name<FitMethod>(fit_name(request));
  if (!method) return {};
  const NcclTestsRequest defaults;
  const auto is_given = [&](std::string_view option, bool differs) {
    return given ? given(option) : differs;
  };
  // Each option with the one fit that uses it.
  struct Use {
    std::string_view option;
    bool given;
    FitMethod fit;
  };
  const Use uses[] = {
      {"max_regimes", is_given("max_regimes", request.max_regimes != defaults.max_regimes),
       FitMethod::Regimes},
      {"gpu_generation", is_given("gpu_generation", request.gpu_generation != defaults.gpu_generation),
       FitMethod::Nccl},
      {"cpu_vendor", is_given("cpu_vendor", request.cpu_vendor != defaults.cpu_vendor), FitMethod::Nccl},
      {"nics_per_node", is_given("nics_per_node", request.nics_per_node != defaults.nics_per_node),
       FitMethod::Nccl},
  };
  std::vector<std::string> warnings;
  // In the front end's own syntax: --fit regimes, or fit='regimes'.
  const std::string fit_option = option_name_of(request, "fit");
  const auto fit_as_given = [&](FitMethod fit) {
    return fit_option.starts_with("--") ? fmt::format("{} {}", fit_option, calibrate::to_string(fit))
                                        : fmt::format("{}='{}'", fit_option, calibrate::to_string(fit));
  };
  for (const Use& use : uses) {
    if (!use.given || use.fit == *method) continue;
    warnings.push_back(fmt::format("{} has no effect: only {} uses it, and the fit is {}",
                                   option_name_of(request, use.option), fit_as_given(use.fit),
                                   calibrate::to_string(*method)));
  }
  return warnings;
}

NcclTestsCalibration calibrate_nccl_tests(const NcclTestsRequest& request) {
  return naming_options(request, [&] {
    using calibrate::FitMethod;
    using calibrate::LogFormat;
    using calibrate::Placement;
    auto bad = [&](std::string_view option, const std::string& message) {
      return Error({"", 0, option_name_of(request, option)}, message);
    };
    const int workers = request.workers;
    if (workers < 2 || workers > kMaxWorkers) {
      throw bad("workers", fmt::format("expected an integer in [2, {}], got {}", kMaxWorkers, workers));
    }
    if (request.workers_per_node < 1 || request.workers_per_node > workers) {
      throw bad("workers_per_node",
                fmt::format("expected an integer in [1, {} = {}], got {}", option_name_of(request, "workers"),
                            workers, request.workers_per_node));
    }
    if (request.max_regimes < 1 || request.max_regimes > calibrate::kMaxRegimes) {
      throw bad("max_regimes", fmt::format("expected an integer in [1, {}], got {}", calibrate::kMaxRegimes,
                                           request.max_regimes));
    }
    const LogFormat format = choice_of<LogFormat>(request, request.format, "format");
    calibrate::FitOptions options;
    const bool several = !request.more_logs.empty();
    if (request.more_workers.size() != request.more_logs.size()) {
      throw bad("workers", fmt::format("expected one rank count per sweep: {} sweeps, {} counts",
                                       request.more_logs.size() + 1, request.more_workers.size() + 1));
    }
    options.method = choice_of<FitMethod>(request, fit_name(request), "fit");
    if (several && options.method != FitMethod::Nccl) {
      throw bad("fit", fmt::format("several sweeps are fitted together only by nccl, got {}",
                                   calibrate::to_string(options.method)));
    }
    for (const int more : request.more_workers) {
      if (more < 2 || more > kMaxWorkers || more < request.workers_per_node) {
        throw bad("workers", fmt::format("expected integers in [max(2, {}), {}], got {}",
                                         option_name_of(request, "workers_per_node"), kMaxWorkers, more));
      }
    }
    const Placement placement = request.in_place ? Placement::InPlace : Placement::OutOfPlace;
    auto read = [&](const std::string& file, int ranks) {
      calibrate::CollectiveLog log = calibrate::read_collective_log(file, format, placement);
      if (request.in_place && log.format != LogFormat::NcclTests) {
        throw Error({file, 0, option_name_of(request, "in_place")},
                    "only nccl-tests logs have in-place times");
      }
      if (log.group_size != 0 && log.group_size != ranks) {
        throw Error({file, log.points.front().line, option_name_of(request, "workers")},
                    fmt::format("the table measured {} ranks, {} says {}", log.group_size,
                                option_name_of(request, "workers"), ranks));
      }
      return log;
    };
    const calibrate::CollectiveLog log = read(request.log, workers);
    options.max_regimes = request.max_regimes;
    options.workers_per_node = request.workers_per_node;
    options.gpu_generation =
        choice_of<cluster::GpuGeneration>(request, request.gpu_generation, "gpu_generation");
    options.cpu_vendor = choice_of<cluster::CpuVendor>(request, request.cpu_vendor, "cpu_vendor");
    if (request.nics_per_node < 1 || request.nics_per_node > request.workers_per_node) {
      throw bad("nics_per_node", fmt::format("expected an integer in [1, {} = {}], got {}",
                                             option_name_of(request, "workers_per_node"),
                                             request.workers_per_node, request.nics_per_node));
    }
    options.nics_per_node = request.nics_per_node;
    if (!request.nic_bandwidth.empty()) {
      if (options.method != FitMethod::Nccl) {
        throw bad("nic_bandwidth", fmt::format("only --fit nccl takes the NICs' bandwidth, got --fit {}",
                                               calibrate::to_string(options.method)));
      }
      options.nic_bw =
          parse_bandwidth_with_unit(request.nic_bandwidth, {"", 0, option_name_of(request, "nic_bandwidth")});
      if (options.nic_bw < limits::kMinBandwidth || options.nic_bw > limits::kMaxBandwidth) {
        throw bad("nic_bandwidth",
                  fmt::format("expected a bandwidth in [{:g}, {:g}] B/s, got '{}'", limits::kMinBandwidth,
                              limits::kMaxBandwidth, request.nic_bandwidth));
      }
    }
    options.min_bytes = parse_bytes_with_unit(request.min_size, {"", 0, option_name_of(request, "min_size")});
    if (!request.max_size.empty()) {
      options.max_bytes =
          parse_bytes_with_unit(request.max_size, {"", 0, option_name_of(request, "max_size")});
    }
    calibrate::Calibration result;
    // A fit that cannot be made says which log's sizes it had.
    try {
      if (several) {
        std::vector<calibrate::NodeCountSweep> sweeps{{log.points, workers}};
        for (size_t i = 0; i < request.more_logs.size(); ++i)
          sweeps.push_back(
              {read(request.more_logs[i], request.more_workers[i]).points, request.more_workers[i]});
        result = calibrate::calibrate_nccl_sweeps(sweeps, options);
      } else {
        result = calibrate::calibrate_ring(log.points, workers, options);
      }
    } catch (const Error& e) {
      throw Error(e.where(),
                  fmt::format("{} ({}{})", e.message(), log.file,
                              several ? fmt::format(" and {} more", request.more_logs.size()) : ""));
    }
    const calibrate::CalibrationSource source{log.file, log.format, placement, request.workers_per_node};

    // Write first: a bad output path fails before anything is printed.
    if (!request.output.empty())
      write_output(request, request.output, report::calibration_yaml(result, source));

    NcclTestsCalibration out;
    out.report = std::make_shared<const NcclTestsReport>(NcclTestsReport{
        report::CalibrationReport{.calibration = result, .source = source, .output = request.output}});
    // The default fit more than 10% off where it was not fitted: say which other fit does better.
    constexpr double kPoorFit = 0.10;
    if (!request.fit && result.median_error > kPoorFit) {
      std::string better;
      double best = result.median_error;
      for (const FitMethod other : {FitMethod::Regimes, FitMethod::Nccl}) {
        calibrate::FitOptions alternative = options;
        alternative.method = other;
        try {
          const calibrate::Calibration c = calibrate::calibrate_ring(log.points, workers, alternative);
          if (c.median_error < best) {
            best = c.median_error;
            better = calibrate::to_string(other);
          }
        } catch (const Error&) {
          // That fit does not apply to this sweep: nothing to suggest from it.
        }
      }
      if (!better.empty()) {
        out.suggestion = FitSuggestion{.method = calibrate::to_string(options.method),
                                       .error = result.median_error,
                                       .min_bytes = options.report_min_bytes,
                                       .better = better,
                                       .better_error = best,
                                       .in_sample = better == "nccl"};
      }
    }
    return out;
  });
}

void write_json(std::ostream& out, const NcclTestsCalibration& calibration) {
  report::write_json(out, calibration.report->value);
}

void write_table(std::ostream& out, const NcclTestsCalibration& calibration) {
  report::write_table(out, calibration.report->value);
}

GemmTableCalibration calibrate_gemm_table(const GemmRequest& request) {
  return naming_options(request, [&] {
    std::string check = request.check;
    if (check.empty()) {
      // tools/gemm_sweep.py writes the held-back rows beside the table.
      const std::filesystem::path beside =
          std::filesystem::path(request.table).replace_extension("").string() + "-check.csv";
      std::error_code ec;
      if (std::filesystem::is_regular_file(beside, ec)) check = beside.string();
    }
    calibrate::GemmCalibration result = calibrate::calibrate_gemm(request.table, check);
    if (!request.output.empty()) {
      write_output(request, request.output, calibrate::gemm_calibration_yaml(result, request.output));
    }
    return GemmTableCalibration{std::make_shared<const GemmReport>(GemmReport{
        report::GemmCalibrationReport{.calibration = std::move(result), .output = request.output}})};
  });
}

void write_json(std::ostream& out, const GemmTableCalibration& calibration) {
  report::write_json(out, calibration.report->value);
}

void write_table(std::ostream& out, const GemmTableCalibration& calibration) {
  report::write_table(out, calibration.report->value);
}

}  // namespace stepcast::sweep
