// Plan a training job (`stepcast plan`): for a decoder scenario and one or more GPU counts, every
// parallel layout of the searched keys (tensor, context, pipeline and virtual-stage degrees, the
// data-parallel scheme and FSDP sharding, micro-batch, activation checkpointing, sequence
// parallelism, pipeline schedule; scenario::plan_keys, restricted by plan.fixed and extended by
// plan.vary), each checked by the layout rules validation uses (scheme::layout_problem), then
// against cluster.gpu_memory (memory before time), the fitting ones predicted by coarse and the
// top k re-predicted by fine and ranked by tokens/s per GPU. Deterministic: the same answer for
// any number of threads. Not split over MPI ranks yet (plan() throws under mpirun with > 1 rank).
//
//   sweep::PlanRequest r{.scenario = "examples/llama3-70b-plan.yaml", .gpus = {256, 512}};
//   report::Plan p = sweep::plan(r);
//   report::write_plan_text(std::cout, p);
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "stepcast/predict/predict.hpp"
#include "stepcast/report/plan.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::scheme {
struct ModelUnits;
}

namespace stepcast::sweep {

/// The most combinations plan holds at one GPU count (tens of bytes each): a global batch with
/// many divisors, each a micro-batch, can make more (720,720 sequences on 5,040 GPUs: 157 million).
inline constexpr std::size_t kMaxPlanLayouts = 50'000'000;

/// One combination of the searched values at one GPU count; d = gpus / (t c p).
struct Layout {
  int gpus = 0;
  int micro_batch = 1;
  workload::ActivationCheckpointing checkpointing = workload::ActivationCheckpointing::None;
  int tensor = 1;
  int context = 1;
  int pipeline = 1;
  int virtual_stages = 1;
  scheme::PipelineSchedule schedule = scheme::PipelineSchedule::OneFOneB;
  scheme::Scheme scheme = scheme::Scheme::AllReduce;
  scheme::FsdpSharding sharding = scheme::FsdpSharding::Full;  ///< meaningful with scheme fsdp
  bool sequence = true;                                        ///< meaningful with t > 1
  scheme::TensorOverlap overlap = scheme::TensorOverlap::None;
  bool scatter_gather = false;  ///< training.pipeline.scatter_gather; meaningful with t, p > 1, no sp
  int expert = 1;  ///< the scenario's expert-parallel degree (held, not searched), for the label
  auto operator<=>(const Layout&) const = default;
};

/// The combinations plan considers at `gpus` GPUs, in its order (checkpointing outermost). Per key, unless
/// plan.fixed holds it at the scenario's value: t, c and p each every divisor of gpus (their product need not
/// divide: the rules reject it); v 1, and with p >= 2 every v >= 2 that splits the blocks into p v equal
/// chunks (Megatron-LM's rule for interleaving; the rules alone would allow uneven chunks); the schedule
/// interleaved when v > 1, else 1f1b, gpipe and zero_bubble when p > 1 and 1f1b alone when p = 1 (one stage:
/// the others only hold more activations); scheme allreduce, and fsdp with sharding optimizer, grad_op and
/// full when d c > 1 (with one replica there is nothing to shard); micro-batch every divisor of
/// the replica's batch, global_batch / d (one layout, micro-batch 1, where d is not whole or does
/// not divide the global batch: the rules reject it); checkpointing none, selective, full; sequence
/// parallelism on and off when t > 1 (the scenario's value at t = 1, where it does nothing); tensor overlap
/// none and collective when t > 1; the scatter-gather of pipeline messages the scenario's value, or
/// false and true when plan.vary names it, t > 1, p > 1 and sequence parallelism is off. Throws Error when
/// the scenario is not a decoder or has no workload.global_batch, and (key --gpus) when there are
/// more than `most` combinations.
[[nodiscard]] std::vector<Layout> candidate_layouts(const scenario::Scenario& scenario, int gpus,
                                                    std::size_t most = kMaxPlanLayouts);

/// The scenario with `layout` applied (cluster.workers = gpus, the degrees, scheme, micro-batch
/// and checkpointing, whose compute time is re-derived: scenario::with_micro_batch). Throws what
/// with_micro_batch throws.
[[nodiscard]] scenario::Scenario apply_layout(const scenario::Scenario& scenario, const Layout& layout);

/// The layout's settings on a cluster and scheme already at its micro-batch and checkpointing
/// (cluster.workers = gpus, the degrees, schedule, scheme and sharding, sequence parallelism,
/// overlap and scatter-gather; pipeline.layers_per_stage dropped when p or v differs from the scheme's): what
/// plan() does for every layout before asking the rules.
void apply_layout(cluster::ClusterSpec& cluster, scheme::SchemeConfig& scheme, const Layout& layout);

/// The layout as `--set` settings (the same keys, in the same order, for every layout).
[[nodiscard]] report::Config layout_config(const Layout& layout);
/// "tp4 cp1 pp8 vp12 dp42, fsdp optimizer, mb 1, selective, sp, interleaved".
[[nodiscard]] std::string layout_label(const Layout& layout);

/// What tokens_bound knows of the cluster, and of the settings a search holds.
struct BoundContext {
  /// bytes/s one GPU sends at most: its intra-node link plus the one NIC its traffic to other
  /// nodes leaves by (cluster::Cluster::path); +inf leaves communication out.
  double gpu_send = std::numeric_limits<double>::infinity();
  double node_receive = std::numeric_limits<double>::infinity();  ///< bytes/s: a node's NICs at most
  /// bytes/s: the fastest NIC, which every message between two nodes crosses (its sender's)
  double nic = std::numeric_limits<double>::infinity();
  /// bytes/s: the fastest intra-node link, which alone carries a message inside a node
  double intra_node = std::numeric_limits<double>::infinity();
  /// The rank order puts tensor first and every node holds workers_per_node consecutive ranks: a
  /// tensor group of t dividing workers_per_node sits in one node.
  bool tensor_groups_in_nodes = false;
  int workers_per_node = 1;
  int most_workers_on_a_node = 1;  ///< a group of more ranks spans two nodes or more
  /// The rank order puts tensor, then context, then data first (Megatron's default): a gradient
  /// group is c d ranks t apart; and every node holds workers_per_node consecutive ranks (no
  /// uneven cluster.placement).
  bool gradient_groups_strided = false;
  scheme::FsdpConfig fsdp;  ///< held by the search: resharding, fp8 all-gathers, units
  /// Held by the search: with e > 1 the experts go over their expert-data group, not the
  /// gradient group, so the FSDP terms count the dense parameters alone.
  int expert = 1;
};
[[nodiscard]] BoundContext bound_context(const cluster::ClusterSpec& spec,
                                         const scheme::SchemeConfig& scheme);

/// An upper bound on coarse's tokens/s per GPU for a valid layout whose micro-batch and
/// checkpointing `workload` is, `layout_scheme` the scheme with the layout applied. Coarse's
/// pipeline is at least the schedule's length in stages S_s (each stage's micro-batch over all its
/// chunks: its compute, divided by t c unless timed per rank, plus what its blocks' tensor
/// collectives and exposed ring steps take; or its sharded data parallelism's collectives, if
/// longer): gpipe and 1f1b sum_s S_s + (m - 1) max_s S_s; interleaved m max + (sum - max) / v;
/// zero_bubble at least m mean_s S_s and, on a dense model, the longest over stages b of m S_b -
/// b K_b / 2 + sum_{s < b} (F_s + K_s / 2; F_0 alone) + sum_{s > b} F_s with F_s and K_s a stage's
/// forward and backward compute (coarse's own ZB-H1 length, each linear's W half its backward;
/// coarse can end its busiest stage in less than m S_max; +inf when the workload is timed per
/// rank); plus 2 (p - 1) pipeline messages and, with the distributed optimizer, the first stage's
/// gathers of its updated parameters after the step. The stages are
/// scheme::chunk_layers', so uneven ones (96 blocks on 64 stages) count their busiest. Collectives: the
/// bandwidth-optimal all-reduce of B bytes over n ranks sends 2 (n - 1) / n B from each (Patarasuk and Yuan
/// 2009), an all-gather or a reduce-scatter (n - 1) / n B, each at most at context.gpu_send; a gradient group
/// spread over k nodes with r ranks in each brings (k - 1) / k B into each node for each of the node's
/// groups, at most at node_receive; a context ring across nodes waits each step for a message
/// through one NIC. Without training.tensor.overlap each block's tensor collectives are on the
/// path: 8 (t - 1) / t B a block (the attention's half alone where experts split the MLP), 12
/// with full recomputation. FSDP full and grad_op gather (and reduce-scatter) every stage's
/// parameters each micro-batch. plan() prunes by it (tests: never above coarse).
/// `units`: the workload's (scheme::ModelUnits), found once for many layouts; nullptr finds them.
[[nodiscard]] double tokens_bound(const workload::Workload& workload, const Layout& layout,
                                  const scheme::SchemeConfig& layout_scheme, const BoundContext& context = {},
                                  const scheme::ModelUnits* units = nullptr);

struct PlanRequest {
  std::string scenario;                ///< scenario file (with scenario_text, only its name in messages)
  std::string scenario_text;           ///< YAML text instead of reading `scenario`; "" reads the file
  std::vector<std::string> overrides;  ///< --set KEY=VALUE
  std::vector<int> gpus;               ///< GPU counts, each its own search; empty: cluster.workers
  std::size_t top = 10;                ///< layouts per count re-predicted by fine (>= 1)
  int jobs = 0;                        ///< threads; 0: all cores
  /// Skip the coarse prediction of layouts whose bound on tokens/s per GPU (their compute alone,
  /// and the pipeline's fill and drain under gpipe and 1f1b) is below the k-th best already
  /// predicted: they cannot reach the top k. false predicts every fitting layout (the test that
  /// pruning drops no layout of the top k).
  bool prune = true;
  /// What the top k are ranked by (fine's values), and which count's best is best of all. The k
  /// are coarse's k most tokens/s per GPU whatever the rank: at one GPU count the time and cost of
  /// a job of a given batch rise as tokens/s per GPU falls (same steps, same start-up).
  report::PlanRank rank_by = report::PlanRank::TokensPerGpu;
  predict::WarningSink warn;  ///< each distinct warning of fine's, once, one at a time
  /// Where the search is, for a progress line (unset: not reported): one line at a time, each
  /// replacing the last, e.g. "16384 GPUs: fine on the top 20, 3 done"; never the answer.
  std::function<void(const std::string&)> progress;
};

/// Searches each GPU count (see the header comment). A count where no layout is valid and fits
/// is an answer without rows (with its closest miss). Throws Error: key --top for top 0, --gpus
/// for a count the cluster cannot hold, workload.model, workload.profile or
/// workload.global_batch for a scenario that is not a decoder with a global batch,
/// workload.compute_efficiency when the micro-batch or recomputation is searched and the compute
/// time was measured, "mpirun" under more than one MPI rank, --rank-by for time without a job
/// (workload.tokens or job.samples) or cost without cluster.cost.gpu_hour.
[[nodiscard]] report::Plan plan(const PlanRequest& request);

}  // namespace stepcast::sweep
