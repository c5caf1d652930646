// The report of `stepcast inspect`: what a PyTorch profiler trace holds (profile::TraceSummary:
// framework, devices, ranks, steps, step time, GPU time split, collectives), written as JSON for
// programs or as text for people. Depends on profile/trace_summary.hpp; seconds and bytes
// inside, units in the printed names ("duration_s", "memory_bytes"; the members of "step_time_s"
// and "per_step_s" are seconds).
//
//   const profile::TraceSummary s = profile::summarize_kineto_file("rank0.json.gz");
//   report::write_table(std::cout, s);  // or write_json: one line, null for non-finite numbers
#pragma once

#include <ostream>

#include "stepcast/detail/profile/tf_timeline.hpp"
#include "stepcast/detail/profile/trace_summary.hpp"

namespace stepcast::report {

/// One JSON object on one line: file, framework, devices, devices_used, rank, world_size
/// (null when the trace does not say), backend, nccl_version, num_events, steps_found,
/// steady_steps, step_time_s and step_time_all_s ({count, mean, p50, p95, min, max, stddev}),
/// not_steady, per_step_s, steps, collectives_by_type, collectives, num_warnings, warnings.
/// Non-finite numbers are written as null.
void write_json(std::ostream& out, const profile::TraceSummary& summary);
/// Text: trace, framework, devices, ranks, steps and step time, the GPU time split per step, a
/// table of steps, the collectives by type and size, and the warnings.
void write_table(std::ostream& out, const profile::TraceSummary& summary);

/// A TensorFlow timeline: one JSON object on one line: file, framework ("tensorflow"), device,
/// ops, compute_time_s, span_s, receives, sends, received_bytes, unsized_receives and
/// message_cost {messages, size_classes, overhead_s, bandwidth_bytes_per_s} (null where unknown).
void write_json(std::ostream& out, const profile::TfTimelineSummary& summary);
/// Text: the device, its ops and compute time, the parameter server's messages and what one
/// costs, with the scenario key it sets.
void write_table(std::ostream& out, const profile::TfTimelineSummary& summary);

}  // namespace stepcast::report
