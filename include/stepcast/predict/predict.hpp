// The predictors: fine-grained discrete-event simulation, coarse-grained phases with
// heuristics. Same inputs, same Result; none opens a file.
//
// A workload with per-step samples (workload::Op::samples, from a profiler trace) is predicted
// once per sample step (workload::with_sample): k samples cost k predictions. The Result is that
// of running those steps one after another: step time, breakdown and bytes are means over the
// steps, utilization and link busy fractions weighted by step time, throughput the rate of the
// whole run, Result::step_samples the spread of the predicted step times, and the trace that of
// the representative step. Strip the samples to predict the representative step alone.
//
//   predict::Result r = predict::predict(w, spec, scheme, {.predictor = Predictor::Coarse});
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/predict/result.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::scheme {
struct ModelLayers;
}  // namespace stepcast::scheme

namespace stepcast::predict {

/// Receives the warnings a prediction raises while it runs (today: a fine prediction projected to
/// take more than a minute, raised a couple of seconds into it). Never changes the Result.
using WarningSink = std::function<void(const std::string&)>;

/// Dispatches on options.predictor. Borrows its inputs; deterministic for a given seed. Calls
/// validate() first, so bad inputs throw Error instead of reaching the predictors' assertions.
[[nodiscard]] Result predict(const workload::Workload& workload, const cluster::ClusterSpec& cluster,
                             const scheme::SchemeConfig& scheme, const Options& options,
                             const WarningSink& warn = {});

/// scheme::validate(workload, cluster, scheme) plus the options' ranges (steps.warmup,
/// steps.measure, workload.compute_cv, job.*). Throws Error({"", 0, key}, why).
void validate(const workload::Workload& workload, const cluster::ClusterSpec& cluster,
              const scheme::SchemeConfig& scheme, const Options& options);

[[nodiscard]] Result predict_fine(const workload::Workload& workload, const cluster::ClusterSpec& cluster,
                                  const scheme::SchemeConfig& scheme, const Options& options,
                                  const WarningSink& warn = {});
/// DESIGN.md 3.3, CNTK-style: every resource busy in parallel (perfect overlap), so the step is
/// the slowest of compute, the worker's NIC, the collective, and N times the busiest parameter
/// server's time per worker step (its NIC per direction, or its apply lane); an upper bound on
/// throughput, and the saturation point N* of a parameter server.
[[nodiscard]] Result predict_analytic(const workload::Workload& workload, const cluster::ClusterSpec& cluster,
                                      const scheme::SchemeConfig& scheme, const Options& options);
/// Fills result.job from options.job (start-up I/O, steps of the scheme's batch, job time; the
/// samples are options.job.tokens / the workload's tokens per sample when tokens are given);
/// leaves it empty without samples or tokens. predict() calls it for every predictor.
void account_job(Result& result, const workload::Workload& workload, const scheme::SchemeConfig& scheme,
                 const Options& options);
/// Fills result.cost from options.cost and result.step_time, .tokens and .job (call it after
/// account_job and account_model); leaves it empty when options.cost.gpu_hour is 0.
void account_cost(Result& result, const Options& options);
/// What the memory check reads of a workload that no parallel layout changes: the bytes of its
/// FSDP units at `unit_blocks` (scheme::fsdp_units), found on first use (thread-safe; a workload
/// FSDP cannot wrap throws then, as fsdp_units does). A search checking many layouts of one
/// workload builds one (stepcast plan); account_model builds its own when given none. Refers to
/// `workload`, which must outlive it.
class WorkloadMemory {
 public:
  WorkloadMemory(const workload::Workload& workload, int unit_blocks);
  [[nodiscard]] int unit_blocks() const { return unit_blocks_; }
  /// Bytes one rank of `parallel` holds of the largest unit (scheme::unit_bytes_on_rank).
  [[nodiscard]] double largest_unit_on_rank(const scheme::ParallelConfig& parallel) const;
  /// The decoder's layers as the memory check of a layout reads them (found at the first call).
  [[nodiscard]] const scheme::ModelLayers& layers() const;

 private:
  struct Units;
  const workload::Workload* workload_;
  int unit_blocks_;
  std::shared_ptr<Units> units_;
};

/// Fills result.memory and result.tokens from the workload's ModelFacts, the cluster's GPU
/// (memory, peak FLOP/s) and the scheme's sharding; every predictor's Result gets them. `memory`
/// (optional) is `workload`'s, read where its unit_blocks are the scheme's.
void account_model(Result& result, const workload::Workload& workload, const cluster::ClusterSpec& cluster,
                   const scheme::SchemeConfig& scheme, const WorkloadMemory* memory = nullptr);
/// Fills result.tokens (tokens/s, model FLOP/s, MFU) from result.throughput and the workload's
/// ModelFacts; account_model calls it.
void account_tokens(Result& result, const workload::Workload& workload, const cluster::ClusterSpec& cluster);
[[nodiscard]] Result predict_coarse(const workload::Workload& workload, const cluster::ClusterSpec& cluster,
                                    const scheme::SchemeConfig& scheme, const Options& options);

/// Stragglers (Options::compute_cv): the expected largest of n lognormal factors with mean 1 and
/// coefficient of variation cv, by which a synchronous step waits for its slowest worker; 1 for
/// n = 1 or cv = 0.
[[nodiscard]] double expected_slowest_factor(int n, double cv);

/// DESIGN.md 3.2 closed form: ring all-reduce of `bytes` over n workers on links of `bw`
/// bytes/s and per-step latency `latency` s: 2(n-1)(latency + bytes/(n bw)); 0 for n = 1.
[[nodiscard]] double ring_allreduce_time(double bytes, int n, double bw, double latency);

}  // namespace stepcast::predict
