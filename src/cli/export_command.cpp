// `stepcast export --chakra PREFIX SCENARIO.yaml`: the scenario's workload, bucketed (all-reduce)
// or placed on shards (PS) exactly as the predictors do it, written as one Chakra trace per rank
// by sweep::export_chakra (sweep/export.hpp), which Python's stepcast.export() calls too.
#include "cli/export_command.hpp"

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>

#include "stepcast/limits.hpp"
#include "stepcast/sweep/export.hpp"

namespace stepcast::cli {
namespace {

/// "network_dims" -> "--network-dims": the option of the export request's field.
std::string export_option(std::string_view option) {
  std::string flag = "--" + std::string(option);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

struct ExportArgs {
  ExportArgs() { request.option_name = export_option; }
  std::string scenario;
  sweep::ExportRequest request;
};

int run_export(const ExportArgs& args) {
  sweep::ExportRequest request = args.request;
  request.scenario.scenario = args.scenario;
  sweep::write_table(std::cout, sweep::export_chakra(request));
  return 0;
}

}  // namespace

std::function<int()> add_export_command(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand("export", "Write a scenario's multi-worker workload for another tool");
  cmd->add_option(
         "--chakra", args->request.chakra,
         "Write Chakra execution traces PREFIX.<rank>.et, one per worker (and PS) rank, for ASTRA-sim")
      ->required();
  cmd->add_option("scenario", args->scenario, "Scenario YAML file")->required();
  cmd->add_option("--set", args->request.scenario.overrides,
                  "Override a scenario key: KEY=VALUE (repeatable)");
  cmd->add_option("--workers", args->request.workers, "Number of workers (overrides cluster.workers)")
      ->check(CLI::Range(1, limits::kMaxWorkers));
  cmd->add_option("--network-dims", args->request.network_dims,
                  "Dimensions of the ASTRA-sim network the traces will run on (involved_dim of collectives)")
      ->check(CLI::Range(1, 8))
      ->capture_default_str();
  return [args] { return run_export(*args); };
}

}  // namespace stepcast::cli
