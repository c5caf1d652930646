// Layer table: the simplest profile, one CSV row per layer with its measured forward and
// backward time and its parameter bytes. Depends on workload/ only. Units: seconds and bytes
// inside; cells may carry units ("1.2ms", "25MB", "25MiB"); a bare number is seconds or bytes.
//
//   layer,forward_time,backward_time,parameter_bytes
//   conv1,1.2ms,2.4ms,37632
//   fc,0.3ms,0.6ms,8.2MB
//
// The Workload, like a zoo model's: one forward op "fwd:<layer>" per row in row order, then one
// backward op "bwd:<layer>" per row in reverse, all on lane "gpu" in program order; one Tensor
// per layer with parameters (named after the layer), produced by its backward op and consumed
// by its forward op. Columns may come in any order; blank lines and lines starting with '#' are
// skipped; cells may be double-quoted.
//
//   workload::Workload w = profile::read_layer_table("examples/layer-table/resnet-ish.csv");
#pragma once

#include <string>
#include <string_view>

#include "stepcast/workload/workload.hpp"

namespace stepcast::profile {

/// Reads a layer table file. The workload is named after the file stem. Throws Error naming the
/// file, the line and the column for a missing or unknown column, a bad or negative value, a
/// row with too few or too many cells, a duplicate layer name, or a table without rows.
[[nodiscard]] workload::Workload read_layer_table(const std::string& path);

/// Same from text; `file_name` is only used in messages and as the workload's name.
[[nodiscard]] workload::Workload parse_layer_table(std::string_view text, const std::string& file_name);

}  // namespace stepcast::profile
