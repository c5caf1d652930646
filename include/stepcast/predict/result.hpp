// What every predictor returns, and the options they all take. Plain values: report/ formats
// them without knowing how they were computed.
//
//   Result r = predict::predict(workload, cluster_spec, scheme, options);
//   fmt::print("{} samples/s, bottleneck: {}\n", r.throughput, r.bottleneck);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stepcast/enum_names.hpp"
#include "stepcast/predict/memory.hpp"
#include "stepcast/sim/link_load.hpp"
#include "stepcast/sim/trace.hpp"

namespace stepcast::predict {

enum class Predictor : uint8_t { Fine, Coarse, Analytic };
constexpr std::string_view name_of(Predictor v) {
  switch (v) {
    case Predictor::Fine:
      return "fine";
    case Predictor::Coarse:
      return "coarse";
    case Predictor::Analytic:
      return "analytic";
  }
  return {};
}
[[nodiscard]] const char* to_string(Predictor predictor);

/// How workers read their start-up data (CNTK-style, DESIGN.md 3.3): one after another, so the
/// start-up grows with N; or all at once, each at the full storage bandwidth (local disks or a
/// store that scales), so it does not.
enum class StartupIo : uint8_t { Sequential, Parallel };
constexpr std::string_view name_of(StartupIo v) {
  switch (v) {
    case StartupIo::Sequential:
      return "sequential";
    case StartupIo::Parallel:
      return "parallel";
  }
  return {};
}

/// A whole training job: start-up plus the steps that train `samples` samples. Off when samples
/// is 0. Units: samples, bytes, bytes/s, seconds.
struct JobOptions {
  double samples = 0;         ///< samples to train, over all workers (epochs x dataset size)
  double startup_bytes = -1;  ///< read by each worker at start-up; < 0: the model's parameters
  double storage_bw = 0;      ///< bytes/s of one worker's read; 0: start-up I/O not modelled
  StartupIo io = StartupIo::Parallel;
  double startup_fixed = 0;  ///< s of start-up besides reading (process launch, init)
  double epochs = 0;         ///< epochs `samples` makes (job.epochs), for the per-epoch time; 0: not given
  /// Tokens to train (workload.tokens), for language models: the job is tokens / the workload's
  /// tokens per sample samples, and `samples` is then 0. 0: not given.
  double tokens = 0;
  bool operator==(const JobOptions&) const = default;
};

/// Money (cluster.cost.*): what one GPU costs an hour, in the scenario's currency. Off when
/// gpu_hour is 0.
struct CostOptions {
  double gpu_hour = 0;   ///< money per GPU per hour (cluster.cost.gpu_hour); 0: no costs
  std::string currency;  ///< as written after the amount ("USD"); "" when the scenario names none
  bool operator==(const CostOptions&) const = default;
};

struct Options {
  Predictor predictor = Predictor::Fine;
  int warmup_steps = 2;           ///< simulated steps discarded before measuring
  int measure_steps = 5;          ///< steps averaged
  uint64_t seed = 1;              ///< every random choice derives from it
  bool record_trace = false;      ///< fill Result::trace (fine predictor only)
  /// Coarse parallel layouts: the bytes on each link, their loads and bytes_sent; false leaves them
  /// out (0 and none) for a search that ranks layouts by their step alone (stepcast plan).
  bool link_loads = true;
  bool overlap_heuristic = true;  ///< coarse: hide communication behind backward (DESIGN 3.2)
  /// coarse PS in random order (async, or sync with more than one worker): the next step's pulls
  /// overlap this step's pushes (docs/models.md, "Coarse"); false: the two phases one after the other,
  /// as DESIGN 3.2 writes them.
  bool ps_duplex_heuristic = true;
  /// coarse PS (sync steps and async cycles, every order): pulls in need order overlap the
  /// forward pass, pushes the backward pass, and the step takes the shorter of that and the
  /// phase model (docs/models.md, "Coarse"); false: compute and the phases one after the other.
  bool ps_compute_overlap_heuristic = true;
  /// Stragglers: coefficient of variation of a worker's compute time per step (seeded lognormal,
  /// mean 1, independent per worker and step); 0 = identical workers. Fine: simulated; coarse:
  /// a synchronous step waits for the expected slowest of N; analytic: ignored (a bound).
  double compute_cv = 0;
  /// `workload.compute_cv: auto`: take compute_cv from the workload's per-step samples
  /// (workload::step_variation); predict() throws when it has fewer than two.
  bool compute_cv_auto = false;
  /// Fine: take the simulator's exact fast paths where they apply (simulation.fast_paths);
  /// false forces the full event-by-event engine.
  bool fast_paths = true;
  JobOptions job{};
  CostOptions cost{};
  /// With record_trace: the workers and steps the trace keeps (predict --trace-workers, --trace-steps).
  sim::TraceSelection trace_selection{};
  /// The busiest links Result::links keeps (fine); 0 keeps every link that carried bytes
  /// (predict --all-links). Result::links_left_out counts the others.
  std::size_t links_kept = 10;
  bool operator==(const Options&) const = default;
};

/// Where a worker's step time goes (seconds, mean over workers and measured steps); the three
/// parts add up to the step time.
struct Breakdown {
  double compute = 0;                ///< ops running
  double communication_exposed = 0;  ///< waiting for a transfer or collective, nothing running
  double wait = 0;                   ///< waiting for other workers or a server (barrier, apply)
  /// A parallel layout (training.parallel.*): communication_exposed split by the dimension whose
  /// transfers the workers waited for: tensor-parallel collectives, ring attention's steps,
  /// pipeline messages, the data-parallel gradient reduction (the experts' too), the expert
  /// all-to-alls. All 0 otherwise.
  double tensor = 0;
  double context = 0;
  double pipeline = 0;
  double data = 0;
  double expert = 0;
  bool operator==(const Breakdown&) const = default;
};

/// Busy fraction of one resource (or group of like resources) over the measured window.
struct Utilization {
  std::string resource;  ///< e.g. "ps NIC out (max over shards)", "worker compute"
  double busy = 0;       ///< 0..1
  bool operator==(const Utilization&) const = default;
};

/// Predicted step time over the measured steps of a workload with per-step samples
/// (workload::Op::samples): every sample step predicted on its own (workload::with_sample), all
/// workers running that step, so the spread is that of the measured steps carried to the
/// predicted configuration (not a straggler model). Quantiles interpolate linearly between
/// order statistics (numpy's default, as `stepcast inspect` computes the measured ones).
struct StepSpread {
  std::size_t samples = 0;         ///< sample steps predicted; 0 when the workload has none
  double mean = 0;                 ///< s
  double p50 = 0;                  ///< s
  double p95 = 0;                  ///< s
  double min = 0;                  ///< s
  double max = 0;                  ///< s
  std::vector<double> step_times;  ///< s, per sample step, in step order
  bool operator==(const StepSpread&) const = default;
};

/// Asynchronous parameter server (fine predictor): how stale gradients are when they reach their
/// shard. A push's staleness is the number of updates the shard applied to its piece (a tensor,
/// or its slice on that shard) between the worker's pull of that piece (its request at the start
/// of the step, when the shard reads it) and the push's arrival: other workers' gradients applied
/// to parameters this gradient was not computed from. A piece pulled at the start of a step and
/// pushed at its end sees every other worker's update once, N - 1; one pushed earlier in the
/// backward pass sees fewer, about (N - 1) x (time from pull to push / step time). Over the
/// pushes of every worker's measured steps; p95 interpolates linearly between order statistics,
/// as StepSpread does. pushes == 0: not measured (sync training, where it is 0 by the barrier,
/// and the coarse and analytic predictors).
struct Staleness {
  uint64_t pushes = 0;  ///< gradient pushes counted
  double mean = 0;      ///< updates
  double p95 = 0;       ///< updates
  double max = 0;       ///< updates
  bool operator==(const Staleness&) const = default;
};

/// Asynchronous parameter server (coarse predictor): the step with the workers out of step (the
/// prediction, Result::step_time) and in a convoy, all pulling and then all pushing, which is the
/// synchronous step under the step barrier (each worker's pushes complete once applied, and the
/// shard's lane applies every worker's copies as they come in, so its pulls follow nearly every
/// apply). Under fair sharing the workers keep their phases, so where between the two a job runs
/// depends on where its workers start (training.ps.async_start) and drift; fine's step lies
/// within 10% of the range on every asynchronous point of tools/coarse_vs_fine.py's seeds 7-12 at
/// five starts but one, where coarse's own cycle is 12% slow (docs/validation.md). All 0: not
/// predicted (sync training, or the fine and analytic predictors).
struct AsyncPhases {
  double out_of_step = 0;  ///< s a step
  double convoy = 0;       ///< s a step, at least out_of_step
  bool operator==(const AsyncPhases&) const = default;
};

/// The whole job (Options::job): start-up, then steps of Result::step_time. samples == 0: off.
struct Job {
  double samples = 0;       ///< samples asked for
  double steps = 0;         ///< steps per worker: ceil(samples / (workers x batch))
  double startup_time = 0;  ///< s
  double time = 0;          ///< s, start-up + steps x step time
  double throughput = 0;    ///< samples/s over the whole job, start-up included
  double epochs = 0;        ///< as given (JobOptions::epochs); 0: not given
  double epoch_time = 0;    ///< s of steps per epoch (start-up excluded); 0 without epochs
  double tokens = 0;        ///< tokens asked for (JobOptions::tokens); 0: the job was given in samples
  bool operator==(const Job&) const = default;
};

/// What the prediction costs (Options::cost): GPUs x money per GPU-hour x time. gpu_hour == 0: off.
/// Units: the scenario's currency (`currency`, "" when unnamed).
struct Cost {
  double gpu_hour = 0;  ///< money per GPU per hour, as given
  std::string currency;
  double per_step = 0;  ///< workers x gpu_hour x step_time / 3600
  /// per_step x 1e6 / the tokens of one step (workers x batch x tokens per sample); 0 for
  /// workloads without tokens
  double per_million_tokens = 0;
  double job = 0;  ///< workers x gpu_hour x Job::time / 3600 (start-up included); 0 without a job
  bool operator==(const Cost&) const = default;
};

/// What the step waits on, for programs (Result::bottleneck says it in words).
enum class BottleneckKind : uint8_t {
  Compute,           ///< the workers' ops
  Host,              ///< the host side of a profiled step (data loading, Python, launches)
  NetworkBandwidth,  ///< a link or NIC moving bytes (or a chain of transfers serialised on one)
  NetworkLatency,    ///< per-transfer and per-step latencies, no link busy enough to explain it
  PsNic,             ///< a parameter server's NIC
  PsApply,           ///< a parameter server applying gradients
  PsMessages,        ///< a parameter server's CPU handling messages (training.ps.message_overhead)
  Stragglers,        ///< waiting for the slowest worker of a step
  Memory,            ///< the job does not fit in GPU memory (the step time is still predicted)
  Incast,            ///< TCP senders waiting out RTO_min at an overflowing switch port (cluster.transport)
  PipelineBubble,    ///< stages idle in the pipeline schedule's fill and drain (a parallel layout)
};
constexpr std::string_view name_of(BottleneckKind v) {
  switch (v) {
    case BottleneckKind::Compute:
      return "compute";
    case BottleneckKind::Host:
      return "host";
    case BottleneckKind::NetworkBandwidth:
      return "network_bandwidth";
    case BottleneckKind::NetworkLatency:
      return "network_latency";
    case BottleneckKind::PsNic:
      return "ps_nic";
    case BottleneckKind::PsApply:
      return "ps_apply";
    case BottleneckKind::PsMessages:
      return "ps_messages";
    case BottleneckKind::Stragglers:
      return "stragglers";
    case BottleneckKind::Memory:
      return "memory";
    case BottleneckKind::Incast:
      return "tcp_incast";
    case BottleneckKind::PipelineBubble:
      return "pipeline_bubble";
  }
  return {};
}
[[nodiscard]] const char* to_string(BottleneckKind kind);

/// What one GPU holds (predict/memory.hpp) against what it has. A valid job that does not fit
/// is a result, not an error. Allocated: the tensors at the peak (per_worker, what PyTorch's
/// max_memory_allocated reports). Reserved: what the GPU gives the job, the caching allocator's
/// pool around them plus what lives outside it (CUDA context, NCCL buffers), added once per GPU:
///   reserved = allocated / (1 - allocator_overhead) + outside_allocator.
/// fits() compares the reserved bytes with the GPU's memory.
struct MemoryCheck {
  bool known = false;                 ///< false: the workload has no parameter count
  Memory per_worker;                  ///< bytes
  bool activations_modelled = false;  ///< false: per_worker.activations is 0 because unknown
  double gpu_memory = 0;              ///< bytes per GPU (cluster.gpu_memory); 0 = unknown
  double outside_allocator = 0;       ///< bytes per GPU outside the allocator (cluster.gpu.memory_reserved)
  double allocator_overhead = 0;      ///< share of the allocator's pool with no tensor, in [0, 1)
  [[nodiscard]] double allocated() const { return per_worker.total(); }
  [[nodiscard]] double reserved() const { return allocated() / (1 - allocator_overhead) + outside_allocator; }
  [[nodiscard]] bool fits() const { return !(gpu_memory > 0) || reserved() <= gpu_memory; }
  bool operator==(const MemoryCheck&) const = default;
};

/// Language models (Workload::facts.tokens_per_sample > 0): tokens, and model FLOPs against the
/// GPU's peak. Model FLOPs leave recomputation out (MFU, as PaLM defines it).
struct TokenRates {
  double tokens_per_s = 0;  ///< all workers
  double tokens_per_s_per_worker = 0;
  double model_flops_per_s_per_worker = 0;  ///< training FLOPs with attention, per GPU
  double mfu = -1;                          ///< model FLOP/s / cluster.gpu.peak_flops; < 0: unknown
  double mfu_6nd = -1;                      ///< same with 6 N FLOPs per token; < 0: unknown
  bool operator==(const TokenRates&) const = default;
};

/// The synthetic execution trace (sim/trace.hpp), re-exported for report/.
using TraceSpan = sim::TraceSpan;
using Trace = sim::Trace;

/// One all-reduce bucket and how its collective ran: what `auto` chose for its size.
struct BucketCollective {
  double bytes = 0;
  std::string algorithm;  ///< "ring", "tree", ...
  std::string protocol;   ///< "links" (the links' costs), "LL", "LL128" or "Simple" (NCCL's model)
  bool operator==(const BucketCollective&) const = default;
};

struct Result {
  int workers = 0;
  Predictor predictor = Predictor::Fine;
  /// s, mean time between a worker's consecutive steps. For a workload with per-step samples:
  /// the mean over its sample steps, each predicted on its own (step_samples.mean), and every
  /// other field describes the run of those steps (see predict.hpp).
  double step_time = 0;
  double throughput = 0;   ///< samples/s summed over workers
  double speedup = 0;      ///< throughput / single-worker throughput with no communication
  double efficiency = 0;   ///< speedup / workers
  std::string bottleneck;  ///< in words, e.g. "PS NIC out 97% busy"
  BottleneckKind bottleneck_kind = BottleneckKind::Compute;
  /// The resource named: a utilization's name ("worker NIC out", "PS apply"), "worker NIC" for
  /// a pull-then-push chain on it, "gpu memory", or "" for latency and waiting.
  std::string bottleneck_resource;
  Breakdown breakdown;
  /// s per step of one worker's optimizer step (scheme/costs.hpp: optimizer_step_time), part of
  /// breakdown.compute; 0 when it is free (cluster.gpu_memory_bw unknown) or in the ops.
  double optimizer_step_time = 0;
  std::vector<Utilization> utilization;
  double bytes_sent = 0;  ///< over the network during the measured steps
  double bytes_received = 0;
  uint64_t events = 0;  ///< discrete events processed (fine predictor)
  /// Fine: "fast" when an exact fast path computed it, "full" for the event-by-event engine;
  /// empty for coarse and analytic.
  std::string engine;
  uint32_t max_link_flows = 0;  ///< most flows sharing one link direction at once (fine)
  /// The busiest link directions (fine), busiest first, Options::links_kept of them; bytes over
  /// the measured steps, as bytes_sent.
  std::vector<sim::LinkLoad> links;
  std::size_t links_left_out = 0;  ///< links that carried bytes but are not in `links`
  /// Every link that carried bytes, by class (worker NIC, intra-node link, leaf->spine link, ...),
  /// busiest class first, bytes over the measured steps; fine, and coarse and analytic where
  /// they put the step's bytes on the links (all-reduce, FSDP, composed layouts).
  std::vector<sim::LinkClassLoad> link_classes;
  StepSpread step_samples;         ///< per-step spread; samples == 0 without per-step samples
  /// Analytic, parameter server: the worker count N* beyond which the busiest shard saturates
  /// (worker step time / server time per worker step); 0 when it does not apply.
  double saturation_workers = 0;
  /// The stragglers' variation the prediction used: Options::compute_cv, or with
  /// Options::compute_cv_auto the value taken from the workload's per-step samples.
  double compute_cv = 0;
  Job job{};
  Cost cost{};
  /// From a profile: "replay" (the trace's measured collectives, at its own worker count) or
  /// "extrapolated" (simulated collectives); "" for other workloads.
  std::string mode{};
  /// From a profile: the share of one worker's step its GPUs are busy (busy_alone("gpu") /
  /// step_time_alone()); < 0 for workloads without host lanes.
  double gpu_busy_fraction = -1;
  MemoryCheck memory{};
  TokenRates tokens{};  ///< all zero (mfu -1) for workloads without tokens
  /// All-reduce with algorithm or protocol auto, or an NCCL protocol: each bucket's collective, in
  /// bucket order; empty otherwise (every bucket runs training.allreduce.algorithm on the links).
  std::vector<BucketCollective> collectives{};
  Staleness staleness{};  ///< async parameter server, fine predictor; pushes == 0 otherwise
  /// A parallel layout: "tp4 cp1 pp8 vp12 dp336" (scheme::RankLayout::describe); "" for data
  /// parallelism alone.
  std::string layout{};
  /// A parallel layout: the share of the step the ranks wait for another pipeline stage's
  /// activations or gradients (the pipeline bubble; mean over ranks; part of breakdown.wait).
  /// 0 otherwise.
  double bubble_fraction = 0;
  AsyncPhases async_phases{};  ///< async parameter server, coarse predictor; all 0 otherwise
  Trace trace;
  bool operator==(const Result&) const = default;
};

}  // namespace stepcast::predict
