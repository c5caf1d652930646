// A PyTorch profiler (Kineto) trace as the Workload IR: the ops of one representative steady
// step on every lane (CPU threads, GPU streams), with the dependencies that bound the step.
// Depends on profile/kineto.hpp, profile/trace_summary.hpp and workload/workload.hpp. Units:
// seconds and bytes.
//
// How the step is built (all times are the trace's own, from the chosen step's window):
// - Step: the steady step (trace_summary's detection) whose duration is closest to the steady
//   median (the representative), or the one options.step names. Its window is the
//   ProfilerStep#N annotation, [start, start + duration).
// - CPU lanes: one per thread with cpu_op / user_annotation / cuda_runtime events starting in the
//   window. Only top-level events (not nested in another event of the same thread) name ops. The
//   time before the first, between consecutive ones and (on the thread holding the step
//   annotation) after the last until the window's end becomes "cpu gap" ops (OpKind::Other):
//   data loading and Python overhead keep their place in program order.
// - A top-level op is cut at every kernel launch it contains (at the end of the cuda_runtime
//   call), so a kernel depends on the CPU segment that ended with its launch, not on the whole
//   enclosing op (an optimizer step launches hundreds of kernels).
// - GPU lanes: one per (device, stream). Kernels, memcpys and memsets launched (by correlation
//   id) from the window run in their measured start order with their measured durations, each
//   after the CPU segment that launched it, unless it started more than queued_launch_lag after
//   its launch: then it waited behind earlier GPU work, not for the CPU (a CPU running a step
//   ahead of the GPU), and the step's barrier would wrongly serialize the two. GPU idle time is
//   not an op: it comes from the deps.
// - Synchronizations: a cuda_runtime call named *Synchronize (stream, device or event; treated
//   device-wide) or a blocking cudaMemcpy* whose own copy ends inside the call cuts the CPU
//   segment at the call's start; the rest of the call becomes an op that depends on the GPU op it
//   waited for (the latest-ending GPU op launched before, ending inside the call) and lasts only
//   the measured time after that op ended (the wait itself comes from the dep).
// - NCCL kernels: ops with their measured durations (replay uses measured collectives as they
//   are) and a dep on the compute op launched last before them on another stream (the
//   cudaStreamWaitEvent DDP records). Each all-reduce with known size ("In msg nelems" x dtype)
//   also becomes a gradient tensor whose producer is that compute op (else the NCCL op's launch
//   segment). With Collectives::Simulated, NCCL ops last 0 s and the simulator's collectives
//   replace them (extrapolation to another worker count).
// - Per-step samples: every other steady step's window is converted by the same rules and its
//   ops are matched to the representative's lane by lane (lanes by name; the interleaving of
//   lanes follows measured start times, which move from step to step). GPU lanes must hold the
//   same ops (names, kinds) in the same order, and the gradient tensors must be the same. CPU
//   lanes may differ by a few ops (a gap of zero length, one more poll of a watchdog thread, a
//   synchronization that found the GPU done): they are aligned on a longest common subsequence
//   of names; a representative op missing from the step gets 0 s, an extra op's time goes to the
//   aligned op before it on its lane (so the lane keeps its busy time). A matched step appends
//   each op's duration to Op::samples (in step order, the representative step included, its
//   samples equal to the durations); the representative's dependencies are kept. A step whose
//   GPU work differs, whose CPU ops differ by more than max_unaligned_fraction of the op count,
//   or that fails to convert gives no sample and is listed with the reason in unmatched_steps.
//
//   auto k = stepcast::profile::convert_kineto(trace, {});
//   auto r = stepcast::predict::predict_fine(k.workload, {.workers = 1}, scheme, options);
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stepcast/detail/profile/kineto.hpp"
#include "stepcast/detail/profile/trace_summary.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::profile {

struct KinetoWorkloadOptions {
  enum class Collectives : uint8_t {
    Measured,   ///< NCCL kernels keep their measured durations (replay at the trace's scale)
    Simulated,  ///< NCCL kernels last 0 s; their gradient tensors drive simulated collectives
  };
  Collectives collectives = Collectives::Measured;
  /// s: a GPU op that started more than this after its launch call ended was queued behind
  /// earlier GPU work (the CPU ran ahead, often by a whole step); it gets no dep on its launch.
  double queued_launch_lag = 1e-3;
  SummaryOptions summary;
  int batch_per_worker = 1;  ///< samples per step; the trace does not say
  /// The step to convert ("ProfilerStep#104"); "" picks the representative steady step. The
  /// samples still come from the steady steps (a step that is not steady is not among them).
  std::string step;
  /// Fill Op::samples from every steady step (one conversion per step); false converts the
  /// representative step alone.
  bool step_samples = true;
  /// A steady step gives no sample when more than this fraction of the representative step's
  /// op count are CPU ops found in only one of the two (see "Per-step samples" above).
  double max_unaligned_fraction = 0.02;
};

/// The converted step and what was learned on the way.
struct KinetoWorkload {
  workload::Workload workload;
  TraceSummary summary;               ///< of the whole trace (steps, steady detection, statistics)
  std::string step;                   ///< the representative step, e.g. "ProfilerStep#104"
  double step_duration = 0;           ///< s, its measured window
  int gradient_tensors = 0;           ///< tensors from NCCL all-reduce kernels
  std::vector<int> backward_gpu_ops;  ///< GPU compute ops launched by autograd, in start order
  int last_gpu_op = -1;               ///< the GPU op ending last, -1 when the step has none
  /// Steady steps that gave the per-step samples, in step order (sample k is sampled_steps[k]);
  /// the representative step is one of them. Empty when options.step_samples is false.
  std::vector<std::string> sampled_steps;
  /// Steady steps that gave no sample: "ProfilerStep#103: 1712 ops, the representative step has
  /// 1710".
  std::vector<std::string> unmatched_steps;
  /// Sampled steps whose CPU ops did not all line up: "ProfilerStep#5: 1 CPU ops only in the
  /// representative step (sample 0 s), 4 only in this step (...), 0 ops with other dependencies".
  std::vector<std::string> sample_notes;
};

/// Converts the trace. Throws stepcast::Error (naming the trace file) when it has no steps, no
/// steady step, no step named options.step, or a dependency cycle.
[[nodiscard]] KinetoWorkload convert_kineto(const KinetoTrace& trace,
                                            const KinetoWorkloadOptions& options = {});
/// Reads `path` and converts it.
[[nodiscard]] KinetoWorkload convert_kineto_file(const std::string& path,
                                                 const KinetoWorkloadOptions& options = {});

[[nodiscard]] workload::Workload kineto_to_workload(const KinetoTrace& trace,
                                                    const KinetoWorkloadOptions& options = {});
[[nodiscard]] workload::Workload kineto_to_workload(const std::string& path,
                                                    const KinetoWorkloadOptions& options = {});

/// Gives a converted trace without gradient tensors the parameters of a model (name, bytes; in
/// forward layer order, e.g. from the zoo). Gradients are spread over the backward GPU ops in
/// reverse order (the first layer's gradient comes from the last backward op), proportionally to
/// position; when the trace has no autograd ops, every gradient comes from the last GPU op (no
/// overlap of communication with the backward pass). Consumers are left empty.
void attach_gradients(KinetoWorkload& converted,
                      const std::vector<std::pair<std::string, double>>& parameters);

}  // namespace stepcast::profile
