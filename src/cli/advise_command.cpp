// `stepcast advise SCENARIO --vary KEY=V1,V2 ... --target-efficiency F | --target-throughput T`:
// the cheapest configuration of the grid that meets the target and the best single change from
// the scenario as given (sweep/advise.hpp). Registered by main.cpp through add_advise_command;
// errors are stepcast::Error, which main turns into exit code 2.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/output_file.hpp"
#include "stepcast/limits.hpp"
#include "stepcast/report/advice.hpp"
#include "stepcast/report/html.hpp"
#include "stepcast/sweep/advise.hpp"

namespace stepcast::cli {

namespace {

struct AdviseArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::vector<std::string> varies;
  int workers = 0;
  double target_efficiency = 0;
  double target_throughput = 0;
  int jobs = 0;
  bool json = false;
  std::string report;
};

}  // namespace

std::pair<CLI::App*, std::function<int()>> add_advise_command(CLI::App& app) {
  auto args = std::make_shared<AdviseArgs>();
  CLI::App* cmd = app.add_subcommand(
      "advise", "The cheapest setting of the varied keys that meets a target, and the change that buys most");
  cmd->add_option("scenario", args->scenario, "Scenario YAML file")->required();
  cmd->add_option("--set", args->sets, "Override a scenario key: KEY=VALUE (repeatable)");
  cmd->add_option("--vary", args->varies,
                  "A key and its values from cheapest to dearest: KEY=V1,V2,... or KEY=A..B (repeatable); "
                  "V:COST adds COST per GPU-hour to cluster.cost.gpu_hour where V is chosen")
      ->required();
  cmd->add_option("--workers", args->workers, "Total workers (default: the scenario's cluster.workers)")
      ->check(CLI::Range(1, stepcast::limits::kMaxWorkers));
  cmd->add_option("--target-efficiency", args->target_efficiency,
                  "Scaling efficiency to reach, 0..1 (0.8 = 80%)");
  cmd->add_option("--target-throughput", args->target_throughput, "Throughput to reach, samples/s");
  cmd->add_option("--jobs", args->jobs, "Threads (default: all cores); the answer is the same")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
  cmd->add_option("--report", args->report,
                  "Also write the answer and the grid as a self-contained HTML report to FILE");
  return {cmd, [args, cmd] {
            sweep::AdviseRequest request;
            request.sweep.scenario = args->scenario;
            request.sweep.overrides = args->sets;
            for (const std::string& text : args->varies) {
              try {
                request.sweep.axes.push_back(sweep::parse_axis(text));
              } catch (const Error& e) {
                // parse_axis speaks for --sweep; here the flag is --vary.
                throw Error(
                    {e.where().file, e.where().line, e.where().key == "--sweep" ? "--vary" : e.where().key},
                    e.message());
              }
            }
            if (args->workers > 0) request.sweep.workers = {args->workers};
            request.sweep.jobs = args->jobs;
            request.sweep.distribute = true;  // under mpirun, the ranks share the grid
            request.sweep.warn = [](const std::string& w) {
              fmt::print(stderr, "stepcast: warning: {}\n", w);
            };
            // Given, even as 0: the advisor rejects a value out of range rather than ignore it.
            if (cmd->count("--target-efficiency") > 0) request.target_efficiency = args->target_efficiency;
            if (cmd->count("--target-throughput") > 0) request.target_throughput = args->target_throughput;
            // The grid is a sweep inside; its errors speak of --sweep, and here the flag is --vary.
            const report::Advice advice = [&] {
              try {
                return sweep::advise(request);
              } catch (const Error& e) {
                SourceLocation where = e.where();
                if (where.file == "--sweep") where.file = "--vary";
                if (where.key == "--sweep") where.key = "--vary";
                throw Error(where, e.message());
              }
            }();
            if (sweep::process_ranks().rank != 0) return 0;  // rank 0 writes the answer
            if (!args->report.empty()) {
              std::ofstream out = open_output(args->report, "--report");
              report::write_advice_html(out, advice);
            }
            if (args->json) {
              report::write_advice_json(std::cout, advice);
            } else {
              report::write_advice_text(std::cout, advice);
            }
            return 0;
          }};
}

}  // namespace stepcast::cli
