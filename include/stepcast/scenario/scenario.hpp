// Scenario files: a YAML description of a training job and a cluster, `--set key=value`
// overrides by dotted path, and the consistency checks that run before any predictor. Every
// bad input throws stepcast::Error naming the file, the line and the dotted key.
//
//   Scenario s = load_scenario("examples/resnet50-ps.yaml", {"cluster.workers=16"});
//   workload::Workload w = build_workload(s);
//   auto r = predict::predict(w, s.cluster, s.scheme, s.options);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stepcast/cluster/cluster.hpp"
#include "stepcast/enum_names.hpp"
#include "stepcast/predict/result.hpp"
#include "stepcast/scheme/scheme_config.hpp"
#include "stepcast/workload/workload.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::scenario {

/// Which measured steps of a profile the predictors run (workload.step_samples).
enum class StepSamples : uint8_t {
  All,             ///< every steady step with the representative's structure, one prediction each
  Representative,  ///< the representative step alone (one prediction; no spread)
};
constexpr std::string_view name_of(StepSamples v) {
  switch (v) {
    case StepSamples::All:
      return "all";
    case StepSamples::Representative:
      return "representative";
  }
  return {};
}

/// With a profile at the trace's own worker count: replay its measured collectives (auto), or
/// simulate them as at any other count (never).
enum class ReplayMode : uint8_t { Auto, Never };
constexpr std::string_view name_of(ReplayMode v) {
  switch (v) {
    case ReplayMode::Auto:
      return "auto";
    case ReplayMode::Never:
      return "never";
  }
  return {};
}

/// What the measured single-worker step time included besides compute: nothing (alone), a round
/// trip to the scenario's parameter servers (ps), or a one-worker all-reduce (allreduce: no
/// communication with one worker, so the same as alone).
enum class MeasuredWith : uint8_t { Alone, Ps, Allreduce };
constexpr std::string_view name_of(MeasuredWith v) {
  switch (v) {
    case MeasuredWith::Alone:
      return "alone";
    case MeasuredWith::Ps:
      return "ps";
    case MeasuredWith::Allreduce:
      return "allreduce";
  }
  return {};
}

/// Where a worker's compute time comes from (said in the table).
enum class ComputeSource : uint8_t {
  Measured,        ///< workload.step_time or workload.single_worker_throughput
  Profile,         ///< workload.profile
  AchievedFlops,   ///< the model's training FLOPs at workload.achieved_flops
  PeakEfficiency,  ///< at cluster.gpu.peak_flops x workload.compute_efficiency
  LayerTimes,      ///< per-layer times measured on a few layers (workload.layer_times)
  Shapes,          ///< each kernel from its shape (workload.compute: shapes)
};

/// How a decoder's compute is modelled (workload.compute): its FLOPs at one rate or spread from
/// one measured time (flops), or each kernel timed from its shape on the GPU's GEMM table or
/// roofline (shapes; scenario/shape_compute.hpp).
enum class ComputeMethod : uint8_t { Flops, Shapes };
constexpr std::string_view name_of(ComputeMethod v) {
  switch (v) {
    case ComputeMethod::Flops:
      return "flops";
    case ComputeMethod::Shapes:
      return "shapes";
  }
  return {};
}

struct WorkloadSpec {
  std::string model;  ///< zoo name ("" when a profile or workload.transformer describes the job)
  /// A decoder by shape (workload.transformer.*), replacing the zoo model; layers == 0: none.
  zoo::TransformerShape transformer{};
  int64_t seq_len = 0;  ///< tokens per sequence (a decoder's sample); 0: the zoo model's own
  workload::ActivationCheckpointing checkpointing = workload::ActivationCheckpointing::None;
  bool flash_attention = true;    ///< decoders: attention kernels that store no seq x seq scores
  /// decoders: how the loss treats the logits, for memory (zoo::loss_memory)
  workload::LossMode loss = workload::LossMode::Fp32Logits;
  /// mixtures of experts: tokens of the busiest expert over the mean (workload.moe.imbalance)
  double moe_imbalance = 1;
  /// mixtures of experts: an expert's tokens capped at this times the mean, 0 = dropless
  double moe_capacity_factor = 0;
  workload::ExpertPlacement moe_placement = workload::ExpertPlacement::Static;
  std::string moe_routing;  ///< mixtures of experts: the routing table's path (workload.moe.routing), or ""
  double achieved_flops = 0;      ///< FLOP/s one GPU sustains on the model; 0: unset
  double compute_efficiency = 0;  ///< fraction of cluster.gpu.peak_flops achieved; 0: unset
  /// Per-layer times of a few layers (profile/layer_times.hpp: a layer table or a marked Kineto
  /// trace; path resolved against the scenario file's directory); "" when none.
  std::string layer_times;
  ComputeSource compute_source = ComputeSource::Measured;
  ComputeMethod compute = ComputeMethod::Flops;
  /// Kineto trace replacing the zoo model and the measured step time (path resolved against the
  /// scenario file's directory); "" when none.
  std::string profile;
  int batch_per_worker = 32;
  double step_time = 0;  ///< s per step on one worker (from step_time or throughput)
  workload::Precision precision = workload::Precision::FP32;
  double backward_to_forward = 2.0;
  StepSamples step_samples = StepSamples::All;
  ReplayMode replay = ReplayMode::Auto;
  MeasuredWith measured_with = MeasuredWith::Alone;
  double comm_cpu_per_byte = 0;  ///< s of the worker's host CPU per byte pulled or pushed (Workload's)
  bool operator==(const WorkloadSpec&) const = default;
};

/// One resolved input, rendered for people and for JSON: key "cluster.nic_bandwidth",
/// value "10 Gbps" (text) or "8" (number).
struct ResolvedKey {
  std::string key;
  std::string value;
  bool is_number = false;
  bool operator==(const ResolvedKey&) const = default;
};

/// What `stepcast plan` searches beyond or short of its default space (plan.*): keys of
/// plan_keys(), each at most once in one list.
struct PlanSpec {
  std::vector<std::string> vary;   ///< plan.vary: keys searched too (those not searched by default)
  std::vector<std::string> fixed;  ///< plan.fixed: keys held at the scenario's value
  bool operator==(const PlanSpec&) const = default;
};

/// A key `stepcast plan` can search, and the values it tries (in words, for docs and messages).
struct PlanKey {
  std::string_view key;
  bool by_default = true;  ///< searched unless plan.fixed names it; false: only when plan.vary does
  std::string_view values;
};
/// Every key plan.vary and plan.fixed may name, in the order plan varies them.
[[nodiscard]] const std::vector<PlanKey>& plan_keys();

struct Scenario {
  std::string file;         ///< where it was read from ("" for text)
  std::string name;         ///< `name:` key, else the file stem
  std::string description;  ///< `description:` key, free text
  WorkloadSpec workload;
  cluster::ClusterSpec cluster;
  scheme::SchemeConfig scheme;
  predict::Options options;
  PlanSpec plan;
  bool operator==(const Scenario&) const = default;
};

/// What the caller will use: a whole scenario (the default; workload.model and a measured step
/// time are required) or only its cluster and scheme (`stepcast collective --scenario`).
enum class Needs : uint8_t { Workload, ClusterOnly };

/// Reads and checks a scenario file, applying `overrides` ("key=value", value parsed as YAML).
/// Throws Error (file, line, key) on unreadable files, bad YAML, unknown keys, wrong types,
/// impossible values and inconsistent combinations. The combinations are scheme::validate()'s
/// rules; an error it raises points at the line (or --set) that gave its key. With
/// `worker_sweep` (the counts of `stepcast predict --workers`) they are checked at each of those
/// worker counts instead of cluster.workers, the message ending "(at --workers N)".
[[nodiscard]] Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {},
                                     Needs needs = Needs::Workload,
                                     const std::vector<int>& worker_sweep = {});
/// Same from text; `file_name` is only used in messages.
[[nodiscard]] Scenario parse_scenario(std::string_view yaml_text, const std::string& file_name,
                                      const std::vector<std::string>& overrides = {},
                                      Needs needs = Needs::Workload,
                                      const std::vector<int>& worker_sweep = {});

/// Re-checks scheme::validate()'s rules (e.g. colocated servers need P <= nodes) after a caller
/// changed the scenario, e.g. the worker count. Throws Error naming the file and `key`, the
/// rule's own key in the message.
void check_consistency(const Scenario& scenario, const std::string& key = "cluster.workers");

/// The scenario's workload: the zoo model, or with workload.profile the traced step
/// (profile/kineto_workload.hpp). At the trace's own worker count the NCCL kernels keep their
/// measured durations and no gradient is simulated (replay); at another count they are replaced
/// by simulated collectives of the trace's all-reduce sizes, or, when the trace has none, of the
/// parameters of workload.model. Ops keep their per-step samples (every steady step) unless
/// workload.step_samples is representative. Throws Error on an unknown model, an unreadable trace, or a
/// multi-worker prediction from a trace without gradient sizes and no model.
[[nodiscard]] workload::Workload build_workload(const Scenario& scenario);

/// The model of a scenario without a profile: the zoo model (rebuilt at workload.seq_len for a
/// decoder), or the decoder of workload.transformer. Throws Error naming the file and key.
[[nodiscard]] zoo::ModelSpec model_of(const Scenario& scenario);

/// The scenario at another micro-batch (sequences per micro-batch, workload.micro_batch) and
/// activation checkpointing, its compute time re-derived from the model's FLOPs as the loader
/// derives it (`stepcast plan` tries each). Throws Error (key workload.compute_efficiency) when
/// the compute time does not come from FLOPs (a measured step time, a throughput, a profile or
/// layer times hold for their own batch and recomputation) and either changes.
[[nodiscard]] Scenario with_micro_batch(const Scenario& scenario, int micro_batch,
                                        workload::ActivationCheckpointing checkpointing);

/// Where the compute time comes from, in words with its numbers ("measured: 1.2 s per step of one
/// worker (workload.step_time)", "180 TFLOP/s per GPU (workload.achieved_flops): 1.9 s per step").
[[nodiscard]] std::string compute_source_text(const Scenario& scenario);

/// Settings that cannot act on this scenario's job (a parameter server's keys under all-reduce,
/// a pipeline's keys without a pipeline, a decoder's keys on a CNN, ...), one sentence each
/// naming the keys and why; `predict` and `advise` warn with them.
[[nodiscard]] std::vector<std::string> ineffective_keys(const Scenario& scenario);

/// Every input after defaults and overrides, in key order, with units.
[[nodiscard]] std::vector<ResolvedKey> resolved_keys(const Scenario& scenario);

struct KeyInfo {
  std::string key;
  std::string type;  ///< "integer", "bandwidth", "duration", "size", "one of a|b", ...
  std::string default_value;
  std::string description;
};
/// The documented scenario keys, for `stepcast options` and docs/scenario.md.
[[nodiscard]] const std::vector<KeyInfo>& known_keys();

}  // namespace stepcast::scenario
