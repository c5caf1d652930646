// TensorFlow 1 timelines (tf.python.client.timeline.Timeline.generate_chrome_trace_format):
// Chrome trace JSON, plain or gzipped, one process per device ("M" process_name events such as
// "/job:worker/replica:0/task:0/device:GPU:0 Compute"), ops as "X" events whose args carry the
// node name (args.name), the op type (args.op) and the inputs (args.input0, input1, ...).
// Depends on workload/ only (simdjson and zlib stay in the .cpp). Units: seconds and bytes,
// converted from the trace's microseconds when read.
//
// The Workload, for one device's compute process:
//   - Ops: its "X" events other than transfers, in timestamp order, on one lane ("gpu" for a
//     GPU device, else "cpu"), each depending on the one before (program order). Kind from TF's
//     name scopes: nodes under "gradients/" are Backward, Apply*/ResourceApply* ops and nodes of
//     an "update_" scope are Other (the optimizer), the rest Forward.
//   - Tensors: every _Recv/_HostRecv/RecvTensor event of the device's task is a parameter read
//     (a pull from a PS): one Tensor per received variable (name without TF's "edge_N_" and
//     "/_N" and "/read" decorations), bytes from args.bytes (or tensor_bytes, size) when present,
//     else 0 with a warning; consumed by the first later op naming the received node or the
//     variable among its inputs, else by the first op starting after the receive; produced by
//     the last op before a _Send/_HostSend that names the variable, else by the last backward op.
//
//   auto w = profile::read_tf_timeline("timeline.json");          // picks the GPU compute device
//   auto c = profile::read_tf_timeline("timeline.json", {.device = "CPU:0"});
#pragma once

#include <string>
#include <vector>

#include "stepcast/workload/workload.hpp"

namespace stepcast::profile {

struct TfTimelineOptions {
  /// Substring of the process name of the device to read ("GPU:1", "task:2/device:CPU:0"); empty:
  /// the busiest GPU compute process, else the busiest CPU one, never a /job:ps device.
  std::string device;
};

/// Reads a TF1 timeline. Warnings (received tensors without a size) are appended
/// to `warnings` when given. Throws Error naming the file and the event (key "traceEvents[i]")
/// for invalid JSON or gzip, a missing or negative ts or dur, a trace without traceEvents or
/// without compute ops, or a `device` that matches no process.
[[nodiscard]] workload::Workload read_tf_timeline(const std::string& path,
                                                  const TfTimelineOptions& options = {},
                                                  std::vector<std::string>* warnings = nullptr);

/// What one message (a tensor received or sent) cost in a timeline, as duration = overhead +
/// bytes / bandwidth, the line fitted (least squares) through the fastest message of each size
/// class (sizes within a power of two): the least waiting any message of that size saw. A
/// receive in a TF timeline also holds the time it waited for its sender, so the fastest of a
/// class is the nearest to what the message itself costs.
struct MessageCostFit {
  int messages = 0;      ///< with a size
  int size_classes = 0;  ///< power-of-two classes holding a message
  double overhead =
      -1;  ///< s per message besides its bytes (the intercept, at least 0); < 0: no sized message
  double bandwidth = 0;  ///< bytes/s (1 / slope); 0: not determined (one class, or no positive slope)
};
/// Fits (bytes, seconds) pairs; pairs with a negative or non-finite value are skipped.
[[nodiscard]] MessageCostFit fit_message_costs(
    const std::vector<std::pair<double, double>>& bytes_and_seconds);

/// `stepcast inspect` of a TF timeline: the device read (as read_tf_timeline picks it), its ops,
/// and the parameter server's messages of its task, with what one message costs.
struct TfTimelineSummary {
  std::string file;
  std::string device;
  int ops = 0;
  double compute_time = 0;  ///< s, the ops' durations summed
  double span = 0;          ///< s, from the first op's start to the last op's end
  int receives = 0, sends = 0;
  double received_bytes = 0;  ///< over the receives with a size
  int unsized_receives = 0;   ///< receives without args.bytes
  MessageCostFit receive_cost;
};
/// Throws what read_tf_timeline throws.
[[nodiscard]] TfTimelineSummary summarize_tf_timeline(const std::string& path,
                                                      const TfTimelineOptions& options = {});

/// Whether the start of the file (plain or gzipped) looks like a TF timeline: Chrome trace
/// events of category "Op" with args.op. False for PyTorch/Kineto traces. Never throws.
[[nodiscard]] bool looks_like_tf_timeline(const std::string& path);

}  // namespace stepcast::profile
