// What the coarse and analytic predictors take from a composed layout (tensor, context, pipeline
// parallelism, micro-batches): each stage's program (the fine engine's, scheme/stage_programs)
// reduced to closed forms. Per stage and micro-batch, the compute of its forward, backward and
// weight-gradient passes with the tensor-parallel collectives on their critical path (each at its
// plan's closed form alone, collective_cost; with training.tensor.overlap, a layer takes the
// longer of its compute and its collectives) and ring attention's steps beside the core chunks
// they feed; one pipeline message alone; the gradient reduction's collectives alone; the
// optimizer step; and the bytes every link carries in a step.
//
//   const ComposedCosts costs = composed_costs(workload, cluster_spec, scheme);
//   double slowest = 0;
//   for (const StageCost& s : costs.stages) slowest = std::max(slowest, s.forward + s.backward);
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/error.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::scheme {

struct StageCost {
  /// s per micro-batch: each pass's compute with the collectives it waits for (a recomputed
  /// forward is in the backward; weight is ZB-H1's W, 0 otherwise).
  double forward = 0, backward = 0, weight = 0;
  double compute = 0;          ///< s per micro-batch: the passes' compute alone
  double tensor_exposed = 0;   ///< s per micro-batch: tensor-parallel collectives not hidden
  double context_exposed = 0;  ///< s per micro-batch: ring-attention steps not hidden
  /// s per micro-batch: expert all-to-alls (on the path between the router and the experts)
  double expert_exposed = 0;
  /// s per micro-batch: what sharded data parallelism's collectives add to the passes (each
  /// unit's compute after its gather; composed_costs.cpp's run_pass)
  double data_exposed = 0;
  /// s per micro-batch: sharded data parallelism's collectives back to back (FSDP's two streams
  /// share the data group's links; hybrid sharding's all-reduces over the replicas run on others:
  /// the longer of the two): in a steady pipeline a micro-batch takes no less.
  double data_per_micro_batch = 0;
  double message_next = 0;   ///< s: a forward pass's activation to the next stage alone
  double message_previous = 0;     ///< s: a backward pass's gradient to the previous stage alone
  std::vector<double> reductions;  ///< s: each gradient reduction alone, in issue order
  /// Each reduction's stream: 0 over the data-parallel group, 1 over the expert-data group (its
  /// own exchange, which runs beside the other).
  std::vector<int> reduction_streams;
  /// s: how long before the end of its chunk's (ready_chunk) backward and W passes of the last
  /// micro-batch each reduction's gradients are all produced (0 for those the chunk's last op
  /// produces).
  std::vector<double> ready_before_end;
  std::vector<int> ready_chunk;  ///< the stage's chunk (0 .. v - 1) each reduction waits for
  std::vector<double> gathers;  ///< s: the distributed optimizer's gathers after the step
  double optimizer = 0;         ///< s
};

struct ComposedCosts {
  std::vector<StageCost> stages;  ///< per pipeline stage
  int micro_batches = 1;
  /// The cluster (shared with the thread's cache of it: a search predicts many layouts on one).
  std::shared_ptr<const cluster::Cluster> cluster;
  /// bytes each link of the cluster carries in one step, all ranks (Cluster::links order); empty
  /// when not asked for.
  std::vector<double> link_bytes;
  double bytes_sent = 0;  ///< bytes one step puts on the devices' uplinks (NICs, intra-node links)
};

/// What one rank of a pipeline stage holds, for the memory check (predict/model_metrics.cpp).
struct StageFootprint {
  double parameters = 0;          ///< elements on one rank: its layers' parameters over the tensor group
  /// elements of `parameters` in experts held under expert parallelism (experts / e of each MoE
  /// layer), whose optimizer states shard over the expert-data group; 0 with e = 1
  double expert_parameters = 0;
  std::vector<int> chunk_blocks;  ///< transformer blocks of each of its v model chunks
  /// of chunk_blocks, the mixture-of-experts blocks (DeepSeek's dense first blocks and a
  /// `moe_layers` pattern leave some dense), and the sum over them of the busiest expert GPU's
  /// tokens over the mean (busiest_expert_gpu_by_block), by which their expert activations grow;
  /// with a capacity factor c, c (every expert's buffers padded to its capacity)
  std::vector<int> chunk_moe_blocks;
  std::vector<double> chunk_expert_load;
  double most_expert_load = 1;    ///< the largest of its MoE blocks' loads (1 without any)
  bool embedding = false;         ///< holds the embedding (stage 0's first chunk)
  bool head = false;              ///< holds the head and the loss (the last stage's last chunk)
  /// Its schedule's passes in order as (chunk, +1 forward or -1 backward): a forward keeps its
  /// chunk's activations until the backward of the same micro-batch frees them. Under 1f1b,
  /// interleaved and zero_bubble those of the first min(m, 2p) micro-batches (the peak is in them).
  /// Shared with the thread's cache of them: a plan checks many layouts of one schedule.
  std::shared_ptr<const std::vector<std::pair<int, int>>> activations;
};

/// A workload's units for the pipeline split, in model order: a transformer block's layers, or a
/// layer alone (the embedding, the head). One list: unit u's layers at layers[offsets[u] ..
/// offsets[u + 1]).
struct ModelUnits {
  explicit ModelUnits(const workload::Workload& workload);
  bool decoder = false;  ///< workload.facts.transformer is set
  std::vector<int> layers;
  std::vector<int> offsets{0};
  /// What the layout rules read of the ops (a zoo decoder's: one forward and one backward op per
  /// layer, on lane 0): the first op outside a layer or on another lane (-1: none), and whether
  /// every layer has one op of each pass.
  int foreign_op = -1;
  bool one_pass_each = true;
  [[nodiscard]] int count() const { return static_cast<int>(offsets.size()) - 1; }
};

/// layout_problem (validate.hpp) reading the workload's units found once: a plan asks the rules of
/// many layouts of each workload.
[[nodiscard]] std::optional<Error> layout_problem(const workload::Workload& workload,
                                                  const cluster::ClusterSpec& cluster,
                                                  const SchemeConfig& scheme, const ModelUnits& units);

/// chunk_layers (stage_programs.hpp) as one list: model chunk j's layers at layers[offsets[j] ..
/// offsets[j + 1]). Throws as chunk_layers does.
struct ChunkLayers {
  std::vector<int> layers;
  std::vector<int> offsets{0};
  [[nodiscard]] size_t size() const { return offsets.size() - 1; }
  [[nodiscard]] std::span<const int> operator[](size_t chunk) const {
    return {layers.data() + offsets[chunk], layers.data() + offsets[chunk + 1]};
  }
};
[[nodiscard]] ChunkLayers split_chunks(const ModelUnits& units, const SchemeConfig& scheme);

/// What stage_footprints reads of a workload whatever the layout, found once: its units for the
/// pipeline split (ModelUnits) and each parameter tensor's layer, expert and elements. A plan
/// checks the memory of thousands of layouts of each workload.
struct ModelLayers {
  explicit ModelLayers(const workload::Workload& workload);
  struct TensorFacts {
    int layer = 0;        ///< of its first consumer
    int expert = -1;      ///< expert_of_tensor of its name
    bool whole = false;   ///< whole_on_tensor_ranks of its name
    double elements = 0;  ///< bytes over the workload's element size
  };
  /// Per layer (up to the last holding parameters), the elements of its parameters, of its
  /// experts, and of those held whole on every tensor rank (multi-head latent attention's down
  /// projections), before the tensor split.
  struct LayerParameters {
    std::vector<double> parameters, experts, whole;
  };
  /// On a rank of e expert-parallel ranks (experts / e of each MoE layer's experts; with e = 1
  /// every expert counts as a dense parameter, as e = 1 holds them all).
  [[nodiscard]] LayerParameters layer_parameters(int e) const;
  ModelUnits units;
  std::vector<TensorFacts> tensors;
  int experts = 0;                             ///< per MoE layer
  bool mla = false;                            ///< multi-head latent attention
  LayerParameters without_expert_parallelism;  ///< layer_parameters(1)
};

/// Bytes one rank holds of each activation a block's tensor-parallel collectives move for one
/// micro-batch: b (s / c) h elements at the workload's precision.
[[nodiscard]] double block_activation_message(const workload::Workload& workload, const ParallelConfig& parallel);
/// Bytes of one ring-attention step for one rank: 2 b (s / c) (kv width / t) elements (K and V);
/// with multi-head latent attention b (s / c) (kv_lora_rank + qk_rope_head_dim) elements, the
/// latent and the shared rotary key, whole on every rank of a tensor group.
[[nodiscard]] double ring_kv_message(const workload::Workload& workload, const ParallelConfig& parallel);

/// Assumes validate(workload, cluster, scheme) passed and scheme.parallel.composed(). Under
/// 1f1b, interleaved and zero_bubble the passes of min(m, 2p) micro-batches (what a stage holds
/// peaks within them); every_micro_batch lists all m (for the test that the peaks agree).
/// `layers`: the workload's (optional; found here when null).
[[nodiscard]] std::vector<StageFootprint> stage_footprints(const workload::Workload& workload,
                                                           const SchemeConfig& scheme, int workers,
                                                           bool every_micro_batch = false,
                                                           const ModelLayers* layers = nullptr);

/// Assumes validate(workload, cluster, scheme) passed and scheme.parallel.composed(). Builds the
/// stage programs of one micro-batch (under interleaving in GPipe's order), whose costs are
/// those of all m (every micro-batch's ops are alike), so its time does not grow with m;
/// every_micro_batch builds all m (for the test that the two agree).
/// `links` false leaves link_bytes and bytes_sent out (a search ranking layouts by their step).
[[nodiscard]] ComposedCosts composed_costs(const workload::Workload& workload,
                                           const cluster::ClusterSpec& cluster, const SchemeConfig& scheme,
                                           bool every_micro_batch = false, bool links = true);

/// The expert a parameter tensor belongs to, from the zoo's names ("...experts.<k>..."); -1 for
/// the rest.
[[nodiscard]] int expert_of_tensor(const std::string& name);

/// Whether a parameter tensor is held whole on every rank of a tensor group, which Megatron-LM
/// does with multi-head latent attention's down projections to the query and key-value latents
/// and their norms (TELinear "duplicated": their outputs feed every head), from the zoo's names
/// (q_a_proj, kv_a_proj_with_mqa, q_a_layernorm, kv_a_layernorm). Under sequence parallelism each
/// rank computes them on its own tokens, so their gradients are all-reduced over the tensor group.
[[nodiscard]] bool whole_on_tensor_ranks(const std::string& name);

}  // namespace stepcast::scheme
