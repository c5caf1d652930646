#include "layer_builders.hpp"

#include "stepcast/error.hpp"

namespace stepcast::zoo::detail {

namespace {

void add_param(Layer& layer, std::string name, int64_t elements) {
  layer.params.push_back(ParamTensor{.name = std::move(name), .elements = elements});
}

// Output size of a convolution or pooling window along one axis (floor mode, as PyTorch).
int64_t window_output(int64_t size, int kernel, int stride, int pad) {
  const int64_t out = (size + 2 * pad - kernel) / stride + 1;
  STEPCAST_ASSERT(out >= 1);
  return out;
}

FeatureMap pool_output(FeatureMap in, int kernel, int stride, int pad) {
  return {in.channels, window_output(in.height, kernel, stride, pad),
          window_output(in.width, kernel, stride, pad)};
}

}  // namespace

Layer make_layer(std::string name) {
  Layer layer;
  layer.name = std::move(name);
  return layer;
}

Conv square_conv(int64_t out, int kernel, int stride, int pad, bool bias) {
  return Conv{.out = out,
              .kernel_h = kernel,
              .kernel_w = kernel,
              .stride = stride,
              .pad_h = pad,
              .pad_w = pad,
              .bias = bias};
}

FeatureMap conv2d(Layer& layer, const std::string& prefix, FeatureMap in, const Conv& conv) {
  const FeatureMap out{conv.out, window_output(in.height, conv.kernel_h, conv.stride, conv.pad_h),
                       window_output(in.width, conv.kernel_w, conv.stride, conv.pad_w)};
  const int64_t weights = in.channels * conv.kernel_h * conv.kernel_w * conv.out;
  add_param(layer, prefix + ".weight", weights);
  // Every output element is a dot product over in.channels * kernel_h * kernel_w inputs.
  layer.forward_flops += 2.0 * static_cast<double>(in.channels * conv.kernel_h * conv.kernel_w) *
                         static_cast<double>(out.elements());
  if (conv.bias) {
    add_param(layer, prefix + ".bias", conv.out);
    layer.forward_flops += static_cast<double>(out.elements());
  }
  return out;
}

FeatureMap batch_norm(Layer& layer, const std::string& prefix, FeatureMap in) {
  add_param(layer, prefix + ".weight", in.channels);
  add_param(layer, prefix + ".bias", in.channels);
  elementwise(layer, static_cast<double>(in.elements()), kNormFlopsPerElement);
  return in;
}

FeatureMap relu(Layer& layer, FeatureMap in) {
  elementwise(layer, static_cast<double>(in.elements()), kSimpleFlopsPerElement);
  return in;
}

FeatureMap residual_add(Layer& layer, FeatureMap in) {
  elementwise(layer, static_cast<double>(in.elements()), kSimpleFlopsPerElement);
  return in;
}

FeatureMap max_pool(Layer& layer, FeatureMap in, int kernel, int stride, int pad) {
  const FeatureMap out = pool_output(in, kernel, stride, pad);
  elementwise(layer, static_cast<double>(out.elements()), static_cast<double>(kernel) * kernel);
  return out;
}

FeatureMap avg_pool(Layer& layer, FeatureMap in, int kernel, int stride, int pad) {
  const FeatureMap out = pool_output(in, kernel, stride, pad);
  elementwise(layer, static_cast<double>(out.elements()), static_cast<double>(kernel) * kernel);
  return out;
}

FeatureMap global_avg_pool(Layer& layer, FeatureMap in) {
  elementwise(layer, static_cast<double>(in.elements()), kSimpleFlopsPerElement);
  return {in.channels, 1, 1};
}

void linear(Layer& layer, const std::string& prefix, int64_t in, int64_t out, int64_t rows, bool bias) {
  add_param(layer, prefix + ".weight", in * out);
  layer.forward_flops += 2.0 * static_cast<double>(rows) * static_cast<double>(in * out);
  if (bias) {
    add_param(layer, prefix + ".bias", out);
    layer.forward_flops += static_cast<double>(rows * out);
  }
}

void layer_norm(Layer& layer, const std::string& prefix, int64_t features, int64_t rows) {
  add_param(layer, prefix + ".weight", features);
  add_param(layer, prefix + ".bias", features);
  elementwise(layer, static_cast<double>(rows * features), kNormFlopsPerElement);
}

void embedding(Layer& layer, const std::string& prefix, int64_t num_embeddings, int64_t dim) {
  add_param(layer, prefix + ".weight", num_embeddings * dim);
}

void elementwise(Layer& layer, double elements, double flops_per_element) {
  layer.forward_flops += elements * flops_per_element;
}

}  // namespace stepcast::zoo::detail
