// The Workload IR: what one worker does in one training step, independent of how many workers
// there are and of where it came from (zoo model, profiler trace). Owns no behaviour beyond
// queries and the bucketing transform.
//
// An Op runs on a lane (a GPU stream or CPU thread; a lane runs one op at a time, in list
// order) after its explicit deps. A Tensor is a trainable parameter of `bytes` bytes: its
// gradient is produced by the `producer` op (a backward op) and its value is read by the
// `consumers` ops (forward ops), which cannot start before the parameter has arrived when
// parameters live on a server. Units: seconds, bytes.
//
// Per-step samples: a workload measured over several steps (a profiler trace) keeps, besides
// the representative `duration` of every op, the op's duration in each of k steady steps
// (`Op::samples`, all ops the same k, in step order). with_sample(w, k) is step k alone; the
// predictors predict every sample step and report the spread (predict::StepSpread).
//
//   Workload w = zoo::to_workload(zoo::find_model("resnet50"), params);
//   auto buckets = workload::make_buckets(w, 25e6);   // DDP-style, reverse layer order
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stepcast/enum_names.hpp"
#include "stepcast/workload/moe_routing.hpp"
#include "stepcast/workload/transformer_shape.hpp"

namespace stepcast::workload {

enum class OpKind : uint8_t { Forward, Backward, Other };

/// Numeric precision of parameters and gradients. FP8 is Transformer Engine's recipe: the GEMMs
/// in fp8 (cluster.gpu.peak_flops_fp8 or a table's fp8 rows), the weights kept in bf16 with an fp8
/// copy for the GEMMs, and everything stored or sent besides (gradients, activations, tensors on
/// the wire) in bf16.
enum class Precision : uint8_t { FP32, FP16, BF16, FP8 };
constexpr std::string_view name_of(Precision v) {
  switch (v) {
    case Precision::FP32:
      return "fp32";
    case Precision::FP16:
      return "fp16";
    case Precision::BF16:
      return "bf16";
    case Precision::FP8:
      return "fp8";
  }
  return {};
}
[[nodiscard]] double bytes_per_element(Precision precision);

struct Op {
  std::string name;
  OpKind kind = OpKind::Other;
  double duration = 0;    ///< seconds on its lane
  int lane = 0;           ///< index into Workload::lanes
  int layer = -1;         ///< model layer it belongs to, -1 if none
  std::vector<int> deps;  ///< ops (indices) that must finish first, besides lane order
  /// s: the op's duration in each measured steady step, in step order (sample k of every op is
  /// the same step); empty when the source measured one step or none (zoo models, layer tables,
  /// Chakra). `duration` stays the representative value (one of the samples for a Kineto trace).
  std::vector<double> samples{};

  bool operator==(const Op&) const = default;
};

struct Tensor {
  std::string name;
  double bytes = 0;            ///< size of the parameter, and of its gradient
  /// Backward op whose end makes the gradient available; -1: no op produces it (a reader found
  /// no backward op for it), so it is available when the step's compute ends (its last op).
  int producer = -1;
  std::vector<int> consumers;  ///< forward ops that read the parameter

  bool operator==(const Tensor&) const = default;
};

/// Recomputation in the backward pass (activation checkpointing): none; selective (the attention
/// scores and context of each block are recomputed, Korthikanti et al. 2022); full (each
/// block's forward is run again before its backward; only block inputs are stored).
enum class ActivationCheckpointing : uint8_t { None, Selective, Full };
constexpr std::string_view name_of(ActivationCheckpointing v) {
  switch (v) {
    case ActivationCheckpointing::None:
      return "none";
    case ActivationCheckpointing::Selective:
      return "selective";
    case ActivationCheckpointing::Full:
      return "full";
  }
  return {};
}

/// How a language model's loss (cross entropy over the vocabulary) treats the logits, which
/// decides what the head holds at the end of the forward and the start of the backward
/// (zoo::loss_memory; docs/memory.md, "The loss"):
///   Fp32Logits:  PyTorch's cross_entropy on an fp32 copy of the logits (Hugging Face
///                Transformers' ForCausalLMLoss, TorchTitan's cross_entropy_loss);
///   Fp32InPlace: Megatron-LM's vocab-parallel cross entropy, one fp32 copy overwritten in
///                place by the softmax and then by its gradient;
///   Bf16Logits:  PyTorch's cross_entropy on the logits as the head computes them (no upcast);
///   Chunked:     the head and the loss a chunk of tokens at a time (TorchTitan's
///                ChunkedLossWrapper), no vocabulary-wide tensor for all tokens at once.
enum class LossMode : uint8_t { Fp32Logits, Fp32InPlace, Bf16Logits, Chunked };
constexpr std::string_view name_of(LossMode v) {
  switch (v) {
    case LossMode::Fp32Logits:
      return "fp32_logits";
    case LossMode::Fp32InPlace:
      return "fp32_in_place";
    case LossMode::Bf16Logits:
      return "bf16_logits";
    case LossMode::Chunked:
      return "chunked";
  }
  return {};
}
/// Where a mixture of experts' experts sit on the GPUs of an expert group (workload.moe.placement):
/// static, E / e consecutive experts each (Megatron-LM), so the busiest expert's GPU also holds
/// others; balanced, re-placed so that the GPUs carry equal tokens as far as the busiest expert
/// alone allows (the re-placement schemes of the MoE-training papers).
enum class ExpertPlacement : uint8_t { Static, Balanced };
constexpr std::string_view name_of(ExpertPlacement v) {
  switch (v) {
    case ExpertPlacement::Static:
      return "static";
    case ExpertPlacement::Balanced:
      return "balanced";
  }
  return {};
}

/// How an attention layer's pass divides between the kernels before its core, the core, and the
/// kernels after it (fractions summing to 1; all 0: unknown).
struct AttentionShares {
  double before = 0, core = 0, after = 0;
  bool operator==(const AttentionShares&) const = default;
};

/// What the workload's source knows about the model beyond its ops and tensors, for tokens/s,
/// MFU and the memory check; 0 where it is unknown (a profiler trace without a model).
struct ModelFacts {
  double parameters = 0;         ///< elements, every parameter (all experts)
  double tokens_per_sample = 0;  ///< language models: tokens of one sample (one sequence)
  /// Training FLOPs of one sample without recomputation: 3 x forward with attention
  /// (zoo::training_flops_per_token x tokens), and as 6 N per token (zoo::flops_per_token_6n).
  double flops_per_sample = 0;
  double flops_per_sample_6n = 0;
  /// s: the measured single-worker step the compute was derived from when that measurement
  /// included communication (workload.measured_with: ps); speed-up is against it. 0: the compute
  /// alone (step_time_alone()) is the baseline.
  double baseline_step_time = 0;
  /// bytes of activations one worker stores at the peak of a step (its batch, the checkpointing
  /// mode); < 0: not modelled for this workload.
  double activation_bytes = -1;
  /// Decoders (zoo::to_workload): the shape, at the sequence length the ops were timed for, and
  /// the recomputation and attention kernels they include; what the stage programs of tensor,
  /// context and pipeline parallelism split and size their transfers by. nullopt otherwise.
  std::optional<TransformerShape> transformer{};
  ActivationCheckpointing checkpointing = ActivationCheckpointing::None;
  bool flash_attention = true;
  LossMode loss = LossMode::Fp32Logits;  ///< decoders: what the loss keeps of the logits, for memory
  /// The ops hold one rank's time under the layout's tensor and context degrees (workload.compute:
  /// shapes timed each kernel at its split shape), so the stage programs divide them by neither;
  /// false: one GPU's whole micro-batch, which the stage programs divide by t x c.
  bool timed_per_rank = false;
  /// Shares of a decoder attention layer's forward and backward time before its core (norm,
  /// Q/K/V projection), in the core and after it (output projection), when timed from shapes;
  /// all 0: the stage programs split by the layer's FLOPs.
  AttentionShares attention_forward{};
  AttentionShares attention_backward{};
  /// Shares of a MoE layer's forward and backward time in its routed experts' kernels at
  /// balanced routing, when timed from shapes (they grow with the busiest expert GPU's tokens);
  /// 0: the stage programs take the experts' share of the layer's FLOPs.
  double experts_time_forward = 0;
  double experts_time_backward = 0;
  /// Mixtures of experts (workload.moe.imbalance): tokens of the busiest expert over the mean,
  /// >= 1; 1 = balanced routing.
  double moe_imbalance = 1;
  /// workload.moe.capacity_factor: an expert takes at most this times the mean tokens and drops
  /// the rest; 0 = dropless (every routed token computed).
  double moe_capacity_factor = 0;
  ExpertPlacement moe_placement = ExpertPlacement::Static;
  /// workload.moe.routing: measured tokens per expert of each MoE block (no rows: imbalance).
  MoeRouting moe_routing{};
  bool operator==(const ModelFacts&) const = default;
};

struct Workload {
  std::string name;
  int batch_per_worker = 1;  ///< samples per step per worker
  Precision precision = Precision::FP32;  ///< of parameters and gradients (tensor bytes use it)
  ModelFacts facts{};
  /// A profile's world size (the trace's distributedInfo), 0 when the workload is not a profile;
  /// and whether its measured collectives are replayed (true) or simulated (extrapolated).
  int traced_workers = 0;
  bool replayed = false;
  /// The model block (a transformer block: its attention and MLP layers) of each layer, the
  /// unit FSDP wraps; empty, or -1 for a layer: the layer is a block of its own.
  std::vector<int> block_of_layer{};
  /// The ops already hold one worker's optimizer step (a profile's kernels): the predictors add
  /// none of their own (scheme/costs.hpp: optimizer_step_time).
  bool optimizer_in_ops = false;
  /// s of host CPU per byte a worker pulls or pushes (serialising and copying a parameter
  /// server's messages), taken from its first lane, which runs its compute (worker_runtime.hpp);
  /// 0 = free. CPU workers and host-staged transfers pay it.
  double comm_cpu_per_byte = 0;
  std::vector<std::string> lanes{"gpu"};
  std::vector<Op> ops;          ///< one step, program order
  std::vector<Tensor> tensors;  ///< parameters, in layer (forward) order
  /// What building the workload had to assume, for the caller to say once as warnings (a GEMM
  /// shape outside cluster.gpu.gemm, clamped to its edge).
  std::vector<std::string> notes{};

  bool operator==(const Workload&) const = default;

  /// Sum of op durations: the step time of one worker with no communication and one lane.
  [[nodiscard]] double compute_time() const;
  [[nodiscard]] double compute_time(OpKind kind) const;
  [[nodiscard]] double parameter_bytes() const;
  /// Step time of one worker alone, with no communication: ops start as soon as their lane is
  /// free and their deps are done (lanes overlap). Equals compute_time() with one lane.
  [[nodiscard]] double step_time_alone() const;
  /// Time of step_time_alone()'s schedule during which at least one op runs on a lane whose name
  /// starts with `lane_prefix` (a profile's GPU streams are "gpu D stream S", its host threads
  /// "cpu P:T"): a host-bound step keeps its GPUs busy for much less than the step.
  [[nodiscard]] double busy_alone(std::string_view lane_prefix) const;
  /// Per-step samples per op: ops.front().samples.size() (validate() checks that every op has
  /// the same number); 0 when the workload has none or no ops.
  [[nodiscard]] std::size_t num_samples() const;
};

/// Sample step `k` as a workload of its own: every op's duration is its k-th sample and no op
/// keeps samples (so predicting it predicts one step). Throws std::out_of_range when
/// k >= workload.num_samples(), a workload without samples included: there is no step k to
/// give, and silently returning the representative step would hide the caller's mistake.
[[nodiscard]] Workload with_sample(const Workload& workload, std::size_t k);

/// How much one worker's step varies from step to step: the population standard deviation over
/// the mean of with_sample(workload, k).step_time_alone() over the samples k; 0 with fewer than
/// two samples. What `workload.compute_cv: auto` takes as the stragglers' variation.
[[nodiscard]] double step_variation(const Workload& workload);

/// A group of gradients reduced together (PyTorch DDP buckets, Horovod fusion).
struct Bucket {
  std::vector<int> tensors;  ///< in the order their gradients are produced
  double bytes = 0;
  bool operator==(const Bucket&) const = default;
};

/// Groups gradients in the order they are produced (the order of their producer ops, i.e. reverse
/// layer order for a backward pass; those no op produces last) into buckets of at least
/// `bucket_bytes` (the last may be smaller). `bucket_bytes` <= 0 puts every gradient in its own
/// bucket. Each gradient's bytes are its tensor's times `gradient_share` (2: gradients reduced in
/// fp32 from a 16-bit model, scheme::reduced_share), which the buckets fill by.
[[nodiscard]] std::vector<Bucket> make_buckets(const Workload& workload, double bucket_bytes,
                                               double gradient_share = 1);

/// Checks the IR's invariants (indices in range, deps acyclic and pointing backwards, durations
/// and samples finite and >= 0, every op with the same number of samples); returns a
/// description of the first problem, or "" if none.
[[nodiscard]] std::string validate(const Workload& workload);

}  // namespace stepcast::workload
