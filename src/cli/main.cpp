// The stepcast command: predict, collective, zoo, options. Parses arguments, calls scenario/,
// predict/ and report/, and turns stepcast::Error into a message and exit code 2.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <charconv>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/report/report.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/scheme/step_simulation.hpp"
#include "stepcast/units.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace {

using stepcast::Error;
using stepcast::SourceLocation;

constexpr int kBadInput = 2;
// Same bound as the cluster.workers key: the fine simulator's supported scale.
constexpr int kMaxWorkers = 16384;

std::vector<int> parse_worker_list(const std::string& text) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(pos, comma - pos);
    int value = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || value < 1 ||
        value > kMaxWorkers) {
      throw Error({"", 0, "--workers"},
                  fmt::format("expected a comma-separated list of integers in [1, {}], got '{}'", kMaxWorkers, text));
    }
    out.push_back(value);
    pos = comma + 1;
  }
  return out;
}

std::ofstream open_output(const std::string& path, const std::string& option) {
  std::ofstream out(path);
  if (!out) throw Error({path, 0, option}, "cannot open file for writing");
  return out;
}

struct PredictArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string workers;
  std::string predictor;
  bool json = false;
  std::string csv;
  std::string trace_out;
  std::string seed;  // checked as the `seed` key: an unsigned 64-bit integer
  bool workers_given = false;
};

int run_predict(const PredictArgs& args) {
  std::vector<std::string> overrides = args.sets;
  if (!args.predictor.empty()) overrides.push_back("predictor=" + args.predictor);
  if (!args.seed.empty()) {
    uint64_t seed = 0;
    auto [end, ec] = std::from_chars(args.seed.data(), args.seed.data() + args.seed.size(), seed);
    if (ec != std::errc() || end != args.seed.data() + args.seed.size()) {
      throw Error({"", 0, "--seed"}, fmt::format("expected an unsigned 64-bit integer, got '{}'", args.seed));
    }
    overrides.push_back(fmt::format("seed={}", seed));
  }
  stepcast::scenario::Scenario scenario = stepcast::scenario::load_scenario(args.scenario, overrides);
  std::vector<int> counts = args.workers_given ? parse_worker_list(args.workers)
                                               : std::vector<int>{scenario.cluster.workers};
  const stepcast::workload::Workload workload = stepcast::scenario::build_workload(scenario);

  stepcast::report::Sweep sweep;
  sweep.scenario = scenario.name;
  for (const auto& key : stepcast::scenario::resolved_keys(scenario)) {
    sweep.inputs.push_back({key.key, key.value, key.is_number});
  }
  for (size_t i = 0; i < counts.size(); ++i) {
    stepcast::scenario::Scenario at = scenario;
    at.cluster.workers = counts[i];
    stepcast::scenario::check_consistency(at, args.workers_given ? "--workers" : "cluster.workers");
    stepcast::predict::Options options = at.options;
    // The trace shows the largest configuration of the sweep (the last one given).
    options.record_trace = !args.trace_out.empty() && i + 1 == counts.size();
    sweep.predictions.push_back(stepcast::predict::predict(workload, at.cluster, at.scheme, options));
  }
  if (!args.trace_out.empty()) {
    if (scenario.options.predictor != stepcast::predict::Predictor::Fine) {
      throw Error({"", 0, "--trace-out"}, "an execution trace needs the fine predictor");
    }
    std::ofstream out = open_output(args.trace_out, "--trace-out");
    stepcast::report::write_chrome_trace(out, sweep.predictions.back().trace);
    for (auto& p : sweep.predictions) p.trace = {};
  }
  if (!args.csv.empty()) {
    std::ofstream out = open_output(args.csv, "--csv");
    stepcast::report::write_csv(out, sweep);
  }
  if (args.json) {
    stepcast::report::write_json(std::cout, sweep);
    std::cout << '\n';
  } else {
    stepcast::report::write_table(std::cout, sweep);
    if (!args.trace_out.empty()) {
      fmt::print("trace of {} workers written to {} (open it in https://ui.perfetto.dev)\n",
                 counts.back(), args.trace_out);
    }
  }
  return 0;
}

struct CollectiveArgs {
  std::string op = "allreduce";
  std::string algorithm = "ring";
  std::string size = "100MB";
  int workers = 8;
  int workers_per_node = 1;
  std::string nic_bandwidth = "100Gbps";
  std::string latency = "2us";
  bool json = false;
};

int run_collective(const CollectiveArgs& args) {
  if (args.op != "allreduce") {
    throw Error({"", 0, "--op"}, fmt::format("unsupported collective '{}' (supported: allreduce)", args.op));
  }
  if (args.algorithm != "ring") {
    throw Error({"", 0, "--algorithm"},
                fmt::format("unsupported algorithm '{}' (supported: ring)", args.algorithm));
  }
  if (args.workers < 1 || args.workers > kMaxWorkers) {
    throw Error({"", 0, "--workers"}, fmt::format("expected an integer in [1, {}]", kMaxWorkers));
  }
  if (args.workers_per_node < 1 || args.workers_per_node > kMaxWorkers) {
    throw Error({"", 0, "--workers-per-node"}, fmt::format("expected an integer in [1, {}]", kMaxWorkers));
  }
  const double bytes = stepcast::parse_bytes(args.size, {"", 0, "--size"});
  if (bytes <= 0) throw Error({"", 0, "--size"}, "expected a size > 0");
  stepcast::cluster::ClusterSpec spec;
  spec.workers = args.workers;
  spec.workers_per_node = args.workers_per_node;
  spec.nic_bw = stepcast::parse_bandwidth(args.nic_bandwidth, {"", 0, "--nic-bandwidth"});
  spec.latency = stepcast::parse_duration(args.latency, {"", 0, "--latency"});
  const auto r = stepcast::scheme::simulate_allreduce(spec, bytes, stepcast::scheme::AllReduceAlgorithm::Ring);
  // nccl-tests definitions: algbw = size / time; busbw = algbw * 2(n-1)/n for all-reduce.
  const double n = args.workers;
  const double algbw = r.time > 0 ? bytes / r.time : 0;
  const double busbw = algbw * 2 * (n - 1) / n;
  if (args.json) {
    fmt::print("{{\"op\": \"allreduce\", \"algorithm\": \"ring\", \"workers\": {}, \"size_bytes\": {}, "
               "\"time_s\": {}, \"algbw_GBps\": {}, \"busbw_GBps\": {}, \"max_link_flows\": {}}}\n",
               args.workers, bytes, r.time, algbw / 1e9, busbw / 1e9, r.max_link_flows);
  } else {
    fmt::print("ring all-reduce of {} over {} workers ({} per node), NIC {}, latency {}\n",
               stepcast::format_bytes(bytes), args.workers, args.workers_per_node,
               stepcast::format_bandwidth(spec.nic_bw), stepcast::format_duration(spec.latency));
    fmt::print("  time    {}\n  algbw   {:.3f} GB/s\n  busbw   {:.3f} GB/s\n",
               stepcast::format_duration(r.time), algbw / 1e9, busbw / 1e9);
  }
  return 0;
}

int run_zoo_list() {
  fmt::print("{:<12} {:>14} {:>8} {:>16}  {}\n", "model", "parameters", "tensors", "fwd GFLOP/sample",
             "description");
  for (const auto& m : stepcast::zoo::all_models()) {
    fmt::print("{:<12} {:>14} {:>8} {:>16.2f}  {}\n", m.name, m.num_parameters(), m.num_tensors(),
               m.forward_flops() / 1e9, m.description);
  }
  return 0;
}

int run_zoo_show(const std::string& name) {
  const stepcast::zoo::ModelSpec* m = stepcast::zoo::find_model(name);
  if (m == nullptr) {
    std::string known;
    for (const auto& x : stepcast::zoo::all_models()) known += (known.empty() ? "" : ", ") + x.name;
    throw Error({"", 0, "zoo show"}, fmt::format("unknown model '{}' (known: {})", name, known));
  }
  fmt::print("{}: {}\n", m->name, m->description);
  fmt::print("parameters {} ({} fp32), {} tensors, forward {:.3f} GFLOP per sample\n\n",
             m->num_parameters(), stepcast::format_bytes(4.0 * m->num_parameters()), m->num_tensors(),
             m->forward_flops() / 1e9);
  fmt::print("{:<40} {:>12} {:>8} {:>14}\n", "layer", "parameters", "tensors", "fwd MFLOP/sample");
  for (const auto& layer : m->layers) {
    int64_t params = 0;
    for (const auto& p : layer.params) params += p.elements;
    fmt::print("{:<40} {:>12} {:>8} {:>14.2f}\n", layer.name, params, layer.params.size(),
               layer.forward_flops / 1e6);
  }
  return 0;
}

int run_options() {
  fmt::print("{:<36} {:<22} {:<10} {}\n", "key", "type", "default", "meaning");
  for (const auto& k : stepcast::scenario::known_keys()) {
    fmt::print("{:<36} {:<22} {:<10} {}\n", k.key, k.type, k.default_value, k.description);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stepcast: predict the throughput of distributed deep-learning training"};
  app.set_version_flag("--version", std::string("stepcast ") + STEPCAST_VERSION);
  app.require_subcommand(1);

  PredictArgs predict_args;
  CLI::App* predict = app.add_subcommand("predict", "Predict step time, throughput and bottleneck of a scenario");
  predict->add_option("scenario", predict_args.scenario, "Scenario YAML file")->required();
  predict->add_option("--set", predict_args.sets, "Override a scenario key: KEY=VALUE (repeatable)");
  predict->add_option("--workers", predict_args.workers, "Sweep over total worker counts, e.g. 1,2,4,8");
  predict->add_option("--predictor", predict_args.predictor, "fine (simulation) or coarse (phases)")
      ->check(CLI::IsMember({"fine", "coarse"}));
  predict->add_flag("--json", predict_args.json, "Print one JSON object instead of a table");
  predict->add_option("--csv", predict_args.csv, "Also write the predictions as CSV to FILE");
  predict->add_option("--trace-out", predict_args.trace_out,
                      "Write the simulated execution trace (Chrome/Perfetto JSON) of the last worker count");
  predict->add_option("--seed", predict_args.seed, "Seed for every random choice (overrides `seed`)");

  CollectiveArgs coll;
  CLI::App* collective = app.add_subcommand("collective", "Time one collective alone on the network");
  collective->add_option("--op", coll.op, "Collective: allreduce")->capture_default_str();
  collective->add_option("--algorithm", coll.algorithm, "Algorithm: ring")->capture_default_str();
  collective->add_option("--size", coll.size, "Bytes per worker, e.g. 100MB")->capture_default_str();
  collective->add_option("--workers", coll.workers, "Number of workers")->capture_default_str();
  collective->add_option("--workers-per-node", coll.workers_per_node, "Workers sharing one NIC")
      ->capture_default_str();
  collective->add_option("--nic-bandwidth", coll.nic_bandwidth, "NIC bandwidth each way, e.g. 100Gbps")
      ->capture_default_str();
  collective->add_option("--latency", coll.latency, "Latency between two nodes, e.g. 2us")->capture_default_str();
  collective->add_flag("--json", coll.json, "Print JSON");

  CLI::App* zoo = app.add_subcommand("zoo", "Built-in models");
  zoo->require_subcommand(1);
  CLI::App* zoo_list = zoo->add_subcommand("list", "List the models with parameters and FLOPs");
  std::string zoo_name;
  CLI::App* zoo_show = zoo->add_subcommand("show", "Layers, parameters and FLOPs of one model");
  zoo_show->add_option("name", zoo_name, "Model name")->required();

  CLI::App* options = app.add_subcommand("options", "List every scenario key with type and default");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kBadInput;
  }
  try {
    predict_args.workers_given = predict->count("--workers") > 0;
    if (predict->parsed()) return run_predict(predict_args);
    if (collective->parsed()) return run_collective(coll);
    if (zoo_list->parsed()) return run_zoo_list();
    if (zoo_show->parsed()) return run_zoo_show(zoo_name);
    if (options->parsed()) return run_options();
  } catch (const Error& e) {
    fmt::print(stderr, "stepcast: error: {}\n", e.what());
    return kBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "stepcast: internal error: {}\n", e.what());
    return 1;
  }
  return 0;
}
