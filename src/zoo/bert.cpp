// BERT as Hugging Face transformers' BertModel: embeddings (word, position, token type,
// LayerNorm), the encoder layers and the pooler, with HF's parameter names. Per sample means
// per sequence of `sequence_length` tokens. Each encoder layer is two Layers, "attention"
// (Q/K/V, scores, softmax, context, output dense, residual + LayerNorm) and "feed_forward"
// (intermediate dense, GELU, output dense, residual + LayerNorm), so gradients of one encoder
// layer become ready in two pieces, as under autograd. FLOPs include the attention matrix
// products, 2 * 2 * seq * seq * hidden per layer (Q K^T and scores x V over all heads).
#include <string>

#include "layer_builders.hpp"

namespace stepcast::zoo::detail {

ModelSpec make_bert(const std::string& name, const std::string& description, const BertConfig& config) {
  ModelSpec model{.name = name, .description = description, .layers = {}};
  const int64_t seq = config.sequence_length;
  const int64_t hidden = config.hidden;
  const auto tokens = static_cast<double>(seq * hidden);  // elements of one activation

  Layer embeddings = make_layer("embeddings");
  embedding(embeddings, "embeddings.word_embeddings", config.vocab_size, hidden);
  embedding(embeddings, "embeddings.position_embeddings", config.max_position, hidden);
  embedding(embeddings, "embeddings.token_type_embeddings", config.type_vocab_size, hidden);
  elementwise(embeddings, tokens, 2 * kSimpleFlopsPerElement);  // sum of the three lookups
  layer_norm(embeddings, "embeddings.LayerNorm", hidden, seq);
  model.layers.push_back(std::move(embeddings));

  for (int64_t i = 0; i < config.num_layers; ++i) {
    const std::string prefix = "encoder.layer." + std::to_string(i);

    Layer attention = make_layer(prefix + ".attention");
    for (const char* projection : {"query", "key", "value"}) {
      linear(attention, prefix + ".attention.self." + projection, hidden, hidden, seq);
    }
    // Q K^T and probabilities x V: each seq x seq x head_dim per head, summed over heads.
    attention.forward_flops += 2.0 * 2.0 * static_cast<double>(seq * seq * hidden);
    elementwise(attention, static_cast<double>(config.num_heads * seq * seq), kSoftmaxFlopsPerElement);
    linear(attention, prefix + ".attention.output.dense", hidden, hidden, seq);
    elementwise(attention, tokens, kSimpleFlopsPerElement);  // residual
    layer_norm(attention, prefix + ".attention.output.LayerNorm", hidden, seq);
    model.layers.push_back(std::move(attention));

    Layer feed_forward = make_layer(prefix + ".feed_forward");
    linear(feed_forward, prefix + ".intermediate.dense", hidden, config.intermediate, seq);
    elementwise(feed_forward, static_cast<double>(seq * config.intermediate),
                kTranscendentalFlopsPerElement);  // GELU
    linear(feed_forward, prefix + ".output.dense", config.intermediate, hidden, seq);
    elementwise(feed_forward, tokens, kSimpleFlopsPerElement);  // residual
    layer_norm(feed_forward, prefix + ".output.LayerNorm", hidden, seq);
    model.layers.push_back(std::move(feed_forward));
  }

  // BertPooler: dense + tanh on the first token only.
  Layer pooler = make_layer("pooler");
  linear(pooler, "pooler.dense", hidden, hidden);
  elementwise(pooler, static_cast<double>(hidden), kTranscendentalFlopsPerElement);
  model.layers.push_back(std::move(pooler));
  return model;
}

}  // namespace stepcast::zoo::detail
