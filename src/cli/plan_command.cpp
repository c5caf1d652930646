// `stepcast plan SCENARIO --gpus N1,N2 [--top K] [--rank-by R] [--json] [--csv FILE]`: every
// parallel layout of a decoder that is valid and fits, coarse on all of them, fine on the top k,
// ranked by tokens/s per GPU, time or cost to train (sweep/plan.hpp). Registered by main.cpp through
// add_plan_command; errors are stepcast::Error, which main turns into exit code 2.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/output_file.hpp"
#include "stepcast/error.hpp"
#include "stepcast/limits.hpp"
#include "stepcast/report/plan.hpp"
#include "stepcast/sweep/plan.hpp"

namespace stepcast::cli {

namespace {

struct PlanArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string gpus;
  int top = 10;
  int jobs = 0;
  bool json = false;
  std::string csv;
  std::string rank_by = "tokens_per_gpu";
};

report::PlanRank parse_rank(const std::string& text) {
  for (report::PlanRank rank :
       {report::PlanRank::TokensPerGpu, report::PlanRank::Time, report::PlanRank::Cost}) {
    if (text == report::to_string(rank)) return rank;
  }
  throw Error({"", 0, "--rank-by"}, fmt::format("expected tokens_per_gpu, time or cost, got '{}'", text));
}

/// "256,512,1024": each an integer in [1, kMaxWorkers], each once.
std::vector<int> parse_gpus(const std::string& text) {
  std::vector<int> out;
  for (size_t pos = 0; pos <= text.size();) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(pos, comma - pos);
    int value = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || value < 1 ||
        value > limits::kMaxWorkers) {
      throw Error({"", 0, "--gpus"},
                  fmt::format("expected a comma-separated list of integers in [1, {}], got '{}'",
                              limits::kMaxWorkers, text));
    }
    if (std::find(out.begin(), out.end(), value) != out.end()) {
      throw Error({"", 0, "--gpus"}, fmt::format("{} is given twice in '{}'; each count once", value, text));
    }
    out.push_back(value);
    pos = comma + 1;
  }
  return out;
}

}  // namespace

std::pair<CLI::App*, std::function<int()>> add_plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plan", "Search every parallel layout of a decoder that fits, rank them by tokens/s per GPU");
  cmd->add_option("scenario", args->scenario, "Scenario YAML file (a decoder with workload.global_batch)")
      ->required();
  cmd->add_option("--set", args->sets, "Override a scenario key: KEY=VALUE (repeatable)");
  cmd->add_option("--gpus", args->gpus,
                  "GPU counts, each searched on its own: N1,N2,... (default: cluster.workers)");
  cmd->add_option("--top", args->top, "Layouts per GPU count re-predicted by fine and shown (default 10)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--jobs", args->jobs, "Threads (default: all cores); the answer is the same")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--rank-by", args->rank_by,
                  "Rank by fine's tokens_per_gpu (default), time (to train workload.tokens) or cost (with "
                  "cluster.cost.gpu_hour: to train workload.tokens, else per million tokens)");
  cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
  cmd->add_option("--csv", args->csv, "Also write the ranked layouts' fine predictions as CSV to FILE");
  return {cmd, [args] {
            sweep::PlanRequest request;
            request.scenario = args->scenario;
            request.overrides = args->sets;
            if (!args->gpus.empty()) request.gpus = parse_gpus(args->gpus);
            request.top = static_cast<std::size_t>(args->top);
            request.jobs = args->jobs;
            request.rank_by = parse_rank(args->rank_by);
            request.warn = [](const std::string& w) { fmt::print(stderr, "stepcast: warning: {}\n", w); };
            const report::Plan plan = sweep::plan(request);
            if (!args->csv.empty()) {
              std::ofstream out = open_output(args->csv, "--csv");
              report::write_plan_csv(out, plan);
            }
            if (args->json) {
              report::write_plan_json(std::cout, plan);
            } else {
              report::write_plan_text(std::cout, plan);
            }
            return 0;
          }};
}

}  // namespace stepcast::cli
