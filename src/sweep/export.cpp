// `export --chakra` as one library call (sweep/export.hpp).
#include "stepcast/sweep/export.hpp"

#include <fmt/format.h>

#include <iterator>
#include <string>
#include <vector>

#include "stepcast/detail/output_file.hpp"
#include "stepcast/detail/scheme/costs.hpp"
#include "stepcast/detail/scheme/placement.hpp"
#include "stepcast/enum_names.hpp"
#include "stepcast/error.hpp"
#include "stepcast/limits.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/units.hpp"

namespace stepcast::sweep {
namespace {

std::string option_name_of(const ExportRequest& request, std::string_view option) {
  return request.option_name ? request.option_name(option) : std::string(option);
}

}  // namespace

Export export_chakra(const ExportRequest& request) {
  const std::string chakra_option = option_name_of(request, "chakra");
  if (request.chakra.empty()) {
    // The example in the front end's own syntax: --chakra out/job, or chakra='out/job'.
    const bool flag = chakra_option.starts_with("--");
    throw Error({"", 0, chakra_option}, fmt::format("expected an output prefix, e.g. {}{}out/job{}",
                                                    chakra_option, flag ? " " : "='", flag ? "" : "'"));
  }
  if (request.workers < 0 || request.workers > limits::kMaxWorkers) {
    throw Error({"", 0, option_name_of(request, "workers")},
                fmt::format("expected an integer in [1, {}], got {}", limits::kMaxWorkers, request.workers));
  }
  if (request.network_dims < 1 || request.network_dims > 8) {
    throw Error({"", 0, option_name_of(request, "network_dims")},
                fmt::format("expected an integer in [1, 8], got {}", request.network_dims));
  }
  std::vector<std::string> overrides = request.scenario.overrides;
  if (request.workers > 0) overrides.push_back(fmt::format("cluster.workers={}", request.workers));
  const scenario::Scenario s = load_scenario(request.scenario, overrides);
  const workload::Workload w = scenario::build_workload(s);

  if (s.cluster.workers > limits::kMaxSimulatedWorkers) {
    // One file per rank: past this, hundreds of thousands of files no tool replays.
    throw Error({s.file, 0, "cluster.workers"},
                fmt::format("{} workers: Chakra export writes one file per rank, at most {}",
                            s.cluster.workers, limits::kMaxSimulatedWorkers));
  }
  report::ChakraExport how;
  how.workers = s.cluster.workers;
  how.network_dims = request.network_dims;
  Export out;
  switch (s.scheme.scheme) {
    case scheme::Scheme::ParameterServer:
      how.parameter_server = true;
      how.ps_count = s.scheme.ps.count;
      how.ps_apply_time = s.scheme.ps.apply_time;
      how.ps_apply_bw = s.scheme.ps.apply_bw;
      for (const scheme::Piece& p : scheme::place_parameters(w, s.scheme.ps)) {
        how.pieces.push_back({.tensor = p.tensor, .shard = p.shard, .bytes = p.bytes});
      }
      out.summary =
          fmt::format("parameter server, {} shards (ranks {}..{}), {} pieces of {} tensors", how.ps_count,
                      how.workers, how.workers + how.ps_count - 1, how.pieces.size(), w.tensors.size());
      break;
    case scheme::Scheme::AllReduce: {
      how.buckets = workload::make_buckets(w, s.scheme.allreduce.bucket_bytes);
      // What a rank sends of each all-reduced byte, as the predictors' collective plan moves it
      // (linear in the size: the closed form at one byte); the mean over ranks where they differ
      // (hierarchical with a last node short of GPUs).
      const scheme::AllReduceAlgorithm algorithm = s.scheme.allreduce.algorithm;
      how.allreduce_sent_per_byte =
          scheme::allreduce_bytes_per_worker(algorithm, how.workers, s.cluster.workers_per_node, 1.0);
      out.summary = fmt::format("all-reduce ({}), {} buckets of {} gradients ({} all-reduced per step)",
                                name_of(algorithm), how.buckets.size(), w.tensors.size(),
                                format_bytes(w.parameter_bytes()));
      break;
    }
    case scheme::Scheme::Fsdp:
      throw Error({s.file, 0, "training.scheme"},
                  "export --chakra writes parameter-server and all-reduce jobs; fsdp is not supported yet");
  }
  try {
    create_parent_directories(request.chakra, chakra_option);
    out.files = report::write_chakra_traces(request.chakra, w, how);
  } catch (const Error& e) {
    // report/ names the command's flag: the request's name of it instead.
    if (e.where().key != "--chakra") throw;
    SourceLocation where = e.where();
    where.key = chakra_option;
    throw Error(where, e.message());
  }
  out.scenario = s.name;
  out.ops = w.ops.size();
  out.workers = how.workers;
  out.prefix = request.chakra;
  return out;
}

void write_table(std::ostream& out, const Export& written) {
  fmt::memory_buffer buf;
  auto it = std::back_inserter(buf);
  fmt::format_to(it, "scenario {}: {} ops per step, {} workers, {}\n", written.scenario, written.ops,
                 written.workers, written.summary);
  fmt::format_to(it, "wrote {} Chakra execution traces (ASTRA-sim workload input, prefix {}):\n",
                 written.files.size(), written.prefix);
  fmt::format_to(it, "  {:<6} {:<7} {:>7} {:>14}  {}\n", "rank", "role", "nodes", "sent/step", "file");
  for (const auto& f : written.files) {
    fmt::format_to(it, "  {:<6} {:<7} {:>7} {:>14}  {}\n", f.rank, f.role, f.nodes,
                   format_bytes(f.bytes_sent), f.path);
  }
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

}  // namespace stepcast::sweep
