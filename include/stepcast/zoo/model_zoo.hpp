// The built-in model zoo: architectures defined in code as layer shapes, from which parameter
// counts and forward FLOPs follow. Parameter counts equal the canonical implementations
// exactly (torchvision for CNNs, Hugging Face BertModel for BERT). Turns a model plus one
// measured number (single-worker step time) into a Workload by splitting the time across
// layers in proportion to their FLOPs.
//
//   const zoo::ModelSpec& m = zoo::get_model("resnet50");   // m.num_parameters() == 25557032
//   workload::Workload w = zoo::to_workload(m, {.batch_per_worker = 64, .step_time = 0.292});
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

struct ModelSpec {
  std::string name;           ///< zoo key, e.g. "resnet50"
  std::string description;    ///< one line: source of the architecture, input shape
  std::vector<Layer> layers;  ///< forward order

  [[nodiscard]] int64_t num_parameters() const;
  [[nodiscard]] double forward_flops() const;  ///< per sample
  [[nodiscard]] size_t num_tensors() const;
};

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
};

/// One forward op per layer (layer order) then one backward op per layer (reverse order), on
/// one lane, durations proportional to FLOPs and summing to `step_time`. Every ParamTensor
/// becomes a Tensor consumed by its layer's forward op and produced by its backward op.
/// Throws Error with key "workload.step_time", "workload.batch_per_worker" or
/// "workload.backward_ratio" for a bad parameter, "workload.model" for a model without FLOPs.
[[nodiscard]] workload::Workload to_workload(const ModelSpec& model, const WorkloadParams& params);

}  // namespace stepcast::zoo
