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

  workload::Workload w;
  w.name = model.name;
  w.batch_per_worker = params.batch_per_worker;
  w.lanes = {"gpu"};
  const int num_layers = static_cast<int>(model.layers.size());
  // Time per FLOP of forward work; backward costs `ratio` times its forward, so forward and
  // backward together take step_time.
  const double seconds_per_flop = params.step_time / total_flops / (1 + ratio);
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
    add_op(workload::OpKind::Forward, l,
           model.layers[static_cast<size_t>(l)].forward_flops * seconds_per_flop);
  }
  for (int l = num_layers - 1; l >= 0; --l) {
    add_op(workload::OpKind::Backward, l, ratio * w.ops[static_cast<size_t>(l)].duration);
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

}  // namespace stepcast::zoo
