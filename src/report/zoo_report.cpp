// The zoo as JSON: `stepcast zoo list --json`, `stepcast zoo show NAME --json` and the Python
// module's zoo() and zoo_model() write and read this one text.
#include <cstdint>
#include <ostream>

#include "report/json_text.hpp"
#include "stepcast/report/report.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::report {
namespace {

using detail::JsonWriter;

void write_model_summary(JsonWriter& json, const zoo::ModelSpec& m) {
  json.key("name");
  json.string(m.name);
  json.key("parameters");
  json.integer(m.num_parameters());
  json.key("tensors");
  json.integer(m.num_tensors());
  json.key("forward_flops");
  json.number(m.forward_flops());
  json.key("description");
  json.string(m.description);
}

}  // namespace

void write_zoo_json(std::ostream& out) {
  JsonWriter json(out);
  json.begin_array();
  for (const zoo::ModelSpec& m : zoo::all_models()) {
    json.begin_object();
    write_model_summary(json, m);
    json.end_object();
  }
  json.end_array();
  json.flush();
  out << '\n';
}

void write_zoo_model_json(std::ostream& out, const zoo::ModelSpec& m) {
  JsonWriter json(out);
  json.begin_object();
  write_model_summary(json, m);
  json.key("layers");
  json.begin_array();
  for (const zoo::Layer& layer : m.layers) {
    int64_t parameters = 0;
    for (const auto& p : layer.params) parameters += p.elements;
    json.begin_object();
    json.key("name");
    json.string(layer.name);
    json.key("parameters");
    json.integer(parameters);
    json.key("tensors");
    json.integer(layer.params.size());
    json.key("forward_flops");
    json.number(layer.forward_flops);
    json.end_object();
  }
  json.end_array();
  if (m.transformer) {
    json.key("seq_len");
    json.integer(m.transformer->seq_len);
    json.key("training_flops_per_token");
    json.number(zoo::training_flops_per_token(m));
    json.key("flops_per_token_6n");
    json.number(zoo::flops_per_token_6n(m));
    json.key("active_parameters");
    json.integer(zoo::active_parameters(m));
  }
  json.end_object();
  json.flush();
  out << '\n';
}

}  // namespace stepcast::report
