// The stepcast command: predict, collective, zoo, options. Parses arguments, calls scenario/,
// predict/ and report/, and turns stepcast::Error into a message and exit code 2.
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/calibrate_command.hpp"
#include "cli/export_command.hpp"
#include "cli/output_file.hpp"
#include "cli/trace_options.hpp"
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/enum_names.hpp"
#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/report/html.hpp"
#include "stepcast/report/report.hpp"
#include "stepcast/scenario/scenario.hpp"
#include "stepcast/scheme/validate.hpp"
#include "stepcast/sweep/collective.hpp"
#include "stepcast/sweep/sweep.hpp"
#include "stepcast/units.hpp"
#include "stepcast/version.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace {

using stepcast::Error;
using stepcast::SourceLocation;

constexpr int kBadInput = 2;

using stepcast::cli::open_output;

// --predictor: a predictor's name, or all.
std::vector<std::string> predictor_choices() {
  std::vector<std::string> choices;
  for (const auto p : stepcast::enum_values<stepcast::predict::Predictor>()) choices.emplace_back(name_of(p));
  choices.emplace_back("all");
  return choices;
}

struct PredictArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string workers;
  std::string predictor;
  bool json = false;
  std::string csv;
  std::string trace_out;
  std::string trace_workers;  // --trace-workers 0-3,8 (cli/trace_options.hpp)
  int trace_steps = 0;        // --trace-steps N
  std::string seed;           // checked as the `seed` key: an unsigned 64-bit integer
  bool workers_given = false;
  std::vector<std::string> sweeps;  // --sweep KEY=V1,V2 or KEY=A..B
  std::string report;               // --report FILE.html
  int jobs = 0;                     // threads; 0 = all cores
  bool all_links = false;           // --all-links: every link in --json, not the 10 busiest
};

int run_predict(const PredictArgs& args) {
  std::vector<std::string> overrides = args.sets;
  // all: each of the three at every point, side by side (report::write_comparison_table).
  const bool all_predictors = args.predictor == "all";
  if (!args.predictor.empty() && !all_predictors) overrides.push_back("predictor=" + args.predictor);
  if (!args.seed.empty()) {
    uint64_t seed = 0;
    auto [end, ec] = std::from_chars(args.seed.data(), args.seed.data() + args.seed.size(), seed);
    if (ec != std::errc() || end != args.seed.data() + args.seed.size()) {
      throw Error({"", 0, "--seed"}, fmt::format("expected an unsigned 64-bit integer, got '{}'", args.seed));
    }
    overrides.push_back(fmt::format("seed={}", seed));
  }
  // The rules hold at each swept count, not at the file's cluster.workers (which is not predicted).
  const std::vector<int> swept =
      args.workers_given ? stepcast::sweep::parse_worker_list(args.workers, "--workers") : std::vector<int>{};
  stepcast::sweep::Request request;
  request.scenario = args.scenario;
  request = stepcast::sweep::with_scenario_text(std::move(request));  // read once: a pipe reads once
  request.overrides = overrides;
  for (const std::string& text : args.sweeps) request.axes.push_back(stepcast::sweep::parse_axis(text));
  request.workers = swept;
  if (all_predictors) {
    for (const stepcast::sweep::Axis& axis : request.axes) {
      if (axis.key == "predictor") {
        throw Error({"", 0, "--predictor"}, "all already runs every predictor; do not also sweep predictor");
      }
    }
    const auto every = stepcast::enum_values<stepcast::predict::Predictor>();
    request.predictors.assign(every.begin(), every.end());
  }
  request.jobs = args.jobs;
  request.record_trace = !args.trace_out.empty();
  request.links_kept = args.all_links ? 0 : 10;
  request.distribute = true;
  request.warn = [](const std::string& warning) { fmt::print(stderr, "stepcast: warning: {}\n", warning); };
  // A progress bar on a terminal, once the run has lasted a second.
  const bool terminal = ::isatty(STDERR_FILENO) != 0 && stepcast::sweep::process_ranks().rank == 0;
  const auto started = std::chrono::steady_clock::now();
  bool drew = false;
  if (terminal) {
    request.progress = [&](std::size_t done, std::size_t total) {
      if (std::chrono::steady_clock::now() - started < std::chrono::seconds(1) && !drew) return;
      drew = true;
      constexpr int kWidth = 40;
      const int filled = static_cast<int>(kWidth * done / std::max<std::size_t>(total, 1));
      fmt::print(stderr, "\r[{:<{}}] {}/{} predictions", std::string(static_cast<size_t>(filled), '#'),
                 kWidth, done, total);
    };
  }
  // Checks the file once up front (errors name its line), then runs the grid.
  const stepcast::scenario::Scenario scenario = stepcast::sweep::base_scenario(
      request, stepcast::scenario::Needs::Workload, request.axes.empty() ? swept : std::vector<int>{});
  if (!args.trace_out.empty() &&
      (all_predictors || scenario.options.predictor != stepcast::predict::Predictor::Fine)) {
    throw Error({"", 0, "--trace-out"}, "an execution trace needs the fine predictor alone");
  }
  const std::vector<int> counts = args.workers_given ? swept : std::vector<int>{scenario.cluster.workers};
  request.trace_selection = stepcast::cli::trace_selection(args.trace_workers, args.trace_steps,
                                                           counts.back(), request.record_trace);
  stepcast::report::Sweep sweep = stepcast::sweep::run(request);
  if (stepcast::sweep::process_ranks().rank != 0) return 0;  // rank 0 writes the output
  if (drew) fmt::print(stderr, "\r{:<{}}\r", "", 70);
  stepcast::sweep::describe_run(sweep, scenario, request, counts, [](const std::string& warning) {
    fmt::print(stderr, "stepcast: warning: {}\n", warning);
  });
  // The name follows what --set changed, so two runs of one file do not read alike.
  for (const std::string& set : args.sets) sweep.scenario += (&set == &args.sets.front() ? " (" : ", ") + set;
  if (!args.sets.empty()) sweep.scenario += ")";
  // The workers the trace holds: the simulation chose them (a pipeline's spread over its stages).
  std::vector<int> traced;
  if (!args.trace_out.empty()) {
    traced = stepcast::cli::traced_workers(sweep.predictions.back().trace, counts.back());
    if (args.trace_workers.empty() && static_cast<int>(traced.size()) < counts.back()) {
      fmt::print(stderr,
                 "stepcast: note: the trace keeps workers {} of {} (--trace-workers all keeps every one)\n",
                 stepcast::cli::describe_workers(traced), counts.back());
    }
    std::ofstream out = open_output(args.trace_out, "--trace-out");
    stepcast::report::write_chrome_trace(out, sweep.predictions.back().trace);
    for (auto& p : sweep.predictions) p.trace = {};
  }
  if (!args.csv.empty()) {
    std::ofstream out = open_output(args.csv, "--csv");
    stepcast::report::write_csv(out, sweep);
  }
  if (!args.report.empty()) {
    std::ofstream out = open_output(args.report, "--report");
    stepcast::report::write_html_report(out, sweep);
  }
  // Predictors that disagree are worth a word wherever the output goes (the JSON says it too).
  for (const stepcast::report::PredictorComparison& c : stepcast::report::compare_predictors(sweep)) {
    if (c.disagrees())
      fmt::print(stderr, "stepcast: warning: {}\n", stepcast::report::disagreement_warning(sweep, c));
  }
  if (args.json) {
    stepcast::report::write_json(std::cout, sweep);
    std::cout << '\n';
  } else if (all_predictors) {
    stepcast::report::write_comparison_table(std::cout, sweep);
  } else {
    stepcast::report::write_table(std::cout, sweep);
    if (!args.trace_out.empty()) {
      const std::string held = static_cast<int>(traced.size()) == counts.back()
                                   ? fmt::format("{} workers", counts.back())
                                   : fmt::format("{} of {} workers", traced.size(), counts.back());
      fmt::print("trace of {} written to {} (open it in https://ui.perfetto.dev)\n", held, args.trace_out);
    }
  }
  return 0;
}

/// "workers_per_node" -> "--workers-per-node": the option of the collective request's field.
std::string collective_option(std::string_view option) {
  std::string flag = "--" + std::string(option);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

int run_zoo_list(bool json) {
  if (json) {
    stepcast::report::write_zoo_json(std::cout);
    return 0;
  }
  fmt::print("{:<12} {:>14} {:>8} {:>16}  {}\n", "model", "parameters", "tensors", "fwd GFLOP/sample",
             "description");
  for (const auto& m : stepcast::zoo::all_models()) {
    fmt::print("{:<12} {:>14} {:>8} {:>16.2f}  {}\n", m.name, m.num_parameters(), m.num_tensors(),
               m.forward_flops() / 1e9, m.description);
  }
  return 0;
}

int run_zoo_show(const std::string& name, bool json) {
  const stepcast::zoo::ModelSpec* m = stepcast::zoo::find_model(name);
  if (m == nullptr) {
    std::string known;
    for (const auto& x : stepcast::zoo::all_models()) known += (known.empty() ? "" : ", ") + x.name;
    throw Error({"", 0, "zoo show"}, fmt::format("unknown model '{}' (known: {})", name, known));
  }
  if (json) {
    stepcast::report::write_zoo_model_json(std::cout, *m);
    return 0;
  }
  fmt::print("{}: {}\n", m->name, m->description);
  fmt::print("parameters {} ({} fp32), {} tensors, forward {:.3f} GFLOP per sample\n", m->num_parameters(),
             stepcast::format_bytes(4.0 * m->num_parameters()), m->num_tensors(), m->forward_flops() / 1e9);
  if (m->transformer) {
    // MFU is quoted per token, with and without the attention scores; a sample is a sequence.
    fmt::print(
        "per token (a sample is {} tokens): training {:.3f} GFLOP with attention, 6N {:.3f} GFLOP "
        "({} active parameters)\n",
        m->transformer->seq_len, stepcast::zoo::training_flops_per_token(*m) / 1e9,
        stepcast::zoo::flops_per_token_6n(*m) / 1e9, stepcast::zoo::active_parameters(*m));
  }
  fmt::print("\n");
  fmt::print("{:<40} {:>12} {:>8} {:>14}\n", "layer", "parameters", "tensors", "fwd MFLOP/sample");
  for (const auto& layer : m->layers) {
    int64_t params = 0;
    for (const auto& p : layer.params) params += p.elements;
    fmt::print("{:<40} {:>12} {:>8} {:>14.2f}\n", layer.name, params, layer.params.size(),
               layer.forward_flops / 1e6);
  }
  return 0;
}

// docs/scenario.md: every key of the table, grouped by its first name (workload, cluster, training,
// ...) in the table's order. A test (tests/cli/scenario_reference_cli_test.cpp) fails when the file
// and this differ.
void print_options_markdown() {
  const auto cell = [](std::string_view text) {
    std::string out;
    for (const char c : text) {
      if (c == '|') out += '\\';
      out += c;
    }
    return out.empty() ? std::string("-") : out;
  };
  const auto section_of = [](std::string_view key) {
    const size_t dot = key.find('.');
    return dot == std::string_view::npos ? std::string() : std::string(key.substr(0, dot));
  };
  fmt::print(
      "# Scenario reference\n\n"
      "Every key a scenario file (or `--set KEY=VALUE`, `--sweep KEY=V1,V2`) accepts, with its type,\n"
      "default and meaning. Generated from the key table (`src/scenario/key_table.cpp`) by\n"
      "`stepcast options --markdown > docs/scenario.md`; a test fails when the two differ, so edit the\n"
      "table, not this file. Sizes and bandwidths need a unit (`80GB`, `400Gbps`, `25GB/s`); times\n"
      "take one too (`1.5us`, `20ms`). How the keys are used: [guide.md](guide.md).\n");
  const auto& keys = stepcast::scenario::known_keys();
  std::vector<std::string> sections;
  for (const auto& k : keys) {
    const std::string section = section_of(k.key);
    if (std::find(sections.begin(), sections.end(), section) == sections.end()) sections.push_back(section);
  }
  for (const std::string& section : sections) {
    fmt::print("\n## {}\n\n| key | type | default | meaning |\n|---|---|---|---|\n",
               section.empty() ? std::string("Top level") : fmt::format("`{}`", section));
    for (const auto& k : keys) {
      if (section_of(k.key) != section) continue;
      fmt::print("| `{}` | {} | {} | {} |\n", k.key, cell(k.type), cell(k.default_value),
                 cell(k.description));
    }
  }
}

int run_options(bool markdown) {
  if (markdown) {
    print_options_markdown();
    return 0;
  }
  fmt::print("{:<36} {:<22} {:<10} {}\n", "key", "type", "default", "meaning");
  for (const auto& k : stepcast::scenario::known_keys()) {
    fmt::print("{:<36} {:<22} {:<10} {}\n", k.key, k.type, k.default_value, k.description);
  }
  return 0;
}

}  // namespace

namespace stepcast::cli {
// src/cli/inspect_command.cpp: registers `inspect`; the function runs it once parsed.
std::pair<CLI::App*, std::function<int()>> add_inspect_command(CLI::App& app);
// src/cli/advise_command.cpp: registers `advise`.
std::pair<CLI::App*, std::function<int()>> add_advise_command(CLI::App& app);
// src/cli/plan_command.cpp: registers `plan`.
std::pair<CLI::App*, std::function<int()>> add_plan_command(CLI::App& app);
}  // namespace stepcast::cli

namespace {

// Edits (insertions, deletions, substitutions) between two words: how far a typed command is
// from each real one.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// When the first word is no command: "unknown command 'predcit'; did you mean 'predict'?" (the
// nearest within two edits), or the list of commands. "" when the first word is a command or an
// option, for CLI11's own message.
std::string command_hint(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return "";
  const std::string_view typed = argv[1];
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == typed) return "";
    names.push_back(sub->get_name());
  }
  std::string nearest;
  std::size_t best = 3;  // more than two edits is another word, not a typo
  for (const std::string& name : names) {
    const std::size_t d = edit_distance(typed, name);
    if (d < best) best = d, nearest = name;
  }
  if (!nearest.empty()) return fmt::format("unknown command '{}'; did you mean '{}'?", typed, nearest);
  return fmt::format("unknown command '{}'; the commands are {}", typed, fmt::join(names, ", "));
}

}  // namespace

int main(int argc, char** argv) {
  // Under mpirun, MPI lives as long as main; ranks other than 0 compute and print nothing.
  const stepcast::sweep::MpiSession mpi(argc, argv);
  const bool root = stepcast::sweep::process_ranks().rank == 0;
  CLI::App app{"stepcast: predict the throughput of distributed deep-learning training"};
  app.set_version_flag("--version", std::string("stepcast ") + STEPCAST_VERSION);
  app.require_subcommand(1);

  PredictArgs predict_args;
  CLI::App* predict =
      app.add_subcommand("predict", "Predict step time, throughput and bottleneck of a scenario");
  predict->add_option("scenario", predict_args.scenario, "Scenario YAML file")->required();
  predict->add_option("--set", predict_args.sets, "Override a scenario key: KEY=VALUE (repeatable)");
  predict->add_option("--workers", predict_args.workers, "Sweep over total worker counts, e.g. 1,2,4,8");
  predict
      ->add_option("--predictor", predict_args.predictor,
                   "fine (simulation), coarse (phases), analytic (busiest-resource bound), or all: the "
                   "three side by side, with a warning where they differ by more than 20%")
      ->check(CLI::IsMember(predictor_choices()));
  predict->add_flag("--json", predict_args.json, "Print one JSON object instead of a table");
  predict->add_flag("--all-links", predict_args.all_links,
                    "List every link that carried bytes in --json (default: the 10 busiest, and how many "
                    "were left out)");
  predict->add_option("--csv", predict_args.csv, "Also write the predictions as CSV to FILE");
  predict->add_option("--trace-out", predict_args.trace_out,
                      "Write the simulated execution trace (Chrome/Perfetto JSON) of the last worker count");
  predict->add_option(
      "--trace-workers", predict_args.trace_workers,
      "Workers the trace keeps: indices and ranges (0-3,8) or all; default: the first 8 (a pipeline's: "
      "8 spread over its stages)");
  predict
      ->add_option("--trace-steps", predict_args.trace_steps,
                   "Measured steps the trace keeps (warm-up dropped); default: every step")
      ->check(CLI::Range(1, 1000));
  predict->add_option("--seed", predict_args.seed, "Seed for every random choice (overrides `seed`)");
  predict->add_option(
      "--sweep", predict_args.sweeps,
      "Sweep a scenario key: KEY=V1,V2,... or KEY=A..B (integers, doubling); repeatable, a grid");
  predict->add_option(
      "--report", predict_args.report,
      "Also write a self-contained HTML report (plots, breakdown, busiest resources) to FILE");
  predict
      ->add_option("--jobs", predict_args.jobs,
                   "Threads for a sweep (default: all cores); the output is the same")
      ->check(CLI::Range(1, 1024));

  stepcast::sweep::CollectiveRequest coll;
  coll.option_name = collective_option;
  std::string coll_scenario;
  std::vector<std::string> coll_sweeps;
  bool coll_json = false, coll_all_links = false;
  CLI::App* collective = app.add_subcommand("collective", "Time one collective alone on the network");
  collective->add_option("--op", coll.op, "allreduce, allgather, reducescatter or broadcast")
      ->capture_default_str();
  collective->add_option(
      "--algorithm", coll.algorithm,
      "All-reduce algorithm: ring, tree, halving_doubling, hierarchical, hdrm, auto (default: "
      "the scenario's, ring without one)");
  collective->add_option(
      "--protocol", coll.protocol,
      "links (the links alone), ll, ll128, simple (NCCL's model of that protocol) or "
      "auto (the fastest); default auto where --algorithm (or the scenario) names ring, tree "
      "or auto, links otherwise");
  collective->add_option("--size", coll.sizes, "Bytes per worker, e.g. 100MB, or a list: 1MB,16MB,256MB")
      ->capture_default_str();
  collective->add_option("--scenario", coll_scenario, "Take the cluster from this scenario file");
  collective->add_option("--set", coll.sets, "Override a scenario key: KEY=VALUE (repeatable)");
  collective->add_option("--workers", coll.workers, "Number of workers (default 8), or a list: 8,16,32");
  collective->add_option("--sweep", coll_sweeps,
                         "Sweep a scenario key: KEY=V1,V2,... or KEY=A..B (repeatable)");
  collective->add_option("--workers-per-node", coll.workers_per_node, "Workers sharing one node and NIC");
  collective->add_option("--nic-bandwidth", coll.nic_bandwidth, "NIC bandwidth each way (default 100Gbps)");
  collective->add_option("--latency", coll.latency, "Latency between two nodes (default 2us)");
  collective->add_flag("--json", coll_json, "Print JSON");
  collective->add_flag(
      "--all-links", coll_all_links,
      "List every link that carried bytes (default: the 10 busiest, and how many were left out)");

  CLI::App* zoo = app.add_subcommand("zoo", "Built-in models");
  zoo->require_subcommand(1);
  CLI::App* zoo_list = zoo->add_subcommand("list", "List the models with parameters and FLOPs");
  std::string zoo_name;
  CLI::App* zoo_show = zoo->add_subcommand("show", "Layers, parameters and FLOPs of one model");
  zoo_show->add_option("name", zoo_name, "Model name")->required();
  bool zoo_json = false;
  zoo_list->add_flag("--json", zoo_json, "Write JSON (what Python's stepcast.zoo() returns)");
  zoo_show->add_flag("--json", zoo_json, "Write JSON (what Python's stepcast.zoo_model() returns)");

  CLI::App* options = app.add_subcommand("options", "List every scenario key with type and default");
  bool options_markdown = false;
  options->add_flag("--markdown", options_markdown,
                    "Print the scenario reference as Markdown (docs/scenario.md is this output)");
  const auto [inspect, run_inspect] = stepcast::cli::add_inspect_command(app);
  const auto [advise, run_advise] = stepcast::cli::add_advise_command(app);
  const auto [plan, run_plan] = stepcast::cli::add_plan_command(app);
  const auto run_export = stepcast::cli::add_export_command(app);
  stepcast::cli::CalibrateCommand calibrate(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" that exit 0 and print to stdout; real ones get the same
    // prefix as every other error.
    if (e.get_exit_code() == 0) return app.exit(e);
    if (const std::string hint = command_hint(app, argc, argv); !hint.empty()) {
      fmt::print(stderr, "stepcast: error: {}\nRun with --help for more information.\n", hint);
      return kBadInput;
    }
    fmt::print(stderr, "stepcast: error: {}\nRun with --help for more information.\n", e.what());
    return kBadInput;
  }
  try {
    predict_args.workers_given = predict->count("--workers") > 0;
    if (predict->parsed()) return run_predict(predict_args);
    if (collective->parsed()) {
      coll.scenario.scenario = coll_scenario;
      for (const std::string& text : coll_sweeps) coll.axes.push_back(stepcast::sweep::parse_axis(text));
      coll.links_kept = coll_all_links ? 0 : 10;
      const stepcast::sweep::CollectiveRun run = stepcast::sweep::run_collective(coll);
      if (coll_json) {
        stepcast::sweep::write_json(std::cout, run);
      } else {
        stepcast::sweep::write_table(std::cout, run);
      }
      return 0;
    }
    if (zoo_list->parsed()) return run_zoo_list(zoo_json);
    if (zoo_show->parsed()) return run_zoo_show(zoo_name, zoo_json);
    if (options->parsed()) return run_options(options_markdown);
    if (inspect->parsed()) return run_inspect();
    if (advise->parsed()) return run_advise();
    if (plan->parsed()) return run_plan();
    if (app.got_subcommand("export")) return run_export();
    if (calibrate.parsed()) return calibrate.run();
  } catch (const Error& e) {
    if (root) fmt::print(stderr, "stepcast: error: {}\n", e.what());
    return kBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "stepcast: internal error: {}\n", e.what());
    return 1;
  }
  return 0;
}
