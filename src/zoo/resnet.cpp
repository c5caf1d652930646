// ResNet-50/101/152 as torchvision.models.resnet*: bottleneck blocks of version 1.5 (the stride
// sits on the 3x3 convolution), convolutions without bias each followed by a batch norm, and a
// 1x1 projection ("downsample") on the first block of each stage. Each conv+BN(+ReLU) pair is
// one layer named after the conv's module, so ResNet-50 has torchvision's 161 tensors.
#include <string>

#include "layer_builders.hpp"

namespace stepcast::zoo::detail {

namespace {

constexpr int64_t kExpansion = 4;  // torchvision Bottleneck.expansion

// One conv + batch norm (+ ReLU) layer: "<block>.convN" holds "<block>.convN.weight",
// "<block>.bnN.weight", "<block>.bnN.bias".
FeatureMap conv_bn(ModelSpec& model, const std::string& block, int index, FeatureMap x, const Conv& conv,
                   bool with_relu) {
  const std::string n = std::to_string(index);
  Layer layer = make_layer(block + ".conv" + n);
  x = batch_norm(layer, block + ".bn" + n, conv2d(layer, block + ".conv" + n, x, conv));
  if (with_relu) x = relu(layer, x);
  model.layers.push_back(std::move(layer));
  return x;
}

FeatureMap bottleneck(ModelSpec& model, const std::string& block, FeatureMap in, int64_t width, int stride) {
  FeatureMap x = conv_bn(model, block, 1, in, square_conv(width, 1), true);
  x = conv_bn(model, block, 2, x, square_conv(width, 3, stride, 1), true);
  const bool project = stride != 1 || in.channels != width * kExpansion;
  x = conv_bn(model, block, 3, x, square_conv(width * kExpansion, 1), false);
  if (project) {
    // torchvision computes the projection after conv3/bn3, then adds and applies ReLU.
    Layer layer = make_layer(block + ".downsample");
    const Conv projection = square_conv(width * kExpansion, 1, stride);
    batch_norm(layer, block + ".downsample.1", conv2d(layer, block + ".downsample.0", in, projection));
    model.layers.push_back(std::move(layer));
  }
  // The residual addition and the block's final ReLU go to the block's last layer.
  Layer& last = model.layers.back();
  return relu(last, residual_add(last, x));
}

}  // namespace

ModelSpec make_resnet(const std::string& name, std::array<int, 4> blocks) {
  ModelSpec model{.name = name,
                  .description = "ResNet (" + std::to_string(blocks[0]) + ", " + std::to_string(blocks[1]) +
                                 ", " + std::to_string(blocks[2]) + ", " + std::to_string(blocks[3]) +
                                 " bottleneck blocks, v1.5) as torchvision.models." + name +
                                 ", input 3x224x224",
                  .layers = {}};
  FeatureMap x{3, 224, 224};
  {
    Layer stem = make_layer("conv1");
    x = relu(stem, batch_norm(stem, "bn1", conv2d(stem, "conv1", x, square_conv(64, 7, 2, 3))));
    model.layers.push_back(std::move(stem));
    Layer pool = make_layer("maxpool");
    x = max_pool(pool, x, 3, 2, 1);
    model.layers.push_back(std::move(pool));
  }
  int64_t width = 64;
  for (int stage = 0; stage < 4; ++stage) {
    for (int b = 0; b < blocks[stage]; ++b) {
      // Stages 2-4 halve the map in their first block.
      const int stride = (stage > 0 && b == 0) ? 2 : 1;
      const std::string block = "layer" + std::to_string(stage + 1) + "." + std::to_string(b);
      x = bottleneck(model, block, x, width, stride);
    }
    width *= 2;
  }
  Layer pool = make_layer("avgpool");
  x = global_avg_pool(pool, x);
  model.layers.push_back(std::move(pool));
  Layer fc = make_layer("fc");
  linear(fc, "fc", x.channels, 1000);
  model.layers.push_back(std::move(fc));
  return model;
}

}  // namespace stepcast::zoo::detail
