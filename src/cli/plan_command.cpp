// `stepcast plan SCENARIO --gpus N1,N2 [--top K] [--rank-by R] [--json] [--csv FILE] [--report FILE]`: every
// parallel layout of a decoder that is valid and fits, coarse on all of them, fine on the top k,
// ranked by tokens/s per GPU, time or cost to train (sweep/plan.hpp). Registered by main.cpp through
// add_plan_command; errors are stepcast::Error, which main turns into exit code 2.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/output_file.hpp"
#include "stepcast/error.hpp"
#include "stepcast/report/html.hpp"
#include "stepcast/report/plan.hpp"
#include "stepcast/sweep/plan.hpp"
#include "stepcast/sweep/sweep.hpp"

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
  std::string report;
  std::string rank_by = "tokens_per_gpu";
};

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
  cmd->add_option(
      "--report", args->report,
      "Also write the answer, the runner-ups and their charts as a self-contained HTML page to FILE");
  return {cmd, [args] {
            sweep::PlanRequest request;
            request.scenario = args->scenario;
            request.overrides = args->sets;
            if (!args->gpus.empty()) request.gpus = sweep::parse_worker_list(args->gpus, "--gpus");
            request.top = static_cast<std::size_t>(args->top);
            request.jobs = args->jobs;
            request.rank_by = report::parse_plan_rank(args->rank_by, "--rank-by");
            request.warn = [](const std::string& w) { fmt::print(stderr, "stepcast: warning: {}\n", w); };
            const report::Plan plan = sweep::plan(request);
            if (sweep::process_ranks().rank != 0) return 0;  // rank 0 writes the answer
            if (!args->csv.empty()) {
              std::ofstream out = open_output(args->csv, "--csv");
              report::write_plan_csv(out, plan);
            }
            if (!args->report.empty()) {
              std::ofstream out = open_output(args->report, "--report");
              report::write_plan_html(out, plan);
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
