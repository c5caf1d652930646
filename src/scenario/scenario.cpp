#include "stepcast/scenario/scenario.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>
#include <utility>

#include "key_table.hpp"
#include "scenario/shape_compute.hpp"
#include "stepcast/detail/profile/astrasim_workload.hpp"
#include "stepcast/detail/profile/chakra_trace.hpp"
#include "stepcast/detail/profile/kineto_workload.hpp"
#include "stepcast/detail/profile/layer_table.hpp"
#include "stepcast/detail/profile/layer_times.hpp"
#include "stepcast/detail/profile/tf_timeline.hpp"
#include "stepcast/detail/scheme/costs.hpp"
#include "stepcast/detail/text_file.hpp"
#include "stepcast/error.hpp"
#include "stepcast/limits.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/scheme/validate.hpp"
#include "stepcast/units.hpp"
#include "stepcast/workload/moe_layers.hpp"
#include "stepcast/workload/moe_routing.hpp"
#include "stepcast/zoo/activation_memory.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::scenario {
namespace {

using detail::Draft;
using detail::KeyDef;
using detail::RawValue;

constexpr const char* kOverrideFile = "--set";
// The command-line option that sweeps cluster.workers (stepcast predict --workers).
constexpr const char* kSweepOption = "--workers";

// Every given leaf value by dotted key. Parsing works on this flat map so that file values and
// --set overrides go through exactly the same path.
using Entries = std::map<std::string, RawValue, std::less<>>;

const char* describe(const YAML::Node& node) {
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  if (node.IsNull()) return "nothing";
  return "a value";
}

// The text of a value: a scalar as written; a list of scalars, for the keys whose type says they
// take one ("[8, 8]"), joined by commas. Anything else has no text.
std::optional<std::string> text_of(const YAML::Node& node, const KeyDef& def) {
  if (node.IsScalar()) return node.Scalar();
  if (!node.IsSequence() || !def.accepts_list) return std::nullopt;
  std::string text;
  for (const YAML::Node& item : node) {
    if (!item.IsScalar()) return std::nullopt;
    text += (text.empty() ? "" : ",") + item.Scalar();
  }
  return text;
}

// "an integer >= 1", "a bandwidth", "one of ps|allreduce": a key's type after "expected".
std::string expected_phrase(std::string_view type) {
  if (type.starts_with("one of")) return std::string(type);
  bool vowel = !type.empty() && std::string_view("aeiou").find(type.front()) != std::string_view::npos;
  return fmt::format("{} {}", vowel ? "an" : "a", type);
}

// yaml-cpp marks are 0-based; a node without a position has line -1, which becomes 0 (unknown).
int line_of(const YAML::Node& node) { return node.Mark().line + 1; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// yaml-cpp accepts a double-quoted scalar left open at the end of the text when a newline follows,
// so a file cut inside a quoted value would parse as complete. Quoted scalars (tag "!") start at
// their mark; check that their closing quote is there.
void expect_closed_quotes(const YAML::Node& node, std::string_view text, const SourceLocation& where) {
  if (node.IsSequence()) {
    for (const YAML::Node& item : node) expect_closed_quotes(item, text, where);
    return;
  }
  if (!node.IsScalar() || node.Tag() != "!") return;
  const auto start = static_cast<size_t>(std::max(0, node.Mark().pos));
  if (start >= text.size() || (text[start] != '"' && text[start] != '\'')) return;
  const char quote = text[start];
  for (size_t i = start + 1; i < text.size(); ++i) {
    if (quote == '"' && text[i] == '\\') {
      ++i;  // an escape: the next character is part of the value
    } else if (text[i] == quote) {
      if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;  // '' inside single quotes is a quote
      } else {
        return;
      }
    }
  }
  throw Error({where.file, node.Mark().line + 1, where.key},
              "quoted value not closed before the end of the file (is the file cut short?)");
}

void flatten(const YAML::Node& map, const std::string& prefix, const std::string& file, std::string_view text,
             Entries& out) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    // Copies: `it->` yields a temporary proxy, so references into it would dangle. A Node is a
    // handle, so copying is cheap.
    const YAML::Node key_node = it->first;
    const YAML::Node value = it->second;
    int line = line_of(key_node);
    if (!key_node.IsScalar()) {
      throw Error({file, line, prefix}, "expected a plain key name, got " + std::string(describe(key_node)));
    }
    std::string key = prefix.empty() ? key_node.Scalar() : prefix + "." + key_node.Scalar();
    if (key == "include") continue;  // read_entries reads the included files first
    SourceLocation where{file, line, key};
    if (detail::is_section(key)) {
      // "cluster:" with nothing under it is an empty section: every key takes its default.
      if (value.IsNull()) continue;
      if (!value.IsMap()) {
        throw Error(
            where, fmt::format("expected a section (a map of keys), got {}",
                               value.IsScalar() ? "'" + value.Scalar() + "'" : std::string(describe(value))));
      }
      flatten(value, key, file, text, out);
    } else if (const KeyDef* def = detail::find_key(key)) {
      expect_closed_quotes(value, text, where);
      const std::optional<std::string> text = text_of(value, *def);
      if (!text) {
        throw Error(where,
                    fmt::format("expected {}, got {}", expected_phrase(def->info.type), describe(value)));
      }
      // yaml-cpp keeps duplicate keys; silently taking one would hide a mistake.
      if (auto previous = out.find(key); previous != out.end()) {
        throw Error(where,
                    fmt::format("duplicate key (first given on line {})", previous->second.where.line));
      }
      out.emplace(key, RawValue{*text, where});
    } else {
      throw Error(where, detail::unknown_key_message(key));
    }
  }
}

Entries read_entries(std::string_view yaml_text, const std::string& file, int depth = 0);

/// `include: calib.yaml` (or a list): scenario files whose keys this one starts from, paths
/// relative to the including file. Later includes win over earlier ones, and the including file's
/// own keys over all of them, so a calibration file (`stepcast calibrate ... -o calib.yaml`) can be
/// shared by scenarios without copying its keys; each key keeps the file and line it came from.
Entries included_entries(const YAML::Node& include, const std::string& file, int depth) {
  constexpr int kMaxIncludeDepth = 8;
  const SourceLocation where{file, line_of(include), "include"};
  std::vector<YAML::Node> paths;
  if (include.IsScalar()) {
    paths.push_back(include);
  } else if (include.IsSequence()) {
    for (const YAML::Node& item : include) paths.push_back(item);
  }
  if (paths.empty()) throw Error(where, "expected a file name or a list of file names");
  if (depth >= kMaxIncludeDepth) {
    throw Error(where, fmt::format("includes nest more than {} deep (does a file include itself?)",
                                   kMaxIncludeDepth));
  }
  Entries merged;
  for (const YAML::Node& item : paths) {
    if (!item.IsScalar() || item.Scalar().empty()) {
      throw Error({file, line_of(item), "include"},
                  fmt::format("expected a file name, got {}", describe(item)));
    }
    std::filesystem::path path(item.Scalar());
    if (path.is_relative()) path = std::filesystem::path(file).parent_path() / path;
    const std::string name = path.string();
    {
      std::ifstream probe(path);
      if (!probe)
        throw Error({file, line_of(item), "include"},
                    fmt::format("cannot read the included file '{}'", name));
    }
    for (auto& [key, value] : read_entries(read_text_file(name, "included scenario file"), name, depth + 1)) {
      merged.insert_or_assign(key, value);
    }
  }
  return merged;
}

Entries read_entries(std::string_view yaml_text, const std::string& file, int depth) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    throw Error({file, e.mark.line + 1, ""}, "invalid YAML: " + e.msg);
  }
  // An empty file, or one with only comments, loads as null.
  if (!root.IsDefined() || root.IsNull()) throw Error({file, 0, ""}, "empty scenario");
  if (!root.IsMap()) {
    throw Error({file, line_of(root), ""},
                fmt::format("expected a map of sections (workload, cluster, training, steps), "
                            "got {}",
                            root.IsScalar() ? "'" + root.Scalar() + "'" : describe(root)));
  }
  Entries entries;
  // The const operator[] looks the key up without adding it.
  if (const YAML::Node include = std::as_const(root)["include"]; include.IsDefined()) {
    entries = included_entries(include, file, depth);
  }
  Entries mine;
  flatten(root, "", file, yaml_text, mine);
  for (auto& [key, value] : mine) entries.insert_or_assign(key, value);
  return entries;
}

std::string_view partner_of(std::string_view key) {
  if (key == detail::kThroughputKey) return detail::kStepTimeKey;
  if (key == detail::kStepTimeKey) return detail::kThroughputKey;
  return {};
}

void apply_override(const std::string& text, Entries& entries) {
  size_t eq = text.find('=');
  if (eq == std::string::npos) {
    throw Error({kOverrideFile, 0, text}, fmt::format("expected key=value, got '{}'", text));
  }
  std::string key(trim(std::string_view(text).substr(0, eq)));
  std::string value_text = text.substr(eq + 1);
  SourceLocation where{kOverrideFile, 0, key};
  const KeyDef* def = detail::find_key(key);
  if (def == nullptr) throw Error(where, detail::unknown_key_message(key));
  // key=null (or ~) takes the key out, as if the file did not give it: its default, or unset
  // (--set workload.compute_efficiency=null --set workload.compute=shapes on a file with a rate).
  if (const std::string_view v = trim(std::string_view(value_text)); v == "null" || v == "~") {
    entries.erase(key);
    return;
  }
  // Parsed as YAML so that quoting works as in a file ("name='a: b'").
  YAML::Node node;
  try {
    node = YAML::Load(value_text);
  } catch (const YAML::Exception& e) {
    throw Error(where, fmt::format("invalid value '{}': {}", value_text, e.msg));
  }
  const std::optional<std::string> parsed = text_of(node, *def);
  if (!parsed) {
    throw Error(where, fmt::format("expected {}, got {}", expected_phrase(def->info.type), describe(node)));
  }
  entries.insert_or_assign(key, RawValue{*parsed, where});
  // The step time can be given either way; the override replaces whichever the file used.
  if (std::string_view partner = partner_of(key); !partner.empty()) {
    if (auto it = entries.find(partner); it != entries.end()) entries.erase(it);
  }
}

SourceLocation location_of(const Entries& entries, std::string_view key, const std::string& file) {
  if (auto it = entries.find(key); it != entries.end()) return it->second.where;
  return {file, 0, std::string(key)};
}

std::string model_list() {
  std::string out;
  for (const zoo::ModelSpec& model : zoo::all_models()) {
    if (!out.empty()) out += ", ";
    out += model.name;
  }
  return out;
}

// scheme::validate() knows no files: an error it throws names a key, and the user needs the
// place that set it (file:line, or the --set override; a key left at its default points at the
// file). With a sweep the rules hold at each swept worker count, not at the file's.
void validate_at(const Scenario& s, const Entries& entries, const std::string& file,
                 const std::vector<int>& worker_sweep, const workload::Workload* workload) {
  auto check = [&](const cluster::ClusterSpec& c, const std::string& note) {
    try {
      scheme::validate(c, s.scheme);
      // A parallel layout's rules with the model (heads by t, blocks for the stages, the batch).
      if (workload != nullptr && s.scheme.parallel.composed()) scheme::check_layout(*workload, c, s.scheme);
    } catch (const Error& e) {
      throw Error(location_of(entries, e.where().key, file), e.message() + note);
    }
  };
  if (worker_sweep.empty()) {
    check(s.cluster, "");
    return;
  }
  for (int workers : worker_sweep) {
    cluster::ClusterSpec at = s.cluster;
    at.workers = workers;
    check(at, fmt::format(" (at {} {})", kSweepOption, workers));
  }
}

}  // namespace

// Reads cluster.custom: {switches: [names], links: [[a, b] or {a, b, bandwidth, latency}]}.
// Nodes are "node<i>", numbered from 0 without gaps, each with exactly one link, to a switch.
cluster::CustomTopologySpec load_custom_topology(const RawValue& value, double default_bw) {
  std::filesystem::path path(value.text);
  if (path.is_relative()) path = std::filesystem::path(value.where.file).parent_path() / path;
  const std::string file = path.string();
  {
    std::ifstream probe(path);
    if (!probe) throw Error(value.where, fmt::format("cannot read the topology file '{}'", file));
  }
  const std::string text = read_text_file(file, "custom topology");
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error({file, e.mark.line + 1, ""}, "invalid YAML: " + e.msg);
  }
  if (!root.IsMap() || !root["switches"] || !root["links"] || !root["switches"].IsSequence() ||
      !root["links"].IsSequence()) {
    throw Error({file, 0, ""}, "expected a map with a list of `switches` and a list of `links`");
  }
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (key != "switches" && key != "links") {
      throw Error({file, line_of(it->first), key}, "unknown key (expected switches, links)");
    }
  }
  cluster::CustomTopologySpec spec;
  auto is_node = [](const std::string& name) {
    return name.size() > 4 && name.rfind("node", 0) == 0 &&
           std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  for (const YAML::Node& sw : root["switches"]) {
    const int line = line_of(sw);
    if (!sw.IsScalar() || sw.Scalar().empty())
      throw Error({file, line, "switches"}, "expected a switch name");
    const std::string name = sw.Scalar();
    if (is_node(name)) throw Error({file, line, "switches"}, fmt::format("'{}' is a node name", name));
    if (std::find(spec.switches.begin(), spec.switches.end(), name) != spec.switches.end()) {
      throw Error({file, line, "switches"}, fmt::format("duplicate switch '{}'", name));
    }
    spec.switches.push_back(name);
  }
  if (spec.switches.empty()) throw Error({file, 0, "switches"}, "no switches");
  std::map<int, int> node_line;
  const int count = static_cast<int>(spec.switches.size());
  auto switch_index = [&](const std::string& name) {
    return static_cast<int>(std::find(spec.switches.begin(), spec.switches.end(), name) -
                            spec.switches.begin());
  };
  for (const YAML::Node& l : root["links"]) {
    const int line = line_of(l);
    const SourceLocation where{file, line, "links"};
    cluster::CustomLink link;
    link.bw = default_bw;
    if (l.IsSequence() && l.size() == 2 && l[0].IsScalar() && l[1].IsScalar()) {
      link.a = l[0].Scalar();
      link.b = l[1].Scalar();
    } else if (l.IsMap() && l["a"] && l["b"]) {
      for (auto it = l.begin(); it != l.end(); ++it) {
        const std::string key = it->first.Scalar();
        const std::string v = it->second.IsScalar() ? it->second.Scalar() : "";
        if (key == "a") {
          link.a = v;
        } else if (key == "b") {
          link.b = v;
        } else if (key == "bandwidth") {
          link.bw = parse_bandwidth_with_unit(v, {file, line, "links.bandwidth"});
        } else if (key == "latency") {
          link.latency = parse_duration_with_unit(v, {file, line, "links.latency"});
        } else {
          throw Error({file, line, "links." + key}, "unknown key (expected a, b, bandwidth, latency)");
        }
      }
    } else {
      throw Error(where, "expected [a, b] or {a: ..., b: ..., bandwidth: ..., latency: ...}");
    }
    if (link.a == link.b) throw Error(where, fmt::format("a link joins '{}' to itself", link.a));
    const bool a_node = is_node(link.a), b_node = is_node(link.b);
    const int a = switch_index(link.a), b = switch_index(link.b);
    if ((!a_node && a == count) || (!b_node && b == count)) {
      throw Error(where, fmt::format("unknown endpoint in link {} - {} (switches are listed under "
                                     "`switches`, nodes are node0, node1, ...)",
                                     link.a, link.b));
    }
    if (a_node && b_node) throw Error(where, "a node links to a switch, not to another node");
    if (a_node || b_node) {
      const std::string& node = a_node ? link.a : link.b;
      const std::string digits = node.substr(4);
      if (digits.size() > 7 || std::stoi(digits) >= limits::kMaxWorkers) {
        throw Error(where, fmt::format("'{}': nodes are numbered below {}, the most workers stepcast takes",
                                       node, limits::kMaxWorkers));
      }
      const int n = std::stoi(digits);
      if (node_line.count(n)) {
        throw Error(where, fmt::format("node{} already has its link (line {})", n, node_line[n]));
      }
      node_line[n] = line;
    }
    spec.links.push_back(std::move(link));
  }
  int expected = 0;
  for (const auto& [n, line] : node_line) {
    if (n != expected) throw Error({file, 0, "links"}, fmt::format("node{} has no link", expected));
    ++expected;
  }
  // The whole-topology rules (every switch reaches every other) are the library's.
  try {
    scheme::validate_custom_topology(spec);
  } catch (const Error& e) {
    throw Error({file, 0, "links"}, e.message());
  }
  return spec;
}

namespace {

/// The model a scenario describes without a profile: the zoo's, rebuilt at workload.seq_len, or
/// the decoder of workload.transformer. Throws Error naming the key of a bad shape.
zoo::ModelSpec scenario_model(const Scenario& s) {
  const WorkloadSpec& w = s.workload;
  auto with_file = [&](const Error& e) { return Error({s.file, 0, e.where().key}, e.message()); };
  try {
    if (w.transformer.layers > 0) {
      zoo::TransformerShape shape = w.transformer;
      shape.seq_len = w.seq_len;
      return zoo::make_transformer("transformer", "decoder given by workload.transformer", shape);
    }
    const zoo::ModelSpec* model = zoo::find_model(w.model);
    if (model == nullptr) throw Error({s.file, 0, "workload.model"}, detail::unknown_model_message(w.model));
    if (model->transformer && w.seq_len > 0 && w.seq_len != model->transformer->seq_len) {
      zoo::TransformerShape shape = *model->transformer;
      shape.seq_len = w.seq_len;
      return zoo::make_transformer(model->name, model->description, shape);
    }
    return *model;
  } catch (const Error& e) {
    if (!e.where().file.empty()) throw;
    throw with_file(e);
  }
}

}  // namespace

zoo::ModelSpec model_of(const Scenario& scenario) { return scenario_model(scenario); }

namespace {

/// FLOPs of one worker's step: its batch through the model, recomputation included.
double step_flops(const Scenario& s) {
  const WorkloadSpec& w = s.workload;
  return w.batch_per_worker *
         zoo::step_flops_per_sample(scenario_model(s), w.backward_to_forward, w.checkpointing);
}

}  // namespace

Scenario with_micro_batch(const Scenario& scenario, int micro_batch,
                          workload::ActivationCheckpointing checkpointing) {
  Scenario out = scenario;
  WorkloadSpec& w = out.workload;
  if (w.batch_per_worker == micro_batch && w.checkpointing == checkpointing) return out;
  const bool from_flops =
      w.compute_source == ComputeSource::AchievedFlops || w.compute_source == ComputeSource::PeakEfficiency;
  if (!from_flops) {
    throw Error(
        {scenario.file, 0, "workload.compute_efficiency"},
        fmt::format("another micro-batch or recomputation needs the compute time from the model's FLOPs "
                    "(workload.achieved_flops, or workload.compute_efficiency with cluster.gpu.peak_flops); "
                    "it is {}, which holds for its own batch and recomputation only",
                    compute_source_text(scenario)));
  }
  if (micro_batch < 1) {
    throw Error({scenario.file, 0, "workload.micro_batch"},
                fmt::format("expected an integer >= 1, got {}", micro_batch));
  }
  w.batch_per_worker = micro_batch;
  w.checkpointing = checkpointing;
  const double rate = w.compute_source == ComputeSource::AchievedFlops
                          ? w.achieved_flops
                          : w.compute_efficiency * out.cluster.gpu_peak_flops;
  w.step_time = step_flops(out) / rate;
  return out;
}

namespace {

/// What parse_scenario settles once every key is read: the decoder's shape and sequence length,
/// and the step time from whichever compute source was given (exactly one).
/// workload.compute: shapes takes each kernel's time from the GPU's rates: a decoder, no other
/// compute source, and the rates it needs (a GEMM table or the roofline's peak, the memory
/// bandwidth), each failure naming its key.
void check_shapes_inputs(const Scenario& s, const Entries& entries, const std::string& file_name,
                         bool decoder, const std::vector<std::string>& given) {
  const SourceLocation where = location_of(entries, "workload.compute", file_name);
  if (!decoder) {
    throw Error(
        where,
        fmt::format("shapes times the kernels of a transformer decoder (workload.model: {} is not one)",
                    s.workload.model));
  }
  if (!given.empty()) {
    throw Error(location_of(entries, given.front(), file_name),
                fmt::format("workload.compute: shapes times each kernel from its shape; remove {} (or set "
                            "workload.compute: flops)",
                            given.front()));
  }
  const cluster::ClusterSpec& c = s.cluster;
  if (!(c.gpu_memory_bw > 0)) {
    throw Error(where,
                "shapes needs cluster.gpu.memory_bandwidth (e.g. 3.35TB/s): the memory-bound kernels (norms, "
                "activations, rotary, the optimizer step) run at it");
  }
  if (c.gemm.empty() && !(c.gpu_peak_flops > 0)) {
    throw Error(where,
                "shapes needs cluster.gpu.gemm (a measured GEMM table) or cluster.gpu.peak_flops (the spec "
                "sheet's roofline) for its GEMMs");
  }
  if (s.workload.precision == workload::Precision::FP8 && c.gemm.empty() && !(c.gpu_peak_flops_fp8 > 0)) {
    throw Error(location_of(entries, "workload.precision", file_name),
                "fp8 times its GEMMs at cluster.gpu.peak_flops_fp8 (the spec sheet's dense fp8 rate, e.g. "
                "1979TFLOPS for an H100 SXM) or from a GEMM table with fp8 rows (cluster.gpu.gemm); give one");
  }
  if (!(c.gpu_attention_flops > 0) && !(c.gpu_peak_flops > 0)) {
    throw Error(where,
                "shapes needs cluster.gpu.attention_flops (the measured flash-attention rate) or "
                "cluster.gpu.peak_flops for the attention core");
  }
  const cluster::GemmDtype dtype = detail::gemm_dtype(s.workload.precision);
  if (!c.gemm.empty() && !c.gemm.has(dtype)) {
    throw Error(location_of(entries, "cluster.gpu.gemm", file_name),
                fmt::format("the table {} has no {} rows, the GEMMs of workload.precision", c.gemm.file,
                            cluster::to_string(dtype)));
  }
  // Without flash attention the core is two batched GEMMs of activations, which fp8 leaves in bf16
  // (without a table they are on the roofline of cluster.gpu.peak_flops, required above).
  if (s.workload.precision == workload::Precision::FP8 && !s.workload.flash_attention && !c.gemm.empty() &&
      !c.gemm.has(cluster::GemmDtype::BF16)) {
    throw Error(
        location_of(entries, "cluster.gpu.gemm", file_name),
        fmt::format("the table {} has no bf16 rows: without flash attention (workload.flash_attention: "
                    "false) the attention core's batched GEMMs run in bf16 under fp8",
                    c.gemm.file));
  }
}

void resolve_workload(Draft& draft, const Entries& entries, const std::string& file_name, Needs needs) {
  Scenario& s = draft.scenario;
  WorkloadSpec& w = s.workload;
  const bool profiled = !w.profile.empty();
  const bool shaped = !draft.transformer_keys.empty();
  if (shaped) {
    if (draft.model_given) {
      throw Error(
          location_of(entries, "workload.model", file_name),
          fmt::format("give workload.model or workload.transformer, not both (workload.transformer.{} is "
                      "set; a zoo model's shape is fixed: describe the decoder by shape instead)",
                      draft.transformer_keys.front()));
    }
    for (const char* field : {"layers", "hidden", "ffn_hidden", "heads", "vocab"}) {
      if (std::find(draft.transformer_keys.begin(), draft.transformer_keys.end(), field) ==
          draft.transformer_keys.end()) {
        throw Error({file_name, 0, fmt::format("workload.transformer.{}", field)},
                    "required with workload.transformer (layers, hidden, ffn_hidden, heads and vocab)");
      }
    }
    if (w.transformer.kv_heads == 0) w.transformer.kv_heads = w.transformer.heads;
    if (w.transformer.experts == 0) w.transformer.experts = 1;
    if (w.transformer.top_k == 0) w.transformer.top_k = 1;
    if (draft.moe_layers) {
      w.transformer.moe_layers =
          workload::parse_moe_layers(draft.moe_layers->text, w.transformer.layers, draft.moe_layers->where);
    }
    if (w.seq_len == 0) {
      throw Error({file_name, 0, "workload.seq_len"},
                  "required with workload.transformer: tokens per sequence");
    }
    // Checked here, where the lines are known (build_workload's error named only the file).
    zoo::TransformerShape shape = w.transformer;
    shape.seq_len = w.seq_len;
    try {
      zoo::validate(shape);
    } catch (const Error& e) {
      throw Error(location_of(entries, e.where().key, file_name), e.message());
    }
  }
  const zoo::ModelSpec* zoo_model = draft.model_given ? zoo::find_model(w.model) : nullptr;
  const bool decoder = shaped || (zoo_model != nullptr && zoo_model->transformer.has_value());
  if (!decoder && !profiled) {
    for (const char* key : {"workload.seq_len", "workload.activation_checkpointing"}) {
      if (entries.count(key) != 0 && !(std::string_view(key) == "workload.activation_checkpointing" &&
                                       w.checkpointing == workload::ActivationCheckpointing::None)) {
        throw Error(location_of(entries, key, file_name),
                    fmt::format("applies to transformer decoders (workload.model: {} is not one)", w.model));
      }
    }
  }
  if (zoo_model != nullptr && zoo_model->transformer && w.seq_len == 0)
    w.seq_len = zoo_model->transformer->seq_len;
  if (zoo_model != nullptr && zoo_model->transformer && w.seq_len != zoo_model->transformer->seq_len) {
    // The zoo decoder rebuilt at workload.seq_len (GPT-2 has 1024 learned positions).
    zoo::TransformerShape shape = *zoo_model->transformer;
    shape.seq_len = w.seq_len;
    try {
      zoo::validate(shape);
    } catch (const Error& e) {
      throw Error(location_of(entries, e.where().key, file_name), e.message());
    }
  }

  // The compute source: exactly one.
  std::vector<std::string> given;
  if (draft.step_time) given.emplace_back(detail::kStepTimeKey);
  if (draft.throughput) given.emplace_back(detail::kThroughputKey);
  if (w.achieved_flops > 0) given.emplace_back("workload.achieved_flops");
  if (w.compute_efficiency > 0) given.emplace_back("workload.compute_efficiency");
  if (!w.layer_times.empty()) given.emplace_back("workload.layer_times");
  if (profiled) given.emplace_back("workload.profile");
  if (w.compute == ComputeMethod::Shapes) {
    check_shapes_inputs(s, entries, file_name, decoder, given);
    w.compute_source = ComputeSource::Shapes;
    if (needs == Needs::Workload) w.step_time = build_workload(s).step_time_alone();
    return;
  }
  if (given.size() > 1) {
    throw Error(location_of(entries, given[1], file_name),
                fmt::format("{} and {} both give the compute time; keep one", given[0], given[1]));
  }
  if (w.compute_efficiency > 0 && w.precision == workload::Precision::FP8) {
    // A share of which peak? fp8 runs its GEMMs at another rate than the rest of the step.
    throw Error(location_of(entries, "workload.compute_efficiency", file_name),
                "a share of cluster.gpu.peak_flops cannot say how fast fp8 runs (its GEMMs at the fp8 rate, the "
                "rest in bf16): use workload.compute: shapes, or a measured workload.achieved_flops or step time");
  }
  if (w.compute_efficiency > 0 && !(s.cluster.gpu_peak_flops > 0)) {
    throw Error(location_of(entries, "workload.compute_efficiency", file_name),
                "needs cluster.gpu.peak_flops (the GPU's spec-sheet FLOP/s) to turn into a rate");
  }
  if (profiled) {
    w.compute_source = ComputeSource::Profile;
    return;
  }
  if (draft.step_time || draft.throughput) {
    w.compute_source = ComputeSource::Measured;
    if (draft.step_time) {
      w.step_time = *draft.step_time;
    } else {
      w.step_time = w.batch_per_worker / *draft.throughput;
      // A tiny rate is a step time too long for anything (1e-320 samples/s overflows it).
      if (!(w.step_time <= limits::kMaxDuration)) {
        throw Error(
            location_of(entries, std::string(detail::kThroughputKey), file_name),
            fmt::format("{} samples/s at a batch of {} is a step of {}, more than the 1e6 s (11.6 days) "
                        "a step may take",
                        *draft.throughput, w.batch_per_worker, format_duration(w.step_time)));
      }
    }
    if (w.measured_with != MeasuredWith::Ps && s.cluster.gpu_memory_bw > 0 && needs == Needs::Workload) {
      // The measured step holds one worker's whole optimizer step (build_workload takes it out).
      const double parameters = static_cast<double>(scenario_model(s).num_parameters());
      const double optimizer =
          parameters * scheme::optimizer_bytes_per_parameter(s.scheme.optimizer) / s.cluster.gpu_memory_bw;
      if (!(optimizer < w.step_time)) {
        throw Error(
            location_of(entries, "cluster.gpu.memory_bandwidth", file_name),
            fmt::format("one worker's whole optimizer step on {} parameters at {}/s takes {}, at least "
                        "the measured step ({}) that holds it: the memory bandwidth is too low",
                        format_number(parameters), format_bytes(s.cluster.gpu_memory_bw),
                        format_duration(optimizer), format_duration(w.step_time)));
      }
    }
  } else if (!w.layer_times.empty()) {
    w.compute_source = ComputeSource::LayerTimes;
    if (needs == Needs::Workload) w.step_time = build_workload(s).step_time_alone();
  } else if (w.achieved_flops > 0 || w.compute_efficiency > 0) {
    const bool achieved = w.achieved_flops > 0;
    const std::string key = achieved ? "workload.achieved_flops" : "workload.compute_efficiency";
    const double rate = achieved ? w.achieved_flops : w.compute_efficiency * s.cluster.gpu_peak_flops;
    w.compute_source = achieved ? ComputeSource::AchievedFlops : ComputeSource::PeakEfficiency;
    if (needs == Needs::Workload) {
      const double flops = step_flops(s);
      w.step_time = flops / rate;
      if (!(w.step_time > 0 && w.step_time <= limits::kMaxDuration)) {
        throw Error(location_of(entries, key, file_name),
                    fmt::format("{} FLOPs per step ({} a worker) at {} is a step of {}, more than the 1e6 s "
                                "(11.6 days) a step may take: a smaller batch or a higher rate",
                                format_number(flops), format_count(w.batch_per_worker, "sample", "samples"),
                                format_flops(rate), format_duration(w.step_time)));
      }
    }
  } else if (needs == Needs::Workload) {
    throw Error({file_name, 0, std::string(detail::kStepTimeKey)},
                "required: the compute time, as workload.step_time (e.g. '292ms') or "
                "workload.single_worker_throughput (samples/s) measured on one worker, or "
                "workload.achieved_flops (e.g. '180TFLOPS'), or workload.compute_efficiency with "
                "cluster.gpu.peak_flops");
  }
}

}  // namespace

Scenario parse_scenario(std::string_view yaml_text, const std::string& file_name,
                        const std::vector<std::string>& overrides, Needs needs,
                        const std::vector<int>& worker_sweep) {
  Entries entries = read_entries(yaml_text, file_name);
  for (const std::string& text : overrides) apply_override(text, entries);

  auto throughput = entries.find(detail::kThroughputKey);
  auto step_time = entries.find(detail::kStepTimeKey);
  if (throughput != entries.end() && step_time != entries.end()) {
    // Name the one given second: the first reads as the intended value.
    const RawValue& first = throughput->second.where.line <= step_time->second.where.line ? throughput->second
                                                                                          : step_time->second;
    const RawValue& second = &first == &throughput->second ? step_time->second : throughput->second;
    throw Error(second.where, fmt::format("give either workload.step_time or "
                                          "workload.single_worker_throughput, not both ({} is on line {})",
                                          first.where.key, first.where.line));
  }

  Draft draft;
  for (const KeyDef& def : detail::key_table()) {
    if (auto it = entries.find(def.info.key); it != entries.end()) {
      def.apply(it->second, draft);
    } else if (def.apply_default) {
      def.apply(RawValue{def.info.default_value, {file_name, 0, def.info.key}}, draft);
    }
  }
  // The shape's switches (swiglu, dropout, ...) have defaults, so only the entries say they were given.
  constexpr std::string_view kShapePrefix = "workload.transformer.";
  for (const auto& [key, value] : entries) {
    if (!key.starts_with(kShapePrefix)) continue;
    const std::string_view field = std::string_view(key).substr(kShapePrefix.size());
    if (std::find(draft.transformer_keys.begin(), draft.transformer_keys.end(), field) ==
        draft.transformer_keys.end())
      draft.transformer_keys.emplace_back(field);
  }

  Scenario& s = draft.scenario;
  // Every random choice takes the scenario's seed: node placement and ECMP's hash.
  s.cluster.placement_seed = s.options.seed;
  s.cluster.routing_seed = s.options.seed;
  // A scenario that names its parallel layout trains in micro-batches: its batch per worker is the
  // micro-batch (workload.micro_batch, default 1), at every point of a sweep over the layout.
  const bool layout_named = std::any_of(entries.begin(), entries.end(), [](const auto& entry) {
    const std::string& key = entry.first;
    return key.starts_with("training.parallel.") || key.starts_with("training.pipeline.") ||
           key.starts_with("training.tensor.") || key == "workload.micro_batch" ||
           key == "workload.global_batch";
  });
  if (draft.micro_batch) {
    if (entries.count("workload.batch_per_worker") != 0) {
      throw Error(
          location_of(entries, "workload.micro_batch", file_name),
          "give workload.micro_batch or workload.batch_per_worker, not both (they are the same number "
          "with a parallel layout)");
    }
    s.workload.batch_per_worker = *draft.micro_batch;
  } else if (layout_named && entries.count("workload.batch_per_worker") == 0) {
    s.workload.batch_per_worker = 1;
  }
  if (!s.cluster.placement.empty()) {
    // An uneven placement says how many workers there are, and a node's GPU slots at least.
    if (entries.count("cluster.workers") == 0) {
      s.cluster.workers = std::accumulate(s.cluster.placement.begin(), s.cluster.placement.end(), 0);
    }
    if (entries.count("cluster.workers_per_node") == 0) {
      s.cluster.workers_per_node = *std::max_element(s.cluster.placement.begin(), s.cluster.placement.end());
    }
  }
  // NCCL's protocol model wherever the user names one of NCCL's algorithms (ring, tree, or auto's
  // choice between them): the links alone on request (protocol: links), with the algorithm unnamed
  // or one NCCL does not run, or with size regimes calibrated (issue 30: a tree costed by the links alone
  // was 80% off where NCCL's model was within 16%).
  if (!draft.protocol_given) {
    switch (s.scheme.allreduce.algorithm) {
      case scheme::AllReduceAlgorithm::Auto:
        s.scheme.allreduce.protocol = scheme::CollectiveProtocol::Auto;
        break;
      case scheme::AllReduceAlgorithm::Ring:
      case scheme::AllReduceAlgorithm::Tree:
        // cluster.collective_regimes are a calibration of the links' costs: they keep `links`.
        if (draft.algorithm_given && s.cluster.collective_regimes.empty())
          s.scheme.allreduce.protocol = scheme::CollectiveProtocol::Auto;
        break;
      case scheme::AllReduceAlgorithm::HalvingDoubling:
      case scheme::AllReduceAlgorithm::Hierarchical:
      case scheme::AllReduceAlgorithm::Hdrm:
        break;
    }
  }
  if (!draft.name_given) {
    s.name = std::filesystem::path(file_name).stem().string();
    if (s.name.empty()) s.name = "scenario";
  }
  const bool profiled = !s.workload.profile.empty();
  if (profiled && (draft.step_time || draft.throughput)) {
    const auto& key = draft.step_time ? detail::kStepTimeKey : detail::kThroughputKey;
    throw Error(location_of(entries, std::string(key), file_name),
                "workload.profile gives the measured step time; remove this key");
  }
  if (!draft.model_given && draft.transformer_keys.empty() && !profiled && needs == Needs::Workload) {
    throw Error(
        {file_name, 0, "workload.model"},
        fmt::format("required: a model from the zoo ({}), or a decoder by shape (workload.transformer)",
                    model_list()));
  }
  resolve_workload(draft, entries, file_name, needs);
  if (s.scheme.fsdp.fp8_all_gather && s.workload.precision != workload::Precision::FP8) {
    // Only fp8 training has an fp8 copy of the weights to gather.
    throw Error(
        location_of(entries, "training.fsdp.fp8_all_gather", file_name),
        fmt::format("gathers the weights' fp8 copies, which only workload.precision: fp8 keeps (got {})",
                    name_of(s.workload.precision)));
  }
  // The job as epochs of a dataset.
  predict::JobOptions& job = s.options.job;
  if (job.epochs > 0 || draft.dataset_size) {
    if (!(job.epochs > 0)) {
      throw Error(location_of(entries, "job.dataset", file_name),
                  "job.dataset needs job.epochs (how many passes)");
    }
    if (!draft.dataset_size) {
      throw Error(location_of(entries, "job.epochs", file_name),
                  "job.epochs needs job.dataset (a name such as imagenet-1k, or a number of samples)");
    }
    if (entries.count("job.samples") != 0) {
      throw Error(location_of(entries, "job.samples", file_name),
                  "give job.samples or job.epochs with job.dataset, not both");
    }
    job.samples = job.epochs * *draft.dataset_size;
    if (!(job.samples <= limits::kMaxSamples)) {
      throw Error(location_of(entries, "job.epochs", file_name),
                  fmt::format("{} epochs of {} samples is {:.3g} samples, more than 1e15", job.epochs,
                              *draft.dataset_size, job.samples));
    }
  }
  // The job in tokens: for a language model, instead of samples.
  if (job.tokens > 0) {
    if (job.samples > 0) {
      throw Error(location_of(entries, "workload.tokens", file_name),
                  fmt::format("give workload.tokens or {}, not both",
                              job.epochs > 0 ? "job.epochs with job.dataset" : "job.samples"));
    }
    if (needs == Needs::Workload && s.workload.profile.empty() && !model_of(s).transformer) {
      throw Error(location_of(entries, "workload.tokens", file_name),
                  fmt::format("the model '{}' is not a language model (no tokens per sample): give the job "
                              "in samples (job.samples) instead",
                              s.workload.model));
    }
  }

  if (s.options.compute_cv_auto && draft.compute_cv_auto) {
    if (s.workload.profile.empty()) {
      throw Error(draft.compute_cv_auto->where,
                  "'auto' takes the step-to-step variation of workload.profile, and there is none; "
                  "give a number (0.05 = 5%)");
    }
    if (s.workload.step_samples != StepSamples::All) {
      throw Error(draft.compute_cv_auto->where,
                  "'auto' needs the profile's per-step samples: set workload.step_samples: all");
    }
  }
  for (const std::string& key : s.plan.vary) {
    for (const PlanKey& k : plan_keys()) {
      if (k.key != key || !k.by_default) continue;
      std::string optional;
      for (const PlanKey& o : plan_keys()) {
        if (!o.by_default) optional += (optional.empty() ? "" : ", ") + std::string(o.key);
      }
      throw Error(
          location_of(entries, "plan.vary", file_name),
          fmt::format("{} is searched by default (plan.fixed holds it); plan.vary adds the keys that are "
                      "not: {}",
                      key, optional));
    }
  }
  for (const std::string& key : s.plan.fixed) {
    if (std::find(s.plan.vary.begin(), s.plan.vary.end(), key) != s.plan.vary.end()) {
      throw Error(location_of(entries, "plan.fixed", file_name),
                  fmt::format("{} is in both plan.vary and plan.fixed; searched or held, not both", key));
    }
  }
  if (draft.custom_topology && s.cluster.topology != cluster::Topology::Custom) {
    throw Error(draft.custom_topology->where, "cluster.custom needs cluster.topology = custom");
  }
  if (s.cluster.topology == cluster::Topology::Custom) {
    if (!draft.custom_topology) {
      throw Error(location_of(entries, "cluster.topology", file_name),
                  "a custom topology needs cluster.custom: the path of its YAML file");
    }
    s.cluster.custom = load_custom_topology(*draft.custom_topology, s.cluster.nic_bw);
  }
  std::optional<workload::Workload> workload;
  if (needs == Needs::Workload && s.scheme.parallel.composed() && s.workload.profile.empty()) {
    try {
      workload = build_workload(s);
    } catch (const Error& e) {
      if (!e.where().file.empty()) throw;
      throw Error(location_of(entries, e.where().key, file_name), e.message());
    }
  }
  validate_at(s, entries, file_name, worker_sweep, workload ? &*workload : nullptr);
  return s;
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides, Needs needs,
                       const std::vector<int>& worker_sweep) {
  Scenario s = parse_scenario(read_text_file(path, "scenario file"), path, overrides, needs, worker_sweep);
  s.file = path;
  return s;
}

void check_consistency(const Scenario& scenario, const std::string& key) {
  try {
    scheme::validate(scenario.cluster, scenario.scheme);
  } catch (const Error& e) {
    // The caller changed `key` (a sweep); the rule's own key stays in the message.
    throw Error({scenario.file, 0, key},
                e.where().key == key ? e.message() : fmt::format("{}: {}", e.where().key, e.message()));
  }
}

namespace {

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

/// Profiles other than PyTorch traces: picked by extension (Chakra .et, layer table .csv,
/// ASTRA-sim .txt) or, for JSON, by content (TensorFlow timeline). Empty when none applies.
std::optional<workload::Workload> read_other_profile(const std::string& path) {
  if (ends_with(path, ".et")) return profile::read_chakra_trace(path);
  if (ends_with(path, ".csv")) return profile::read_layer_table(path);
  if (ends_with(path, ".txt")) return profile::read_astrasim_workload(path);
  if (profile::looks_like_tf_timeline(path)) return profile::read_tf_timeline(path);
  return std::nullopt;
}

workload::Workload build_profiled_workload(const Scenario& scenario) {
  const SourceLocation where{scenario.file, 0, "workload.profile"};
  const WorkloadSpec& w = scenario.workload;
  try {
    if (std::optional<workload::Workload> other = read_other_profile(w.profile)) {
      other->batch_per_worker = w.batch_per_worker;
      return std::move(*other);
    }
  } catch (const Error& e) {
    throw Error(where, e.what());
  }
  profile::KinetoTrace trace;
  try {
    trace = profile::read_kineto_trace(w.profile);
  } catch (const Error& e) {
    throw Error(where, e.what());
  }
  const int traced_workers = trace.metadata.world_size.value_or(1);
  // At the trace's own size its measured collectives are replayed, unless the user asked for the
  // model at every size (a continuous curve through the traced size).
  const bool replay = scenario.cluster.workers == traced_workers && w.replay == ReplayMode::Auto;
  profile::KinetoWorkloadOptions options;
  options.batch_per_worker = w.batch_per_worker;
  options.step_samples = w.step_samples == StepSamples::All;
  options.collectives = replay ? profile::KinetoWorkloadOptions::Collectives::Measured
                               : profile::KinetoWorkloadOptions::Collectives::Simulated;
  profile::KinetoWorkload converted;
  try {
    converted = profile::convert_kineto(trace, options);
  } catch (const Error& e) {
    throw Error(where, e.what());
  }
  converted.workload.traced_workers = traced_workers;
  converted.workload.replayed = replay;
  if (replay) {
    // The measured collectives already hold the communication: simulate none on top.
    converted.workload.tensors.clear();
    return std::move(converted.workload);
  }
  if (converted.gradient_tensors == 0) {
    if (w.model.empty()) {
      throw Error(where, fmt::format("the trace has no all-reduce kernels to size the gradients of {} "
                                     "workers; name a zoo model in workload.model",
                                     scenario.cluster.workers));
    }
    const zoo::ModelSpec* model = zoo::find_model(w.model);
    if (model == nullptr) {
      throw Error({scenario.file, 0, "workload.model"}, detail::unknown_model_message(w.model));
    }
    const double element = workload::bytes_per_element(w.precision);
    std::vector<std::pair<std::string, double>> parameters;
    for (const zoo::Layer& layer : model->layers) {
      for (const zoo::ParamTensor& p : layer.params)
        parameters.emplace_back(p.name, static_cast<double>(p.elements) * element);
    }
    profile::attach_gradients(converted, parameters);
  }
  return std::move(converted.workload);
}

}  // namespace

workload::Workload build_workload(const Scenario& scenario) {
  if (!scenario.workload.profile.empty()) {
    // The traced step ran its optimizer's kernels: they are among the ops.
    workload::Workload traced = build_profiled_workload(scenario);
    traced.optimizer_in_ops = true;
    traced.comm_cpu_per_byte = scenario.workload.comm_cpu_per_byte;
    return traced;
  }
  const zoo::ModelSpec model = scenario_model(scenario);
  const WorkloadSpec& w = scenario.workload;
  // Measured layer times replace the split of a step time, which then only has to be valid.
  const bool measured_layers = !w.layer_times.empty();
  const bool from_shapes = w.compute == ComputeMethod::Shapes;
  workload::Workload out =
      zoo::to_workload(model, {.batch_per_worker = w.batch_per_worker,
                               .step_time = measured_layers || from_shapes ? 1.0 : w.step_time,
                               .precision = w.precision,
                               .backward_to_forward = w.backward_to_forward,
                               .checkpointing = w.checkpointing});
  if (measured_layers) {
    try {
      profile::apply_layer_times(out, profile::read_layer_times(w.layer_times));
    } catch (const Error& e) {
      throw Error(
          {e.where().file.empty() ? scenario.file : e.where().file, e.where().line, "workload.layer_times"},
          e.message());
    }
  }
  if (from_shapes) {
    // Each layer's ops timed from its kernels on one rank of the layout (to_workload's order: the
    // forwards in layer order, then the backwards in reverse).
    const detail::ShapeTimes times = detail::time_from_shapes(model, scenario);
    const size_t layers = times.forward.size();
    STEPCAST_ASSERT(out.ops.size() == 2 * layers);
    for (size_t l = 0; l < layers; ++l) {
      out.ops[l].duration = times.forward[l];
      out.ops[2 * layers - 1 - l].duration = times.backward[l];
    }
    out.facts.timed_per_rank = true;
    out.facts.attention_forward = times.attention_forward;
    out.facts.attention_backward = times.attention_backward;
    out.facts.experts_time_forward = times.experts_forward;
    out.facts.experts_time_backward = times.experts_backward;
    out.notes = times.notes;
  }
  if (w.measured_with == MeasuredWith::Ps && w.compute_source == ComputeSource::Measured) {
    // The measurement included one worker's round trip to the servers: the compute is what is
    // left once that is taken out.
    scheme::SchemeConfig ps = scenario.scheme;
    ps.scheme = scheme::Scheme::ParameterServer;
    ps.mode = scheme::Mode::Sync;
    cluster::ClusterSpec one = scenario.cluster;
    one.workers = 1;
    predict::Options options = scenario.options;
    options.job = {};
    options.compute_cv = 0;
    options.compute_cv_auto = false;
    auto one_worker_step = [&](double compute) {
      workload::Workload at = zoo::to_workload(model, {.batch_per_worker = w.batch_per_worker,
                                                       .step_time = compute,
                                                       .precision = w.precision,
                                                       .backward_to_forward = w.backward_to_forward,
                                                       .checkpointing = w.checkpointing});
      at.comm_cpu_per_byte = w.comm_cpu_per_byte;  // the measured round trip paid it too
      return predict::predict(at, one, ps, options).step_time;
    };
    // The one-worker step grows with the compute; bisect for the compute that gives the
    // measurement (a fixed point can oscillate where pulls overlap the forward pass).
    double lo = 1e-9 * w.step_time, hi = w.step_time;
    if (one_worker_step(lo) >= w.step_time) {
      throw Error(
          {scenario.file, 0, "workload.measured_with"},
          fmt::format("one worker's predicted round trip to the servers ({}) is at least the measured step "
                      "({}): the measurement cannot have included it",
                      format_duration(one_worker_step(lo)), format_duration(w.step_time)));
    }
    double compute = hi;
    for (int i = 0; i < 100; ++i) {
      compute = 0.5 * (lo + hi);
      const double step = one_worker_step(compute);
      if (std::fabs(step - w.step_time) <= 1e-12 * w.step_time) break;
      (step < w.step_time ? lo : hi) = compute;
      if (hi - lo <= 1e-13 * w.step_time) break;
    }
    out = zoo::to_workload(model, {.batch_per_worker = w.batch_per_worker,
                                   .step_time = compute,
                                   .precision = w.precision,
                                   .backward_to_forward = w.backward_to_forward,
                                   .checkpointing = w.checkpointing});
    out.facts.baseline_step_time = w.step_time;
  }
  if (w.compute_source == ComputeSource::Measured && w.measured_with != MeasuredWith::Ps &&
      scenario.cluster.gpu_memory_bw > 0) {
    // One worker alone ran its whole optimizer step in the measured step (with a parameter
    // server, the servers did): the ops get the rest, and each scheme runs its own optimizer step.
    scheme::SchemeConfig alone = scenario.scheme;
    alone.scheme = scheme::Scheme::AllReduce;
    cluster::ClusterSpec one = scenario.cluster;
    one.workers = 1;
    const double optimizer = scheme::optimizer_step_time(out, one, alone);
    if (!(optimizer < w.step_time)) {
      throw Error(
          {scenario.file, 0, "cluster.gpu.memory_bandwidth"},
          fmt::format("one worker's whole optimizer step at {}/s ({} for {} parameters) is at least the "
                      "measured step ({}): the memory bandwidth is too low for this measurement",
                      format_bytes(scenario.cluster.gpu_memory_bw), format_duration(optimizer),
                      format_number(out.facts.parameters > 0
                                        ? out.facts.parameters
                                        : out.parameter_bytes() / workload::bytes_per_element(w.precision)),
                      format_duration(w.step_time)));
    }
    workload::Workload rest = zoo::to_workload(model, {.batch_per_worker = w.batch_per_worker,
                                                       .step_time = w.step_time - optimizer,
                                                       .precision = w.precision,
                                                       .backward_to_forward = w.backward_to_forward,
                                                       .checkpointing = w.checkpointing});
    // The measured step is one worker training alone, its optimizer step included.
    rest.facts.baseline_step_time =
        out.facts.baseline_step_time > 0 ? out.facts.baseline_step_time : w.step_time;
    out = std::move(rest);
  }
  if (!(out.facts.baseline_step_time > 0)) {
    // Speed-up is against one GPU training the whole model alone: its compute (from shapes, the
    // kernels at t = c = e = 1, not one rank's of the layout) and its whole optimizer step, which
    // it takes once per batch_per_worker samples. With micro-batches (a global batch) one GPU
    // alone would accumulate the global batch over a step as the job does, its optimizer step
    // spread over its global_batch / micro_batch micro-batches: a micro-batch's compute and that
    // share of the optimizer step (the whole step at one micro-batch, where the job is the same).
    double alone = out.step_time_alone();
    if (from_shapes && scenario.scheme.parallel != scheme::ParallelConfig{}) {
      Scenario whole = scenario;
      whole.scheme.parallel = scheme::ParallelConfig{};
      const detail::ShapeTimes times = detail::time_from_shapes(model, whole);
      alone = std::accumulate(times.forward.begin(), times.forward.end(), 0.0) +
              std::accumulate(times.backward.begin(), times.backward.end(), 0.0);
    }
    scheme::SchemeConfig by_itself = scenario.scheme;
    by_itself.scheme = scheme::Scheme::AllReduce;
    cluster::ClusterSpec one = scenario.cluster;
    one.workers = 1;
    const double micro_batches_alone =
        scenario.scheme.parallel.global_batch > 0
            ? std::max(1.0, static_cast<double>(scenario.scheme.parallel.global_batch) / w.batch_per_worker)
            : 1.0;
    out.facts.baseline_step_time = alone + scheme::optimizer_step_time(out, one, by_itself) / micro_batches_alone;
  }
  out.comm_cpu_per_byte = w.comm_cpu_per_byte;
  if (model.transformer) {
    out.facts.activation_bytes =
        zoo::activation_bytes(*model.transformer, w.batch_per_worker, w.checkpointing,
                              zoo::activation_element_bytes(w.precision), w.flash_attention, w.loss);
    out.facts.flash_attention = w.flash_attention;
    out.facts.loss = w.loss;
    out.facts.moe_imbalance = w.moe_imbalance;
    out.facts.moe_capacity_factor = w.moe_capacity_factor;
    out.facts.moe_placement = w.moe_placement;
    if (!w.moe_routing.empty()) {
      const zoo::TransformerShape& shape = *model.transformer;
      if (shape.experts <= 1) {
        throw Error({scenario.file, 0, "workload.moe.routing"},
                    fmt::format("routing counts tokens per expert; '{}' has dense MLPs", model.name));
      }
      if (w.moe_imbalance != 1) {
        throw Error({scenario.file, 0, "workload.moe.imbalance"},
                    "give workload.moe.imbalance or workload.moe.routing, not both: the routing table measures it");
      }
      out.facts.moe_routing =
          workload::parse_moe_routing(read_text_file(w.moe_routing, "routing table"), w.moe_routing, shape);
    }
  }
  return out;
}

std::string compute_source_text(const Scenario& scenario) {
  const WorkloadSpec& w = scenario.workload;
  // From FLOPs the time is batch_per_worker samples of the whole model on one GPU: a step of
  // plain data parallelism, but one micro-batch of a parallel layout, whose step runs several.
  const std::string flops_time =
      scenario.scheme.parallel.composed()
          ? fmt::format("{} for one micro-batch ({}) on one GPU holding the whole model",
                        format_duration(w.step_time), format_count(w.batch_per_worker, "sample", "samples"))
          : fmt::format("{} per step of one worker", format_duration(w.step_time));
  switch (w.compute_source) {
    case ComputeSource::Measured:
      return fmt::format(
          "measured, {} per step of one worker alone (workload.step_time or "
          "workload.single_worker_throughput){}",
          format_duration(w.step_time),
          scenario.cluster.gpu_memory_bw > 0 && w.measured_with != MeasuredWith::Ps
              ? ", its whole optimizer step included (taken out; each scheme runs its own)"
              : "");
    case ComputeSource::Profile:
      return fmt::format("profiled, the ops of {} (workload.profile)", w.profile);
    case ComputeSource::AchievedFlops:
      return fmt::format("the model's FLOPs at {} per GPU (workload.achieved_flops): {}",
                         format_flops(w.achieved_flops), flops_time);
    case ComputeSource::LayerTimes:
      return fmt::format(
          "measured per layer on one GPU ({}, workload.layer_times; blocks not measured repeat "
          "the measured ones): {} per step of one worker",
          w.layer_times, format_duration(w.step_time));
    case ComputeSource::PeakEfficiency:
      return fmt::format(
          "the model's FLOPs at {:.3g}% of {} peak (workload.compute_efficiency, "
          "cluster.gpu.peak_flops): {}",
          100 * w.compute_efficiency, format_flops(scenario.cluster.gpu_peak_flops), flops_time);
    case ComputeSource::Shapes: {
      const cluster::ClusterSpec& c = scenario.cluster;
      const std::string gemms =
          c.gemm.empty()
              ? fmt::format("GEMMs on a roofline of the spec sheet ({} peak{}, {}/s), not a measurement",
                            format_flops(w.precision == workload::Precision::FP8 ? c.gpu_peak_flops_fp8
                                                                                 : c.gpu_peak_flops),
                            w.precision == workload::Precision::FP8 ? " in fp8" : "", format_bytes(c.gpu_memory_bw))
              : fmt::format("GEMMs from the measured table {} (cluster.gpu.gemm)", c.gemm.file);
      const std::string attention =
          c.gpu_attention_flops > 0 ? fmt::format("attention at {} (cluster.gpu.attention_flops)",
                                                  format_flops(c.gpu_attention_flops))
                                    : fmt::format("attention at the {} peak (a roofline, not a measurement)",
                                                  format_flops(c.gpu_peak_flops));
      return fmt::format(
          "from shapes (workload.compute: shapes): {}; {}; memory-bound kernels at {}/s: {} per step of one "
          "worker "
          "alone, one micro-batch of one rank of the layout",
          gemms, attention, format_bytes(c.gpu_memory_bw), format_duration(w.step_time));
    }
  }
  return "";
}

std::vector<ResolvedKey> resolved_keys(const Scenario& scenario) {
  std::vector<ResolvedKey> out;
  for (const KeyDef& def : detail::key_table()) {
    detail::Rendered r = def.render(scenario);
    out.push_back({def.info.key, std::move(r.value), r.is_number});
  }
  std::sort(out.begin(), out.end(), [](const ResolvedKey& a, const ResolvedKey& b) { return a.key < b.key; });
  return out;
}

}  // namespace stepcast::scenario
