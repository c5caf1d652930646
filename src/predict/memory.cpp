// Model-state memory per worker (ZeRO paper's accounting) and FSDP's gathered buffers.
#include "stepcast/predict/memory.hpp"

#include <algorithm>

#include "stepcast/error.hpp"

namespace stepcast::predict {

namespace {

using scheme::FsdpSharding;
using scheme::Optimizer;
using scheme::Scheme;
using workload::Precision;

// Bytes per parameter of each model state before sharding (ZeRO paper section 3.1: mixed
// precision Adam is 2 + 2 + K with K = 12).
struct StateBytes {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
};

// Optimizer bytes per parameter in fp32 training: the moments only (no master copy).
double fp32_moment_bytes(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::Adam:
      return 8;  // first and second moment
    case Optimizer::Momentum:
      return 4;  // the momentum buffer
    case Optimizer::Sgd:
      return 0;
  }
  return 0;
}

StateBytes state_bytes(Precision precision, Optimizer optimizer) {
  switch (precision) {
    case Precision::FP32:
      return {.weights = 4, .gradients = 4, .optimizer = fp32_moment_bytes(optimizer)};
    case Precision::FP16:
    case Precision::BF16:
      // Mixed precision keeps an fp32 master copy (4 bytes) next to the fp32 moments; the
      // weights and gradients the GPU computes with are 2 bytes each.
      return {.weights = 2, .gradients = 2, .optimizer = 4 + fp32_moment_bytes(optimizer)};
    case Precision::FP8:
      // As bf16, plus the fp8 copy of each weight the GEMMs read (Transformer Engine casts it once
      // per step and keeps it across the micro-batches): 1 more byte.
      return {.weights = 3, .gradients = 2, .optimizer = 4 + fp32_moment_bytes(optimizer)};
  }
  return {};
}

// Which states FSDP divides by the shard degree at the peak of a step.
struct Divided {
  bool weights = false;
  bool gradients = false;
  bool optimizer = false;
};

Divided fsdp_divided(const scheme::FsdpConfig& fsdp) {
  switch (fsdp.sharding) {
    case FsdpSharding::Optimizer:
      return {.weights = false, .gradients = false, .optimizer = true};
    case FsdpSharding::GradOp:
      return {.weights = false, .gradients = true, .optimizer = true};
    case FsdpSharding::Full:
    case FsdpSharding::Hybrid:
      // Without resharding after the forward every unit stays gathered until its backward: at
      // the end of the forward the GPU holds all parameters whole, as SHARD_GRAD_OP does.
      return {.weights = fsdp.reshard_after_forward, .gradients = true, .optimizer = true};
  }
  return {};
}

}  // namespace

double Memory::total() const { return parameters + gradients + optimizer + activations + buffers; }

Memory model_state_memory(double parameters, Precision precision, const scheme::SchemeConfig& scheme,
                          int workers, int workers_per_node) {
  STEPCAST_ASSERT(parameters >= 0);
  STEPCAST_ASSERT(workers >= 1 && workers_per_node >= 1);
  StateBytes bytes = state_bytes(precision, scheme.optimizer);
  // Gradients accumulated in fp32 (Megatron-LM's main_grad buffer, FSDP's fp32 reduce dtype).
  if (scheme.grad_reduce_fp32) bytes.gradients = std::max(bytes.gradients, 4.0);
  // Bytes as doubles and real division: FSDP pads each flat parameter to a multiple of the shard
  // degree (under D elements per unit), negligible against billions of parameters.
  Memory m{.parameters = bytes.weights * parameters,
           .gradients = bytes.gradients * parameters,
           .optimizer = bytes.optimizer * parameters};
  switch (scheme.scheme) {
    case Scheme::AllReduce:
      return m;  // every worker a full replica
    case Scheme::ParameterServer:
      // The servers apply the gradients, so the optimizer state (and a mixed-precision master
      // copy) lives there; a worker holds the parameters it computes with and their gradients.
      m.optimizer = 0;
      return m;
    case Scheme::Fsdp: {
      const int degree = scheme::fsdp_shard_degree(scheme.fsdp, workers, workers_per_node);
      STEPCAST_ASSERT(degree >= 1);
      const double d = degree;
      const Divided divided = fsdp_divided(scheme.fsdp);
      if (!divided.weights && scheme.fsdp.fp8_all_gather) {
        STEPCAST_ASSERT(precision == Precision::FP8);
        // The whole weights are gathered fp8 copies (1 byte); the bf16 weights stay sharded.
        m.parameters = (workload::bytes_per_element(precision) / d + 1) * parameters;
      }
      if (divided.weights) m.parameters /= d;
      if (divided.gradients) m.gradients /= d;
      if (divided.optimizer) m.optimizer /= d;
      return m;
    }
  }
  return m;
}

double gathered_buffer_bytes(double largest_unit_parameters, Precision precision,
                             const scheme::SchemeConfig& scheme, int workers, int workers_per_node) {
  STEPCAST_ASSERT(largest_unit_parameters >= 0);
  STEPCAST_ASSERT(workers >= 1 && workers_per_node >= 1);
  const scheme::FsdpConfig& fsdp = scheme.fsdp;
  STEPCAST_ASSERT(fsdp.prefetch >= 0);
  const double unit = largest_unit_parameters * workload::bytes_per_element(precision);
  // The gathered parameters: their fp8 copies, 1 byte each, with fp8 all-gathers (the gradient
  // stays in the unit's precision).
  STEPCAST_ASSERT(!fsdp.fp8_all_gather || precision == Precision::FP8);
  const double gathered = fsdp.fp8_all_gather ? largest_unit_parameters : unit;
  // A unit's gradient before its reduce-scatter: in fp32 when reduced in fp32.
  const double gradient = scheme.grad_reduce_fp32 ? std::max(unit, 4 * largest_unit_parameters) : unit;
  switch (scheme.scheme) {
    case Scheme::AllReduce:
    case Scheme::ParameterServer:
      return 0;
    case Scheme::Fsdp:
      break;
  }
  // One shard is the whole unit: FSDP computes on it in place and reduces nothing.
  if (scheme::fsdp_shard_degree(fsdp, workers, workers_per_node) == 1) return 0;
  switch (fsdp.sharding) {
    case FsdpSharding::Optimizer:
      return 0;  // ZeRO-1 keeps the parameters and gradients whole
    case FsdpSharding::GradOp:
      return gradient;  // one unit's gradient before its reduce-scatter
    case FsdpSharding::Full:
    case FsdpSharding::Hybrid:
      if (!fsdp.reshard_after_forward) return gradient;  // parameters counted whole, as grad_op
      // The unit computing and `prefetch` units gathered ahead, plus one unit's gradient.
      return (fsdp.prefetch + 1.0) * gathered + gradient;
  }
  return 0;
}

}  // namespace stepcast::predict
