// PyTorch profiler (Kineto) trace reader: Chrome-trace JSON, plain or gzipped, read in one
// streaming pass.
//
// The file is read in chunks; a scanner finds each complete object of the top-level
// "traceEvents" array and parses only that object, so memory stays at about one chunk plus the
// largest event however large the file (ReadStats::max_buffered_bytes reports it). Depends on
// stepcast/error.hpp only (simdjson and zlib stay in the .cpp files). Units: times in seconds,
// converted from Kineto's microseconds when read; `ts` is relative to TraceMetadata::origin_us.
//
//   auto trace = stepcast::profile::read_kineto_trace("rank0.json.gz");   // collects events
//   for (const auto& e : trace.events)
//     if (e.cat == stepcast::profile::Category::Kernel) busy += e.dur;     // seconds
//   stepcast::profile::read_kineto_events(path, [&](const EventView& e) { ... });  // streaming
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stepcast/enum_names.hpp"

namespace stepcast::profile {

/// Event category ("cat"). Old Kineto names (Operator, Runtime, Kernel, Memcpy, Memset) map to
/// the current ones; unknown categories are Other (no error).
enum class Category : uint8_t {
  CpuOp,              ///< "cpu_op", "Operator"
  UserAnnotation,     ///< "user_annotation" (ProfilerStep#N, record_function)
  GpuUserAnnotation,  ///< "gpu_user_annotation"
  CudaRuntime,        ///< "cuda_runtime", "Runtime"
  CudaDriver,         ///< "cuda_driver"
  Kernel,             ///< "kernel", "Kernel"
  GpuMemcpy,          ///< "gpu_memcpy", "Memcpy"
  GpuMemset,          ///< "gpu_memset", "Memset"
  PythonFunction,     ///< "python_function"
  Flow,               ///< "ac2g", "async_cpu_to_gpu", "fwdbwd", "async" and any "s"/"f"/"t" event
  Other,
};
constexpr std::string_view name_of(Category v) {
  switch (v) {
    case Category::CpuOp:
      return "cpu_op";
    case Category::UserAnnotation:
      return "user_annotation";
    case Category::GpuUserAnnotation:
      return "gpu_user_annotation";
    case Category::CudaRuntime:
      return "cuda_runtime";
    case Category::CudaDriver:
      return "cuda_driver";
    case Category::Kernel:
      return "kernel";
    case Category::GpuMemcpy:
      return "gpu_memcpy";
    case Category::GpuMemset:
      return "gpu_memset";
    case Category::PythonFunction:
      return "python_function";
    case Category::Flow:
      return "flow";
    case Category::Other:
      return "other";
  }
  return {};
}

[[nodiscard]] std::string_view to_string(Category cat);
/// Category of a "cat" string (and phase, for flow events).
[[nodiscard]] Category parse_category(std::string_view cat, char ph);

/// Arguments of an NCCL kernel as PyTorch records them (args."Collective name" and friends).
/// Views point into the reader's buffers: valid only during the visitor call.
struct NcclArgsView {
  std::string_view collective;           ///< "allreduce", "broadcast", ...
  std::string_view dtype;                ///< "Float", "Half", "BFloat16", "Long", ...
  std::string_view process_group_ranks;  ///< "[0, 1]" as written
  int64_t in_nelems = -1;                ///< -1: absent
  int64_t out_nelems = -1;
  int group_size = 0;  ///< 0: absent
};

/// One event as the streaming reader sees it. Views are valid only during the visitor call.
struct EventView {
  size_t index = 0;          ///< position in traceEvents (0-based, counting skipped events)
  uint64_t byte_offset = 0;  ///< offset of the event's '{' in the uncompressed file
  std::string_view name;
  std::string_view cat_name;  ///< "cat" as written
  Category cat = Category::Other;
  char ph = 0;       ///< 'X', 'i', 's', 'f', 'M', ...
  int64_t pid = -1;  ///< -1 when absent or not a number (some traces use strings, e.g. "Spans")
  int64_t tid = -1;
  double ts = 0;             ///< s, relative to TraceMetadata::origin_us
  double dur = 0;            ///< s; 0 for events that are not complete ("X")
  int64_t stream = -1;       ///< args.stream; -1 when absent
  int64_t correlation = -1;  ///< args.correlation: cuda_runtime launch <-> kernel
  int64_t device = -1;       ///< args.device
  int64_t external_id = -1;  ///< args."External id": cpu_op <-> launch
  bool has_nccl = false;     ///< args carry "Collective name" or NCCL message sizes
  NcclArgsView nccl;
};

/// A GPU as deviceProperties describes it.
struct DeviceInfo {
  int id = 0;
  std::string name;
  double memory_bytes = 0;  ///< totalGlobalMem, bytes
  int num_sms = 0;          ///< 0 when absent
  bool operator==(const DeviceInfo&) const = default;
};

/// What the top level of the file says besides the events.
struct TraceMetadata {
  std::string framework;  ///< "pytorch" for Kineto traces, "chrome-trace" otherwise
  int schema_version = 0;
  std::vector<DeviceInfo> devices;      ///< deviceProperties, in file order
  std::optional<int> rank;              ///< distributedInfo.rank
  std::optional<int> world_size;        ///< distributedInfo.world_size
  std::string backend;                  ///< distributedInfo.backend, e.g. "nccl"
  std::string nccl_version;             ///< distributedInfo.nccl_version
  std::optional<int64_t> base_time_ns;  ///< baseTimeNanoseconds
  /// ts of the first timed event, in the trace's microseconds; every EventView::ts is relative
  /// to it, which keeps sub-microsecond resolution that absolute epoch times in seconds lose.
  double origin_us = 0;
  bool operator==(const TraceMetadata&) const = default;
};

struct ReadOptions {
  /// Bytes read (decompressed) per chunk. The buffer holds one chunk plus the largest event.
  size_t chunk_bytes = size_t{1} << 20;
  /// Warnings kept verbatim; ReadStats::num_warnings counts all of them.
  size_t max_warnings = 100;
};

struct ReadStats {
  uint64_t bytes = 0;  ///< uncompressed bytes read
  bool gzip = false;
  size_t events = 0;                  ///< events in traceEvents
  size_t skipped = 0;                 ///< events not passed on (bad duration, missing fields)
  size_t max_buffered_bytes = 0;      ///< peak size of the reader's input buffer, bytes
  std::vector<std::string> warnings;  ///< "file: traceEvents[i] (byte N, 'name'): why; skipped"
  size_t num_warnings = 0;
};

/// What a streaming read returns besides the events it passed to the visitor.
struct ReadResult {
  TraceMetadata metadata;
  ReadStats stats;
};

using EventVisitor = std::function<void(const EventView&)>;

/// Reads `path` (.json or gzipped; detected from the content) in one pass and calls `visit` for
/// every usable event, in file order. Complete ("X") events with a missing or negative "dur", a
/// "dur" above 1e6 s (limits::kMaxDuration) or a missing "ts" are skipped with a warning.
/// Metadata that follows the events in the file is complete only in the returned value. Throws
/// stepcast::Error (naming the file and the event index or byte offset) when the file cannot be
/// opened, the gzip stream is truncated or corrupt, the JSON is invalid or has no "traceEvents".
/// Exceptions from `visit` propagate.
ReadResult read_kineto_events(const std::string& path, const EventVisitor& visit,
                              const ReadOptions& options = {});

/// NCCL arguments of a collected kernel.
struct NcclArgs {
  std::string collective;
  std::string dtype;
  std::string process_group_ranks;
  int64_t in_nelems = -1;
  int64_t out_nelems = -1;
  int group_size = 0;
  bool operator==(const NcclArgs&) const = default;
};

/// A collected event: EventView with the strings interned in KinetoTrace.
struct KinetoEvent {
  uint32_t name = 0;  ///< index into KinetoTrace::names
  Category cat = Category::Other;
  char ph = 0;
  int32_t nccl = -1;  ///< index into KinetoTrace::nccl, -1 when none
  int64_t pid = -1;
  int64_t tid = -1;
  double ts = 0;   ///< s, relative to metadata.origin_us
  double dur = 0;  ///< s
  int64_t stream = -1;
  int64_t correlation = -1;
  int64_t device = -1;
  int64_t external_id = -1;
  bool operator==(const KinetoEvent&) const = default;
};

/// A whole trace in memory, compactly (names interned).
struct KinetoTrace {
  std::string path;
  TraceMetadata metadata;
  ReadStats stats;
  std::vector<std::string> names;
  std::vector<KinetoEvent> events;
  std::vector<NcclArgs> nccl;

  [[nodiscard]] const std::string& name(const KinetoEvent& e) const { return names[e.name]; }
  [[nodiscard]] const NcclArgs* nccl_args(const KinetoEvent& e) const {
    return e.nccl < 0 ? nullptr : &nccl[static_cast<size_t>(e.nccl)];
  }
};

/// read_kineto_events collecting every usable event. Throws as read_kineto_events does.
[[nodiscard]] KinetoTrace read_kineto_trace(const std::string& path, const ReadOptions& options = {});

/// Bytes per element of a PyTorch dtype name as NCCL kernels record it ("Float" 4, "Half" and
/// "BFloat16" 2, "Long" and "Double" 8, "Int" 4, "Byte"/"Char"/"Bool" 1); 0 when unknown.
[[nodiscard]] int dtype_size(std::string_view dtype);

/// Collective of an NCCL kernel from its name when args lack it:
/// "ncclKernel_AllReduce_RING_LL_Sum_float" -> "allreduce"; "" when not an NCCL kernel name.
[[nodiscard]] std::string collective_from_kernel_name(std::string_view kernel_name);

/// True for NCCL kernels ("nccl" anywhere in the name, any case).
[[nodiscard]] bool is_nccl_kernel_name(std::string_view kernel_name);

}  // namespace stepcast::profile
