// Private: what every predictor does last: speed-up, efficiency and the bottleneck in words, the
// all-reduce buckets' chosen algorithms; and how a workload with per-step samples becomes one
// Result.
#pragma once

#include <functional>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/predict/result.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::predict {

/// Fills speedup, efficiency and bottleneck from throughput, utilization and breakdown, and
/// sorts utilization busiest first.
void finish_result(Result& result, const workload::Workload& workload);

/// Same, with the single-worker-alone step time given (s) instead of taken from a workload.
void finish_result(Result& result, double alone_step_time, int batch_per_worker);

/// What only the whole prediction knows (predict(): stragglers' variation, memory): a wait for
/// other workers with straggler noise becomes "waiting for the slowest worker"; a job that does
/// not fit says so first (kind Memory), the rest of the sentence kept.
/// Also: a profile's mode (replay or extrapolated) and, when its GPUs are idle more than half of
/// one worker's step, "host-bound" (kind Host) instead of compute.
void attribute_after_prediction(Result& result, const workload::Workload& workload);

/// Expert parallelism (training.parallel.expert > 1): adds to the bottleneck sentence the expert
/// all-to-alls' share of the step when noticeable, and the busiest expert GPU's tokens over the
/// mean when routing is skewed (its expert group waits for it).
void attribute_experts(Result& result, const workload::Workload& workload, const scheme::SchemeConfig& scheme);
/// A parallel layout whose exposed communication is mostly one dimension's: the compute-bound
/// sentence's "lost to communication (worker NIC out 77% busy)" names the busiest link, which may
/// carry a dimension whose traffic hides (FSDP's) while another's is exposed on other links (the
/// tensor group's, inside a node). It then names that dimension, its share of the step and the
/// links its groups run on (a node's intra-node links, or the NICs when a group spans nodes).
void attribute_dimensions(Result& result, const cluster::ClusterSpec& cluster,
                          const scheme::SchemeConfig& scheme);
/// Result::collectives: each all-reduce bucket's algorithm and protocol, as the exchange, the fast
/// path and the closed forms choose them (AllReducePlanner), when there is a choice to report.
void account_collectives(Result& result, const workload::Workload& workload,
                         const cluster::ClusterSpec& cluster, const scheme::SchemeConfig& scheme);

/// The closed forms' link loads (coarse, analytic): link l of `cluster` carries link_bytes[l] in
/// a step of r.step_time, appended to r.utilization under the fine predictor's names
/// (scheme::link_loads: the busiest NIC each way, intra-node link, each switch-to-switch class),
/// so that the bottleneck names an oversubscribed uplink rather than the half-idle NICs; and
/// every link by class in r.link_classes, its bytes over `steps` measured steps.
void add_link_loads(Result& result, const cluster::Cluster& cluster, const scheme::SchemeConfig& scheme,
                    const std::vector<double>& link_bytes, int steps);
/// Of add_link_loads, only the switch-to-switch classes (scheme::fabric_loads), for closed forms
/// that have the NICs' loads of their own; nothing for empty link_bytes.
void add_fabric_loads(Result& result, const cluster::Cluster& cluster, const std::vector<double>& link_bytes);

/// Mean, quantiles (linear interpolation, numpy's default), min and max of per-step times.
[[nodiscard]] StepSpread step_spread(std::vector<double> step_times);

/// Mean, p95 (linear interpolation between order statistics, as step_spread) and max of the
/// staleness of pushes counted by value (counts[k] pushes of staleness k); pushes 0 when empty.
[[nodiscard]] Staleness staleness_of(const std::vector<uint64_t>& counts);

/// Predicts one step workload (no samples); record_trace: fill Result::trace.
using PredictStep = std::function<Result(const workload::Workload& step, bool record_trace)>;

/// The prediction of a workload with per-step samples, as a run of its sample steps one after
/// another: each sample step (workload::with_sample) predicted by `predict_step`, then
/// step time, breakdown and bytes averaged, utilization and link busy fractions weighted by step
/// time, throughput the rate of the whole run (harmonic mean), events summed, the trace that
/// of the representative sample (the one equal to the op durations, else sample 0), and
/// step_samples the spread. Speed-up is against one worker alone running the same steps.
[[nodiscard]] Result predict_over_samples(const workload::Workload& workload, bool record_trace,
                                          const PredictStep& predict_step);

}  // namespace stepcast::predict
