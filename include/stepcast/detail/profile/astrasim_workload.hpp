// ASTRA-sim 1.0 layer-wise text workloads (the "inputs/workload/*.txt" files of ASTRA-sim 1.0,
// also the starting point of SimAI's): a coarse profile with per-layer compute times and the
// collective each pass needs. Depends on workload/ only. Units: seconds and bytes inside.
//
//   DATA                                   <- parallelism (first token of line 1)
//   2                                      <- number of layers
//   conv1  -1  5000 NONE 0  5000 NONE 0  10000 ALLREDUCE 37632  300
//   fc     -1  800  NONE 0  800  NONE 0  1600  ALLREDUCE 8192000 90
//
// Per layer: name, reserved (dependency, -1), forward compute time, forward comm type and bytes,
// input-gradient compute time, comm type and bytes, weight-gradient compute time, comm type and
// bytes, update time. Times are simulator ticks (ASTRA-sim 1.0's compute times are cycles, one
// tick per ns at its 1 GHz default): AstraSimOptions::seconds_per_tick converts them. Rows with
// 21 fields (a GEMM shape M N K after each compute time, as some ASTRA-sim forks write) are read
// too, ignoring the shapes.
//
// The Workload: per layer a forward op "fwd:<layer>" in layer order; then per layer in reverse a
// weight-gradient op "wg:<layer>" followed by an input-gradient op "ig:<layer>" (both Backward,
// the order ASTRA-sim 1.0 runs them in, so a gradient is ready after its weight-gradient pass);
// then one op "update" with the sum of the update times, if any. Each layer whose weight-gradient
// communication is an all-reduce of > 0 bytes becomes a Tensor of that size, produced by its
// "wg:" op and consumed by its "fwd:" op. Forward and input-gradient communication (model or
// hybrid parallelism) and other collectives are not representable and give warnings.
//
//   auto w = profile::read_astrasim_workload("Resnet50_DataParallel.txt", {.seconds_per_tick = 1e-9});
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "stepcast/workload/workload.hpp"

namespace stepcast::profile {

struct AstraSimOptions {
  double seconds_per_tick = 1e-9;  ///< s per time unit of the file (ASTRA-sim 1.0: 1 ns cycles)
};

/// Reads an ASTRA-sim 1.0 workload file. Warnings (non-DATA parallelism, communication that is
/// not a weight-gradient all-reduce) are appended to `warnings` when given. Throws Error naming
/// the file, line and field for an unknown comm type, a bad or negative number, a wrong number of
/// fields, a layer count that does not match the rows, or seconds_per_tick <= 0.
[[nodiscard]] workload::Workload read_astrasim_workload(const std::string& path,
                                                        const AstraSimOptions& options = {},
                                                        std::vector<std::string>* warnings = nullptr);

/// Same from text; `file_name` is only used in messages and as the workload's name.
[[nodiscard]] workload::Workload parse_astrasim_workload(std::string_view text, const std::string& file_name,
                                                         const AstraSimOptions& options = {},
                                                         std::vector<std::string>* warnings = nullptr);

}  // namespace stepcast::profile
