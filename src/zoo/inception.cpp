// Inception v3 as torchvision.models.inception_v3 with its default aux_logits=True. Every
// convolution is a BasicConv2d: conv without bias + BatchNorm2d(eps=0.001), whose tensors are
// "<module>.conv.weight", "<module>.bn.weight", "<module>.bn.bias"; each BasicConv2d is one
// layer. Layers follow the order of torchvision's forward(); the pooling that feeds each
// block's branch_pool (a functional call there, hence no module name) is a parameterless layer
// "<block>.pool". The auxiliary classifier is included because it runs in training mode.
#include <initializer_list>
#include <string>

#include "layer_builders.hpp"
#include "stepcast/error.hpp"

namespace stepcast::zoo::detail {

namespace {

// Kernel shapes used by the blocks, spelled as in torchvision's constructor arguments.
Conv one_by_n(int64_t out, int n) {  // kernel_size=(1, n), padding=(0, n / 2)
  return Conv{.out = out, .kernel_h = 1, .kernel_w = n, .pad_w = n / 2};
}
Conv n_by_one(int64_t out, int n) {  // kernel_size=(n, 1), padding=(n / 2, 0)
  return Conv{.out = out, .kernel_h = n, .kernel_w = 1, .pad_h = n / 2};
}

class InceptionBuilder {
 public:
  explicit InceptionBuilder(ModelSpec& model) : model_(model) {}

  /// BasicConv2d named `module`: conv (no bias) + BN + ReLU.
  FeatureMap basic_conv(const std::string& module, FeatureMap in, const Conv& conv) {
    Layer layer = make_layer(module);
    FeatureMap x = conv2d(layer, module + ".conv", in, conv);
    x = relu(layer, batch_norm(layer, module + ".bn", x));
    model_.layers.push_back(std::move(layer));
    return x;
  }

  FeatureMap pool(const std::string& name, FeatureMap in, bool max, int kernel, int stride, int pad = 0) {
    Layer layer = make_layer(name);
    const FeatureMap out =
        max ? max_pool(layer, in, kernel, stride, pad) : avg_pool(layer, in, kernel, stride, pad);
    model_.layers.push_back(std::move(layer));
    return out;
  }

  // InceptionA: 1x1, 5x5, double 3x3 and pooled 1x1 branches at 35x35.
  FeatureMap block_a(const std::string& b, FeatureMap in, int64_t pool_features) {
    const FeatureMap b1 = basic_conv(b + ".branch1x1", in, square_conv(64, 1));
    FeatureMap b5 = basic_conv(b + ".branch5x5_1", in, square_conv(48, 1));
    b5 = basic_conv(b + ".branch5x5_2", b5, square_conv(64, 5, 1, 2));
    FeatureMap b3 = basic_conv(b + ".branch3x3dbl_1", in, square_conv(64, 1));
    b3 = basic_conv(b + ".branch3x3dbl_2", b3, square_conv(96, 3, 1, 1));
    b3 = basic_conv(b + ".branch3x3dbl_3", b3, square_conv(96, 3, 1, 1));
    FeatureMap bp = pool(b + ".pool", in, false, 3, 1, 1);
    bp = basic_conv(b + ".branch_pool", bp, square_conv(pool_features, 1));
    return concat({b1, b5, b3, bp});
  }

  // InceptionB: grid reduction 35x35 -> 17x17.
  FeatureMap block_b(const std::string& b, FeatureMap in) {
    const FeatureMap b3 = basic_conv(b + ".branch3x3", in, square_conv(384, 3, 2));
    FeatureMap bd = basic_conv(b + ".branch3x3dbl_1", in, square_conv(64, 1));
    bd = basic_conv(b + ".branch3x3dbl_2", bd, square_conv(96, 3, 1, 1));
    bd = basic_conv(b + ".branch3x3dbl_3", bd, square_conv(96, 3, 2));
    const FeatureMap bp = pool(b + ".pool", in, true, 3, 2);
    return concat({b3, bd, bp});
  }

  // InceptionC: factorized 7x7 branches at 17x17.
  FeatureMap block_c(const std::string& b, FeatureMap in, int64_t c7) {
    const FeatureMap b1 = basic_conv(b + ".branch1x1", in, square_conv(192, 1));
    FeatureMap b7 = basic_conv(b + ".branch7x7_1", in, square_conv(c7, 1));
    b7 = basic_conv(b + ".branch7x7_2", b7, one_by_n(c7, 7));
    b7 = basic_conv(b + ".branch7x7_3", b7, n_by_one(192, 7));
    FeatureMap bd = basic_conv(b + ".branch7x7dbl_1", in, square_conv(c7, 1));
    bd = basic_conv(b + ".branch7x7dbl_2", bd, n_by_one(c7, 7));
    bd = basic_conv(b + ".branch7x7dbl_3", bd, one_by_n(c7, 7));
    bd = basic_conv(b + ".branch7x7dbl_4", bd, n_by_one(c7, 7));
    bd = basic_conv(b + ".branch7x7dbl_5", bd, one_by_n(192, 7));
    FeatureMap bp = pool(b + ".pool", in, false, 3, 1, 1);
    bp = basic_conv(b + ".branch_pool", bp, square_conv(192, 1));
    return concat({b1, b7, bd, bp});
  }

  // InceptionD: grid reduction 17x17 -> 8x8.
  FeatureMap block_d(const std::string& b, FeatureMap in) {
    FeatureMap b3 = basic_conv(b + ".branch3x3_1", in, square_conv(192, 1));
    b3 = basic_conv(b + ".branch3x3_2", b3, square_conv(320, 3, 2));
    FeatureMap b7 = basic_conv(b + ".branch7x7x3_1", in, square_conv(192, 1));
    b7 = basic_conv(b + ".branch7x7x3_2", b7, one_by_n(192, 7));
    b7 = basic_conv(b + ".branch7x7x3_3", b7, n_by_one(192, 7));
    b7 = basic_conv(b + ".branch7x7x3_4", b7, square_conv(192, 3, 2));
    const FeatureMap bp = pool(b + ".pool", in, true, 3, 2);
    return concat({b3, b7, bp});
  }

  // InceptionE: expanded filter banks at 8x8; the 1x3 and 3x1 convs read the same input and
  // their outputs are concatenated.
  FeatureMap block_e(const std::string& b, FeatureMap in) {
    const FeatureMap b1 = basic_conv(b + ".branch1x1", in, square_conv(320, 1));
    const FeatureMap b3 = basic_conv(b + ".branch3x3_1", in, square_conv(384, 1));
    const FeatureMap b3a = basic_conv(b + ".branch3x3_2a", b3, one_by_n(384, 3));
    const FeatureMap b3b = basic_conv(b + ".branch3x3_2b", b3, n_by_one(384, 3));
    FeatureMap bd = basic_conv(b + ".branch3x3dbl_1", in, square_conv(448, 1));
    bd = basic_conv(b + ".branch3x3dbl_2", bd, square_conv(384, 3, 1, 1));
    const FeatureMap bda = basic_conv(b + ".branch3x3dbl_3a", bd, one_by_n(384, 3));
    const FeatureMap bdb = basic_conv(b + ".branch3x3dbl_3b", bd, n_by_one(384, 3));
    FeatureMap bp = pool(b + ".pool", in, false, 3, 1, 1);
    bp = basic_conv(b + ".branch_pool", bp, square_conv(192, 1));
    return concat({b1, b3a, b3b, bda, bdb, bp});
  }

  // InceptionAux on the 17x17x768 map: avg pool 5/3, 1x1 conv, 5x5 conv, global pool, fc.
  void aux_logits(FeatureMap in) {
    FeatureMap x = pool("AuxLogits.pool", in, false, 5, 3);
    x = basic_conv("AuxLogits.conv0", x, square_conv(128, 1));
    x = basic_conv("AuxLogits.conv1", x, square_conv(768, 5));
    // adaptive_avg_pool2d((1, 1)) is the identity on the 1x1 map left here.
    Layer fc = make_layer("AuxLogits.fc");
    linear(fc, "AuxLogits.fc", x.elements(), 1000);
    model_.layers.push_back(std::move(fc));
  }

 private:
  static FeatureMap concat(std::initializer_list<FeatureMap> branches) {
    FeatureMap out = *branches.begin();
    out.channels = 0;
    for (const FeatureMap& branch : branches) {
      STEPCAST_ASSERT(branch.height == out.height && branch.width == out.width);
      out.channels += branch.channels;
    }
    return out;
  }

  ModelSpec& model_;
};

}  // namespace

ModelSpec make_inception3() {
  ModelSpec model{.name = "inception3",
                  .description =
                      "Inception v3 as torchvision.models.inception_v3 with the "
                      "default aux_logits=True (27,161,264 parameters; 23,834,568 "
                      "without AuxLogits), input 3x299x299",
                  .layers = {}};
  InceptionBuilder net(model);
  FeatureMap x{3, 299, 299};
  x = net.basic_conv("Conv2d_1a_3x3", x, square_conv(32, 3, 2));
  x = net.basic_conv("Conv2d_2a_3x3", x, square_conv(32, 3));
  x = net.basic_conv("Conv2d_2b_3x3", x, square_conv(64, 3, 1, 1));
  x = net.pool("maxpool1", x, true, 3, 2);
  x = net.basic_conv("Conv2d_3b_1x1", x, square_conv(80, 1));
  x = net.basic_conv("Conv2d_4a_3x3", x, square_conv(192, 3));
  x = net.pool("maxpool2", x, true, 3, 2);
  x = net.block_a("Mixed_5b", x, 32);
  x = net.block_a("Mixed_5c", x, 64);
  x = net.block_a("Mixed_5d", x, 64);
  x = net.block_b("Mixed_6a", x);
  x = net.block_c("Mixed_6b", x, 128);
  x = net.block_c("Mixed_6c", x, 160);
  x = net.block_c("Mixed_6d", x, 160);
  x = net.block_c("Mixed_6e", x, 192);
  net.aux_logits(x);
  x = net.block_d("Mixed_7a", x);
  x = net.block_e("Mixed_7b", x);
  x = net.block_e("Mixed_7c", x);
  STEPCAST_ASSERT(x.channels == 2048 && x.height == 8);
  Layer pool = make_layer("avgpool");
  x = global_avg_pool(pool, x);
  model.layers.push_back(std::move(pool));
  Layer fc = make_layer("fc");
  linear(fc, "fc", x.channels, 1000);
  model.layers.push_back(std::move(fc));
  return model;
}

}  // namespace stepcast::zoo::detail
