#include "stepcast/zoo/model_zoo.hpp"

#include <fmt/format.h>

#include <cmath>

#include "layer_builders.hpp"
#include "stepcast/error.hpp"

namespace stepcast::zoo {

int64_t ModelSpec::num_parameters() const {
  int64_t total = 0;
  for (const Layer& layer : layers) {
    for (const ParamTensor& param : layer.params) total += param.elements;
  }
  return total;
}

double ModelSpec::forward_flops() const {
  double total = 0;
  for (const Layer& layer : layers) total += layer.forward_flops;
  return total;
}

size_t ModelSpec::num_tensors() const {
  size_t total = 0;
  for (const Layer& layer : layers) total += layer.params.size();
  return total;
}

namespace {

// GPT-2 as released by OpenAI (Hugging Face GPT2LMHeadModel): LayerNorm, biases everywhere, a
// learned table of 1024 positions, a 4 x hidden GELU MLP, the LM head tied to wte.
TransformerShape gpt2_shape(int64_t layers, int64_t hidden, int64_t heads) {
  return {.layers = layers,
          .hidden = hidden,
          .ffn_hidden = 4 * hidden,
          .heads = heads,
          .kv_heads = heads,
          .vocab = 50257,
          .swiglu = false,
          .tied_embeddings = true,
          .seq_len = 1024,
          .norm = TransformerNorm::LayerNorm,
          .linear_biases = true,
          .positions = PositionEncoding::Learned,
          .max_positions = 1024,
          .layout = TransformerLayout::Gpt2,
          .dropout = true};
}

// The Llama family's choices are TransformerShape's defaults (RMSNorm, rotary, SwiGLU, no
// biases, untied head); the shapes are the models' config.json.
TransformerShape llama_shape(int64_t layers, int64_t hidden, int64_t ffn_hidden, int64_t heads,
                             int64_t kv_heads, int64_t vocab, int64_t seq_len) {
  return {.layers = layers,
          .hidden = hidden,
          .ffn_hidden = ffn_hidden,
          .heads = heads,
          .kv_heads = kv_heads,
          .vocab = vocab,
          .seq_len = seq_len};
}

void add_decoders(std::vector<ModelSpec>& m) {
  m.push_back(make_transformer("gpt2",
                               "GPT-2 small as Hugging Face GPT2LMHeadModel (12 layers, hidden 768, "
                               "tied LM head), sequence length 1024",
                               gpt2_shape(12, 768, 12)));
  m.push_back(make_transformer("gpt2-xl",
                               "GPT-2 XL as Hugging Face GPT2LMHeadModel (48 layers, hidden 1600, "
                               "tied LM head), sequence length 1024",
                               gpt2_shape(48, 1600, 25)));
  m.push_back(make_transformer("llama2-7b",
                               "Llama 2 7B as Hugging Face LlamaForCausalLM (32 layers, hidden 4096, "
                               "SwiGLU 11008), sequence length 4096",
                               llama_shape(32, 4096, 11008, 32, 32, 32000, 4096)));
  m.push_back(make_transformer("llama2-13b",
                               "Llama 2 13B as Hugging Face LlamaForCausalLM (40 layers, hidden 5120, "
                               "SwiGLU 13824), sequence length 4096",
                               llama_shape(40, 5120, 13824, 40, 40, 32000, 4096)));
  m.push_back(make_transformer("llama2-70b",
                               "Llama 2 70B as Hugging Face LlamaForCausalLM (80 layers, hidden 8192, "
                               "GQA 64/8 heads), sequence length 4096",
                               llama_shape(80, 8192, 28672, 64, 8, 32000, 4096)));
  m.push_back(make_transformer("llama3-8b",
                               "Llama 3 8B as Hugging Face LlamaForCausalLM (32 layers, hidden 4096, "
                               "GQA 32/8 heads, vocab 128256), sequence length 8192",
                               llama_shape(32, 4096, 14336, 32, 8, 128256, 8192)));
  m.push_back(make_transformer("llama3-70b",
                               "Llama 3 70B as Hugging Face LlamaForCausalLM (80 layers, hidden 8192, "
                               "GQA 64/8 heads, vocab 128256), sequence length 8192",
                               llama_shape(80, 8192, 28672, 64, 8, 128256, 8192)));
  m.push_back(make_transformer("llama3-405b",
                               "Llama 3.1 405B as Hugging Face LlamaForCausalLM (126 layers, hidden 16384, "
                               "GQA 128/8 heads, vocab 128256), sequence length 8192",
                               llama_shape(126, 16384, 53248, 128, 8, 128256, 8192)));
  TransformerShape mixtral = llama_shape(32, 4096, 14336, 32, 8, 32000, 4096);
  mixtral.experts = 8;
  mixtral.top_k = 2;
  m.push_back(make_transformer("mixtral-8x7b",
                               "Mixtral 8x7B as Hugging Face MixtralForCausalLM (32 layers, hidden "
                               "4096, top-2 of 8 experts, balanced routing), sequence length 4096",
                               mixtral));
  // Qwen/Qwen3-30B-A3B's config.json: every block a mixture of experts (mlp_only_layers empty,
  // decoder_sparse_step 1), so its dense intermediate_size (6144) builds nothing.
  TransformerShape qwen3 = llama_shape(48, 2048, 6144, 32, 4, 151936, 4096);
  qwen3.head_dim_override = 128;  // 32 heads of 128 on a hidden of 2048
  qwen3.qk_norm = true;
  qwen3.experts = 128;
  qwen3.top_k = 8;
  qwen3.expert_ffn_hidden = 768;  // moe_intermediate_size
  m.push_back(make_transformer("qwen3-30b-a3b",
                               "Qwen3-30B-A3B as Hugging Face Qwen3MoeForCausalLM (48 layers, hidden 2048, "
                               "32 heads of 128, GQA 32/4, q/k norms, top-8 of 128 experts of 768, "
                               "balanced routing; tensors named as Mixtral's), sequence length 4096",
                               qwen3));
  // deepseek-ai/DeepSeek-V3's config.json: multi-head latent attention, the first 3 blocks
  // dense (first_k_dense_replace), then 256 routed experts (top-8) and 1 shared expert. The
  // multi-token prediction module (num_nextn_predict_layers 1) is left out, as the published
  // 671B total leaves it out; so is the router's e_score_correction_bias (256 a MoE block),
  // which the auxiliary-loss-free balancing sets by a rule, not by gradients. Its pretraining
  // sequence length, 4096.
  TransformerShape deepseek = llama_shape(61, 7168, 18432, 128, 128, 129280, 4096);
  deepseek.q_lora_rank = 1536;
  deepseek.kv_lora_rank = 512;
  deepseek.qk_nope_head_dim = 128;
  deepseek.qk_rope_head_dim = 64;
  deepseek.v_head_dim = 128;
  deepseek.experts = 256;
  deepseek.top_k = 8;
  deepseek.expert_ffn_hidden = 2048;  // moe_intermediate_size
  deepseek.shared_experts = 1;
  deepseek.dense_layers_first = 3;
  m.push_back(
      make_transformer("deepseek-v3",
                       "DeepSeek-V3 (671B) as Hugging Face DeepseekV3ForCausalLM without its MTP module "
                       "(61 layers, hidden 7168, multi-head latent attention of 128 heads, 3 dense "
                       "blocks then top-8 of 256 experts of 2048 and 1 shared expert, balanced "
                       "routing; tensors named as Mixtral's), sequence length 4096",
                       deepseek));
}

}  // namespace

const std::vector<ModelSpec>& all_models() {
  // Built once on first use (thread-safe static init); the architectures are code, not data.
  static const std::vector<ModelSpec> models = [] {
    std::vector<ModelSpec> m;
    m.push_back(detail::make_alexnet());
    m.push_back(detail::make_vgg16());
    m.push_back(detail::make_resnet("resnet50", {3, 4, 6, 3}));
    m.push_back(detail::make_resnet("resnet101", {3, 4, 23, 3}));
    m.push_back(detail::make_resnet("resnet152", {3, 8, 36, 3}));
    m.push_back(detail::make_inception3());
    m.push_back(detail::make_bert("bert-base",
                                  "BERT-base uncased as Hugging Face BertModel (embeddings, 12 "
                                  "layers, hidden 768, pooler), sequence length 128",
                                  detail::BertConfig{}));
    m.push_back(detail::make_bert(
        "bert-large",
        "BERT-large uncased as Hugging Face BertModel (embeddings, 24 "
        "layers, hidden 1024, pooler), sequence length 128",
        detail::BertConfig{.hidden = 1024, .intermediate = 4096, .num_layers = 24, .num_heads = 16}));
    add_decoders(m);
    return m;
  }();
  return models;
}

const ModelSpec* find_model(std::string_view name) {
  for (const ModelSpec& model : all_models()) {
    if (model.name == name) return &model;
  }
  return nullptr;
}

const ModelSpec& get_model(std::string_view name) {
  if (const ModelSpec* model = find_model(name)) return *model;
  std::string known;
  for (const ModelSpec& model : all_models()) known += (known.empty() ? "" : ", ") + model.name;
  throw Error({"", 0, "workload.model"}, fmt::format("expected one of {}, got \"{}\"", known, name));
}

workload::Workload to_workload(const ModelSpec& model, const WorkloadParams& params) {
  // `!(x > 0)` also rejects NaN.
  if (!(params.step_time > 0) || !std::isfinite(params.step_time)) {
    throw Error({"", 0, "workload.step_time"},
                fmt::format("expected a finite time > 0 s, got {}", params.step_time));
  }
  if (params.batch_per_worker < 1) {
    throw Error({"", 0, "workload.batch_per_worker"},
                fmt::format("expected an integer >= 1, got {}", params.batch_per_worker));
  }
  const double ratio = params.backward_to_forward;
  if (!(ratio >= 0) || !std::isfinite(ratio)) {
    throw Error({"", 0, "workload.backward_ratio"},
                fmt::format("expected a finite ratio >= 0, got {}", ratio));
  }
  const double total_flops = model.forward_flops();
  if (!(total_flops > 0)) {
    throw Error({"", 0, "workload.model"},
                fmt::format("model \"{}\" has no FLOPs to split the step time across", model.name));
  }
  const std::vector<double> recompute = recompute_flops(model, params.checkpointing);
  const double step_flops = step_flops_per_sample(model, ratio, params.checkpointing);

  workload::Workload w;
  w.name = model.name;
  w.batch_per_worker = params.batch_per_worker;
  w.precision = params.precision;
  w.lanes = {"gpu"};
  const int num_layers = static_cast<int>(model.layers.size());
  // Time per FLOP of work; a layer's backward costs `ratio` times its forward plus its
  // recomputation, so forward and backward together take step_time.
  const double seconds_per_flop = params.step_time / step_flops;
  auto add_op = [&](workload::OpKind kind, int layer, double duration) {
    const Layer& l = model.layers[static_cast<size_t>(layer)];
    workload::Op op{.name = (kind == workload::OpKind::Forward ? "fwd:" : "bwd:") + l.name,
                    .kind = kind,
                    .duration = duration,
                    .lane = 0,
                    .layer = layer,
                    .deps = {}};
    if (!w.ops.empty()) op.deps.push_back(static_cast<int>(w.ops.size()) - 1);
    w.ops.push_back(std::move(op));
  };
  for (int l = 0; l < num_layers; ++l) {
    add_op(workload::OpKind::Forward, l, model.layers[static_cast<size_t>(l)].forward_flops * seconds_per_flop);
  }
  for (int l = num_layers - 1; l >= 0; --l) {
    const double flops = ratio * model.layers[static_cast<size_t>(l)].forward_flops + recompute[static_cast<size_t>(l)];
    add_op(workload::OpKind::Backward, l, flops * seconds_per_flop);
  }
  w.facts.parameters = static_cast<double>(model.num_parameters());
  if (model.transformer) {
    const double tokens = static_cast<double>(model.transformer->seq_len);
    w.facts.tokens_per_sample = tokens;
    w.facts.flops_per_sample = training_flops_per_token(model) * tokens;
    w.facts.flops_per_sample_6n = flops_per_token_6n(model) * tokens;
    w.facts.transformer = *model.transformer;
    w.facts.checkpointing = params.checkpointing;
    // Decoder blocks: layers "<block>.attention" and "<block>.mlp"/".moe" share a block;
    // embeddings and head stand alone (FSDP wraps them as units of their own).
    w.block_of_layer.assign(model.layers.size(), -1);
    int block = -1;
    for (size_t l = 0; l < model.layers.size(); ++l) {
      const std::string& name = model.layers[l].name;
      if (name.ends_with(".attention")) ++block;
      if (name != "embeddings" && name != "head") w.block_of_layer[l] = block;
    }
  }

  const double element_bytes = workload::bytes_per_element(params.precision);
  for (int l = 0; l < num_layers; ++l) {
    const int backward_op = 2 * num_layers - 1 - l;  // backward ops run in reverse layer order
    for (const ParamTensor& param : model.layers[static_cast<size_t>(l)].params) {
      w.tensors.push_back(workload::Tensor{
          .name = param.name,
          .bytes = static_cast<double>(param.elements) * element_bytes,
          .producer = backward_op,
          .consumers = {l},
      });
    }
  }
  return w;
}

double step_flops_per_sample(const ModelSpec& model, double backward_to_forward,
                             workload::ActivationCheckpointing checkpointing) {
  const std::vector<double> recompute = recompute_flops(model, checkpointing);
  double flops = 0;
  for (size_t l = 0; l < model.layers.size(); ++l) {
    flops += model.layers[l].forward_flops * (1 + backward_to_forward) + recompute[l];
  }
  return flops;
}

std::vector<double> recompute_flops(const ModelSpec& model, workload::ActivationCheckpointing checkpointing) {
  std::vector<double> r(model.layers.size(), 0.0);
  if (!model.transformer) return r;
  const TransformerShape& s = *model.transformer;
  for (size_t l = 0; l < model.layers.size(); ++l) {
    const Layer& layer = model.layers[l];
    const bool in_block = layer.name != "embeddings" && layer.name != "head";
    switch (checkpointing) {
      case workload::ActivationCheckpointing::None:
        break;
      case workload::ActivationCheckpointing::Selective:
        // Korthikanti et al. 2022: only the attention scores, softmax and context are recomputed.
        if (layer.name.ends_with(".attention")) {
          const double square = static_cast<double>(s.seq_len) * static_cast<double>(s.seq_len);
          // Q K^T over q_width and P V over the value width (the same width without MLA).
          r[l] = s.mla() ? 2.0 * square * static_cast<double>(s.q_width() + s.attention_out_width())
                         : 2.0 * 2.0 * static_cast<double>(s.seq_len) * static_cast<double>(s.seq_len) *
                               static_cast<double>(s.q_width());
        }
        break;
      case workload::ActivationCheckpointing::Full:
        if (in_block) r[l] = layer.forward_flops;
        break;
    }
  }
  return r;
}

}  // namespace stepcast::zoo
