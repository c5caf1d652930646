// write_json: the sweep as one JSON object for programs (plots, regression checks).
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "report/json_text.hpp"
#include "stepcast/report/report.hpp"

namespace stepcast::report {
namespace {

using detail::JsonWriter;

/// The scenario inputs regrouped by dotted key: "cluster.nic_bandwidth" becomes
/// {"cluster": {"nic_bandwidth": ...}}. Children keep first-appearance order so the JSON
/// reads in the order the scenario was written.
struct KeyNode {
  std::string name;
  const Input* leaf = nullptr;  ///< set for a value; a later input with the same key wins
  std::vector<std::unique_ptr<KeyNode>> children;

  KeyNode& child(std::string_view part) {
    for (auto& c : children)
      if (c->name == part) return *c;
    children.push_back(std::make_unique<KeyNode>());
    children.back()->name = std::string(part);
    return *children.back();
  }
};

void insert(KeyNode& root, const Input& input) {
  KeyNode* node = &root;
  std::string_view rest = input.key;
  for (std::size_t dot; (dot = rest.find('.')) != std::string_view::npos;) {
    node = &node->child(rest.substr(0, dot));
    rest.remove_prefix(dot + 1);
  }
  node->child(rest).leaf = &input;
}

void write_value(JsonWriter& json, const Input& input) {
  // is_number is the scenario's claim; a value that is not JSON number text ("1e", "10 Gbps")
  // is quoted anyway so that one mislabelled input cannot break the file.
  if (input.is_number && detail::is_json_number(input.value)) {
    json.raw(input.value);
  } else {
    json.string(input.value);
  }
}

void write_node(JsonWriter& json, const KeyNode& node) {
  if (node.children.empty()) {
    write_value(json, *node.leaf);
    return;
  }
  json.begin_object();
  // A key that is both a value and a prefix ("a" and "a.b") keeps both: the value goes
  // under "" inside the object, since JSON cannot give one key two values.
  if (node.leaf != nullptr) {
    json.key("");
    write_value(json, *node.leaf);
  }
  for (const auto& c : node.children) {
    json.key(c->name);
    write_node(json, *c);
  }
  json.end_object();
}

void write_prediction(JsonWriter& json, const predict::Result& r, const Config* config) {
  json.begin_object();
  if (config != nullptr) {
    // The swept keys' values as given: numbers as numbers, the rest ("25Gbps") as strings.
    json.key("config");
    detail::write_config_json(json, *config);
  }
  json.key("workers");
  json.integer(r.workers);
  json.key("predictor");
  json.string(predict::to_string(r.predictor));
  json.key("step_time_s");
  json.number(r.step_time);
  json.key("throughput_samples_per_s");
  json.number(r.throughput);
  json.key("speedup");
  json.number(r.speedup);
  json.key("efficiency");
  json.number(r.efficiency);
  json.key("bottleneck");
  json.string(r.bottleneck);
  json.key("mode");
  if (r.mode.empty()) {
    json.null();
  } else {
    json.string(r.mode);
  }
  json.key("gpu_busy_fraction");
  if (r.gpu_busy_fraction >= 0) {
    json.number(r.gpu_busy_fraction);
  } else {
    json.null();
  }
  json.key("bottleneck_kind");
  json.string(predict::to_string(r.bottleneck_kind));
  json.key("bottleneck_resource");
  if (r.bottleneck_resource.empty()) {
    json.null();
  } else {
    json.string(r.bottleneck_resource);
  }
  json.key("breakdown_s");
  json.begin_object();
  json.key("compute");
  json.number(r.breakdown.compute);
  json.key("communication_exposed");
  json.number(r.breakdown.communication_exposed);
  json.key("wait");
  json.number(r.breakdown.wait);
  // A parallel layout's exposed communication by dimension (0 otherwise).
  json.key("tensor");
  json.number(r.breakdown.tensor);
  json.key("context");
  json.number(r.breakdown.context);
  json.key("pipeline");
  json.number(r.breakdown.pipeline);
  json.key("data");
  json.number(r.breakdown.data);
  json.key("expert");
  json.number(r.breakdown.expert);
  json.end_object();
  json.key("layout");
  if (r.layout.empty()) {
    json.null();
  } else {
    json.string(r.layout);
  }
  json.key("bubble_fraction");
  json.number(r.bubble_fraction);
  json.key("optimizer_step_s");
  json.number(r.optimizer_step_time);
  json.key("utilization");
  json.begin_object();
  for (const auto& u : r.utilization) {
    json.key(u.resource);
    json.number(u.busy);
  }
  json.end_object();
  json.key("bytes_sent");
  json.bytes(r.bytes_sent);
  json.key("bytes_received");
  json.bytes(r.bytes_received);
  json.key("events");
  json.integer(r.events);
  json.key("engine");
  if (r.engine.empty()) {
    json.raw("null");
  } else {
    json.string(r.engine);
  }
  json.key("saturation_workers");
  if (r.saturation_workers > 0) {
    json.number(r.saturation_workers);
  } else {
    json.raw("null");
  }
  json.key("compute_cv");
  json.number(r.compute_cv);
  json.key("job");
  if (r.job.samples > 0) {
    json.begin_object();
    for (const auto& [key, value] : {std::pair<std::string_view, double>{"samples", r.job.samples},
                                     {"steps", r.job.steps},
                                     {"startup_s", r.job.startup_time},
                                     {"time_s", r.job.time},
                                     {"throughput_samples_per_s", r.job.throughput},
                                     {"epochs", r.job.epochs},
                                     {"epoch_time_s", r.job.epoch_time}}) {
      json.key(key);
      json.number(value);
    }
    json.key("tokens");
    if (r.job.tokens > 0) {
      json.number(r.job.tokens);
    } else {
      json.raw("null");
    }
    json.end_object();
  } else {
    json.raw("null");
  }
  json.key("cost");
  if (r.cost.gpu_hour > 0) {
    json.begin_object();
    json.key("currency");
    json.string(r.cost.currency);
    for (const auto& [key, value] :
         {std::pair<std::string_view, double>{"gpu_hour", r.cost.gpu_hour}, {"per_step", r.cost.per_step}}) {
      json.key(key);
      json.number(value);
    }
    json.key("per_million_tokens");
    if (r.cost.per_million_tokens > 0) {
      json.number(r.cost.per_million_tokens);
    } else {
      json.raw("null");
    }
    json.key("job");
    if (r.job.time > 0) {
      json.number(r.cost.job);
    } else {
      json.raw("null");
    }
    json.end_object();
  } else {
    json.raw("null");
  }
  json.key("memory_per_worker_bytes");
  if (r.memory.known) {
    const predict::Memory& m = r.memory.per_worker;
    json.begin_object();
    for (const auto& [key, value] : {std::pair<std::string_view, double>{"parameters", m.parameters},
                                     {"gradients", m.gradients},
                                     {"optimizer", m.optimizer},
                                     {"activations", m.activations},
                                     {"buffers", m.buffers},
                                     {"total", m.total()},
                                     {"allocated", r.memory.allocated()},
                                     {"reserved", r.memory.reserved()}}) {
      json.key(key);
      if (key == "activations" && !r.memory.activations_modelled) {
        json.raw("null");
      } else {
        json.bytes(value);
      }
    }
    json.end_object();
  } else {
    json.raw("null");
  }
  json.key("gpu_memory_bytes");
  if (r.memory.gpu_memory > 0) {
    json.bytes(r.memory.gpu_memory);
  } else {
    json.raw("null");
  }
  json.key("fits");
  if (r.memory.known && r.memory.gpu_memory > 0) {
    json.raw(r.memory.fits() ? "true" : "false");
  } else {
    json.raw("null");
  }
  const bool tokens = r.tokens.tokens_per_s > 0;
  for (const auto& [key, value, known] :
       {std::tuple<std::string_view, double, bool>{"tokens_per_s", r.tokens.tokens_per_s, tokens},
        {"tokens_per_s_per_worker", r.tokens.tokens_per_s_per_worker, tokens},
        {"model_flops_per_s_per_worker", r.tokens.model_flops_per_s_per_worker, tokens},
        {"mfu", r.tokens.mfu, r.tokens.mfu >= 0},
        {"mfu_6nd", r.tokens.mfu_6nd, r.tokens.mfu_6nd >= 0}}) {
    json.key(key);
    if (known) {
      json.number(value);
    } else {
      json.raw("null");
    }
  }
  json.key("collectives");
  json.begin_array();
  for (const predict::BucketCollective& b : r.collectives) {
    json.begin_object();
    json.key("bytes");
    json.bytes(b.bytes);
    json.key("algorithm");
    json.string(b.algorithm);
    json.key("protocol");
    json.string(b.protocol);
    json.end_object();
  }
  json.end_array();
  json.key("max_link_flows");
  json.integer(r.max_link_flows);
  detail::write_links_json(json, r.links, r.links.size(), r.links_left_out);
  json.key("link_classes");
  json.begin_array();
  for (const sim::LinkClassLoad& c : r.link_classes) {
    json.begin_object();
    json.key("name");
    json.string(c.name);
    json.key("links");
    json.integer(c.links);
    json.key("busiest");
    json.number(c.busiest);
    json.key("mean_busy");
    json.number(c.mean_busy);
    json.key("bytes");
    json.bytes(c.bytes);
    json.end_object();
  }
  json.end_array();
  json.key("step_time_samples");
  const predict::StepSpread& spread = r.step_samples;
  if (spread.samples == 0) {
    json.raw("null");
  } else {
    json.begin_object();
    json.key("count");
    json.integer(spread.samples);
    for (const auto& [key, value] : {std::pair<std::string_view, double>{"mean_s", spread.mean},
                                     {"p50_s", spread.p50},
                                     {"p95_s", spread.p95},
                                     {"min_s", spread.min},
                                     {"max_s", spread.max}}) {
      json.key(key);
      json.number(value);
    }
    json.key("step_times_s");
    json.begin_array();
    for (double t : spread.step_times) json.number(t);
    json.end_array();
    json.end_object();
  }
  json.key("staleness");
  if (r.staleness.pushes == 0) {
    json.raw("null");
  } else {
    json.begin_object();
    json.key("pushes");
    json.integer(r.staleness.pushes);
    for (const auto& [key, value] : {std::pair<std::string_view, double>{"mean", r.staleness.mean},
                                     {"p95", r.staleness.p95},
                                     {"max", r.staleness.max}}) {
      json.key(key);
      json.number(value);
    }
    json.end_object();
  }
  json.key("async_phases_s");
  if (!(r.async_phases.convoy > 0)) {
    json.raw("null");
  } else {
    json.begin_object();
    json.key("out_of_step");
    json.number(r.async_phases.out_of_step);
    json.key("convoy");
    json.number(r.async_phases.convoy);
    json.end_object();
  }
  json.end_object();
}

void write_optional(JsonWriter& json, const std::optional<double>& value) {
  if (value) {
    json.number(*value);
  } else {
    json.null();
  }
}

/// One compare_predictors() point: each predictor's step time and throughput side by side.
void write_comparison(JsonWriter& json, const Sweep& sweep, const PredictorComparison& c) {
  json.begin_object();
  if (c.first < sweep.configs.size()) {
    json.key("config");
    detail::write_config_json(json, sweep.configs[c.first]);
  }
  json.key("workers");
  json.integer(c.workers);
  for (const auto& [key, value_of] :
       {std::pair<std::string_view, double (*)(const predict::Result&)>{
            "step_time_s", [](const predict::Result& r) { return r.step_time; }},
        {"throughput_samples_per_s", [](const predict::Result& r) { return r.throughput; }}}) {
    json.key(key);
    json.begin_object();
    for (predict::Predictor p :
         {predict::Predictor::Fine, predict::Predictor::Coarse, predict::Predictor::Analytic}) {
      json.key(predict::to_string(p));
      const int index = c.prediction[static_cast<std::size_t>(p)];
      if (index < 0) {
        json.null();
      } else {
        json.number(value_of(sweep.predictions[static_cast<std::size_t>(index)]));
      }
    }
    json.end_object();
  }
  json.key("coarse_vs_fine");
  write_optional(json, c.coarse_vs_fine);
  json.key("analytic_vs_fine");
  write_optional(json, c.analytic_vs_fine);
  json.key("spread");
  json.number(c.spread);
  json.key("disagree");
  json.raw(c.disagrees() ? "true" : "false");
  json.key("warning");
  if (c.disagrees()) {
    json.string(disagreement_warning(sweep, c));
  } else {
    json.null();
  }
  json.end_object();
}

}  // namespace

void write_json(std::ostream& out, const Sweep& sweep) {
  // "name" first and always sweep.scenario: an input literally keyed "name" keeps its place
  // in the tree but cannot rename the scenario.
  const Input name{.key = "name", .value = sweep.scenario, .is_number = false};
  KeyNode scenario;
  scenario.child("name");
  for (const auto& input : sweep.inputs) insert(scenario, input);
  scenario.child("name").leaf = &name;

  JsonWriter json(out);
  json.begin_object();
  json.key("scenario");
  write_node(json, scenario);
  json.key("predictions");
  json.begin_array();
  for (std::size_t i = 0; i < sweep.predictions.size(); ++i) {
    write_prediction(json, sweep.predictions[i], i < sweep.configs.size() ? &sweep.configs[i] : nullptr);
  }
  json.end_array();
  if (const std::vector<PredictorComparison> comparisons = compare_predictors(sweep); !comparisons.empty()) {
    json.key("comparisons");
    json.begin_array();
    for (const PredictorComparison& c : comparisons) write_comparison(json, sweep, c);
    json.end_array();
  }
  json.end_object();
}

namespace detail {
void write_config_json(JsonWriter& json, const Config& config) {
  json.begin_object();
  for (const Input& setting : config) {
    json.key(setting.key);
    write_value(json, setting);
  }
  json.end_object();
}

void write_prediction_json(JsonWriter& json, const predict::Result& r, const Config* config) {
  write_prediction(json, r, config);
}

void write_links_json(JsonWriter& json, const std::vector<sim::LinkLoad>& links, std::size_t shown,
                      std::size_t left_out) {
  shown = std::min(shown, links.size());
  json.key("links");
  json.begin_array();
  for (std::size_t i = 0; i < shown; ++i) {
    json.begin_object();
    json.key("name");
    json.string(links[i].name);
    json.key("busy");
    json.number(links[i].busy);
    json.key("bytes");
    json.bytes(links[i].bytes);
    json.end_object();
  }
  json.end_array();
  json.key("links_left_out");
  json.integer(links.size() - shown + left_out);
}
}  // namespace detail

}  // namespace stepcast::report
