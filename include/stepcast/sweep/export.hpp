// A scenario's multi-worker workload written for another tool, as `stepcast export` and Python's
// `stepcast.export()` both write it: Chakra execution traces (ASTRA-sim's workload input), one
// per worker (and parameter-server) rank, bucketed (all-reduce) or placed on shards (PS) exactly
// as the predictors do it. The front ends only read their arguments into an ExportRequest and
// print what this returns (python/tests compares the files byte for byte).
//
//   sweep::ExportRequest r{.chakra = "out/job"};
//   r.scenario.scenario = "examples/resnet50-ps.yaml";
//   sweep::Export e = sweep::export_chakra(r);   // e.files: path, rank, role, nodes, bytes_sent
//   sweep::write_table(std::cout, e);
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "stepcast/report/chakra_export.hpp"
#include "stepcast/sweep/sweep.hpp"

namespace stepcast::sweep {

/// The options of one export. Errors name an option through `option_name`, from its name here
/// ("network_dims"): the command's "--network-dims", Python's keyword unchanged.
struct ExportRequest {
  std::string chakra;    ///< the files' prefix: PREFIX.<rank>.et
  Request scenario;      ///< scenario (a file) or scenario_text, and its overrides
  int workers = 0;       ///< cluster.workers, after the overrides; 0: the scenario's
  int network_dims = 1;  ///< dimensions of the ASTRA-sim network, 1 .. 8
  std::string (*option_name)(std::string_view option) = nullptr;
};

/// What was written.
struct Export {
  std::string scenario;  ///< the scenario's name
  std::size_t ops = 0;   ///< ops per step of one worker
  int workers = 0;
  std::string summary;  ///< the scheme as exported, in words
  std::string prefix;
  std::vector<report::ChakraFile> files;  ///< one per rank, in rank order
};

/// Loads the scenario, builds its workload and writes the traces (missing directories of the
/// prefix are created). Throws Error naming the option or the scenario key on bad input (FSDP is
/// not exported yet: an error naming training.scheme).
[[nodiscard]] Export export_chakra(const ExportRequest& request);

/// What `stepcast export` prints: the scenario, the scheme, and a row per file.
void write_table(std::ostream& out, const Export& written);

}  // namespace stepcast::sweep
