// What a PyTorch profiler trace says about training steps: step windows ("ProfilerStep#N"),
// kernels per step, GPU busy time split into compute, communication (NCCL), their overlap and
// idle time, step-time statistics over the steady steps, and every NCCL collective with its
// bytes. This is what `stepcast inspect` prints. Depends on profile/kineto.hpp. Units: seconds
// and bytes.
//
//   auto s = stepcast::profile::summarize_kineto_file("rank0.json.gz");  // streams the file
//   fmt::print("{} steady steps, mean {} s\n", s.step_time.count, s.step_time.mean);
//   for (const auto& c : s.collectives) total_bytes += c.bytes;
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stepcast/detail/profile/kineto.hpp"

namespace stepcast::profile {

struct SummaryOptions {
  /// A step is not steady when both the kernels that ran in its window and its GPU busy time
  /// are below this fraction of their medians over all steps. Why 0.8 and not 0.5: in
  /// resnet50_ddp_1xV100 the GPU still works through the backlog of the steps before the
  /// profiler window during the first two steps (285 and 624 kernels against 870; windows of 35
  /// and 72 ms against 95.6 ms), and both distort the mean; steady steps of the shared traces
  /// stay above 0.82 of the median in at least one of the two.
  double min_kernel_fraction = 0.8;
};

/// One ProfilerStep window. Kernels and GPU time count what ran inside the window on the GPU
/// (kernel start in [start, start + duration)), as HTA and the shared step_summary.csv do.
struct StepSummary {
  std::string name;               ///< "ProfilerStep#12"
  int64_t number = 0;             ///< 12
  double start = 0;               ///< s, relative to TraceMetadata::origin_us
  double duration = 0;            ///< s, the CPU-side annotation window
  int num_kernels = 0;            ///< kernels starting in the window (NCCL included)
  int num_kernels_launched = 0;   ///< kernels whose launch (by correlation id) is in the window
  double kernel_compute_sum = 0;  ///< s, sum of non-NCCL kernel durations (overlaps counted twice)
  double nccl_kernel_sum = 0;     ///< s, sum of NCCL kernel durations
  double gpu_busy = 0;            ///< s, union of kernel, memcpy and memset intervals in the window
  double compute = 0;             ///< s, union of non-NCCL kernel/memcpy/memset intervals
  double communication = 0;       ///< s, union of NCCL kernel intervals
  double overlap = 0;             ///< s, time where communication and compute run at once
  double idle = 0;                ///< s, duration - gpu_busy
  bool steady = true;
  std::string note;  ///< why the step is not steady
  bool operator==(const StepSummary&) const = default;
};

/// One NCCL kernel.
struct CollectiveRecord {
  std::string step;        ///< name of the step window holding its start, "" when none
  std::string collective;  ///< "allreduce", "broadcast", "sendrecv", ...
  std::string dtype;       ///< "" when the trace does not say
  int64_t nelems = -1;     ///< "In msg nelems", -1 when unknown
  int64_t out_nelems = -1;
  double bytes = 0;    ///< nelems x dtype size, 0 when unknown
  int group_size = 0;  ///< 0 when unknown
  std::string process_group_ranks;
  std::string kernel_name;
  int64_t device = -1;
  int64_t stream = -1;
  double start = 0;     ///< s, relative to TraceMetadata::origin_us
  double duration = 0;  ///< s, kernel duration (includes waiting for peers)
  bool operator==(const CollectiveRecord&) const = default;
};

/// Collectives with the same type, dtype, bytes and group size.
struct CollectiveGroup {
  std::string collective;
  std::string dtype;
  double bytes = 0;
  int group_size = 0;
  int count = 0;
  double total_duration = 0;  ///< s
  double mean_duration = 0;   ///< s
  double min_duration = 0;    ///< s
  double max_duration = 0;    ///< s
  bool operator==(const CollectiveGroup&) const = default;
};

struct DurationStats {
  int count = 0;
  double mean = 0;    ///< s
  double p50 = 0;     ///< s, linear interpolation between order statistics (numpy's default)
  double p95 = 0;     ///< s
  double min = 0;     ///< s
  double max = 0;     ///< s
  double stddev = 0;  ///< s, population
  bool operator==(const DurationStats&) const = default;
};

/// Per-step GPU time, mean over the steady steps.
struct GpuTimeBreakdown {
  double step = 0;                ///< s, mean step duration
  double gpu_busy = 0;            ///< s
  double compute = 0;             ///< s (includes the overlap)
  double communication = 0;       ///< s (includes the overlap)
  double overlap = 0;             ///< s
  double idle = 0;                ///< s
  double kernel_compute_sum = 0;  ///< s
  double nccl_kernel_sum = 0;     ///< s
  bool operator==(const GpuTimeBreakdown&) const = default;
};

struct TraceSummary {
  std::string file;
  TraceMetadata metadata;
  std::vector<int64_t> devices_used;  ///< args.device of the kernels, sorted
  size_t num_events = 0;
  std::vector<StepSummary> steps;                  ///< in time order
  DurationStats step_time;                         ///< over the steady steps
  DurationStats step_time_all;                     ///< over all steps
  GpuTimeBreakdown per_step;                       ///< mean over the steady steps
  std::vector<CollectiveRecord> collectives;       ///< every NCCL kernel, in time order
  std::vector<CollectiveGroup> collective_groups;  ///< by type, dtype, bytes, group size
  std::vector<std::string> warnings;
  size_t num_warnings = 0;
  bool operator==(const TraceSummary&) const = default;
};

/// Summarizes `path` in one streaming pass, keeping only GPU activity, launches and step
/// annotations (not every event). Throws stepcast::Error as read_kineto_events does, and when
/// the trace has no "ProfilerStep#N" annotations.
[[nodiscard]] TraceSummary summarize_kineto_file(const std::string& path, const SummaryOptions& options = {},
                                                 const ReadOptions& read_options = {});

/// The same summary from a trace already in memory. Throws stepcast::Error when it has no steps.
[[nodiscard]] TraceSummary summarize(const KinetoTrace& trace, const SummaryOptions& options = {});

/// Quantile q in [0, 1] of `values` (any order) by linear interpolation; 0 when empty.
[[nodiscard]] double quantile(std::vector<double> values, double q);

}  // namespace stepcast::profile
