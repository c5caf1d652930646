// AlexNet and VGG-16 as in torchvision.models: plain conv stacks with biased convolutions and a
// three-layer classifier. Layers and tensors carry torchvision's nn.Sequential indices
// ("features.0.weight", "classifier.6.bias"), so ReLU/Dropout/pool positions are counted in them.
#include <string>
#include <vector>

#include "layer_builders.hpp"

namespace stepcast::zoo::detail {

namespace {

// Classifier shared by both: Dropout, Linear, ReLU, Dropout, Linear, ReLU, Linear (AlexNet) or
// Linear, ReLU, Dropout, Linear, ReLU, Dropout, Linear (VGG); `indices` are the Linear
// positions. Dropout is not counted (a mask multiply, negligible next to the matrices).
void add_classifier(ModelSpec& model, int64_t in_features, const std::vector<int>& indices) {
  const std::vector<int64_t> widths{4096, 4096, 1000};
  for (size_t i = 0; i < widths.size(); ++i) {
    const std::string name = "classifier." + std::to_string(indices[i]);
    Layer layer = make_layer(name);
    linear(layer, name, in_features, widths[i]);
    if (i + 1 < widths.size()) {
      elementwise(layer, static_cast<double>(widths[i]), kSimpleFlopsPerElement);  // ReLU
    }
    model.layers.push_back(std::move(layer));
    in_features = widths[i];
  }
}

}  // namespace

ModelSpec make_alexnet() {
  ModelSpec model{.name = "alexnet",
                  .description =
                      "AlexNet as torchvision.models.alexnet (one-GPU variant, "
                      "1000 classes), input 3x224x224",
                  .layers = {}};
  FeatureMap x{3, 224, 224};
  struct Stage {
    int index;  // position in torchvision's `features` Sequential
    Conv conv;
    bool pool_after;
  };
  const std::vector<Stage> stages{{0, square_conv(64, 11, 4, 2, true), true},
                                  {3, square_conv(192, 5, 1, 2, true), true},
                                  {6, square_conv(384, 3, 1, 1, true), false},
                                  {8, square_conv(256, 3, 1, 1, true), false},
                                  {10, square_conv(256, 3, 1, 1, true), true}};
  for (const Stage& stage : stages) {
    const std::string name = "features." + std::to_string(stage.index);
    Layer conv = make_layer(name);
    x = relu(conv, conv2d(conv, name, x, stage.conv));
    model.layers.push_back(std::move(conv));
    if (stage.pool_after) {
      Layer pool = make_layer("features." + std::to_string(stage.index + 2));
      x = max_pool(pool, x, 3, 2);
      model.layers.push_back(std::move(pool));
    }
  }
  // AdaptiveAvgPool2d((6, 6)) is the identity on the 6x6 map of a 224x224 input: no layer.
  add_classifier(model, x.elements(), {1, 4, 6});
  return model;
}

ModelSpec make_vgg16() {
  ModelSpec model{.name = "vgg16",
                  .description =
                      "VGG-16 without batch norm as torchvision.models.vgg16 "
                      "(configuration D, 1000 classes), input 3x224x224",
                  .layers = {}};
  // torchvision's cfgs["D"]; 0 marks a 2x2 max pool.
  const std::vector<int64_t> config{64, 64,  0,   128, 128, 0,   256, 256, 256,
                                    0,  512, 512, 512, 0,   512, 512, 512, 0};
  FeatureMap x{3, 224, 224};
  int index = 0;  // position in `features`: each conv is followed by a ReLU module
  for (int64_t channels : config) {
    Layer layer = make_layer("features." + std::to_string(index));
    if (channels == 0) {
      x = max_pool(layer, x, 2, 2);
      index += 1;
    } else {
      x = relu(layer, conv2d(layer, layer.name, x, square_conv(channels, 3, 1, 1, true)));
      index += 2;
    }
    model.layers.push_back(std::move(layer));
  }
  // AdaptiveAvgPool2d((7, 7)) is the identity on the 7x7 map of a 224x224 input: no layer.
  add_classifier(model, x.elements(), {0, 3, 6});
  return model;
}

}  // namespace stepcast::zoo::detail
