// Private to scheme/: the stage programs of a composed layout. From one GPU's step of one
// micro-batch (a decoder's Workload: a forward and a backward op per layer, timed at the
// workload's compute rate) and the layout (tensor t, context c, pipeline p with v chunks per
// stage, m micro-batches), each pipeline stage's program: the forward (F), backward (B) and, for
// ZB-H1, weight-gradient (W) passes of its model chunks for every micro-batch, in its schedule's
// order, with
// - compute divided by t and c (a tensor group splits every GEMM and the heads; a context group
//   the tokens), the attention core in c ring steps under context parallelism;
// - per transformer block and pass, the tensor group's collectives: an all-reduce after the
//   attention and after the MLP (Shoeybi et al. 2019), or with sequence parallelism an
//   all-gather before and a reduce-scatter after each (Korthikanti et al. 2022), of the
//   micro-batch's b (s/c) h activations; a block recomputed in full re-runs its forward's;
// - ring attention's K and V passed c - 1 times around the context group (K, V and their
//   gradients in the backward), each step overlapping one chunk of the attention core;
// - the activations sent to the next model chunk after each forward and the gradients to the
//   previous one after each backward (b (s/c) h, divided by t with sequence parallelism), and
//   received before the pass that needs them;
// - after the last micro-batch produced a gradient, its bucket reduced over the stage's gradient
//   group (d x c ranks): all-reduced (training.scheme allreduce), or reduce-scattered and the
//   updated parameters all-gathered after the optimizer step (fsdp, sharding optimizer: Megatron's
//   distributed optimizer); the optimizer step on the compute lane.
// Nothing here is a pipeline formula: bubbles and exposed transfers come out of these
// dependencies when the engine runs them (composed_step.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scheme/exchange.hpp"
#include "stepcast/detail/scheme/composed_costs.hpp"
#include "stepcast/scheme/rank_layout.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::scheme {

/// One pass of one micro-batch through one model chunk of a stage.
struct PipelinePass {
  enum class Kind : uint8_t { Forward, Backward, Weight };
  Kind kind = Kind::Forward;
  int chunk = 0;        ///< the stage's chunk (0 .. v - 1); model chunk chunk x p + stage
  int micro_batch = 0;  ///< 0 .. m - 1
  bool operator==(const PipelinePass&) const = default;
};

/// The order stage `stage` of p runs its passes in, for m micro-batches and v chunks per stage
/// (scheme_config.hpp's PipelineSchedule). Forward and backward passes only: under zero_bubble
/// each backward is the input-gradient pass B, and the program places its W (ZB-H1: micro-batch
/// k's W after the B of micro-batch k + stage).
/// `group`: the interleaved schedule's micro-batch group (interleaved_group), ignored otherwise.
[[nodiscard]] std::vector<PipelinePass> schedule_order(PipelineSchedule schedule, int p, int v, int m, int stage,
                                                       int group);


/// The layers of each model chunk (p x v of them, in model order), from the workload's blocks:
/// the decoder's blocks spread as evenly as possible (or pipeline.layers_per_stage), the
/// embedding with the first chunk and the head with the last (or counted as a block each with
/// account_for_embedding). Throws Error (key training.pipeline.layers_per_stage or
/// training.parallel.pipeline) when the blocks do not make that many chunks.
[[nodiscard]] std::vector<std::vector<int>> chunk_layers(const workload::Workload& workload,
                                                         const SchemeConfig& scheme);

/// Every stage's program (index = pipeline stage). `workload` is one GPU's step of one
/// micro-batch (batch_per_worker sequences) of a decoder (facts.transformer set); `spec` gives the
/// optimizer step's memory bandwidth. Assumes validate(workload, spec, scheme) passed. With
/// `names` false the ops are left unnamed (the same program otherwise), for callers that read
/// only its times and dependencies (composed_costs): naming them is most of the build's time.
[[nodiscard]] std::vector<StageProgram> build_stage_programs(const workload::Workload& workload,
                                                             const cluster::ClusterSpec& spec,
                                                             const SchemeConfig& scheme,
                                                             const RankLayout& layout, bool names = true);

/// The distinct values of busiest_expert_gpu_by_block (costs.hpp), ascending: the plan variants of
/// the expert all-to-alls (a ToExperts or FromExperts CommOp's `tag` indexes them).
[[nodiscard]] std::vector<double> expert_load_variants(const workload::Workload& workload,
                                                       const ParallelConfig& parallel);

}  // namespace stepcast::scheme
