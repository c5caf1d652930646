// Settings a scenario gives that cannot act on its job: a parameter server's keys under
// all-reduce, a pipeline's keys without a pipeline, a decoder's keys on a CNN, compute-from-shapes
// rates with compute from FLOPs. Each would otherwise be accepted and change nothing, without a
// word; `predict` and `advise` print these as warnings. A setting is "given" when it differs
// from its default, which is all a Scenario keeps.
#include <fmt/format.h>

#include "stepcast/scenario/scenario.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::scenario {

namespace {

/// The shape of the scenario's decoder: workload.transformer's, or the zoo model's; nullptr for
/// another model. Unknown for a profile or a layer table, whose ops say what they are.
std::optional<const zoo::TransformerShape*> decoder(const Scenario& s) {
  if (!s.workload.profile.empty() || !s.workload.layer_times.empty()) return std::nullopt;
  if (s.workload.transformer.layers > 0) return &s.workload.transformer;
  const zoo::ModelSpec* model = zoo::find_model(s.workload.model);
  if (model == nullptr) return std::nullopt;
  return model->transformer ? &*model->transformer : nullptr;
}

}  // namespace

std::vector<std::string> ineffective_keys(const Scenario& s) {
  std::vector<std::string> notes;
  const scheme::SchemeConfig& sc = s.scheme;
  const WorkloadSpec& w = s.workload;
  const std::string_view scheme = name_of(sc.scheme);
  if (sc.scheme != scheme::Scheme::ParameterServer) {
    if (sc.ps != scheme::PsConfig{})
      notes.push_back(fmt::format("training.ps.* has no effect: training.scheme is {}", scheme));
    if (s.cluster.rpc_latency)
      notes.push_back(
          fmt::format("cluster.rpc_latency has no effect: it times a parameter server's messages and "
                      "training.scheme is {}",
                      scheme));
  }
  if (sc.scheme != scheme::Scheme::Fsdp && sc.fsdp != scheme::FsdpConfig{}) {
    notes.push_back(fmt::format("training.fsdp.* has no effect: training.scheme is {}", scheme));
  } else if (sc.scheme == scheme::Scheme::Fsdp && sc.fsdp.sharding != scheme::FsdpSharding::Hybrid &&
             sc.fsdp.shard_group != scheme::FsdpConfig{}.shard_group) {
    notes.push_back(
        fmt::format("training.fsdp.shard_group has no effect: training.fsdp.sharding is {} (it sizes "
                    "hybrid sharding's groups)",
                    name_of(sc.fsdp.sharding)));
  }
  // scatter_gather has reasons of its own (below); the rest of training.pipeline needs a pipeline.
  scheme::PipelineConfig schedule_keys = sc.pipeline;
  schedule_keys.scatter_gather = false;
  if (sc.parallel.pipeline <= 1 && schedule_keys != scheme::PipelineConfig{}) {
    notes.emplace_back(
        "training.pipeline.* has no effect: there is no pipeline (training.parallel.pipeline is 1)");
  }
  if (sc.pipeline.scatter_gather &&
      (sc.parallel.tensor <= 1 || sc.parallel.pipeline <= 1 || sc.parallel.sequence)) {
    notes.push_back(
        fmt::format("training.pipeline.scatter_gather has no effect: {}",
                    sc.parallel.pipeline <= 1 ? "no pipeline (training.parallel.pipeline is 1)"
                    : sc.parallel.tensor <= 1
                        ? "no tensor group to scatter over (training.parallel.tensor is 1)"
                        : "with sequence parallelism each tensor rank sends its 1/t of a message already"));
  }
  if (sc.parallel.tensor <= 1 && sc.tensor != scheme::TensorConfig{}) {
    notes.emplace_back(
        "training.tensor.overlap has no effect: there is no tensor group (training.parallel.tensor is 1)");
  }
  const std::optional<const zoo::TransformerShape*> shape = decoder(s);
  const WorkloadSpec defaults{};
  if (shape && *shape == nullptr) {
    const bool decoder_keys = w.flash_attention != defaults.flash_attention || w.loss != defaults.loss ||
                              w.moe_imbalance != defaults.moe_imbalance ||
                              w.moe_capacity_factor != defaults.moe_capacity_factor ||
                              w.moe_placement != defaults.moe_placement;
    if (decoder_keys) {
      notes.push_back(
          fmt::format("workload.flash_attention, workload.loss and workload.moe.* have no effect: "
                      "workload.model {} is not a transformer decoder",
                      w.model));
    }
  } else if (shape) {
    const bool dense = (*shape)->experts <= 1;
    if (dense &&
        (w.moe_imbalance != defaults.moe_imbalance || w.moe_capacity_factor != defaults.moe_capacity_factor ||
         w.moe_placement != defaults.moe_placement)) {
      notes.emplace_back("workload.moe.* has no effect: the model has no experts (dense MLPs)");
    }
  }
  const cluster::ClusterSpec& c = s.cluster;
  if (w.compute != ComputeMethod::Shapes &&
      (c.gpu_kernel_overhead > 0 || c.gpu_attention_flops > 0 || !c.gemm.empty())) {
    notes.emplace_back(
        "cluster.gpu.kernel_overhead, cluster.gpu.attention_flops and cluster.gpu.gemm have no effect: they "
        "time "
        "kernels from their shapes, and workload.compute is flops");
  }
  return notes;
}

}  // namespace stepcast::scenario
