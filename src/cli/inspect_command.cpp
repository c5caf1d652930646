// `stepcast inspect TRACE [--json]`: what a PyTorch profiler trace holds (framework, devices,
// ranks, steps, step time, GPU time split, collectives), or a TensorFlow timeline (its device's
// ops, the parameter server's messages and what one costs). Registered by main.cpp through
// add_inspect_command; errors are stepcast::Error, which main turns into exit code 2.
#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <utility>

#include "stepcast/sweep/inspect.hpp"

namespace stepcast::cli {

namespace {

struct InspectArgs {
  std::string trace;
  bool json = false;
};

}  // namespace

/// Registers `inspect` on `app`; the returned function runs it once parsed. Throws
/// stepcast::Error for unreadable or invalid traces.
std::pair<CLI::App*, std::function<int()>> add_inspect_command(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand("inspect",
                                     "Show what a PyTorch profiler (Kineto) trace holds: steps, "
                                     "step time, GPU time split, collectives; or a TensorFlow timeline: "
                                     "ops and the cost of a parameter-server message");
  cmd->add_option("trace", args->trace, "Trace file (.json or .json.gz)")->required();
  cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
  return {cmd, [args] {
            const sweep::Inspection inspection = sweep::inspect(args->trace);
            if (args->json) {
              sweep::write_json(std::cout, inspection);
            } else {
              sweep::write_table(std::cout, inspection);
            }
            return 0;
          }};
}

}  // namespace stepcast::cli
