// `stepcast plan SCENARIO --gpus N1,N2 [--top K] [--rank-by R] [--json] [--csv FILE] [--report FILE]`: every
// parallel layout of a decoder that is valid and fits, coarse on all of them, fine on the top k,
// ranked by tokens/s per GPU, time or cost to train (sweep/plan.hpp). Registered by main.cpp through
// add_plan_command; errors are stepcast::Error, which main turns into exit code 2.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
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

/// One line of stderr that each call replaces (a terminal's), and the warnings printed above it.
/// Called from the search's threads: one at a time.
class ProgressLine {
 public:
  explicit ProgressLine(bool terminal) : terminal_(terminal), started_(std::chrono::steady_clock::now()) {}
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { clear(); }  // also when the search throws: the error gets a line of its own
  [[nodiscard]] bool on() const { return terminal_; }
  void show(const std::string& text) {
    const std::lock_guard<std::mutex> hold(lock_);
    if (std::chrono::steady_clock::now() - started_ < std::chrono::seconds(1)) return;
    drawn_ = true;
    fmt::print(stderr, "\r{:<{}.{}}", text, kWidth, kWidth);
  }
  void warn(const std::string& warning) {
    const std::lock_guard<std::mutex> hold(lock_);
    erase();
    fmt::print(stderr, "stepcast: warning: {}\n", warning);
  }
  void clear() {
    const std::lock_guard<std::mutex> hold(lock_);
    erase();
  }

 private:
  static constexpr int kWidth = 78;
  void erase() {
    if (drawn_) fmt::print(stderr, "\r{:<{}}\r", "", kWidth);
    drawn_ = false;
  }
  bool terminal_;
  std::chrono::steady_clock::time_point started_;
  std::mutex lock_;
  bool drawn_ = false;
};

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
            // A progress line on a terminal once the search has lasted a second (a search of
            // 16,384 GPUs runs for minutes), cleared before a warning and when the search ends.
            ProgressLine line(::isatty(STDERR_FILENO) != 0 && sweep::process_ranks().rank == 0);
            request.warn = [&line](const std::string& w) { line.warn(w); };
            if (line.on()) request.progress = [&line](const std::string& text) { line.show(text); };
            const report::Plan plan = sweep::plan(request);
            line.clear();
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
