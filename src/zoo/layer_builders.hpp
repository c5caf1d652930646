// Private to zoo/: the building blocks the architectures are written with, and one factory per
// model family. A builder appends a layer's trainable tensors (named like the reference
// implementation) and adds its forward FLOPs per sample to a Layer, then returns the shape of
// its output, so each model reads like its torchvision / Hugging Face definition and the
// parameter counts and FLOPs follow from the shapes rather than from tables.
//
// FLOPs count a multiply-add as 2. Besides convolutions and matrix products, elementwise work
// is counted with the small per-element constants below; it is a few percent of the total but
// keeps normalization-heavy layers from getting a zero share of the step time.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::zoo::detail {

/// Batch norm / layer norm: subtract mean, scale by 1/std, then gamma and beta (statistics are
/// amortized over the elements and not counted separately).
inline constexpr double kNormFlopsPerElement = 4;
/// ReLU or a residual addition: one operation per element.
inline constexpr double kSimpleFlopsPerElement = 1;
/// GELU (erf form) and tanh: a handful of operations per element; 8 is the usual estimate.
inline constexpr double kTranscendentalFlopsPerElement = 8;
/// Softmax over attention scores: scale, max, subtract+exp, sum, divide.
inline constexpr double kSoftmaxFlopsPerElement = 5;

/// Activations of one sample, channels x height x width.
struct FeatureMap {
  int64_t channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  [[nodiscard]] int64_t elements() const { return channels * height * width; }
};

/// A 2-D convolution's hyper-parameters (input channels come from the FeatureMap).
struct Conv {
  int64_t out = 0;
  int kernel_h = 1;
  int kernel_w = 1;
  int stride = 1;
  int pad_h = 0;
  int pad_w = 0;
  bool bias = false;
};

/// Square kernel with the same padding on every side, the common case.
[[nodiscard]] Conv square_conv(int64_t out, int kernel, int stride = 1, int pad = 0, bool bias = false);

/// An empty layer named `name`, to which the builders below add tensors and FLOPs.
[[nodiscard]] Layer make_layer(std::string name);

/// Adds tensors "<prefix>.weight" (and "<prefix>.bias") and the FLOPs
/// 2 * Cin * kh * kw * Cout * Hout * Wout (+ Cout * Hout * Wout for the bias).
FeatureMap conv2d(Layer& layer, const std::string& prefix, FeatureMap in, const Conv& conv);
/// Adds "<prefix>.weight" and "<prefix>.bias" (running statistics are buffers, not parameters).
FeatureMap batch_norm(Layer& layer, const std::string& prefix, FeatureMap in);
FeatureMap relu(Layer& layer, FeatureMap in);
/// Elementwise sum of two equal maps (residual connection).
FeatureMap residual_add(Layer& layer, FeatureMap in);
/// kernel*kernel operations per output element (comparisons or additions).
FeatureMap max_pool(Layer& layer, FeatureMap in, int kernel, int stride, int pad = 0);
FeatureMap avg_pool(Layer& layer, FeatureMap in, int kernel, int stride, int pad = 0);
/// Averages each channel to 1x1.
FeatureMap global_avg_pool(Layer& layer, FeatureMap in);
/// Adds "<prefix>.weight" (out x in) and "<prefix>.bias", applied to `rows` vectors
/// (tokens) per sample: rows * (2 * in * out + out) FLOPs.
void linear(Layer& layer, const std::string& prefix, int64_t in, int64_t out, int64_t rows = 1,
            bool bias = true);
/// Adds "<prefix>.weight" and "<prefix>.bias" of size `features`, normalizing rows x features.
void layer_norm(Layer& layer, const std::string& prefix, int64_t features, int64_t rows);
/// Adds "<prefix>.weight" (num_embeddings x dim); a lookup costs no FLOPs.
void embedding(Layer& layer, const std::string& prefix, int64_t num_embeddings, int64_t dim);
/// Adds `flops_per_element * elements` FLOPs (activations, softmax).
void elementwise(Layer& layer, double elements, double flops_per_element);

// Model factories, one per family (the zoo key is set by the caller's name argument).
[[nodiscard]] ModelSpec make_alexnet();
[[nodiscard]] ModelSpec make_vgg16();
/// `blocks`: bottleneck blocks in stages layer1..layer4, e.g. {3, 4, 6, 3} for ResNet-50.
[[nodiscard]] ModelSpec make_resnet(const std::string& name, std::array<int, 4> blocks);
[[nodiscard]] ModelSpec make_inception3();

struct BertConfig {
  int64_t vocab_size = 30522;
  int64_t max_position = 512;
  int64_t type_vocab_size = 2;
  int64_t hidden = 768;
  int64_t intermediate = 3072;
  int64_t num_layers = 12;
  int64_t num_heads = 12;
  int64_t sequence_length = 128;  ///< tokens per sample for the FLOPs
};
[[nodiscard]] ModelSpec make_bert(const std::string& name, const std::string& description,
                                  const BertConfig& config);

}  // namespace stepcast::zoo::detail
