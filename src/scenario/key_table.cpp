#include "key_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <utility>

#include "stepcast/detail/text_file.hpp"
#include "stepcast/limits.hpp"
#include "stepcast/units.hpp"
#include "stepcast/workload/moe_layers.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::scenario::detail {
namespace {

using predict::Predictor;
using scheme::AllReduceAlgorithm;
using scheme::CollectiveProtocol;
using scheme::Mode;
using scheme::PsOrder;
using scheme::PsPartition;
using scheme::PsPlacement;
using scheme::Scheme;
using workload::Precision;

[[noreturn]] void fail(const RawValue& value, std::string_view expected) {
  throw Error(value.where, fmt::format("expected {}, got '{}'", expected, value.text));
}

// Bounds of number keys without a physical limit in units.hpp: far beyond real values (a
// backward pass is 2-3x the forward, fat-trees are oversubscribed up to about 10:1).
constexpr double kMaxBackwardRatio = 1000;
constexpr double kMaxOversubscription = 1000;

// YAML allows "+8"; std::from_chars does not.
std::string_view number_text(const RawValue& value) {
  std::string_view s = value.text;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  return s;
}

template <class T>
T parse_integer(const RawValue& value, T min, T max, std::string_view expected) {
  std::string_view s = number_text(value);
  T result{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), result);
  // The whole text must be the number: "8 workers" and "2.5" are not integers.
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || result < min || result > max) {
    fail(value, expected);
  }
  return result;
}

double parse_number(const RawValue& value, double min, bool min_allowed, std::string_view expected) {
  std::string_view s = number_text(value);
  double result = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), result);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(result) ||
      result < min || (!min_allowed && result == min)) {
    fail(value, expected);
  }
  return result;
}

// A size that must carry its unit ("1.1GB", "0B"): a bare number could be bytes, MB or GB.
double parse_size_with_unit(const RawValue& value) { return parse_bytes_with_unit(value.text, value.where); }

// Plain numbers render without trailing zeros ("2", "0.5", "219.178").
std::string echo_number(double value) { return fmt::format("{:.6g}", value); }

template <class E>
using Choices = std::vector<std::pair<std::string_view, E>>;

template <class E>
std::string choice_list(const Choices<E>& choices) {
  std::string out;
  for (const auto& [name, value] : choices) {
    if (!out.empty()) out += '|';
    out += name;
  }
  return out;
}

// An enum's choices are its names, beside the type (stepcast/enum_names.hpp), in declaration order.
template <NamedEnum E>
const Choices<E>& enum_choices() {
  static const Choices<E> c = [] {
    Choices<E> out;
    for (E value : enum_values<E>()) out.emplace_back(name_of(value), value);
    return out;
  }();
  return c;
}
const Choices<bool>& booleans() {
  static const Choices<bool> c{{"false", false}, {"true", true}};
  return c;
}

/// "tp-cp-dp-pp": the rank order, fastest-varying dimension first, every one of tp, cp, dp, pp once.
std::array<scheme::ParallelDimension, scheme::kRankDimensions> parse_rank_order(const RawValue& v) {
  constexpr std::string_view kExpected =
      "the four dimensions tp, cp, dp and pp in some order, fastest first, "
      "joined by '-' (Megatron's default tp-cp-dp-pp)";
  std::array<scheme::ParallelDimension, scheme::kRankDimensions> order{};
  std::array<bool, scheme::kRankDimensions> seen{};
  std::string_view text = v.text;
  size_t n = 0;
  while (!text.empty()) {
    const size_t end = text.find('-');
    const std::string_view name = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    bool known = false;
    for (int d = 0; d < scheme::kRankDimensions; ++d) {
      const auto dimension = static_cast<scheme::ParallelDimension>(d);
      if (name != name_of(dimension)) continue;
      if (seen[static_cast<size_t>(d)] || n >= order.size()) fail(v, kExpected);
      seen[static_cast<size_t>(d)] = true;
      order[n++] = dimension;
      known = true;
    }
    if (!known) fail(v, kExpected);
  }
  if (n != order.size()) fail(v, kExpected);
  return order;
}

// Row builders. `field` is a generic lambda returning a reference into a Scenario, so the same
// accessor serves parsing (Scenario&) and rendering (const Scenario&).

// Upper bounds keep every integer far from overflow and the simulation within seconds to
// minutes; they are well above any cluster or run length the models are meant for.
using limits::kMaxWorkers;
constexpr int kMaxServers = 4096;
constexpr int kMaxSteps = 1000;
using limits::kMaxBatch;

template <class F>
KeyDef integer_key(std::string key, std::string def, int min, int max, std::string description, F field) {
  std::string expected = fmt::format("an integer in [{}, {}]", min, max);
  return {
      {std::move(key), fmt::format("integer in [{}, {}]", min, max), std::move(def), std::move(description)},
      true,
      [field, min, max, expected](const RawValue& v, Draft& d) {
        field(d.scenario) = parse_integer<int>(v, min, max, expected);
      },
      [field](const Scenario& s) {
        return Rendered{fmt::format("{}", field(s)), true};
      }};
}

/// A plain number in [min, max] ((min, max] without min_allowed). Every number key has a
/// finite upper bound: without one 1e308 passes here and overflows the predictors' sums (a NaN
/// or inf step time, reported without the key or the line).
template <class F>
KeyDef number_key(std::string key, std::string def, double min, bool min_allowed, double max,
                  std::string description, F field) {
  std::string bound =
      fmt::format("in {}{}, {}]", min_allowed ? "[" : "(", echo_number(min), echo_number(max));
  std::string expected = "a number " + bound;
  return {{std::move(key), "number " + bound, std::move(def), std::move(description)},
          true,
          [field, min, min_allowed, max, expected](const RawValue& v, Draft& d) {
            const double x = parse_number(v, min, min_allowed, expected);
            if (x > max) fail(v, expected);
            field(d.scenario) = x;
          },
          [field](const Scenario& s) {
            return Rendered{echo_number(field(s)), true};
          }};
}

template <class E, class F>
KeyDef choice_key(std::string key, std::string def, const Choices<E>& choices, std::string description,
                  F field) {
  std::string list = choice_list(choices);
  return {{std::move(key), "one of " + list, std::move(def), std::move(description)},
          true,
          [field, &choices, list](const RawValue& v, Draft& d) {
            for (const auto& [name, value] : choices) {
              if (v.text == name) {
                field(d.scenario) = value;
                return;
              }
            }
            fail(v, "one of " + list);
          },
          [field, &choices](const Scenario& s) {
            for (const auto& [name, value] : choices) {
              if (field(s) == value) return Rendered{std::string(name), false};
            }
            return Rendered{"?", false};
          }};
}

template <class F>
KeyDef bandwidth_key(std::string key, std::string def, std::string description, F field) {
  return {{std::move(key), "bandwidth", std::move(def), std::move(description)},
          true,
          [field](const RawValue& v, Draft& d) {
            field(d.scenario) = parse_bandwidth_with_unit(v.text, v.where);
          },
          [field](const Scenario& s) {
            return Rendered{echo_byte_rate(field(s)), false};
          }};
}

/// A bandwidth cap of NCCL's model: a bandwidth, or 0 / none for no cap; unset, NCCL's table.
/// `field` returns the std::optional<double> the key sets; `table` what applies when it is unset.
template <class F, class Table>
KeyDef cap_key(std::string key, std::string def, std::string description, F field, Table table) {
  return {{std::move(key), "bandwidth, or 0 / none (no cap)", std::move(def), std::move(description)},
          false,
          [field](const RawValue& v, Draft& d) {
            std::string_view s = number_text(v);
            double zero = -1;
            const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), zero);
            const bool no_cap = v.text == "none" ||
                                (!s.empty() && ec == std::errc() && end == s.data() + s.size() && zero == 0);
            field(d.scenario) = no_cap ? 0.0 : parse_bandwidth_with_unit(v.text, v.where);
          },
          [field, table](const Scenario& s) {
            const std::optional<double>& set = field(s);
            const double bw = set ? *set : table(s);
            if (!(bw > 0)) return Rendered{"none", false};
            return Rendered{
                set ? echo_byte_rate(bw) : fmt::format("{} (NCCL's table)", rounded_byte_rate(bw)), false};
          }};
}

template <class F>
KeyDef duration_key(std::string key, std::string def, std::string description, F field) {
  return {
      {std::move(key), "duration", std::move(def), std::move(description)},
      true,
      [field](const RawValue& v, Draft& d) { field(d.scenario) = parse_duration_with_unit(v.text, v.where); },
      [field](const Scenario& s) {
        return Rendered{echo_duration(field(s)), false};
      }};
}

// The file a key names, relative to the scenario file that names it; an error naming the key
// (and saying `what` it looked for) when there is no regular file there.
std::filesystem::path existing_file(const RawValue& v, std::string_view what) {
  std::filesystem::path path(v.text);
  if (path.is_relative()) path = std::filesystem::path(v.where.file).parent_path() / path;
  std::error_code ec;
  if (v.text.empty() || !std::filesystem::is_regular_file(path, ec)) {
    throw Error(v.where, fmt::format("no {} at '{}'", what, path.string()));
  }
  return path;
}

// An optional rate that must carry its unit (a bare number could be FLOP/s or TFLOP/s); unset
// (0) until given.
template <class F>
KeyDef optional_rate_key(std::string key, std::string def, std::string description, F field) {
  return {{std::move(key), "FLOP/s", std::move(def), std::move(description)},
          false,
          [field](const RawValue& v, Draft& d) {
            if (!v.text.empty() &&
                (std::isdigit(static_cast<unsigned char>(v.text.back())) != 0 || v.text.back() == '.')) {
              fail(v, "a rate with its unit, such as '450TFLOPS'");
            }
            const double rate = parse_flops_with_unit(v.text, v.where);
            if (!(rate > 0)) fail(v, "a rate > 0 FLOP/s");
            field(d.scenario) = rate;
          },
          [field](const Scenario& s) {
            return Rendered{field(s) > 0 ? echo_flops(field(s)) : "unset", false};
          }};
}

// cluster.collective_regimes: items "SIZE LATENCY BANDWIDTH" separated by commas (a YAML list
// arrives joined by commas) or semicolons, sizes strictly ascending; or "none" (no regimes, so
// that --set can switch off the regimes of a file).
std::vector<cluster::CollectiveRegime> parse_regimes(const RawValue& value) {
  if (value.text == "none") return {};
  constexpr std::string_view kExpected = "items like '1MiB 5us 300GB/s' (from size, step latency, bandwidth)";
  constexpr size_t kMaxRegimes = 64;
  std::vector<cluster::CollectiveRegime> regimes;
  std::string_view text = value.text;
  while (!text.empty()) {
    const size_t end = std::min(text.find(','), text.find(';'));
    std::string_view item = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    std::vector<std::string_view> words;
    while (!item.empty()) {
      const size_t start = item.find_first_not_of(" \t[]\"'");
      if (start == std::string_view::npos) break;
      item.remove_prefix(start);
      const size_t stop = std::min(item.find_first_of(" \t[]\"'"), item.size());
      words.push_back(item.substr(0, stop));
      item.remove_prefix(stop);
    }
    if (words.empty()) continue;
    const std::string label = fmt::format("regime {}", regimes.size() + 1);
    if (words.size() != 3)
      throw Error(value.where, fmt::format("{}: expected {}, got '{}'", label, kExpected, value.text));
    const SourceLocation where{value.where.file, value.where.line, value.where.key + " " + label};
    cluster::CollectiveRegime r;
    r.from_bytes = parse_bytes_with_unit(words[0], where);
    r.step_latency = parse_duration_with_unit(words[1], where);
    r.bw = parse_bandwidth_with_unit(words[2], where);
    if (!regimes.empty() && r.from_bytes <= regimes.back().from_bytes) {
      throw Error(where, fmt::format("sizes must be strictly ascending: {} follows {}",
                                     echo_bytes(r.from_bytes), echo_bytes(regimes.back().from_bytes)));
    }
    regimes.push_back(r);
  }
  if (regimes.empty() || regimes.size() > kMaxRegimes)
    fail(value, fmt::format("1 to {} {}", kMaxRegimes, kExpected));
  return regimes;
}

/// plan.vary / plan.fixed: a list of plan_keys() names, each once.
KeyDef plan_list_key(std::string key, std::string description, std::vector<std::string> PlanSpec::*field) {
  return {{key, "list of keys", "[]", std::move(description)},
          true,
          [field](const RawValue& v, Draft& d) {
            std::vector<std::string>& keys = d.scenario.plan.*field;
            keys.clear();
            std::string_view text = v.text;
            while (!text.empty()) {
              const size_t end = text.find(',');
              std::string_view item = text.substr(0, end);
              text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
              const size_t first = item.find_first_not_of(" \t[]");
              if (first == std::string_view::npos) continue;
              item = item.substr(first, item.find_last_not_of(" \t[]") - first + 1);
              const auto& known = plan_keys();
              if (std::none_of(known.begin(), known.end(), [&](const PlanKey& k) { return k.key == item; })) {
                std::string names;
                for (const PlanKey& k : known) names += (names.empty() ? "" : ", ") + std::string(k.key);
                throw Error(
                    v.where,
                    fmt::format("'{}' is not a key stepcast plan searches; expected any of {}", item, names));
              }
              if (std::find(keys.begin(), keys.end(), item) != keys.end()) {
                throw Error(v.where, fmt::format("'{}' is listed twice", item));
              }
              keys.emplace_back(item);
            }
          },
          [field](const Scenario& s) {
            const std::vector<std::string>& keys = s.plan.*field;
            return Rendered{fmt::format("[{}]", fmt::join(keys, ", ")), false};
          },
          true};
}

std::vector<KeyDef> make_table() {
  std::vector<KeyDef> t;
  t.push_back({{"name", "string", "file stem", "name shown in reports"},
               false,
               [](const RawValue& v, Draft& d) {
                 d.scenario.name = v.text;
                 d.name_given = true;
               },
               [](const Scenario& s) {
                 return Rendered{s.name, false};
               }});
  t.push_back({{"description", "string", "", "free text shown in reports"},
               true,
               [](const RawValue& v, Draft& d) { d.scenario.description = v.text; },
               [](const Scenario& s) {
                 return Rendered{s.description, false};
               }});

  // --- workload
  t.push_back({{"workload.model", "zoo model name", "(required unless workload.profile)",
                "model from the built-in zoo (`stepcast zoo list`); with workload.profile it only "
                "sizes the gradients when the trace has no all-reduce kernels"},
               false,
               [](const RawValue& v, Draft& d) {
                 // Checked here, not only in build_workload, so the error carries the line.
                 if (zoo::find_model(v.text) == nullptr) {
                   throw Error(v.where, unknown_model_message(v.text));
                 }
                 d.scenario.workload.model = v.text;
                 d.model_given = true;
               },
               [](const Scenario& s) {
                 return Rendered{s.workload.model, false};
               }});
  // A decoder by shape. Integers with no default: 0 means "not given" (workload.model is used).
  auto shape_key = [&t](const char* field, const char* description, auto member) {
    t.push_back({{fmt::format("workload.transformer.{}", field), "integer >= 1", "(unset)", description},
                 false,
                 [member, field](const RawValue& v, Draft& d) {
                   d.scenario.workload.transformer.*member =
                       parse_integer<int64_t>(v, 1, int64_t{1} << 24, "an integer in [1, 16777216]");
                   d.transformer_keys.push_back(field);
                 },
                 [member](const Scenario& s) {
                   return Rendered{fmt::format("{}", s.workload.transformer.*member), true};
                 }});
  };
  shape_key("layers", "decoder blocks", &zoo::TransformerShape::layers);
  shape_key("hidden", "model width (heads x head size unless head_dim is set)",
            &zoo::TransformerShape::hidden);
  shape_key("ffn_hidden",
            "MLP inner width (of a dense block; of each expert unless expert_ffn_hidden is set)",
            &zoo::TransformerShape::ffn_hidden);
  shape_key("heads", "query heads", &zoo::TransformerShape::heads);
  shape_key("kv_heads", "key/value heads (grouped-query attention); default: heads",
            &zoo::TransformerShape::kv_heads);
  shape_key("vocab", "vocabulary size", &zoo::TransformerShape::vocab);
  shape_key("experts", "mixture of experts: experts per MLP; default 1 (dense)",
            &zoo::TransformerShape::experts);
  shape_key("top_k", "mixture of experts: experts per token; default 1", &zoo::TransformerShape::top_k);
  // Sizes that may be 0, which keeps the shape as it was without them (the default).
  auto shape_count = [&t](const char* field, const char* description, auto member) {
    t.push_back({{fmt::format("workload.transformer.{}", field), "integer >= 0", "0", description},
                 false,
                 [member, field](const RawValue& v, Draft& d) {
                   d.scenario.workload.transformer.*member =
                       parse_integer<int64_t>(v, 0, int64_t{1} << 24, "an integer in [0, 16777216]");
                   d.transformer_keys.push_back(field);
                 },
                 [member](const Scenario& s) {
                   return Rendered{fmt::format("{}", s.workload.transformer.*member), true};
                 }});
  };
  shape_count("head_dim",
              "width of each query, key and value head; 0: hidden / heads (Qwen3-30B-A3B: 128 on a hidden "
              "of 2048 with 32 heads)",
              &zoo::TransformerShape::head_dim_override);
  shape_count("expert_ffn_hidden", "mixture of experts: each expert's MLP inner width; 0: ffn_hidden",
              &zoo::TransformerShape::expert_ffn_hidden);
  shape_count("shared_experts",
              "mixture of experts: experts every token runs through besides its top_k, in each MoE block "
              "(DeepSeek: 1)",
              &zoo::TransformerShape::shared_experts);
  shape_count("dense_layers_first",
              "mixture of experts: the first blocks with a dense MLP of ffn_hidden (DeepSeek-V3: 3)",
              &zoo::TransformerShape::dense_layers_first);
  t.push_back({{"workload.transformer.moe_layers", "all, a range, a list or every N", "all",
                "mixture of experts: which blocks are MoE: all (every block from dense_layers_first on), a "
                "range \"3-60\", a list [0, 2, \"4-9\"] or \"every N\" (blocks 0, N, 2N, ...; Mixtral-style "
                "interleave); at most 1024 blocks; with dense_layers_first = k it must be k-(layers-1)"},
               false,
               [](const RawValue& v, Draft& d) {
                 d.moe_layers = v;  // read in resolve_workload, where layers is known
                 d.transformer_keys.emplace_back("moe_layers");
               },
               [](const Scenario& s) {
                 const auto& moe = s.workload.transformer.moe_layers;
                 return Rendered{moe ? workload::format_moe_layers(*moe) : "all", false};
               },
               true});
  shape_count(
      "kv_lora_rank",
      "multi-head latent attention (DeepSeek-V2/V3) when > 0: width of the latent the keys and values "
      "are up-projected from (DeepSeek-V3: 512); needs qk_nope_head_dim + qk_rope_head_dim >= 1 and "
      "v_head_dim >= 1; 0: no latent attention",
      &zoo::TransformerShape::kv_lora_rank);
  shape_count(
      "q_lora_rank",
      "multi-head latent attention: the query's low-rank width (q_a_proj, q_b_proj; DeepSeek-V3: 1536); "
      "0: one q projection from the model width",
      &zoo::TransformerShape::q_lora_rank);
  shape_count("qk_nope_head_dim",
              "multi-head latent attention: each head's query and key width without rotary embedding "
              "(DeepSeek-V3: 128)",
              &zoo::TransformerShape::qk_nope_head_dim);
  shape_count("qk_rope_head_dim",
              "multi-head latent attention: each head's rotary query width, and the width of the rotary key "
              "all heads share (DeepSeek-V3: 64)",
              &zoo::TransformerShape::qk_rope_head_dim);
  shape_count("v_head_dim", "multi-head latent attention: each head's value width (DeepSeek-V3: 128)",
              &zoo::TransformerShape::v_head_dim);
  auto shape_flag = [&t](const char* field, const char* def, const char* description, auto member) {
    t.push_back(choice_key(
        fmt::format("workload.transformer.{}", field), def, booleans(),
        description, [member](auto& s) -> auto& { return s.workload.transformer.*member; }));
  };
  shape_flag("swiglu", "true", "gated MLP (gate, up, down; Llama) instead of up and down with GELU",
             &zoo::TransformerShape::swiglu);
  shape_flag("tied_embeddings", "false", "the LM head reuses the token embedding",
             &zoo::TransformerShape::tied_embeddings);
  shape_flag("qk_norm", "false", "an RMSNorm of head_dim on each query and key head (Qwen3's q_norm, k_norm)",
             &zoo::TransformerShape::qk_norm);
  shape_flag(
      "dropout", "false",
      "dropout after the embeddings, on the attention probabilities and on both residual branches of "
      "each block (GPT-2; Megatron-LM's GPT, whose --attention-dropout and --hidden-dropout default to "
      "0.1): its 1-byte masks are activations, and with workload.compute: shapes its kernels are "
      "memory-bound work",
      &zoo::TransformerShape::dropout);
  t.push_back(
      {{"workload.seq_len", "integer >= 1", "the zoo model's (llama3: 8192, llama2: 4096, gpt2: 1024)",
        "tokens per sequence; a decoder's sample (batch_per_worker counts sequences)"},
       false,
       [](const RawValue& v, Draft& d) {
         d.scenario.workload.seq_len =
             parse_integer<int64_t>(v, 1, int64_t{1} << 24, "an integer in [1, 16777216]");
       },
       [](const Scenario& s) {
         return Rendered{fmt::format("{}", s.workload.seq_len), true};
       }});
  t.push_back(choice_key(
      "workload.activation_checkpointing", "none", enum_choices<workload::ActivationCheckpointing>(),
      "decoders: recompute in backward: none, selective (attention scores), full (each block's forward)",
      [](auto& s) -> auto& { return s.workload.checkpointing; }));
  t.push_back(choice_key(
      "workload.flash_attention", "true", booleans(),
      "decoders: attention kernels that keep no seq x seq scores (FlashAttention, PyTorch SDPA); for memory",
      [](auto& s) -> auto& { return s.workload.flash_attention; }));
  t.push_back(choice_key(
      "workload.loss", "fp32_logits", enum_choices<workload::LossMode>(),
      "decoders, for memory: the loss's cross entropy on an fp32 copy of the logits (Hugging Face, "
      "TorchTitan), fp32 in place (Megatron-LM), on bf16 logits, or chunked (TorchTitan's chunked loss, "
      "fused kernels); docs/memory.md",
      [](auto& s) -> auto& { return s.workload.loss; }));
  t.push_back(number_key(
      "workload.moe.imbalance", "1", 1, true, 1e6,
      "mixtures of experts: tokens routed to the busiest expert over the mean (1 = balanced). With "
      "training.parallel.expert > 1 the GPU holding it receives more in each all-to-all and computes longer, "
      "and its expert group waits for it",
      [](auto& s) -> auto& { return s.workload.moe_imbalance; }));
  t.push_back({{"workload.moe.capacity_factor", "number in [1, 1e6] or none", "none",
                "mixtures of experts: an expert computes at most this times the mean tokens and drops the rest "
                "(Megatron's --moe-expert-capacity-factor; the busiest expert's share is capped at it); none: "
                "dropless, every routed token computed"},
               true,
               [](const RawValue& v, Draft& d) {
                 if (v.text == "none") {
                   d.scenario.workload.moe_capacity_factor = 0;
                   return;
                 }
                 constexpr std::string_view kExpected = "a number in [1, 1e6] or none";
                 const double x = parse_number(v, 1, true, kExpected);
                 if (x > 1e6) fail(v, kExpected);
                 d.scenario.workload.moe_capacity_factor = x;
               },
               [](const Scenario& s) {
                 const double c = s.workload.moe_capacity_factor;
                 return Rendered{c > 0 ? echo_number(c) : std::string("none"), c > 0};
               }});
  t.push_back({{"workload.moe.routing", "path", "(none: workload.moe.imbalance)",
                "mixtures of experts: a CSV of measured tokens per expert of each MoE block (e.g. from a router "
                "log): a header, then one row per block: its index, then each expert's tokens; every row sums to "
                "the same tokens x top_k. Each block's busiest GPU follows from its row"},
               false,
               [](const RawValue& v, Draft& d) {
                 d.scenario.workload.moe_routing = existing_file(v, "routing table").lexically_normal().string();
               },
               [](const Scenario& s) {
                 return Rendered{s.workload.moe_routing.empty() ? "none" : s.workload.moe_routing, false};
               }});
  t.push_back(choice_key(
      "workload.moe.placement", "static", enum_choices<workload::ExpertPlacement>(),
      "mixtures of experts: static (E / e consecutive experts per GPU, Megatron-LM) or balanced (experts "
      "re-placed so that the GPUs of an expert group carry equal tokens, as far as the busiest expert alone "
      "allows)",
      [](auto& s) -> auto& { return s.workload.moe_placement; }));
  t.push_back(choice_key(
      "workload.compute", "flops", enum_choices<ComputeMethod>(),
      "decoders: flops (the compute from one step time or FLOP rate, split by FLOPs) or shapes (each "
      "kernel timed from its shape: GEMMs from cluster.gpu.gemm or the roofline of cluster.gpu.peak_flops, "
      "attention at cluster.gpu.attention_flops, the rest at cluster.gpu.memory_bandwidth)",
      [](auto& s) -> auto& { return s.workload.compute; }));
  t.push_back(
      {{"workload.achieved_flops", "FLOP/s", "(unset)",
        "compute from FLOPs: the rate one GPU sustains on this model, e.g. 180TFLOPS (instead of a "
        "measured step time)"},
       false,
       [](const RawValue& v, Draft& d) {
         d.scenario.workload.achieved_flops = parse_flops_with_unit(v.text, v.where);
       },
       [](const Scenario& s) {
         return Rendered{s.workload.achieved_flops > 0 ? echo_flops(s.workload.achieved_flops) : "unset",
                         false};
       }});
  t.push_back({{"workload.layer_times", "path", "(none)",
                "compute per layer measured on one GPU running a few of the model's layers: a layer table "
                "(.csv) or a PyTorch profiler trace with 'stepcast:fwd:<layer>' / 'stepcast:bwd:<layer>' "
                "ranges; blocks not measured repeat the measured ones"},
               false,
               [](const RawValue& v, Draft& d) {
                 d.scenario.workload.layer_times = existing_file(v, "file").string();
               },
               [](const Scenario& s) {
                 return Rendered{s.workload.layer_times.empty() ? "none" : s.workload.layer_times, false};
               }});
  t.push_back({{"workload.compute_efficiency", "number in (0, 1]", "(unset)",
                "compute from FLOPs: the fraction of cluster.gpu.peak_flops one GPU achieves"},
               false,
               [](const RawValue& v, Draft& d) {
                 const double e = parse_number(v, 0, false, "a number in (0, 1]");
                 if (e > 1) fail(v, "a number in (0, 1]");
                 d.scenario.workload.compute_efficiency = e;
               },
               [](const Scenario& s) {
                 return Rendered{echo_number(s.workload.compute_efficiency), true};
               }});
  t.push_back({{"workload.profile", "path", "(none)",
                "PyTorch profiler (Kineto) trace of the job, .json or .json.gz, relative to the "
                "scenario file; replaces the zoo model's compute and the measured step time"},
               false,
               [](const RawValue& v, Draft& d) {
                 std::filesystem::path path(v.text);
                 if (path.is_relative()) path = std::filesystem::path(v.where.file).parent_path() / path;
                 std::error_code ec;
                 if (v.text.empty() || !std::filesystem::is_regular_file(path, ec)) {
                   throw Error(v.where, fmt::format("no trace file at '{}'", path.string()));
                 }
                 d.scenario.workload.profile = path.string();
               },
               [](const Scenario& s) {
                 return Rendered{s.workload.profile, false};
               }});
  t.push_back(choice_key(
      "workload.step_samples", "all", enum_choices<StepSamples>(),
      "with workload.profile: predict every steady step of the trace (the spread of the predicted "
      "step time; the step time is their mean; k steps cost k predictions) or the representative "
      "step alone",
      [](auto& s) -> auto& { return s.workload.step_samples; }));
  t.push_back(choice_key(
      "workload.measured_with", "alone", enum_choices<MeasuredWith>(),
      "what the measured single-worker step included: compute alone, a round trip to the parameter servers "
      "of training.ps.* (ps: the compute is the measurement less one worker's predicted communication, and "
      "speed-up is against the measurement), or a one-worker all-reduce (no communication)",
      [](auto& s) -> auto& { return s.workload.measured_with; }));
  t.push_back(choice_key(
      "workload.replay", "auto", enum_choices<ReplayMode>(),
      "with workload.profile at the trace's own worker count: replay its measured collectives (auto) or "
      "simulate them as at any other count (never: a continuous curve through the traced size)",
      [](auto& s) -> auto& { return s.workload.replay; }));
  t.push_back(
      {{"workload.comm_cpu_per_byte", "duration", "0",
        "host CPU time per byte a worker pulls or pushes (a parameter server's messages), taken from its "
        "compute: CPU workers, host-staged transfers (e.g. 1ns, a core serialising at 1 GB/s)"},
       true,
       [](const RawValue& v, Draft& d) {
         const double seconds = parse_duration_with_unit(v.text, v.where);
         if (seconds > limits::kMaxCommCpuPerByte) {
           throw Error(
               v.where,
               fmt::format("'{}' per byte is a host CPU slower than 1 kB/s: expected at most 1ms", v.text));
         }
         d.scenario.workload.comm_cpu_per_byte = seconds;
       },
       [](const Scenario& s) {
         return Rendered{echo_duration(s.workload.comm_cpu_per_byte), false};
       }});
  t.push_back(integer_key(
      "workload.batch_per_worker", "32", 1, kMaxBatch,
      "samples per step per worker (with a parallel layout: sequences per micro-batch, as "
      "workload.micro_batch)",
      [](auto& s) -> auto& { return s.workload.batch_per_worker; }));
  t.push_back(
      {{"workload.micro_batch", "integer in [1, 16777216]", "1 (with a parallel layout)",
        "sequences per micro-batch of one data-parallel replica (a parallel layout's batch per worker)"},
       false,
       [](const RawValue& v, Draft& d) {
         d.micro_batch = parse_integer<int>(v, 1, kMaxBatch, "an integer in [1, 16777216]");
       },
       [](const Scenario& s) {
         return Rendered{fmt::format("{}", s.workload.batch_per_worker), true};
       }});
  t.push_back(
      {{"workload.global_batch", "integer in [1, 2^40]", "(d x micro-batch: one micro-batch a step)",
        "sequences per optimizer step over all data-parallel replicas: m = global_batch / (d x micro_batch) "
        "micro-batches a step"},
       false,
       [](const RawValue& v, Draft& d) {
         d.scenario.scheme.parallel.global_batch =
             parse_integer<int64_t>(v, 1, int64_t{1} << 40, "an integer in [1, 1099511627776]");
       },
       [](const Scenario& s) {
         const int64_t g = s.scheme.parallel.global_batch;
         return g > 0 ? Rendered{fmt::format("{}", g), true} : Rendered{"one micro-batch a step", false};
       }});
  t.push_back({{"workload.tokens", "number in [0, 1e+18]", "0",
                "tokens to train (language models): the job is tokens / workload.seq_len sequences, its time "
                "and, with cluster.cost.gpu_hour, its cost in the table; 0 = no job (or job.samples)"},
               false,
               [](const RawValue& v, Draft& d) {
                 d.scenario.options.job.tokens = parse_number(v, 0, true, "a number of tokens in [0, 1e+18]");
                 if (d.scenario.options.job.tokens > limits::kMaxTokens)
                   fail(v, "a number of tokens in [0, 1e+18]");
               },
               [](const Scenario& s) {
                 return Rendered{echo_number(s.options.job.tokens), true};
               }});
  t.push_back({{std::string(kThroughputKey), "number > 0", "(this or workload.step_time)",
                "measured samples/s of one worker alone"},
               false,
               [](const RawValue& v, Draft& d) {
                 d.throughput = parse_number(v, 0, false, "a number of samples/s > 0");
               },
               [](const Scenario& s) {
                 // Derived from the step time whichever way it was given, so both keys agree.
                 double step = s.workload.step_time;
                 return Rendered{echo_number(step > 0 ? s.workload.batch_per_worker / step : 0), true};
               }});
  t.push_back({{std::string(kStepTimeKey), "duration", "(this or workload.single_worker_throughput)",
                "measured time of one training step of one worker alone"},
               false,
               [](const RawValue& v, Draft& d) {
                 double seconds = parse_duration_with_unit(v.text, v.where);
                 if (seconds <= 0) fail(v, "a duration > 0");
                 d.step_time = seconds;
               },
               [](const Scenario& s) {
                 return Rendered{echo_duration(s.workload.step_time), false};
               }});
  t.push_back(choice_key(
      "workload.precision", "fp32", enum_choices<Precision>(),
      "precision of parameters and gradients (sets bytes per element); fp8: Transformer Engine's recipe, "
      "GEMMs in fp8 and the rest in bf16 (needs workload.compute: shapes, or a measured compute time)",
      [](auto& s) -> auto& { return s.workload.precision; }));
  t.push_back(number_key(
      "workload.backward_ratio", "2", 0, true, kMaxBackwardRatio,
      "backward time / forward time of each layer",
      [](auto& s) -> auto& { return s.workload.backward_to_forward; }));
  t.push_back({{"workload.compute_cv", "number in [0, 10] or auto", "0",
                "stragglers: coefficient of variation of a worker's compute time per step (seeded, per "
                "worker and step; 0.05 = 5%); auto: the step-to-step variation of workload.profile"},
               true,
               [](const RawValue& v, Draft& d) {
                 d.scenario.options.compute_cv_auto = v.text == "auto";
                 d.scenario.options.compute_cv =
                     v.text == "auto" ? 0.0 : parse_number(v, 0, true, "a number in [0, 10] or 'auto'");
                 if (d.scenario.options.compute_cv > limits::kMaxCv) fail(v, "a number in [0, 10] or 'auto'");
                 if (d.scenario.options.compute_cv_auto) d.compute_cv_auto = v;
               },
               [](const Scenario& s) {
                 return s.options.compute_cv_auto ? Rendered{"auto", false}
                                                  : Rendered{echo_number(s.options.compute_cv), true};
               }});

  // --- cluster
  t.push_back(integer_key(
      "cluster.workers", "1", 1, kMaxWorkers, "total workers (GPUs) N",
      [](auto& s) -> auto& { return s.cluster.workers; }));
  t.push_back(integer_key(
      "cluster.workers_per_node", "1", 1, kMaxWorkers, "workers sharing one node and its NIC",
      [](auto& s) -> auto& { return s.cluster.workers_per_node; }));
  t.push_back(
      {{"cluster.placement", "list of integers", "(even: cluster.workers_per_node on every node)",
        "workers on each node, in node order, for a job a scheduler spread unevenly, e.g. [1, 1, 3, 4]; "
        "cluster.workers is their sum and, unless given, cluster.workers_per_node the largest"},
       false,
       [](const RawValue& v, Draft& d) {
         std::vector<int> placement;
         std::string_view text = v.text;
         while (!text.empty()) {
           const size_t end = text.find(',');
           std::string_view item = text.substr(0, end);
           text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
           const size_t first = item.find_first_not_of(" \t[]");
           if (first == std::string_view::npos) continue;
           item = item.substr(first, item.find_last_not_of(" \t[]") - first + 1);
           if (placement.size() >= static_cast<size_t>(kMaxWorkers)) {
             throw Error(v.where, fmt::format("more than {} nodes", kMaxWorkers));
           }
           placement.push_back(parse_integer<int>(
               RawValue{std::string(item), v.where}, 1, kMaxWorkers,
               fmt::format("a list of workers per node, each an integer in [1, {}] (node {}: '{}')",
                           kMaxWorkers, placement.size(), item)));
         }
         if (placement.empty() && v.text != "even") {
           throw Error(v.where, "expected a list of workers per node such as [1, 1, 3, 4], or 'even'");
         }
         d.scenario.cluster.placement = std::move(placement);
       },
       [](const Scenario& s) {
         if (s.cluster.placement.empty()) return Rendered{"even", false};
         return Rendered{fmt::format("[{}]", fmt::join(s.cluster.placement, ", ")), false};
       },
       true});
  t.push_back(choice_key(
      "cluster.topology", "switch", enum_choices<cluster::Topology>(),
      "network between nodes: one switch, fat-tree, BiGraph or torus",
      [](auto& s) -> auto& { return s.cluster.topology; }));
  t.push_back(integer_key(
      "cluster.fat_tree.levels", "2", 2, 3, "2: leaf-spine; 3: k-ary fat-tree (edge, aggregation, core)",
      [](auto& s) -> auto& { return s.cluster.fat_tree.levels; }));
  t.push_back(integer_key(
      "cluster.fat_tree.radix", "16", 2, 256, "switch ports k: k/2 hosts per leaf and k/2 uplinks",
      [](auto& s) -> auto& { return s.cluster.fat_tree.radix; }));
  t.push_back(number_key(
      "cluster.fat_tree.oversubscription", "1", 1, true, kMaxOversubscription,
      "host bandwidth below a leaf (edge) switch / its uplinks': shorthand for radix/2 / "
      "oversubscription full-speed uplinks per leaf",
      [](auto& s) -> auto& { return s.cluster.fat_tree.oversubscription; }));
  t.push_back(integer_key(
      "cluster.fat_tree.uplinks", "0", 0, 128,
      "uplinks per leaf (edge) switch, 1 .. radix/2: spines of a leaf-spine, aggregation switches per pod; "
      "0: radix/2 / oversubscription",
      [](auto& s) -> auto& { return s.cluster.fat_tree.uplinks; }));
  t.push_back({{"cluster.fat_tree.uplink_bandwidth", "bandwidth", "NIC bandwidth",
                "bandwidth of each leaf (edge) uplink, each way; unset: cluster.nic_bandwidth (or what "
                "oversubscription needs when radix/2 is not a multiple of it)"},
               false,
               [](const RawValue& v, Draft& d) {
                 const double bw = parse_bandwidth_with_unit(v.text, v.where);
                 if (!(bw > 0)) fail(v, "a bandwidth > 0 with its unit, e.g. 100Gbps");
                 d.scenario.cluster.fat_tree.uplink_bw = bw;
               },
               [](const Scenario& s) {
                 const double bw = s.cluster.fat_tree.uplink_bw;
                 return Rendered{bw > 0 ? echo_byte_rate(bw) : std::string("NIC bandwidth"), false};
               }});
  t.push_back(choice_key(
      "cluster.routing", "ecmp", enum_choices<cluster::Routing>(),
      "equal-cost paths: ecmp (each flow hashed onto one, seeded by `seed`: flows can collide), "
      "ideal (every flow split evenly: fat_tree and switch only), spray (per-packet spraying: the "
      "same even split at flow level)",
      [](auto& s) -> auto& { return s.cluster.routing; }));
  t.push_back(integer_key(
      "cluster.bigraph.switches_per_half", "4", 1, 1024,
      "switches in each half; every switch links every switch of the other half",
      [](auto& s) -> auto& { return s.cluster.bigraph.switches_per_half; }));
  t.push_back(integer_key(
      "cluster.bigraph.hosts_per_switch", "4", 1, 1024, "nodes attached to each BiGraph switch",
      [](auto& s) -> auto& { return s.cluster.bigraph.hosts_per_switch; }));
  t.push_back({{"cluster.custom", "path", "(none)",
                "custom topology: a YAML file of switches and links, relative to the scenario file"},
               false,
               [](const RawValue& v, Draft& d) { d.custom_topology = v; },
               [](const Scenario& s) {
                 return Rendered{fmt::format("{} switches, {} links", s.cluster.custom.switches.size(),
                                             s.cluster.custom.links.size()),
                                 false};
               }});
  t.push_back({{"cluster.torus.dims", "dimensions like 8x8 or [8, 8]", "4",
                "torus dimensions (1D ring or 2D), a router per node"},
               true,
               [](const RawValue& v, Draft& d) {
                 std::vector<int> dims;
                 std::string_view text = v.text;
                 // A YAML list [8, 8] arrives as its flow text; accept "8x8" and "8,8" too.
                 std::string cleaned;
                 for (char ch : text) {
                   if (ch == '[' || ch == ']' || ch == ' ') continue;
                   cleaned += (ch == 'x' || ch == ',') ? ' ' : ch;
                 }
                 size_t pos = 0;
                 while (pos < cleaned.size()) {
                   size_t end = cleaned.find(' ', pos);
                   if (end == std::string::npos) end = cleaned.size();
                   const std::string item = cleaned.substr(pos, end - pos);
                   int value = 0;
                   auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
                   if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || value < 1 ||
                       value > 4096) {
                     fail(v, "dimensions like '8x8' (each 1..4096)");
                   }
                   dims.push_back(value);
                   pos = end + 1;
                 }
                 if (dims.empty() || dims.size() > 3) fail(v, "one to three dimensions like '8x8'");
                 d.scenario.cluster.torus.dims = dims;
               },
               [](const Scenario& s) {
                 std::string out;
                 for (int d : s.cluster.torus.dims) out += fmt::format("{}{}", out.empty() ? "" : "x", d);
                 return Rendered{out, false};
               },
               true});
  t.push_back(bandwidth_key(
      "cluster.nic_bandwidth", "10Gbps", "NIC bandwidth of a node, each way",
      [](auto& s) -> auto& { return s.cluster.nic_bw; }));
  t.push_back(duration_key(
      "cluster.link_latency", "5us", "end-to-end latency between two nodes",
      [](auto& s) -> auto& { return s.cluster.latency; }));
  t.push_back({{"cluster.collective_regimes", "list of 'SIZE LATENCY BANDWIDTH'", "(none)",
                "collective cost by size (from `stepcast calibrate nccl-tests --fit regimes`): from SIZE "
                "up, each step of a collective lasts at least LATENCY after its transfers end and each "
                "transfer moves at most BANDWIDTH; none: off"},
               false,
               [](const RawValue& v, Draft& d) { d.scenario.cluster.collective_regimes = parse_regimes(v); },
               [](const Scenario& s) {
                 std::string out;
                 for (const cluster::CollectiveRegime& r : s.cluster.collective_regimes) {
                   out += fmt::format("{}from {}: {}/step, {}", out.empty() ? "" : "; ",
                                      echo_bytes(r.from_bytes), echo_duration(r.step_latency),
                                      echo_byte_rate(r.bw));
                 }
                 return Rendered{out.empty() ? "none" : out, false};
               },
               true});
  // NCCL's tuning model, one row per constant: cluster.nccl.<ring|tree>.<ll|ll128|simple>.<field>.
  for (const bool tree : {false, true}) {
    for (int p = 0; p < cluster::kNcclProtocols; ++p) {
      const auto protocol = static_cast<cluster::NcclProtocol>(p);
      const std::string key = cluster::nccl_key(tree, protocol);
      const cluster::NcclCost defaults = (tree ? cluster::NcclTuning{}.tree : cluster::NcclTuning{}.ring)[p];
      const std::string what =
          fmt::format("NCCL {} {}", tree ? "tree" : "ring", cluster::to_string(protocol));
      auto cost = [ tree, p ](auto& s) -> auto& {
        return (tree ? s.cluster.nccl.tree : s.cluster.nccl.ring)[p];
      };
      t.push_back(duration_key(
          key + ".base_latency", echo_duration(defaults.base_latency),
          what + ": latency once per collective", [cost](auto& s) -> auto& { return cost(s).base_latency; }));
      const std::pair<cluster::NcclHop, const char*> hops[] = {{cluster::NcclHop::NvLink, "nvlink"},
                                                               {cluster::NcclHop::Pcie, "pcie"},
                                                               {cluster::NcclHop::Net, "net"}};
      for (const auto& [hop, name] : hops) {
        const int h = static_cast<int>(hop);
        t.push_back(duration_key(
            fmt::format("{}.hop_latency.{}", key, name), echo_duration(defaults.hop_latency[h]),
            fmt::format("{}: latency per step over {}", what,
                        hop == cluster::NcclHop::Net      ? "the network (between nodes)"
                        : hop == cluster::NcclHop::NvLink ? "NVLink (inside a node, intra_node.link nvlink)"
                                                          : "PCIe (inside a node, intra_node.link pcie)"),
            [ cost, h ](auto& s) -> auto& { return cost(s).hop_latency[h]; }));
      }
      t.push_back(number_key(
          key + ".efficiency", echo_number(defaults.efficiency), 0.01, true, 1.0,
          what + ": payload bytes per wire byte (the links' bandwidth it can use)", [cost](auto& s) -> auto& {
            return cost(s).efficiency;
          }));
      t.push_back(cap_key(
          key + ".channel_bw", "NCCL's table for cluster.gpu.generation and the node count",
          what + ": most payload bus bandwidth one channel carries (x cluster.nccl.channels)",
          [cost](auto& s) -> auto& { return cost(s).channel_bw; },
          [tree, protocol](const Scenario& s) {
            return cluster::nccl_channel_bw(s.cluster, tree, protocol);
          }));
      t.push_back(cap_key(
          key + ".max_bw", "NCCL's table (LL: llMaxBws by node count, cluster.cpu.vendor; else none)",
          what + ": most payload bus bandwidth the collective reaches, whatever its channels",
          [cost](auto& s) -> auto& { return cost(s).max_bw; },
          [tree, protocol](const Scenario& s) { return cluster::nccl_max_bw(s.cluster, tree, protocol); }));
    }
  }
  t.push_back({{"cluster.nccl.channels", "integer in [1, 64]",
                "NCCL's rule for the topology (one per NIC at its speed, doubled on fast links)",
                "channels NCCL's tuning model counts (its ring search's; NCCL launches 2-4x as many): "
                "between nodes a ring per NIC while there are channels, and the per-channel caps "
                "(cluster.nccl.*.channel_bw) times this"},
               false,
               [](const RawValue& v, Draft& d) {
                 d.scenario.cluster.nccl.channels =
                     parse_integer<int>(v, 1, cluster::kMaxNcclChannels,
                                        fmt::format("an integer in [1, {}]", cluster::kMaxNcclChannels));
               },
               [](const Scenario& s) {
                 const int channels = cluster::nccl_channels(s.cluster);
                 return Rendered{s.cluster.nccl.channels ? fmt::format("{}", channels)
                                                         : fmt::format("{} (NCCL's rule)", channels),
                                 false};
               }});
  t.push_back(choice_key(
      "cluster.gpu.generation", "hopper", enum_choices<cluster::GpuGeneration>(),
      "GPU generation for NCCL's bandwidth tables: volta (V100), ampere (A100), hopper (H100)",
      [](auto& s) -> auto& { return s.cluster.gpu_generation; }));
  t.push_back(choice_key(
      "cluster.cpu.vendor", "intel", enum_choices<cluster::CpuVendor>(),
      "host CPU vendor, which picks NCCL's LL bandwidth cap between nodes",
      [](auto& s) -> auto& { return s.cluster.cpu_vendor; }));
  t.push_back(
      {{"cluster.ps_nic_bandwidth", "bandwidth", "same as cluster.nic_bandwidth",
        "NIC bandwidth of a dedicated parameter-server node, each way"},
       false,
       [](const RawValue& v, Draft& d) { d.scenario.cluster.ps_nic_bw = parse_bandwidth_with_unit(v.text, v.where); },
       [](const Scenario& s) {
         double bw = s.cluster.ps_nic_bw > 0 ? s.cluster.ps_nic_bw : s.cluster.nic_bw;
         return Rendered{echo_byte_rate(bw), false};
       }});
  t.push_back(
      {{"cluster.rpc_latency", "duration", "unset (the link latency)",
        "latency of a parameter-server pull or push message (RPC stack and wire), in place of the "
        "path's latency"},
       false,
       [](const RawValue& v, Draft& d) {
         d.scenario.cluster.rpc_latency = parse_duration_with_unit(v.text, v.where);
       },
       [](const Scenario& s) {
         return Rendered{s.cluster.rpc_latency ? echo_duration(*s.cluster.rpc_latency) : "link latency",
                         false};
       }});
  t.push_back(choice_key(
      "cluster.transport", "rdma", enum_choices<cluster::Transport>(),
      "transport of parameter-server pulls and pushes between nodes: rdma (lossless fabric, no "
      "incast) or tcp (a switch port whose cluster.switch.buffer overflows drops, and a sender that "
      "lost its tail waits cluster.tcp_rto_min; docs/models.md, Incast)",
      [](auto& s) -> auto& { return s.cluster.incast.transport; }));
  t.push_back(
      {{"cluster.switch.buffer", "size", "unset (no loss)",
        "packet buffer of a switch port, for TCP incast: past (buffer + bandwidth x RTT) / 2 "
        "segments of synchronized senders into one NIC, each pays cluster.tcp_rto_min once per "
        "burst (cluster.transport: tcp only); e.g. 128KB on shallow-buffered switches"},
       false,
       [](const RawValue& v, Draft& d) { d.scenario.cluster.incast.switch_buffer = parse_size_with_unit(v); },
       [](const Scenario& s) {
         const double b = s.cluster.incast.switch_buffer;
         return Rendered{b > 0 ? echo_bytes(b) : "unset", false};
       }});
  t.push_back(duration_key(
      "cluster.tcp_rto_min", "200ms",
      "TCP's minimum retransmission timeout, what a sender that lost its tail to "
      "incast waits (Linux's default 200ms; tuned data centres 1-5ms)",
      [](auto& s) -> auto& { return s.cluster.incast.tcp_rto_min; }));
  t.push_back(bandwidth_key(
      "cluster.intra_node.bandwidth", "12GB/s", "bandwidth of each device's link inside a node, each way",
      [](auto& s) -> auto& { return s.cluster.intra_node_bw; }));
  t.push_back(duration_key(
      "cluster.intra_node.latency", "1us", "latency inside a node",
      [](auto& s) -> auto& { return s.cluster.intra_node_latency; }));
  t.push_back(choice_key(
      "cluster.intra_node.link", "nvlink", enum_choices<cluster::IntraNodeLink>(),
      "nvlink: a link per GPU; pcie: GPUs share PCIe switch uplinks",
      [](auto& s) -> auto& { return s.cluster.intra_node_link; }));
  t.push_back(integer_key(
      "cluster.intra_node.gpus_per_pcie_switch", "2", 1, kMaxWorkers,
      "pcie: GPUs under one PCIe switch, sharing its uplink",
      [](auto& s) -> auto& { return s.cluster.gpus_per_pcie_switch; }));
  t.push_back(integer_key(
      "cluster.nics_per_node", "1", 1, kMaxWorkers,
      "NICs per node (1 .. workers_per_node); GPUs are spread evenly over them",
      [](auto& s) -> auto& { return s.cluster.nics_per_node; }));
  t.push_back(choice_key(
      "cluster.node_placement", "packed", enum_choices<cluster::NodePlacement>(),
      "where the job's nodes sit in the fabric: packed (node n in slot n) or random (slots chosen with "
      "`seed` among cluster.fabric_nodes, as a batch system scatters a job); fat_tree, bigraph and torus",
      [](auto& s) -> auto& { return s.cluster.node_placement; }));
  t.push_back(integer_key(
      "cluster.fabric_nodes", "0", 0, 4 * kMaxWorkers,
      "node_placement random: the fabric's node slots; 0 = the topology's capacity (a leaf-spine "
      "fat_tree needs it)",
      [](auto& s) -> auto& { return s.cluster.fabric_nodes; }));

  t.push_back(
      {{"cluster.gpu_memory", "size", "(unset: no fit check)",
        "memory of one GPU, e.g. 80GB; predictions say whether the job fits"},
       false,
       [](const RawValue& v, Draft& d) {
         const double bytes = parse_bytes_with_unit(v.text, v.where);
         if (bytes <= 0) fail(v, "a size > 0");
         d.scenario.cluster.gpu_memory = bytes;
       },
       [](const Scenario& s) {
         return Rendered{s.cluster.gpu_memory > 0 ? echo_bytes(s.cluster.gpu_memory) : "unset", false};
       }});
  t.push_back(
      {{"cluster.gpu.peak_flops", "FLOP/s", "(unset: no MFU)",
        "peak dense FLOP/s of one GPU at the training precision (spec sheet: H100 SXM bf16 989TFLOPS)"},
       false,
       [](const RawValue& v, Draft& d) {
         d.scenario.cluster.gpu_peak_flops = parse_flops_with_unit(v.text, v.where);
       },
       [](const Scenario& s) {
         return Rendered{s.cluster.gpu_peak_flops > 0 ? echo_flops(s.cluster.gpu_peak_flops) : "unset",
                         false};
       }});
  t.push_back({{"cluster.gpu.memory_bandwidth", "bandwidth", "(unset: a free optimizer step)",
                "bytes/s of one GPU's memory (spec sheet: H100 SXM 3.35TB/s, A100 80GB 2.04TB/s); the "
                "optimizer step runs at it, memory-bound, on the parameters a worker updates"},
               false,
               [](const RawValue& v, Draft& d) {
                 d.scenario.cluster.gpu_memory_bw = parse_bandwidth_with_unit(v.text, v.where);
               },
               [](const Scenario& s) {
                 return Rendered{
                     s.cluster.gpu_memory_bw > 0 ? echo_bytes(s.cluster.gpu_memory_bw) + "/s" : "unset",
                     false};
               }});
  t.push_back({{"cluster.cost.gpu_hour", "amount, optionally with a currency: 2.5 or 2.5 USD", "0",
                "money one GPU costs an hour (cloud price or amortised), in the currency written after it "
                "(letters, e.g. USD, EUR; none: unnamed); gives cost per step, per million tokens and of "
                "the job; 0 = no costs"},
               false,
               [](const RawValue& v, Draft& d) {
                 constexpr std::string_view expected =
                     "an amount of money per GPU-hour >= 0, optionally followed by a currency of letters "
                     "(2.5 or '2.5 USD')";
                 // "2.5 USD": the amount, then after spaces the currency's letters.
                 const std::string_view text = v.text;
                 const std::size_t space = text.find(' ');
                 RawValue amount = v;
                 amount.text = std::string(text.substr(0, space));
                 std::string currency;
                 if (space != std::string_view::npos) {
                   std::string_view rest = text.substr(space);
                   while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
                   currency = std::string(rest);
                   const bool letters = !currency.empty() && currency.size() <= 8 &&
                                        std::all_of(currency.begin(), currency.end(), [](char c) {
                                          return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
                                        });
                   if (!letters) fail(v, expected);
                 }
                 const double rate = parse_number(amount, 0, true, expected);
                 if (rate > limits::kMaxGpuHour) fail(v, expected);
                 d.scenario.options.cost = {rate, currency};
               },
               [](const Scenario& s) {
                 const auto& c = s.options.cost;
                 return c.currency.empty() ? Rendered{echo_number(c.gpu_hour), true}
                                           : Rendered{echo_number(c.gpu_hour) + " " + c.currency, false};
               }});

  t.push_back(
      {{"cluster.gpu.memory_reserved", "size", "1.1GB",
        "memory each GPU gives up outside the caching allocator: the CUDA context and NCCL's buffers "
        "(about 1.06 GB on 8 H100 with one communicator; more with several, e.g. tensor x data "
        "parallel); added once per GPU to the reserved memory; docs/memory.md"},
       true,
       [](const RawValue& v, Draft& d) { d.scenario.cluster.gpu_memory_reserved = parse_size_with_unit(v); },
       [](const Scenario& s) {
         return Rendered{echo_bytes(s.cluster.gpu_memory_reserved), false};
       }});
  t.push_back({{"cluster.gpu.allocator_overhead", "number in [0, 1)", "0.1",
                "share of the caching allocator's pool that holds no tensor at the peak (fragmentation): "
                "reserved = allocated / (1 - overhead) + memory_reserved; an assumption, measure yours as "
                "1 - max_memory_allocated / max_memory_reserved; docs/memory.md"},
               true,
               [](const RawValue& v, Draft& d) {
                 const double x = parse_number(v, 0, true, "a number in [0, 1)");
                 if (!(x < 1)) fail(v, "a number in [0, 1)");
                 d.scenario.cluster.gpu_allocator_overhead = x;
               },
               [](const Scenario& s) {
                 return Rendered{echo_number(s.cluster.gpu_allocator_overhead), true};
               }});
  t.push_back({{"cluster.gpu.gemm", "path", "(none: the roofline of peak_flops and memory_bandwidth)",
                "workload.compute: shapes: a CSV of measured GEMM times (columns m, n, k, dtype, time_us; "
                "tools/gemm_sweep.py measures it), relative to the file that names it; every m x n x k "
                "combination per dtype, interpolated in log space, clamped with a warning outside"},
               false,
               [](const RawValue& v, Draft& d) {
                 // "out/../g.csv" read as "g.csv" in messages.
                 const std::filesystem::path path = existing_file(v, "GEMM table").lexically_normal();
                 d.scenario.cluster.gemm =
                     cluster::parse_gemm_table(read_text_file(path.string(), "GEMM table"), path.string());
               },
               [](const Scenario& s) {
                 return Rendered{s.cluster.gemm.empty() ? "none" : s.cluster.gemm.file, false};
               }});
  t.push_back(optional_rate_key(
      "cluster.gpu.attention_flops", "(unset: cluster.gpu.peak_flops)",
      "workload.compute: shapes: the attention core's rate (flash attention, 4 s^2 h FLOPs per sequence "
      "forward, twice that backward), e.g. 450TFLOPS",
      [](auto& s) -> auto& { return s.cluster.gpu_attention_flops; }));
  t.push_back(optional_rate_key(
      "cluster.gpu.peak_flops_fp8", "(unset)",
      "workload.precision: fp8 with workload.compute: shapes: the GEMMs' dense fp8 rate on the spec sheet "
      "(e.g. 1979TFLOPS for an H100 SXM), their roofline without fp8 rows in cluster.gpu.gemm",
      [](auto& s) -> auto& { return s.cluster.gpu_peak_flops_fp8; }));
  t.push_back(duration_key(
      "cluster.gpu.kernel_overhead", "0s",
      "workload.compute: shapes: GPU time each kernel costs beyond its work (launch gaps), e.g. 4us",
      [](auto& s) -> auto& { return s.cluster.gpu_kernel_overhead; }));

  // --- training
  t.push_back(choice_key(
      "training.scheme", "allreduce", enum_choices<Scheme>(),
      "parameter server, all-reduce (DDP) or sharded data parallelism (FSDP, ZeRO)",
      [](auto& s) -> auto& { return s.scheme.scheme; }));
  t.push_back(choice_key(
      "training.mode", "sync", enum_choices<Mode>(),
      "synchronous steps, or asynchronous (parameter server only)",
      [](auto& s) -> auto& { return s.scheme.mode; }));
  t.push_back(integer_key(
      "training.ps.count", "1", 1, kMaxServers, "parameter-server shards P",
      [](auto& s) -> auto& { return s.scheme.ps.count; }));
  t.push_back(choice_key(
      "training.ps.partition", "whole", enum_choices<PsPartition>(),
      "whole tensors per shard (see training.ps.placement_strategy) or every tensor split evenly",
      [](auto& s) -> auto& { return s.scheme.ps.partition; }));
  t.push_back(choice_key(
      "training.ps.placement_strategy", "least_loaded", enum_choices<scheme::PsPlacementStrategy>(),
      "partition whole: each tensor in creation order to the shard with the fewest bytes so far "
      "(TensorFlow's greedy strategy, tf_cnn_benchmarks), greedy over tensors sorted largest first, or "
      "round-robin in creation order (replica_device_setter's default)",
      [](auto& s) -> auto& { return s.scheme.ps.placement_strategy; }));
  t.push_back(choice_key(
      "training.ps.placement", "dedicated", enum_choices<PsPlacement>(),
      "a node per shard, or shard s on worker node s",
      [](auto& s) -> auto& { return s.scheme.ps.placement; }));
  t.push_back(choice_key(
      "training.ps.order", "random", enum_choices<PsOrder>(),
      "order a worker sends parameters: random each step (TensorFlow), fifo (creation order), tic or tac "
      "(TicTac), priority (P3: the layer nearest the input first, at every slice)",
      [](auto& s) -> auto& { return s.scheme.ps.order; }));
  t.push_back(choice_key(
      "training.ps.barrier", "per_tensor", enum_choices<scheme::PsBarrier>(),
      "sync: a pull waits for its tensor's next version (PS-Lite, BytePS) or for every variable's "
      "(step: TensorFlow's SyncReplicasOptimizer and tf_cnn_benchmarks)",
      [](auto& s) -> auto& { return s.scheme.ps.barrier; }));
  t.push_back(choice_key(
      "training.ps.async_start", "spread", enum_choices<scheme::PsAsyncStart>(),
      "async: when workers start their first step: spread evenly over one cycle, together (convoys), "
      "or at seeded random times within one cycle",
      [](auto& s) -> auto& { return s.scheme.ps.async_start; }));
  t.push_back(duration_key(
      "training.ps.apply_time", "0", "time to apply one gradient tensor at a shard, serialized per shard",
      [](auto& s) -> auto& { return s.scheme.ps.apply_time; }));
  t.push_back(duration_key(
      "training.ps.message_overhead", "0",
      "CPU time per pull or push message at each end: at the shard one message at a time, at the worker "
      "per connection (e.g. 50us)",
      [](auto& s) -> auto& { return s.scheme.ps.message_overhead; }));
  t.push_back(
      {{"training.ps.slice_size", "size", "0",
        "P3's parameter slicing: each piece sent, aggregated and applied as slices of at most this "
        "size; 0 = whole pieces (P3 used 50,000 parameters, 200kB in fp32)"},
       true,
       [](const RawValue& v, Draft& d) {
         const double bytes = parse_bytes_with_unit(v.text, v.where);
         // Below a kilobyte a slice is all header; validate() also bounds the slice count.
         if (bytes > 0 && bytes < 1e3) {
           throw Error(v.where, fmt::format("'{}' is a slice of {:g} bytes: expected 0 (whole pieces) "
                                            "or at least 1kB",
                                            v.text, bytes));
         }
         d.scenario.scheme.ps.slice_bytes = bytes;
       },
       [](const Scenario& s) {
         return Rendered{s.scheme.ps.slice_bytes > 0 ? echo_bytes(s.scheme.ps.slice_bytes) : "0", false};
       }});
  t.push_back(choice_key(
      "training.ps.local_aggregation", "false", booleans(),
      "GPUs of a node sum gradients first; one copy per node to and from the servers",
      [](auto& s) -> auto& { return s.scheme.ps.local_aggregation; }));
  t.push_back(
      {{"training.ps.apply_bandwidth", "bandwidth", "unset (free)", "bytes/s a shard applies gradients at"},
       false,
       [](const RawValue& v, Draft& d) { d.scenario.scheme.ps.apply_bw = parse_bandwidth_with_unit(v.text, v.where); },
       [](const Scenario& s) {
         double bw = s.scheme.ps.apply_bw;
         return Rendered{bw > 0 ? echo_byte_rate(bw) : "free", false};
       }});
  {
    KeyDef algorithm = choice_key(
        "training.allreduce.algorithm", "ring", enum_choices<AllReduceAlgorithm>(),
        "collective algorithm; auto: ring or tree for each bucket, as NCCL's tuner picks",
        [](auto& s) -> auto& { return s.scheme.allreduce.algorithm; });
    // Not applied when absent (the field's default is ring), so that algorithm_given means named.
    algorithm.apply_default = false;
    auto parse = algorithm.apply;
    algorithm.apply = [parse](const RawValue& v, Draft& d) {
      parse(v, d);
      d.algorithm_given = true;
    };
    t.push_back(std::move(algorithm));
  }
  {
    KeyDef protocol = choice_key(
        "training.allreduce.protocol",
        "links (auto where ring, tree or auto is named, without collective_regimes)",
        enum_choices<CollectiveProtocol>(),
        "how a collective step costs: links = the links' latency and bandwidth (and "
        "cluster.collective_regimes); ll, ll128, simple = NCCL's tuning model of that protocol "
        "(cluster.nccl.*); auto = the fastest of the three for each bucket. Default: auto when "
        "training.allreduce.algorithm names one of NCCL's (ring, tree, auto), links otherwise",
        [](auto& s) -> auto& { return s.scheme.allreduce.protocol; });
    protocol.apply_default = false;  // scenario.cpp: auto when an NCCL algorithm is named
    auto parse = protocol.apply;
    protocol.apply = [parse](const RawValue& v, Draft& d) {
      parse(v, d);
      d.protocol_given = true;
    };
    t.push_back(std::move(protocol));
  }
  t.push_back({{"training.allreduce.bucket_size", "size", "25MB",
                "gradient bucket size (PyTorch DDP); 0 = one bucket per gradient"},
               true,
               [](const RawValue& v, Draft& d) {
                 d.scenario.scheme.allreduce.bucket_bytes = parse_bytes_with_unit(v.text, v.where);
               },
               [](const Scenario& s) {
                 return Rendered{echo_bytes(s.scheme.allreduce.bucket_bytes), false};
               }});

  t.push_back(choice_key(
      "training.fsdp.sharding", "full", enum_choices<scheme::FsdpSharding>(),
      "fsdp: full (ZeRO-3), grad_op (ZeRO-2), optimizer (ZeRO-1) or hybrid (HSDP: full inside a shard group)",
      [](auto& s) -> auto& { return s.scheme.fsdp.sharding; }));
  t.push_back({{"training.fsdp.shard_group", "integer >= 1", "the workers of one node",
                "hybrid: workers a unit is sharded over; groups replicate each other. In a parallel layout, "
                "ranks of "
                "each stage's data x context group (which it must divide; default those in one node)"},
               false,
               [](const RawValue& v, Draft& d) {
                 d.scenario.scheme.fsdp.shard_group =
                     parse_integer<int>(v, 1, kMaxWorkers, fmt::format("an integer in [1, {}]", kMaxWorkers));
               },
               [](const Scenario& s) {
                 return Rendered{s.scheme.fsdp.shard_group > 0 ? fmt::format("{}", s.scheme.fsdp.shard_group)
                                                               : "one node",
                                 s.scheme.fsdp.shard_group > 0};
               }});
  t.push_back(integer_key(
      "training.fsdp.unit", "1", 1, kMaxWorkers,
      "fsdp: transformer blocks per unit (gathered together); embedding and head are units of their own",
      [](auto& s) -> auto& { return s.scheme.fsdp.unit_blocks; }));
  t.push_back(integer_key(
      "training.fsdp.prefetch", "1", 0, 64, "fsdp: units gathered ahead of the one computing (0: none)",
      [](auto& s) -> auto& { return s.scheme.fsdp.prefetch; }));
  t.push_back(choice_key(
      "training.fsdp.reshard_after_forward", "true", booleans(),
      "fsdp full/hybrid: free gathered parameters after the forward (gather again for the backward)",
      [](auto& s) -> auto& { return s.scheme.fsdp.reshard_after_forward; }));
  t.push_back(choice_key(
      "training.fsdp.fp8_all_gather", "false", booleans(),
      "fsdp with workload.precision: fp8: the parameter all-gathers (ZeRO-1's too) move each weight's fp8 "
      "copy, 1 byte, not its bf16 value (TorchTitan's enable_fsdp_float8_all_gather, Megatron-LM's "
      "--fp8-param-gather); gradients stay bf16",
      [](auto& s) -> auto& { return s.scheme.fsdp.fp8_all_gather; }));
  t.push_back(choice_key(
      "training.grad_reduce_in_fp32", "false", booleans(),
      "all-reduce, fsdp: gradients accumulated and reduced in fp32 (4 bytes each) under a 16-bit or fp8 "
      "model, as Megatron-LM does under bf16 (--accumulate-allreduce-grads-in-fp32) and TorchTitan's FSDP "
      "(mixed_precision_reduce: float32): the gradient collectives move, and the gradient buffers hold, "
      "twice the bf16 bytes",
      [](auto& s) -> auto& { return s.scheme.grad_reduce_fp32; }));
  t.push_back(choice_key(
      "training.optimizer", "adam", enum_choices<scheme::Optimizer>(),
      "optimizer whose state the memory check counts (fp16/bf16: with fp32 master weights)",
      [](auto& s) -> auto& { return s.scheme.optimizer; }));

  // --- parallel layout: tensor, context, pipeline (data parallelism is what is left)
  t.push_back(integer_key(
      "training.parallel.tensor", "1", 1, kMaxWorkers,
      "tensor-parallel degree t: each block's weights and FLOPs split over t GPUs (Megatron-LM)",
      [](auto& s) -> auto& { return s.scheme.parallel.tensor; }));
  t.push_back(choice_key(
      "training.parallel.sequence", "true", booleans(),
      "with t > 1, Megatron's sequence parallelism: each block's all-reduces become reduce-scatter + "
      "all-gather, norms and dropout on s/t tokens",
      [](auto& s) -> auto& { return s.scheme.parallel.sequence; }));
  t.push_back(integer_key(
      "training.parallel.pipeline", "1", 1, kMaxWorkers,
      "pipeline-parallel degree p: the blocks cut into p stages",
      [](auto& s) -> auto& { return s.scheme.parallel.pipeline; }));
  t.push_back(integer_key(
      "training.parallel.virtual_stages", "1", 1, 1024,
      "v: model chunks per pipeline stage (training.pipeline.schedule: interleaved)",
      [](auto& s) -> auto& { return s.scheme.parallel.virtual_stages; }));
  t.push_back(integer_key(
      "training.parallel.context", "1", 1, kMaxWorkers,
      "context-parallel degree c: the sequence split over c GPUs, K and V passed around a ring (ring "
      "attention)",
      [](auto& s) -> auto& { return s.scheme.parallel.context; }));
  t.push_back(integer_key(
      "training.parallel.expert", "1", 1, kMaxWorkers,
      "expert-parallel degree e (mixtures of experts): each MoE layer's experts split over e GPUs of a "
      "stage (Megatron's parallel folding: e x expert_tensor divides t c d); tokens travel to their "
      "experts and back in all-to-alls",
      [](auto& s) -> auto& { return s.scheme.parallel.expert; }));
  t.push_back(
      {{"training.parallel.expert_tensor", fmt::format("integer in [1, {}] or tensor", kMaxWorkers), "tensor",
        "ETP: each expert's weights split over this many GPUs, which gather the tokens they received "
        "and reduce-scatter the experts' outputs; tensor: t, Megatron-core's default (1: whole "
        "experts, the expert group spanning tensor ranks). Needs training.parallel.expert > 1 "
        "unless equal to t"},
       true,
       [](const RawValue& v, Draft& d) {
         if (v.text == "tensor") {
           d.scenario.scheme.parallel.expert_tensor = 0;
           return;
         }
         d.scenario.scheme.parallel.expert_tensor = parse_integer<int>(
             v, 1, kMaxWorkers, fmt::format("an integer in [1, {}] or tensor", kMaxWorkers));
       },
       [](const Scenario& s) {
         const int etp = s.scheme.parallel.expert_tensor;
         return Rendered{etp > 0 ? fmt::format("{}", etp) : std::string("tensor"), etp > 0};
       }});
  t.push_back({{"training.parallel.order", "dimensions joined by '-'", "tp-cp-dp-pp",
                "rank order, fastest-varying first; Megatron's default puts a tensor group on adjacent ranks "
                "(inside a node when t <= workers per node). The data-parallel degree is workers / (t c p)"},
               true,
               [](const RawValue& v, Draft& d) { d.scenario.scheme.parallel.order = parse_rank_order(v); },
               [](const Scenario& s) {
                 std::string out;
                 for (scheme::ParallelDimension dim : s.scheme.parallel.order) {
                   if (!out.empty()) out += '-';
                   out += scheme::to_string(dim);
                 }
                 return Rendered{out, false};
               }});
  t.push_back(choice_key(
      "training.pipeline.schedule", "1f1b", enum_choices<scheme::PipelineSchedule>(),
      "order of each stage's micro-batch passes: gpipe, 1f1b (Megatron's default), interleaved (v > 1 chunks "
      "per stage) or zero_bubble (ZB-H1: backward split into input- and weight-gradient passes)",
      [](auto& s) -> auto& { return s.scheme.pipeline.schedule; }));
  t.push_back(
      {{"training.pipeline.layers_per_stage", "list of integers", "(even)",
        "transformer blocks of each model chunk, p x v entries in model order, e.g. [5, 6, 6, 5]; default as "
        "even as possible (chunks differ by at most one block), the embedding on the first, the head last"},
       false,
       [](const RawValue& v, Draft& d) {
         std::vector<int> blocks;
         std::string_view text = v.text;
         while (!text.empty()) {
           const size_t end = text.find(',');
           std::string_view item = text.substr(0, end);
           text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
           const size_t first = item.find_first_not_of(" \t[]");
           if (first == std::string_view::npos) continue;
           item = item.substr(first, item.find_last_not_of(" \t[]") - first + 1);
           if (blocks.size() >= 65536) throw Error(v.where, "more than 65536 model chunks");
           blocks.push_back(parse_integer<int>(
               RawValue{std::string(item), v.where}, 0, 1 << 20,
               fmt::format(
                   "a list of blocks per model chunk, each an integer in [0, 1048576] (chunk {}: '{}')",
                   blocks.size(), item)));
         }
         if (blocks.empty())
           throw Error(v.where, "expected a list of blocks per model chunk such as [5, 6, 6, 5]");
         d.scenario.scheme.pipeline.layers_per_stage = std::move(blocks);
       },
       [](const Scenario& s) {
         if (s.scheme.pipeline.layers_per_stage.empty()) return Rendered{"even", false};
         return Rendered{fmt::format("[{}]", fmt::join(s.scheme.pipeline.layers_per_stage, ", ")), false};
       },
       true});
  t.push_back({{"training.pipeline.microbatch_group", fmt::format("integer in [1, {}] or auto", limits::kMaxMicroBatches),
                "auto",
                "interleaved schedule: micro-batches go through the chunks in groups of this many "
                "(Megatron-core's microbatch_group_size_per_vp_stage: between p and m, the last group "
                "empty or at least p); auto: p when m is a multiple of p, else the smallest such group"},
               true,
               [](const RawValue& v, Draft& d) {
                 if (v.text == "auto") {
                   d.scenario.scheme.pipeline.microbatch_group = 0;
                   return;
                 }
                 d.scenario.scheme.pipeline.microbatch_group = parse_integer<int>(
                     v, 1, limits::kMaxMicroBatches, fmt::format("an integer in [1, {}] or auto", limits::kMaxMicroBatches));
               },
               [](const Scenario& s) {
                 const int g = s.scheme.pipeline.microbatch_group;
                 return Rendered{g > 0 ? fmt::format("{}", g) : std::string("auto"), g > 0};
               }});
  t.push_back(choice_key(
      "training.pipeline.account_for_embedding", "false", booleans(),
      "count the embedding and the loss (head) as one block each when splitting the blocks into chunks "
      "(Megatron's --account-for-embedding/loss-in-pipeline-split)",
      [](auto& s) -> auto& { return s.scheme.pipeline.account_for_embedding; }));
  t.push_back(choice_key(
      "training.pipeline.scatter_gather", "false", booleans(),
      "without sequence parallelism (t > 1): each tensor rank sends 1/t of a pipeline message on its own "
      "NIC and the receiving stage all-gathers it over its tensor group (Megatron-LM's "
      "--scatter-gather-tensors-in-pipeline, its default before Megatron-Core); false: every tensor rank "
      "sends the whole activation",
      [](auto& s) -> auto& { return s.scheme.pipeline.scatter_gather; }));
  t.push_back(choice_key(
      "training.tensor.overlap", "none", enum_choices<scheme::TensorOverlap>(),
      "none: a block's tensor-parallel collectives between its GEMMs; collective: each overlaps the GEMM "
      "beside it (TorchTitan's async TP, Megatron's userbuffers)",
      [](auto& s) -> auto& { return s.scheme.tensor.overlap; }));

  // --- stepcast plan: what it searches
  t.push_back(plan_list_key("plan.vary",
                            "keys `stepcast plan` searches besides its default space: "
                            "training.pipeline.scatter_gather (false, true with t > 1, p > 1 and no sequence "
                            "parallelism)",
                            &PlanSpec::vary));
  t.push_back(
      plan_list_key("plan.fixed",
                    "keys `stepcast plan` holds at this scenario's value instead of searching: any of "
                    "training.parallel.{tensor, context, pipeline, virtual_stages, sequence}, "
                    "training.pipeline.schedule, training.scheme, training.fsdp.sharding, "
                    "workload.micro_batch, workload.activation_checkpointing, training.tensor.overlap",
                    &PlanSpec::fixed));

  // --- prediction
  t.push_back(choice_key(
      "predictor", "fine", enum_choices<Predictor>(),
      "discrete-event simulation (fine), phases with heuristics (coarse), or busiest-resource bound "
      "(analytic)",
      [](auto& s) -> auto& { return s.options.predictor; }));
  // --- the whole job: start-up and steps (every predictor)
  t.push_back(number_key(
      "job.samples", "0", 0, true, limits::kMaxSamples,
      "samples to train over all workers (epochs x dataset size); 0 = no job time",
      [](auto& s) -> auto& { return s.options.job.samples; }));
  t.push_back({{"job.epochs", "number > 0", "(unset)",
                "passes over job.dataset to train: job.samples = epochs x the dataset's size"},
               false,
               [](const RawValue& v, Draft& d) {
                 d.scenario.options.job.epochs = parse_number(v, 0, false, "a number of epochs > 0");
                 if (d.scenario.options.job.epochs > 1e9) fail(v, "a number of epochs in (0, 1e9]");
               },
               [](const Scenario& s) {
                 return Rendered{echo_number(s.options.job.epochs), true};
               }});
  t.push_back(
      {{"job.dataset", "dataset name or size", "(unset)",
        "with job.epochs: imagenet-1k (1,281,167 images), imagenet-21k (14,197,122), cifar-10 and cifar-100 "
        "(50,000), mnist (60,000), coco (118,287), or a number of samples"},
       false,
       [](const RawValue& v, Draft& d) {
         static const std::vector<std::pair<std::string_view, double>> kDatasets{
             {"imagenet-1k", 1281167}, {"imagenet-21k", 14197122}, {"cifar-10", 50000},
             {"cifar-100", 50000},     {"mnist", 60000},           {"coco", 118287}};
         for (const auto& [name, size] : kDatasets) {
           if (v.text == name) {
             d.dataset_size = size;
             d.dataset_name = v.text;
             return;
           }
         }
         d.dataset_size = parse_number(v, 0, false,
                                       "imagenet-1k, imagenet-21k, cifar-10, cifar-100, mnist, coco or a "
                                       "number of samples > 0");
         d.dataset_name = v.text;
         d.dataset_where = v.where;
       },
       [](const Scenario& s) {
         return Rendered{
             s.options.job.epochs > 0 ? echo_number(s.options.job.samples / s.options.job.epochs) : "unset",
             s.options.job.epochs > 0};
       }});
  t.push_back({{"job.startup.bytes", "size", "the model's parameter bytes",
                "bytes each worker reads from storage at start-up (model, data shard)"},
               false,
               [](const RawValue& v, Draft& d) {
                 d.scenario.options.job.startup_bytes = parse_bytes_with_unit(v.text, v.where);
               },
               [](const Scenario& s) {
                 const double b = s.options.job.startup_bytes;
                 return Rendered{b >= 0 ? echo_bytes(b) : "model", false};
               }});
  t.push_back({{"job.startup.storage_bandwidth", "bandwidth", "unset (start-up I/O not modelled)",
                "read bandwidth of one worker's start-up read"},
               false,
               [](const RawValue& v, Draft& d) {
                 d.scenario.options.job.storage_bw = parse_bandwidth_with_unit(v.text, v.where);
               },
               [](const Scenario& s) {
                 const double bw = s.options.job.storage_bw;
                 return Rendered{bw > 0 ? echo_byte_rate(bw) : "unset", false};
               }});
  t.push_back(choice_key(
      "job.startup.io", "parallel", enum_choices<predict::StartupIo>(),
      "workers read one after another (start-up grows with N) or all at once",
      [](auto& s) -> auto& { return s.options.job.io; }));
  t.push_back(duration_key(
      "job.startup.fixed", "0", "start-up time besides reading (launch, initialization)",
      [](auto& s) -> auto& { return s.options.job.startup_fixed; }));
  t.push_back(integer_key(
      "steps.warmup", "2", 0, kMaxSteps, "simulated steps discarded before measuring",
      [](auto& s) -> auto& { return s.options.warmup_steps; }));
  t.push_back(integer_key(
      "steps.measure", "5", 1, kMaxSteps, "simulated steps averaged",
      [](auto& s) -> auto& { return s.options.measure_steps; }));
  t.push_back(choice_key(
      "simulation.fast_paths", "true", booleans(),
      "fine: take an exact fast path where one applies (synchronous all-reduce, a synchronous parameter "
      "server with interchangeable clients, FSDP without stragglers, a collective alone); "
      "false: the full event-by-event engine",
      [](auto& s) -> auto& { return s.options.fast_paths; }));
  t.push_back({{"seed", "unsigned integer", "1", "seed of every random choice"},
               true,
               [](const RawValue& v, Draft& d) {
                 d.scenario.options.seed = parse_integer<uint64_t>(v, 0, std::numeric_limits<uint64_t>::max(),
                                                                   "an unsigned integer");
               },
               [](const Scenario& s) {
                 return Rendered{fmt::format("{}", s.options.seed), true};
               }});
  return t;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string_view last_component(std::string_view key) {
  size_t dot = key.rfind('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

bool is_subsequence(std::string_view part, std::string_view whole) {
  size_t i = 0;
  for (char c : whole) {
    if (i < part.size() && part[i] == c) ++i;
  }
  return i == part.size();
}

std::vector<std::string> sections() {
  std::vector<std::string> out;
  for (const KeyDef& def : key_table()) {
    std::string_view key = def.info.key;
    for (size_t dot = key.find('.'); dot != std::string_view::npos; dot = key.find('.', dot + 1)) {
      std::string prefix(key.substr(0, dot));
      if (std::find(out.begin(), out.end(), prefix) == out.end()) out.push_back(prefix);
    }
  }
  return out;
}

// The closest known key or section, or "" when none is close enough to be a likely typo.
std::string suggest(std::string_view unknown) {
  std::vector<std::string> candidates = sections();
  for (const KeyDef& def : key_table()) candidates.push_back(def.info.key);
  std::string best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (const std::string& candidate : candidates) {
    if (candidate == unknown) continue;  // a section given a value is not its own typo
    size_t d = edit_distance(unknown, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  // An abbreviation in the right section: "cluster.nic_bw" for "cluster.nic_bandwidth" is too
  // many edits away but keeps the letters in order.
  std::string abbreviated;
  std::string_view leaf = last_component(unknown);
  std::string_view section = unknown.substr(0, unknown.size() - leaf.size());
  for (const KeyDef& def : key_table()) {
    std::string_view key = def.info.key;
    std::string_view known_leaf = last_component(key);
    if (leaf.size() >= 2 && key.substr(0, key.size() - known_leaf.size()) == section &&
        known_leaf.front() == leaf.front() && is_subsequence(leaf, known_leaf)) {
      abbreviated = def.info.key;
      break;
    }
  }
  // A third of the length catches "nic_bw" for "nic_bandwidth" without proposing unrelated keys;
  // a key the name abbreviates beats a section a few edits away ("cluster.nccl" for "cluster.nic_bw").
  const bool section_over_key = !abbreviated.empty() && !find_key(best);
  if (best_distance <= std::max<size_t>(2, unknown.size() / 3) && !section_over_key) return best;
  // Right name, wrong section ("workers" at the top level, "training.workers").
  for (const KeyDef& def : key_table()) {
    if (last_component(def.info.key) == last_component(unknown)) return def.info.key;
  }
  return abbreviated;
}

}  // namespace

const std::vector<KeyDef>& key_table() {
  static const std::vector<KeyDef> table = make_table();
  return table;
}

const KeyDef* find_key(std::string_view key) {
  for (const KeyDef& def : key_table()) {
    if (def.info.key == key) return &def;
  }
  return nullptr;
}

bool is_section(std::string_view key) {
  static const std::vector<std::string> all = sections();
  return std::find(all.begin(), all.end(), key) != all.end();
}

std::string unknown_key_message(std::string_view key) {
  if (is_section(key)) {
    std::string keys;
    for (const KeyDef& def : key_table()) {
      if (def.info.key.rfind(std::string(key) + ".", 0) == 0)
        keys += (keys.empty() ? "" : ", ") + def.info.key;
    }
    return fmt::format("'{}' is a section, not a key; set one of its keys: {}", key, keys);
  }
  std::string suggestion = suggest(key);
  if (suggestion.empty()) return "unknown key (`stepcast options` lists the known keys)";
  return fmt::format("unknown key; did you mean '{}'?", suggestion);
}

std::string unknown_model_message(std::string_view name) {
  std::string known;
  for (const zoo::ModelSpec& model : zoo::all_models()) {
    if (!known.empty()) known += ", ";
    known += model.name;
  }
  return fmt::format("unknown model '{}'; known models: {}", name, known.empty() ? "(none)" : known);
}

}  // namespace stepcast::scenario::detail

namespace stepcast::scenario {

const std::vector<KeyInfo>& known_keys() {
  static const std::vector<KeyInfo> keys = [] {
    std::vector<KeyInfo> out;
    for (const detail::KeyDef& def : detail::key_table()) out.push_back(def.info);
    return out;
  }();
  return keys;
}

const std::vector<PlanKey>& plan_keys() {
  static const std::vector<PlanKey> keys{
      {"training.parallel.tensor", true, "divisors of the GPUs that divide the heads and key/value heads"},
      {"training.parallel.context", true, "divisors of the GPUs that divide the sequence into 2c chunks"},
      {"training.parallel.pipeline", true, "divisors of the GPUs up to the blocks"},
      {"training.parallel.virtual_stages", true,
       "1, and with the interleaved schedule every v >= 2 that splits the blocks into p v equal chunks"},
      {"training.parallel.sequence", true, "true, false (with t > 1)"},
      {"training.pipeline.schedule", true, "1f1b, gpipe, zero_bubble (v = 1, p > 1), interleaved (v > 1)"},
      {"training.scheme", true, "allreduce, fsdp (with data or context parallelism)"},
      {"training.fsdp.sharding", true, "optimizer, grad_op, full"},
      {"workload.micro_batch", true, "every divisor of the global batch over d"},
      {"workload.activation_checkpointing", true, "none, selective, full"},
      {"training.tensor.overlap", true, "none, collective (with t > 1)"},
      {"training.pipeline.scatter_gather", false, "false, true (with t > 1, p > 1, no sequence parallelism)"},
  };
  return keys;
}

}  // namespace stepcast::scenario
