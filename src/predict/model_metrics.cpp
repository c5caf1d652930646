// Memory per GPU and token rates for every predictor's Result: what follows from the step time
// and the model, not from how the step was predicted.
#include <algorithm>
#include <mutex>
#include <numeric>
#include <optional>

#include "stepcast/detail/scheme/composed_costs.hpp"
#include "stepcast/detail/scheme/costs.hpp"
#include "stepcast/detail/scheme/fsdp_units.hpp"
#include "stepcast/predict/memory.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scheme/rank_layout.hpp"
#include "stepcast/zoo/activation_memory.hpp"

namespace stepcast::predict {

namespace {

/// A parallel layout's memory per GPU: each stage's model states (its layers over the tensor
/// group; the distributed optimizer's states over the gradient group) and the activations its
/// schedule keeps in flight (each forward's chunk until its backward: 1F1B's stage s holds
/// min(p - s, m) micro-batches, GPipe m, interleaved and ZB-H1 as their orders say), per
/// micro-batch after Korthikanti et al. (zoo/activation_memory.hpp), and on the stage with the
/// head what the loss holds for a moment at the end of a micro-batch's forward and the start of
/// its backward (zoo::loss_memory); the stage that holds most.
/// Returns the optimizer step of the stage with the most parameters, s.
double account_layout_memory(Result& r, const workload::Workload& w, const cluster::ClusterSpec& cluster,
                             const scheme::SchemeConfig& layout_scheme, const WorkloadMemory& units) {
  // Hybrid sharding's shard group in ranks of the data x context group, as the memory functions
  // read training.fsdp.shard_group (their default, a node's workers, counts every rank).
  scheme::SchemeConfig scheme = layout_scheme;
  const int hybrid_shard = scheme::hybrid_shard_ranks(scheme, cluster.workers, cluster.workers_per_node);
  if (hybrid_shard > 0) scheme.fsdp.shard_group = hybrid_shard;
  const scheme::ParallelConfig& par = scheme.parallel;
  const workload::TransformerShape& shape = *w.facts.transformer;
  const double element = workload::bytes_per_element(w.precision);
  const zoo::ElementBytes activation_element = zoo::activation_element_bytes(w.precision);
  const zoo::ActivationSplit split{
      .tensor = par.tensor, .sequence_parallel = par.sequence && par.tensor > 1, .context = par.context};
  // One block of each kind on a rank. A MoE block's expert activations grow linearly with its
  // busiest expert GPU's load (zoo::ActivationSplit::expert_load), so a chunk's MoE blocks hold
  // their count x moe + (the sum of their loads - their count) x per_load.
  const bool has_dense = shape.layers > shape.moe_blocks(), has_moe = shape.moe_blocks() > 0;
  auto kind_bytes = [&](workload::ActivationCheckpointing checkpointing, bool moe_block, double load) {
    zoo::ActivationSplit at = split;
    at.expert_load = load;
    return zoo::block_activation_bytes_of_kind(shape, w.batch_per_worker, checkpointing, activation_element,
                                               w.facts.flash_attention, at, moe_block);
  };
  const workload::ActivationCheckpointing checkpointing = w.facts.checkpointing;
  const double dense = has_dense ? kind_bytes(checkpointing, false, 1) : 0.0;
  const double moe = has_moe ? kind_bytes(checkpointing, true, 1) : 0.0;
  const double per_load = has_moe ? kind_bytes(checkpointing, true, 2) - moe : 0.0;
  const double head =
      zoo::head_activation_bytes(shape, w.batch_per_worker, activation_element, split, w.facts.loss);
  const zoo::LossMemory loss =
      zoo::loss_memory(shape, w.batch_per_worker, activation_element, w.facts.loss, split);
  const bool full_recomputation = checkpointing == workload::ActivationCheckpointing::Full;
  const int gradient_group = scheme::data_parallel_degree(par, cluster.workers) * par.context;
  const int shard_degree = hybrid_shard > 0 ? hybrid_shard : gradient_group;
  // Sharded data parallelism: the unsharded copies of the largest unit (its tensor-parallel shard).
  double buffers = 0;
  if (scheme.scheme == scheme::Scheme::Fsdp) {
    // A unit's bytes on a rank: its dense tensors over t, its experts (experts / e of them) over ETP.
    buffers = gathered_buffer_bytes(units.largest_unit_on_rank(par) / element, w.precision, scheme,
                                    gradient_group, cluster.workers_per_node);
  }
  // The ranks holding the same expert shards: a stage's t c d over e x ETP; with hybrid sharding
  // those of one shard group (t s over e x ETP), the experts replicated over the shard groups.
  const int expert_data = shard_degree * par.tensor / (par.expert * par.expert_tensor_degree());
  double worst = -1, most_parameters = 0;
  std::vector<double> bytes_of_chunk;  // of a stage's chunks, the head's with it
  for (const scheme::StageFootprint& stage :
       scheme::stage_footprints(w, scheme, cluster.workers, false, &units.layers())) {
    // Expert parallelism: the experts' states shard over their expert-data group.
    Memory m = model_state_memory(stage.parameters - stage.expert_parameters, w.precision, scheme,
                                  gradient_group, cluster.workers_per_node);
    if (stage.expert_parameters > 0) {
      // (Hybrid sharding's degree is its shard group: for the experts, their part of it.)
      scheme::SchemeConfig experts_scheme = scheme;
      if (hybrid_shard > 0) experts_scheme.fsdp.shard_group = expert_data;
      const Memory experts = model_state_memory(stage.expert_parameters, w.precision, experts_scheme,
                                                expert_data, cluster.workers_per_node);
      m.parameters += experts.parameters;
      m.gradients += experts.gradients;
      m.optimizer += experts.optimizer;
    }
    const auto chunks = static_cast<int>(stage.chunk_blocks.size());
    auto chunk_bytes = [&](size_t chunk) {
      const int moe_blocks = stage.chunk_moe_blocks[chunk];
      return (stage.chunk_blocks[chunk] - moe_blocks) * dense + moe_blocks * moe +
             (stage.chunk_expert_load[chunk] - moe_blocks) * per_load;
    };
    // Full recomputation: the block being recomputed holds all of its activations for a moment,
    // the largest kind the stage holds.
    double recomputing = 0;
    if (full_recomputation) {
      bool dense_blocks = false, moe_blocks = false;
      for (size_t chunk = 0; chunk < stage.chunk_blocks.size(); ++chunk) {
        dense_blocks = dense_blocks || stage.chunk_blocks[chunk] > stage.chunk_moe_blocks[chunk];
        moe_blocks = moe_blocks || stage.chunk_moe_blocks[chunk] > 0;
      }
      constexpr auto kNone = workload::ActivationCheckpointing::None;
      if (dense_blocks) recomputing = kind_bytes(kNone, false, 1);
      if (moe_blocks) recomputing = std::max(recomputing, kind_bytes(kNone, true, stage.most_expert_load));
    }
    // held: what the micro-batches in flight keep; moments: held plus what the loss holds for a
    // moment after a forward of the head's chunk (held already has it) or before its backward.
    double held = 0, peak = 0, moments = 0;
    bytes_of_chunk.resize(static_cast<size_t>(chunks));
    for (int chunk = 0; chunk < chunks; ++chunk) {
      const bool with_head = stage.head && chunk == chunks - 1;
      bytes_of_chunk[static_cast<size_t>(chunk)] =
          chunk_bytes(static_cast<size_t>(chunk)) + (with_head ? head : 0.0);
    }
    if (stage.head) {
      for (const auto& [chunk, sign] : *stage.activations) {
        const bool with_head = chunk == chunks - 1;
        if (with_head && sign < 0) moments = std::max(moments, held + loss.backward_peak - loss.saved);
        held += sign * bytes_of_chunk[static_cast<size_t>(chunk)];
        if (with_head && sign > 0) moments = std::max(moments, held + loss.forward_peak - loss.saved);
        peak = std::max(peak, held);
      }
    } else {
      // Most stages: a running sum (this walk is most of a plan's memory check).
      for (const auto& [chunk, sign] : *stage.activations) {
        held += sign * bytes_of_chunk[static_cast<size_t>(chunk)];
        peak = std::max(peak, held);
      }
    }
    m.activations = std::max(peak + recomputing, moments);
    m.buffers = buffers;
    // The optimizer updates the rank's share of each (all of them without sharding).
    const double updated = scheme.scheme == scheme::Scheme::Fsdp
                               ? (stage.parameters - stage.expert_parameters) / shard_degree +
                                     stage.expert_parameters / expert_data
                               : stage.parameters;
    most_parameters = std::max(most_parameters, updated);
    if (m.total() > worst) {
      worst = m.total();
      r.memory.per_worker = m;
    }
  }
  r.memory.known = true;
  r.memory.activations_modelled = true;
  if (!(cluster.gpu_memory_bw > 0)) return 0;
  return most_parameters * scheme::optimizer_bytes_per_parameter(scheme.optimizer) / cluster.gpu_memory_bw;
}

}  // namespace

struct WorkloadMemory::Units {
  std::once_flag found, layers_found;
  std::vector<scheme::FsdpUnit> units;
  std::optional<scheme::ModelLayers> layers;
};

WorkloadMemory::WorkloadMemory(const workload::Workload& workload, int unit_blocks)
    : workload_(&workload), unit_blocks_(unit_blocks), units_(std::make_shared<Units>()) {}

const scheme::ModelLayers& WorkloadMemory::layers() const {
  std::call_once(units_->layers_found, [&] { units_->layers.emplace(*workload_); });
  return *units_->layers;
}

double WorkloadMemory::largest_unit_on_rank(const scheme::ParallelConfig& parallel) const {
  std::call_once(units_->found, [&] { units_->units = scheme::fsdp_units(*workload_, unit_blocks_); });
  double largest = 0;
  for (const scheme::FsdpUnit& u : units_->units) {
    const auto [dense, experts] = scheme::unit_bytes_on_rank(*workload_, u, parallel);
    largest = std::max(largest, dense + experts);
  }
  return largest;
}

void account_model(Result& r, const workload::Workload& w, const cluster::ClusterSpec& cluster,
                   const scheme::SchemeConfig& scheme, const WorkloadMemory* memory) {
  std::optional<WorkloadMemory> own;
  if (memory == nullptr || memory->unit_blocks() != scheme.fsdp.unit_blocks) {
    memory = &own.emplace(w, scheme.fsdp.unit_blocks);
  }
  if (scheme.parallel.composed() && w.facts.transformer) {
    r.memory = {};
    r.memory.gpu_memory = cluster.gpu_memory;
    r.memory.outside_allocator = cluster.gpu_memory_reserved;
    r.memory.allocator_overhead = cluster.gpu_allocator_overhead;
    r.optimizer_step_time = account_layout_memory(r, w, cluster, scheme, *memory);
    account_tokens(r, w, cluster);
    return;
  }
  const double element = workload::bytes_per_element(w.precision);
  // A profile knows its gradients' bytes but not the parameter count: the bytes at the
  // workload's precision give it.
  const double parameters = w.facts.parameters > 0 ? w.facts.parameters : w.parameter_bytes() / element;
  r.memory = {};
  r.memory.gpu_memory = cluster.gpu_memory;
  r.memory.outside_allocator = cluster.gpu_memory_reserved;
  r.memory.allocator_overhead = cluster.gpu_allocator_overhead;
  if (parameters > 0) {
    r.memory.known = true;
    r.memory.per_worker =
        model_state_memory(parameters, w.precision, scheme, cluster.workers, cluster.workers_per_node);
    if (w.facts.activation_bytes >= 0) {
      r.memory.per_worker.activations = w.facts.activation_bytes;
      r.memory.activations_modelled = true;
    }
    if (scheme.scheme == scheme::Scheme::Fsdp) {
      // A unit's bytes on a rank of no parallel layout: all of it.
      const double largest = memory->largest_unit_on_rank(scheme::ParallelConfig{});
      r.memory.per_worker.buffers =
          gathered_buffer_bytes(largest / element, w.precision, scheme, cluster.workers, cluster.workers_per_node);
    }
  }
  r.optimizer_step_time = scheme::optimizer_step_time(w, cluster, scheme);
  account_tokens(r, w, cluster);
}

void account_tokens(Result& r, const workload::Workload& w, const cluster::ClusterSpec& cluster) {
  r.tokens = {};
  if (w.facts.tokens_per_sample > 0 && r.step_time > 0) {
    const double samples_per_s = r.throughput;
    r.tokens.tokens_per_s = samples_per_s * w.facts.tokens_per_sample;
    r.tokens.tokens_per_s_per_worker = r.tokens.tokens_per_s / cluster.workers;
    r.tokens.model_flops_per_s_per_worker = samples_per_s * w.facts.flops_per_sample / cluster.workers;
    if (cluster.gpu_peak_flops > 0) {
      r.tokens.mfu = r.tokens.model_flops_per_s_per_worker / cluster.gpu_peak_flops;
      r.tokens.mfu_6nd = samples_per_s * w.facts.flops_per_sample_6n / cluster.workers / cluster.gpu_peak_flops;
    }
  }
}

}  // namespace stepcast::predict
