// The answer of `stepcast plan` as a value (sweep::plan computes it) and its renderings: a ranked
// table per GPU count for people, JSON for programs, CSV (write_csv's columns) for spreadsheets.
// Knows Results and configurations as text, never how the layouts were enumerated.
//
//   report::Plan p = sweep::plan(request);
//   report::write_plan_text(std::cout, p);
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <string_view>
#include <vector>

#include "stepcast/enum_names.hpp"
#include "stepcast/predict/result.hpp"
#include "stepcast/report/report.hpp"

namespace stepcast::report {

/// What `stepcast plan` ranks by (--rank-by), fine's values: tokens/s per GPU (most first), the
/// time to train the job (workload.tokens or job.samples; least first), or its cost
/// (cluster.cost.gpu_hour; the job's cost, or without a job the cost per million tokens; least
/// first).
enum class PlanRank : uint8_t { TokensPerGpu, Time, Cost };
constexpr std::string_view name_of(PlanRank v) {
  switch (v) {
    case PlanRank::TokensPerGpu:
      return "tokens_per_gpu";
    case PlanRank::Time:
      return "time";
    case PlanRank::Cost:
      return "cost";
  }
  return {};
}
/// "tokens_per_gpu", "time", "cost" (the --rank-by values).
[[nodiscard]] const char* to_string(PlanRank rank);
/// The rank a --rank-by value names; throws Error naming `option` (the command's "--rank-by",
/// Python's "rank_by") for any other text.
[[nodiscard]] PlanRank parse_plan_rank(std::string_view text, std::string_view option);
/// The value `rank` orders predictions by, smaller first: minus tokens/s per GPU, the job's time,
/// the job's cost (or the cost per million tokens when there is no job).
[[nodiscard]] double rank_value(const predict::Result& result, PlanRank rank);

/// One layout a plan ranks: its settings as scenario keys, and its predictions.
struct PlanRow {
  /// The layout as `--set` settings, the same keys in the same order on every row:
  /// {"training.parallel.tensor", "4", true}, {"training.pipeline.schedule", "1f1b", false}, ...
  Config config;
  std::string label;            ///< "tp4 cp1 pp8 vp12 dp42, fsdp optimizer, mb 1, selective, sp, interleaved"
  predict::Result coarse;       ///< its coarse prediction, by which it reached the top
  predict::Result fine;         ///< its fine prediction, by which the top is ranked
  std::size_t coarse_rank = 0;  ///< 0-based place among the fitting layouts by coarse's tokens/s per GPU
};

/// Why layouts of a GPU count were not predicted.
struct PlanRejections {
  /// Break a layout rule (scheme::layout_problem, or a rule of validation): the degrees do not
  /// divide the GPUs, heads not divisible by t, too few micro-batches for the schedule, ...
  uint64_t invalid = 0;
  /// invalid by the key of the rule that rejected them, in key order: ("training.parallel.tensor", 120).
  std::vector<std::pair<std::string, uint64_t>> invalid_by_key;
  uint64_t no_fit = 0;  ///< valid, but over cluster.gpu_memory per GPU
  uint64_t pruned = 0;  ///< valid and fitting, but left out before coarse because they cannot rank in the top
};

/// The layout over cluster.gpu_memory by the smallest share, with what it needs.
struct PlanMiss {
  Config config;
  std::string label;
  predict::MemoryCheck memory;
};

/// The layouts of one GPU count.
struct PlanCount {
  int gpus = 0;
  uint64_t considered = 0;  ///< combinations of the searched values
  uint64_t fitting = 0;     ///< valid and within cluster.gpu_memory (predicted by coarse unless pruned)
  PlanRejections rejected;
  std::optional<PlanMiss> closest_miss;  ///< empty when every valid layout fits
  /// The top k by coarse, re-predicted by fine and ranked by fine's value of Plan::rank_by (ties
  /// in coarse's order), best first.
  std::vector<PlanRow> top;
  /// Whether coarse ranks `top` in the same order as fine.
  [[nodiscard]] bool orders_agree() const;
};

struct Plan {
  std::string scenario;               ///< name
  std::string compute_source;         ///< where the compute time comes from, in words
  std::size_t top_k = 10;             ///< layouts re-predicted by fine per GPU count
  std::vector<std::string> searched;  ///< the keys searched (plan_keys less plan.fixed, plus plan.vary)
  std::vector<std::string> held;      ///< the keys held at the scenario's value
  std::vector<PlanCount> counts;      ///< in --gpus order
  PlanRank rank_by = PlanRank::TokensPerGpu;
  /// The count whose best layout is best of all counts by rank_by (the first on ties); empty when
  /// no count has a layout.
  std::optional<std::size_t> best_count;
  double elapsed = 0;  ///< s of wall-clock time the search took (said in the text only)
};

/// Per GPU count: what was considered and rejected (with the closest miss), the ranked table
/// (rank, layout, step time, tokens/s per GPU, MFU, with a job its time, with costs the cost per
/// million tokens and with a job the job's cost, memory and headroom, bubble, exposed
/// communication by dimension as shares of the step, bottleneck), a line when coarse ranked the
/// top differently, and the best layout's line; then, over several counts, the best of all.
void write_plan_text(std::ostream& out, const Plan& plan);
/// {"scenario", "compute_source", "top_k", "rank_by", "best": {"gpus", "label"} or null,
/// "searched", "held", "layouts_considered",
/// "layouts_fitting", "rejected": {"invalid", "does_not_fit", "pruned"} (sums over the counts),
/// "counts": [{"gpus", "layouts_considered", "layouts_fitting", "rejected": {..., "invalid_by_key"},
/// "closest_miss": {"config", "label", "memory_per_gpu_bytes", "gpu_memory_bytes"} or null,
/// "orders_agree", "ranked": [{"rank", "coarse_rank", "label", "config", "coarse":
/// {"step_time_s", "tokens_per_s_per_gpu"}, "prediction": fine's as in predict --json}]}]}.
void write_plan_json(std::ostream& out, const Plan& plan);
/// write_csv's columns for every ranked row's fine prediction, the layout's keys last.
void write_plan_csv(std::ostream& out, const Plan& plan);

}  // namespace stepcast::report
