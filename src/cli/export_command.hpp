// `stepcast export`: writes a scenario's multi-worker workload in another tool's format (Chakra
// execution traces for ASTRA-sim).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace stepcast::cli {

/// Registers the `export` subcommand on `app`. The returned function runs it once `app` has
/// parsed a command line that chose it; it throws stepcast::Error on bad input.
[[nodiscard]] std::function<int()> add_export_command(CLI::App& app);

}  // namespace stepcast::cli
