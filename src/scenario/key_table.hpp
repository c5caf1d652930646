// The scenario key table: one row per dotted key with its type, default, description, the
// function that parses and checks a value into a Scenario, and the function that renders it back.
// Parsing, defaults, `stepcast options` (known_keys) and resolved_keys all read this one table, so
// a key cannot be documented one way and parsed another. Knows nothing of YAML: values arrive as
// scalar text with the SourceLocation they came from.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stepcast/error.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace stepcast::scenario::detail {

/// One scalar value as written (file or --set), before parsing.
struct RawValue {
  std::string text;
  SourceLocation where;
};

/// A Scenario being filled in, plus the inputs that only become Scenario fields once every key
/// is known (step time needs the batch size when given as a throughput).
struct Draft {
  Scenario scenario;
  std::optional<double> throughput;  ///< samples/s on one worker
  std::optional<double> step_time;   ///< s
  bool name_given = false;
  bool model_given = false;
  bool protocol_given = false;                ///< training.allreduce.protocol
  bool algorithm_given = false;               ///< training.allreduce.algorithm
  std::optional<RawValue> custom_topology;    ///< cluster.custom, read once the NIC bandwidth is known
  std::optional<RawValue> compute_cv_auto;    ///< workload.compute_cv: auto, checked against the profile
  std::vector<std::string> transformer_keys;  ///< workload.transformer.* fields given
  std::optional<RawValue> moe_layers;         ///< workload.transformer.moe_layers, read once layers is known
  std::optional<int> micro_batch;             ///< workload.micro_batch
  std::optional<double> dataset_size;         ///< job.dataset, in samples
  std::string dataset_name;                   ///< job.dataset as given
  SourceLocation dataset_where;
};

/// A value rendered for resolved_keys.
struct Rendered {
  std::string value;
  bool is_number = false;
};

struct KeyDef {
  KeyInfo info;
  /// true: an absent key is parsed from info.default_value; false: absence means "unset" or
  /// "required", which scenario.cpp resolves after all keys (default_value is then prose).
  bool apply_default = true;
  std::function<void(const RawValue&, Draft&)> apply;
  std::function<Rendered(const Scenario&)> render;
  /// true: a YAML list of scalars is accepted too, passed to `apply` joined by commas.
  bool accepts_list = false;
};

inline constexpr std::string_view kThroughputKey = "workload.single_worker_throughput";
inline constexpr std::string_view kStepTimeKey = "workload.step_time";

/// In documentation order.
[[nodiscard]] const std::vector<KeyDef>& key_table();
/// nullptr when `key` is not a leaf key of the table.
[[nodiscard]] const KeyDef* find_key(std::string_view key);
/// true for "cluster", "cluster.intra_node", "training.ps", ...: proper prefixes of known keys.
[[nodiscard]] bool is_section(std::string_view key);
/// "unknown key; did you mean 'cluster.nic_bandwidth'?" (suggestion only when one is close).
[[nodiscard]] std::string unknown_key_message(std::string_view key);
/// "unknown model 'x'; known models: resnet50, ..."
[[nodiscard]] std::string unknown_model_message(std::string_view name);

}  // namespace stepcast::scenario::detail
