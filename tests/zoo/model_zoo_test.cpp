#include "stepcast/zoo/model_zoo.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "stepcast/error.hpp"

namespace stepcast::zoo {
namespace {
namespace model_zoo_test {  // this file's own names: test files are compiled several to a unit

const ModelSpec& model(std::string_view name) {
  const ModelSpec* m = find_model(name);
  if (m == nullptr) throw std::runtime_error("model missing from the zoo: " + std::string(name));
  return *m;
}

// ---- Parameter counts: the canonical implementations' sum(p.numel() for p in parameters()).

TEST(ModelZoo, AlexnetHasTorchvisionParameterCount) {
  // convs 23,296 + 307,392 + 663,936 + 884,992 + 590,080;
  // fcs 37,752,832 + 16,781,312 + 4,097,000.
  EXPECT_EQ(model("alexnet").num_parameters(), 61'100'840);
}

TEST(ModelZoo, Vgg16HasTorchvisionParameterCount) { EXPECT_EQ(model("vgg16").num_parameters(), 138'357'544); }

TEST(ModelZoo, Resnet50HasTorchvisionParameterCount) {
  EXPECT_EQ(model("resnet50").num_parameters(), 25'557'032);
}

TEST(ModelZoo, Resnet101HasTorchvisionParameterCount) {
  EXPECT_EQ(model("resnet101").num_parameters(), 44'549'160);
}

TEST(ModelZoo, Resnet152HasTorchvisionParameterCount) {
  EXPECT_EQ(model("resnet152").num_parameters(), 60'192'808);
}

TEST(ModelZoo, Inception3HasTorchvisionParameterCountWithAuxLogits) {
  const ModelSpec& m = model("inception3");
  EXPECT_EQ(m.num_parameters(), 27'161'264);
  // AuxLogits: conv0 768*128 + 2*128, conv1 128*768*25 + 2*768, fc 768*1000 + 1000 = 3,326,696;
  // without it torchvision reports 23,834,568.
  int64_t aux = 0;
  for (const Layer& layer : m.layers) {
    if (layer.name.starts_with("AuxLogits.")) {
      for (const ParamTensor& p : layer.params) aux += p.elements;
    }
  }
  EXPECT_EQ(aux, 3'326'696);
  EXPECT_EQ(m.num_parameters() - aux, 23'834'568);
}

TEST(ModelZoo, BertBaseHasHuggingFaceParameterCount) {
  // embeddings (30522 + 512 + 2) * 768 + 2 * 768 = 23,837,184;
  // per layer 4 * (768^2 + 768) + 2 * (768 * 3072) + 3072 + 768 + 2 * 2 * 768 = 7,087,872;
  // pooler 768^2 + 768 = 590,592.  23,837,184 + 12 * 7,087,872 + 590,592 = 109,482,240.
  EXPECT_EQ(model("bert-base").num_parameters(), 109'482'240);
}

TEST(ModelZoo, BertLargeHasHuggingFaceParameterCount) {
  // 31,782,912 (embeddings) + 24 * 12,596,224 + 1,049,600 (pooler) = 335,141,888.
  EXPECT_EQ(model("bert-large").num_parameters(), 335'141'888);
}

// ---- Tensors and names.

TEST(ModelZoo, Resnet50HasTorchvisionTensors) {
  const ModelSpec& m = model("resnet50");
  // conv1+bn1: 3; 16 bottlenecks x 9; 4 downsamples x 3; fc: 2.
  EXPECT_EQ(m.num_tensors(), 161u);
  std::set<std::string> names;
  for (const Layer& layer : m.layers) {
    for (const ParamTensor& p : layer.params) names.insert(p.name);
  }
  for (const char* name :
       {"conv1.weight", "bn1.weight", "bn1.bias", "layer1.0.conv1.weight", "layer1.0.downsample.0.weight",
        "layer1.0.downsample.1.bias", "layer4.2.bn3.bias", "fc.weight", "fc.bias"}) {
    EXPECT_TRUE(names.contains(name)) << name;
  }
  EXPECT_EQ(m.layers.front().params.front().name, "conv1.weight");
  EXPECT_EQ(m.layers.back().params.back().name, "fc.bias");
  // layer1.0.conv2: 3x3, 64 -> 64.
  for (const Layer& layer : m.layers) {
    if (layer.name == "layer1.0.conv2") {
      EXPECT_EQ(layer.params.at(0).elements, 64 * 64 * 9);
    }
  }
}

TEST(ModelZoo, BertBaseHasHuggingFaceTensorNames) {
  const ModelSpec& m = model("bert-base");
  // 5 embedding tensors, 16 per encoder layer, 2 pooler tensors.
  EXPECT_EQ(m.num_tensors(), 5u + 12u * 16u + 2u);
  EXPECT_EQ(m.layers.front().params.front().name, "embeddings.word_embeddings.weight");
  EXPECT_EQ(m.layers.front().params.front().elements, 30522 * 768);
  EXPECT_EQ(m.layers.back().params.back().name, "pooler.dense.bias");
}

TEST(ModelZoo, NamesAreUnique) {
  std::set<std::string> model_names;
  for (const ModelSpec& m : all_models()) {
    EXPECT_TRUE(model_names.insert(m.name).second) << m.name;
    EXPECT_FALSE(m.description.empty()) << m.name;
    std::set<std::string> layer_names;
    std::set<std::string> tensor_names;
    for (const Layer& layer : m.layers) {
      EXPECT_TRUE(layer_names.insert(layer.name).second) << m.name << " layer " << layer.name;
      for (const ParamTensor& p : layer.params) {
        EXPECT_TRUE(tensor_names.insert(p.name).second) << m.name << " tensor " << p.name;
        EXPECT_GT(p.elements, 0) << p.name;
      }
      EXPECT_GE(layer.forward_flops, 0) << layer.name;
    }
  }
}

TEST(ModelZoo, ContainsTheNineteenModelsInStableOrder) {
  std::vector<std::string> names;
  for (const ModelSpec& m : all_models()) names.push_back(m.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "alexnet", "vgg16", "resnet50", "resnet101", "resnet152", "inception3", "bert-base",
                       "bert-large", "gpt2", "gpt2-xl", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b",
                       "llama3-70b", "llama3-405b", "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3"}));
  EXPECT_EQ(&all_models(), &all_models());
}

TEST(ModelZoo, FindModelReturnsNullForUnknownName) {
  EXPECT_EQ(find_model("nope"), nullptr);
  ASSERT_NE(find_model("resnet50"), nullptr);
  EXPECT_EQ(find_model("resnet50")->name, "resnet50");
}

TEST(ModelZoo, GetModelThrowsForUnknownName) {
  EXPECT_EQ(&get_model("bert-base"), find_model("bert-base"));
  try {
    (void)get_model("nope");
    FAIL() << "expected stepcast::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("workload.model"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("resnet50"), std::string::npos) << e.what();
  }
}

// ---- FLOPs per sample (multiply-add = 2), against published MAC counts x 2.

void expect_flops_near(std::string_view name, double expected) {
  const double flops = model(name).forward_flops();
  EXPECT_NEAR(flops / expected, 1.0, 0.15) << name << ": " << flops;
}

TEST(ModelZoo, CnnFlopsMatchPublishedCounts) {
  expect_flops_near("alexnet", 1.4e9);      // torchvision: 0.71 GMACs
  expect_flops_near("vgg16", 31e9);         // 15.47 GMACs
  expect_flops_near("resnet50", 8.2e9);     // 4.09 GMACs
  expect_flops_near("resnet101", 15.6e9);   // 7.80 GMACs
  expect_flops_near("resnet152", 23.0e9);   // 11.51 GMACs
  expect_flops_near("inception3", 11.4e9);  // 5.71 GMACs at 299x299
}

TEST(ModelZoo, BertFlopsMatchClosedForm) {
  expect_flops_near("bert-base", 22e9);
  // Per token each encoder weight is one multiply-add (2 * 12 * h^2 per layer), plus the
  // attention products 4 * seq * h per token per layer:
  // 24 * (12 * 1024^2 * 128 + 128^2 * 1024) * 2 = 78.9 GFLOPs.
  const double seq = 128;
  const double h = 1024;
  expect_flops_near("bert-large", 24 * (2 * 12 * h * h * seq + 4 * seq * seq * h));
}

// ---- to_workload.

TEST(ToWorkload, DurationsSumToStepTimeAndRespectBackwardRatio) {
  for (const ModelSpec& m : all_models()) {
    const double step = 0.292;
    const double ratio = 2.5;
    const workload::Workload w =
        to_workload(m, {.batch_per_worker = 32, .step_time = step, .backward_to_forward = ratio});
    EXPECT_EQ(w.name, m.name);
    EXPECT_EQ(w.batch_per_worker, 32);
    EXPECT_EQ(w.lanes, std::vector<std::string>{"gpu"});
    EXPECT_EQ(workload::validate(w), "");
    const size_t n = m.layers.size();
    ASSERT_EQ(w.ops.size(), 2 * n);
    double total = 0;
    for (const workload::Op& op : w.ops) total += op.duration;
    EXPECT_NEAR(total, step, 1e-12 * step) << m.name;
    for (size_t l = 0; l < n; ++l) {
      const workload::Op& fwd = w.ops[l];
      const workload::Op& bwd = w.ops[2 * n - 1 - l];
      EXPECT_EQ(fwd.kind, workload::OpKind::Forward);
      EXPECT_EQ(bwd.kind, workload::OpKind::Backward);
      EXPECT_EQ(fwd.name, "fwd:" + m.layers[l].name);
      EXPECT_EQ(bwd.name, "bwd:" + m.layers[l].name);
      EXPECT_EQ(fwd.layer, static_cast<int>(l));
      EXPECT_EQ(bwd.layer, static_cast<int>(l));
      EXPECT_NEAR(bwd.duration, ratio * fwd.duration, 1e-12 * bwd.duration) << fwd.name;
      // Forward share of the step is this layer's share of the FLOPs.
      EXPECT_NEAR(fwd.duration, step / (1 + ratio) * m.layers[l].forward_flops / m.forward_flops(),
                  1e-12 * step);
    }
    for (size_t i = 0; i < w.ops.size(); ++i) {
      EXPECT_EQ(w.ops[i].lane, 0);
      const std::vector<int> expected_deps =
          i == 0 ? std::vector<int>{} : std::vector<int>{static_cast<int>(i) - 1};
      EXPECT_EQ(w.ops[i].deps, expected_deps);
    }
  }
}

TEST(ToWorkload, EveryTensorIsProducedByItsBackwardAndConsumedByItsForward) {
  for (const ModelSpec& m : all_models()) {
    const workload::Workload w = to_workload(m, {.batch_per_worker = 8, .step_time = 1.0});
    ASSERT_EQ(w.tensors.size(), m.num_tensors());
    size_t t = 0;
    const int num_ops = static_cast<int>(w.ops.size());
    for (size_t l = 0; l < m.layers.size(); ++l) {
      for (const ParamTensor& p : m.layers[l].params) {
        const workload::Tensor& tensor = w.tensors[t++];
        EXPECT_EQ(tensor.name, p.name);
        ASSERT_GE(tensor.producer, 0);
        ASSERT_LT(tensor.producer, num_ops);
        EXPECT_EQ(w.ops[tensor.producer].kind, workload::OpKind::Backward);
        EXPECT_EQ(w.ops[tensor.producer].layer, static_cast<int>(l));
        ASSERT_EQ(tensor.consumers.size(), 1u);
        ASSERT_GE(tensor.consumers[0], 0);
        ASSERT_LT(tensor.consumers[0], num_ops);
        EXPECT_EQ(w.ops[tensor.consumers[0]].kind, workload::OpKind::Forward);
        EXPECT_EQ(w.ops[tensor.consumers[0]].layer, static_cast<int>(l));
      }
    }
  }
}

TEST(ToWorkload, TensorBytesFollowPrecision) {
  const ModelSpec& m = model("resnet50");
  const workload::Workload fp32 = to_workload(m, {.step_time = 0.1});
  const workload::Workload fp16 = to_workload(m, {.step_time = 0.1, .precision = workload::Precision::FP16});
  double total = 0;
  for (const workload::Tensor& t : fp32.tensors) total += t.bytes;
  EXPECT_EQ(total, 4.0 * 25'557'032);
  ASSERT_EQ(fp16.tensors.size(), fp32.tensors.size());
  for (size_t i = 0; i < fp32.tensors.size(); ++i) {
    EXPECT_EQ(fp16.tensors[i].bytes * 2, fp32.tensors[i].bytes) << fp32.tensors[i].name;
  }
}

TEST(ToWorkload, ZeroFlopLayerGetsZeroDuration) {
  ModelSpec m{.name = "toy", .description = "two layers", .layers = {}};
  m.layers.push_back(Layer{.name = "a", .params = {{"a.weight", 10}}, .forward_flops = 3});
  m.layers.push_back(Layer{.name = "b", .params = {{"b.weight", 5}}, .forward_flops = 0});
  // Forward a takes all of step / (1 + r) = 0.3 / 3 = 0.1; backward a 0.2; b nothing.
  const workload::Workload w = to_workload(m, {.step_time = 0.3});
  ASSERT_EQ(w.ops.size(), 4u);
  EXPECT_DOUBLE_EQ(w.ops[0].duration, 0.1);
  EXPECT_EQ(w.ops[1].duration, 0);
  EXPECT_EQ(w.ops[2].duration, 0);
  EXPECT_DOUBLE_EQ(w.ops[3].duration, 0.2);
  EXPECT_EQ(w.ops[2].name, "bwd:b");
  EXPECT_EQ(w.tensors[1].producer, 2);
  EXPECT_EQ(w.tensors[1].consumers, std::vector<int>{1});
}

void expect_error_key(const WorkloadParams& params, const std::string& key) {
  try {
    (void)to_workload(model("alexnet"), params);
    FAIL() << "expected stepcast::Error with key " << key;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    EXPECT_EQ(e.where().key, key);
  }
}

TEST(ToWorkload, RejectsBadStepTime) {
  for (double step :
       {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    expect_error_key({.step_time = step}, "workload.step_time");
  }
}

TEST(ToWorkload, RejectsBadBatchAndRatio) {
  expect_error_key({.batch_per_worker = 0, .step_time = 1}, "workload.batch_per_worker");
  expect_error_key({.step_time = 1, .backward_to_forward = -0.5}, "workload.backward_ratio");
  expect_error_key({.step_time = 1, .backward_to_forward = std::nan("")}, "workload.backward_ratio");
}

TEST(ToWorkload, ZeroBackwardRatioPutsAllTimeInForward) {
  const workload::Workload w = to_workload(model("vgg16"), {.step_time = 2.0, .backward_to_forward = 0});
  double forward = 0;
  for (const workload::Op& op : w.ops) {
    if (op.kind == workload::OpKind::Forward) forward += op.duration;
    if (op.kind == workload::OpKind::Backward) {
      EXPECT_EQ(op.duration, 0);
    }
  }
  EXPECT_NEAR(forward, 2.0, 1e-12);
}

}  // namespace model_zoo_test
}  // namespace
}  // namespace stepcast::zoo
