// `stepcast export --chakra PREFIX SCENARIO.yaml`: the scenario's workload, bucketed (all-reduce)
// or placed on shards (PS) exactly as the predictors do it, written as one Chakra trace per rank.
#include "cli/export_command.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/output_file.hpp"
#include "stepcast/detail/scheme/placement.hpp"
#include "stepcast/error.hpp"
#include "stepcast/limits.hpp"
#include "stepcast/report/chakra_export.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/units.hpp"

namespace stepcast::cli {
namespace {

struct ExportArgs {
  std::string chakra;
  std::string scenario;
  std::vector<std::string> sets;
  int workers = 0;
  int network_dims = 1;
};

int run_export(const ExportArgs& args) {
  if (args.chakra.empty())
    throw Error({"", 0, "--chakra"}, "expected an output prefix, e.g. --chakra out/job");
  std::vector<std::string> overrides = args.sets;
  if (args.workers > 0) overrides.push_back(fmt::format("cluster.workers={}", args.workers));
  const scenario::Scenario s = scenario::load_scenario(args.scenario, overrides);
  const workload::Workload w = scenario::build_workload(s);

  report::ChakraExport how;
  how.workers = s.cluster.workers;
  how.network_dims = args.network_dims;
  std::string summary;
  switch (s.scheme.scheme) {
    case scheme::Scheme::ParameterServer:
      how.parameter_server = true;
      how.ps_count = s.scheme.ps.count;
      how.ps_apply_time = s.scheme.ps.apply_time;
      how.ps_apply_bw = s.scheme.ps.apply_bw;
      for (const scheme::Piece& p : scheme::place_parameters(w, s.scheme.ps)) {
        how.pieces.push_back({.tensor = p.tensor, .shard = p.shard, .bytes = p.bytes});
      }
      summary =
          fmt::format("parameter server, {} shards (ranks {}..{}), {} pieces of {} tensors", how.ps_count,
                      how.workers, how.workers + how.ps_count - 1, how.pieces.size(), w.tensors.size());
      break;
    case scheme::Scheme::AllReduce:
      how.buckets = workload::make_buckets(w, s.scheme.allreduce.bucket_bytes);
      summary = fmt::format("all-reduce, {} buckets of {} gradients ({} per step)", how.buckets.size(),
                            w.tensors.size(), format_bytes(w.parameter_bytes()));
      break;
    case scheme::Scheme::Fsdp:
      throw Error({s.file, 0, "training.scheme"},
                  "export --chakra writes parameter-server and all-reduce jobs; fsdp is not supported yet");
  }
  create_parent_directories(args.chakra, "--chakra");
  const auto files = report::write_chakra_traces(args.chakra, w, how);
  fmt::print("scenario {}: {} ops per step, {} workers, {}\n", s.name, w.ops.size(), how.workers, summary);
  fmt::print("wrote {} Chakra execution traces (ASTRA-sim workload input, prefix {}):\n", files.size(),
             args.chakra);
  fmt::print("  {:<6} {:<7} {:>7} {:>14}  {}\n", "rank", "role", "nodes", "sent/step", "file");
  for (const auto& f : files) {
    fmt::print("  {:<6} {:<7} {:>7} {:>14}  {}\n", f.rank, f.role, f.nodes, format_bytes(f.bytes_sent),
               f.path);
  }
  return 0;
}

}  // namespace

std::function<int()> add_export_command(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand("export", "Write a scenario's multi-worker workload for another tool");
  cmd->add_option(
         "--chakra", args->chakra,
         "Write Chakra execution traces PREFIX.<rank>.et, one per worker (and PS) rank, for ASTRA-sim")
      ->required();
  cmd->add_option("scenario", args->scenario, "Scenario YAML file")->required();
  cmd->add_option("--set", args->sets, "Override a scenario key: KEY=VALUE (repeatable)");
  cmd->add_option("--workers", args->workers, "Number of workers (overrides cluster.workers)")
      ->check(CLI::Range(1, limits::kMaxWorkers));
  cmd->add_option("--network-dims", args->network_dims,
                  "Dimensions of the ASTRA-sim network the traces will run on (involved_dim of collectives)")
      ->check(CLI::Range(1, 8))
      ->capture_default_str();
  return [args] { return run_export(*args); };
}

}  // namespace stepcast::cli
