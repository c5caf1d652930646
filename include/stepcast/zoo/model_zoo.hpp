// The built-in model zoo: architectures defined in code as layer shapes, from which parameter
// counts and forward FLOPs follow. Parameter counts equal the canonical implementations
// exactly (torchvision for CNNs, Hugging Face BertModel for BERT, GPT2LMHeadModel,
// LlamaForCausalLM, MixtralForCausalLM and Qwen3MoeForCausalLM for the decoders). Turns a
// model plus one measured number (single-worker step time) into a Workload by splitting the
// time across layers in proportion to their FLOPs.
//
//   const zoo::ModelSpec& m = zoo::get_model("resnet50");   // m.num_parameters() == 25557032
//   workload::Workload w = zoo::to_workload(m, {.batch_per_worker = 64, .step_time = 0.292});
//
// Decoder-only transformers can also be built from their shape (make_transformer); their
// "sample" is one sequence of seq_len tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stepcast/workload/transformer_shape.hpp"
#include "stepcast/workload/workload.hpp"

namespace stepcast::zoo {

/// One trainable tensor of a layer (weight, bias, batch-norm scale...).
struct ParamTensor {
  std::string name;  ///< e.g. "layer1.0.conv1.weight" (torchvision naming where possible)
  int64_t elements = 0;
  bool operator==(const ParamTensor&) const = default;
};

/// A unit of computation with its parameters. Layers without parameters (pooling, activation)
/// may appear with an empty `params` when they carry FLOPs worth simulating.
struct Layer {
  std::string name;
  std::vector<ParamTensor> params;
  double forward_flops = 0;  ///< per sample, a multiply-add counted as 2 FLOPs
  bool operator==(const Layer&) const = default;
};

// The decoder shape and its enums live with the Workload IR (workload/transformer_shape.hpp), so
// that a workload can carry its shape to the stage programs; the zoo names them as before.
using workload::PositionEncoding;
using workload::TransformerLayout;
using workload::TransformerNorm;
using workload::TransformerShape;

struct ModelSpec {
  std::string name;           ///< zoo key, e.g. "resnet50"
  std::string description;    ///< one line: source of the architecture, input shape
  std::vector<Layer> layers;  ///< forward order
  /// Set for decoder-only transformers (make_transformer), so that what follows from the shape
  /// (tokens per sample, active parameters of a mixture of experts) stays known.
  std::optional<TransformerShape> transformer = std::nullopt;

  [[nodiscard]] int64_t num_parameters() const;
  [[nodiscard]] double forward_flops() const;  ///< per sample
  [[nodiscard]] size_t num_tensors() const;
  bool operator==(const ModelSpec&) const = default;
};

/// A decoder-only transformer of the given shape, named like Hugging Face's implementation of
/// its layout: a Layer "embeddings" (token, and learned position, embeddings), per block a Layer
/// "<block>.attention" (input norm, Q/K/V/output projections, scores and context) and a Layer
/// "<block>.mlp" or "<block>.moe" (post-attention norm, MLP or router + experts; a block of a
/// mixture of experts that is not a MoE block, by dense_layers_first or moe_layers, is
/// "<block>.mlp"; multi-head latent attention's projections are DeepseekV3Attention's q_a_proj,
/// q_a_layernorm, q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj), then "head" (final
/// norm and LM head). Autograd finishes each block's gradients in those two pieces. Routed
/// experts are "<block>.block_sparse_moe.experts.<k>.w1/w3/w2" as Mixtral's, shared experts
/// "<block>.block_sparse_moe.shared_experts.<k>.w1/w3/w2" (not matching ".experts.", by which
/// expert parallelism finds the routed ones).
///
/// Forward FLOPs per sample (one sequence of seq_len tokens) use the Megatron-LM accounting
/// (Narayanan et al. 2021): 2 x in x out per token for every linear (K and V shrink to kv_heads
/// x head_dim under GQA; for MoE the router, only top_k routed experts and every shared expert),
/// 2 x 2 x seq^2 x heads x head_dim (hidden unless head_dim is set) per block for the attention
/// scores and context (not reduced by GQA or the causal mask), and 2 x hidden x vocab per token
/// for the logits. Norms, softmax, activations, bias additions and embedding lookups are left
/// out, as Megatron does (under 1% of the total for these models).
///
/// Throws Error for a shape that cannot be built, with key "workload.transformer.<field>"
/// (e.g. "workload.transformer.kv_heads" when kv_heads does not divide heads), or
/// "workload.seq_len" for the sequence length.
[[nodiscard]] ModelSpec make_transformer(std::string name, std::string description,
                                         const TransformerShape& shape);

/// The most decoder blocks x experts per MLP a shape may have (Mixtral: 32 x 8; the largest
/// released MoE models about 60 x 256); each is built as layers and tensors of its own.
inline constexpr int64_t kMaxBlockExperts = int64_t{1} << 16;

/// The checks of make_transformer alone, without building the model: throws the same Errors.
void validate(const TransformerShape& shape);

/// Parameters one token's forward pass multiplies with: every parameter except those only
/// looked up (the untied token embedding, a learned position table), and of each MoE layer's
/// routed experts only top_k (balanced routing; shared experts and dense blocks whole). A tied
/// embedding counts once: the logits use it.
/// Throws Error (key "workload.model") for a model that is not a transformer decoder.
[[nodiscard]] int64_t active_parameters(const ModelSpec& model);

/// The "6N" training FLOPs per token that MFU is often quoted with: 6 x active_parameters().
/// Embedding lookups are excluded because a lookup does no arithmetic, while the LM head counts
/// (tied or not) because the logits are a real hidden x vocab product. This is nanoGPT's N in
/// its estimate_mfu (all parameters less the position table, the tied wte counted once) and
/// Kaplan et al.'s non-embedding N plus the head. Norm scales and biases count (under 0.1% of
/// N for GPT-2). The attention scores and context are not in it; see training_flops_per_token.
/// Throws Error (key "workload.model") for a model that is not a transformer decoder.
[[nodiscard]] double flops_per_token_6n(const ModelSpec& model);

/// Training FLOPs per token with attention: 3 x forward FLOPs per token (a backward costs twice
/// its forward), the Megatron-LM formula; for a GPT-style block with a 4 x hidden MLP it equals
/// 72 B s l h^2 (1 + s / 6h + V / 12lh) / (B s). Recomputation (activation checkpointing) is not
/// included. Throws Error (key "workload.model") for a model that is not a transformer decoder.
[[nodiscard]] double training_flops_per_token(const ModelSpec& model);

/// All models, in a stable order.
[[nodiscard]] const std::vector<ModelSpec>& all_models();
/// nullptr when unknown.
[[nodiscard]] const ModelSpec* find_model(std::string_view name);
/// The model named `name`; throws Error (key "workload.model", listing the known names) when
/// unknown. The reference stays valid for the life of the program.
[[nodiscard]] const ModelSpec& get_model(std::string_view name);

struct WorkloadParams {
  int batch_per_worker = 1;
  double step_time = 0;  ///< measured seconds per step on one worker (> 0)
  workload::Precision precision = workload::Precision::FP32;
  double backward_to_forward = 2.0;  ///< backward time / forward time of each layer
  /// Decoders: recomputation in the backward pass. full: each block's backward also runs its
  /// forward again; selective: the attention layer's backward also recomputes its scores and
  /// context (4 seq^2 hidden FLOPs per sequence). The measured step time includes it.
  workload::ActivationCheckpointing checkpointing = workload::ActivationCheckpointing::None;
};

/// FLOPs of one sample's forward and backward: every layer's forward x (1 + backward_to_forward)
/// plus what `checkpointing` recomputes. What a measured step time is split by, and what a rate
/// (workload.achieved_flops) turns into a step time.
[[nodiscard]] double step_flops_per_sample(const ModelSpec& model, double backward_to_forward,
                                           workload::ActivationCheckpointing checkpointing);

/// Forward FLOPs recomputed in the backward pass of each layer of `model` (per sample) under
/// `checkpointing`: zero for models that are not decoders and for none.
[[nodiscard]] std::vector<double> recompute_flops(const ModelSpec& model,
                                                  workload::ActivationCheckpointing checkpointing);

/// One forward op per layer (layer order) then one backward op per layer (reverse order), on
/// one lane, durations proportional to FLOPs and summing to `step_time`: a layer's backward costs
/// backward_to_forward times its forward plus what it recomputes (recompute_flops). Every
/// ParamTensor becomes a Tensor consumed by its layer's forward op and produced by its backward
/// op. Decoders also get their ModelFacts (parameters, tokens and training FLOPs per sample;
/// activation bytes are left to the caller) and blocks (each decoder block's attention and MLP
/// layers; embeddings and head alone).
/// Throws Error with key "workload.step_time", "workload.batch_per_worker" or
/// "workload.backward_ratio" for a bad parameter, "workload.model" for a model without FLOPs.
[[nodiscard]] workload::Workload to_workload(const ModelSpec& model, const WorkloadParams& params);

}  // namespace stepcast::zoo
