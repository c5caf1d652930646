// Reports: turn predictions into a table for people, JSON and CSV for programs, and the
// synthetic execution trace into Chrome trace JSON (Perfetto opens it). Knows Results, never
// the simulator.
//
//   report::Sweep sweep{.scenario = "resnet50-ps", .inputs = ..., .predictions = results};
//   report::write_table(std::cout, sweep);
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "stepcast/predict/result.hpp"

namespace stepcast::zoo {
struct ModelSpec;
}  // namespace stepcast::zoo

namespace stepcast::report {

/// One resolved scenario input as text ("cluster.nic_bandwidth" -> "10 Gbps").
struct Input {
  std::string key;
  std::string value;
  bool is_number = false;  ///< written unquoted in JSON
};

/// The swept keys' values of one prediction (`--sweep KEY=V1,V2`), as given, in sweep order:
/// {"training.ps.count", "4", true}. Empty without a sweep.
using Config = std::vector<Input>;

struct Sweep {
  std::string scenario;  ///< name
  std::vector<Input> inputs;
  std::vector<predict::Result> predictions;  ///< one per worker count (and predictor)
  std::string compute_source{};  ///< where the compute time came from, in words ("": not said)
  std::string topology{};        ///< the fabric's shape in words (cluster::describe_fabric; "": not said)
  /// configs[i]: the swept settings of predictions[i]; empty (no sweep) or one per prediction.
  std::vector<Config> configs{};
};

/// How far apart the predictors of one configuration may be before it is flagged (`predict
/// --predictor all`): the largest throughput over the smallest, minus 1.
inline constexpr double kPredictorDisagreement = 0.2;

/// One configuration and worker count predicted by more than one predictor (`predict
/// --predictor all`): the predictions with equal configs[i] and workers.
struct PredictorComparison {
  std::size_t first = 0;  ///< index into Sweep::predictions of its first prediction
  int workers = 0;
  /// Index into Sweep::predictions by predict::Predictor (fine, coarse, analytic); -1: not run.
  std::array<int, 3> prediction{-1, -1, -1};
  /// Throughput relative to fine's, x / fine - 1; empty without both.
  std::optional<double> coarse_vs_fine{};
  std::optional<double> analytic_vs_fine{};
  double spread = 0;  ///< largest throughput / smallest - 1 over the predictors that ran
  [[nodiscard]] bool disagrees() const { return spread > kPredictorDisagreement; }
};

/// The points of `sweep` that several predictors predicted, in order of first appearance; a point
/// predicted once is left out (so a sweep with one predictor gives none).
[[nodiscard]] std::vector<PredictorComparison> compare_predictors(const Sweep& sweep);
/// For a comparison that disagrees, one line naming its configuration and the throughputs:
/// "predictors differ by 129.7% (over 20%) at 16 workers (training.ps.count=4): fine 1206.3
/// samples/s, coarse 657.1 (-45.5% vs fine), analytic 1509.5 (+25.1% vs fine)"; "" when it
/// does not.
[[nodiscard]] std::string disagreement_warning(const Sweep& sweep, const PredictorComparison& comparison);

/// "training.ps.count=4, cluster.nic_bandwidth=25Gbps"; "" for an empty config.
[[nodiscard]] std::string config_label(const Config& config);

/// Aligned text table: workers, predictor, step time, throughput (samples/s), speed-up,
/// efficiency, bottleneck; units in the header. Then, per prediction with per-step samples, one
/// line "per-step samples (N workers, fine): k steps, predicted step time mean ... ms, p50, p95,
/// min, max".
void write_table(std::ostream& out, const Sweep& sweep);
/// The predictors side by side, one row per compare_predictors() point: swept keys, workers, each
/// predictor's step time and throughput, coarse and analytic relative to fine, and the spread
/// (marked when above kPredictorDisagreement). Same heading lines and alignment as write_table.
void write_comparison_table(std::ostream& out, const Sweep& sweep);
/// {"scenario": {...inputs as nested objects by dotted key...}, "predictions": [...]}; each
/// prediction has "step_time_samples": {"count", "mean_s", "p50_s", "p95_s", "min_s", "max_s",
/// "step_times_s": [...]}, or null without per-step samples. When several predictors predicted a
/// point (compare_predictors), also "comparisons": [{"config" (with a sweep), "workers",
/// "step_time_s": {"fine", "coarse", "analytic"}, "throughput_samples_per_s": {...},
/// "coarse_vs_fine", "analytic_vs_fine", "spread", "disagree", "warning"}], null where unknown.
void write_json(std::ostream& out, const Sweep& sweep);
/// The zoo: [{"name", "parameters", "tensors", "forward_flops" (per sample), "description"}], one
/// per model in the zoo's order.
void write_zoo_json(std::ostream& out);
/// One model: write_zoo_json's members plus "layers": [{"name", "parameters", "tensors",
/// "forward_flops"}] and, for a transformer, "seq_len", "training_flops_per_token",
/// "flops_per_token_6n" and "active_parameters".
void write_zoo_model_json(std::ostream& out, const zoo::ModelSpec& model);
/// One row per prediction, header first; columns in SI units named in the header. The last
/// six (step_samples, step_time_mean_s, _p50_s, _p95_s, _min_s, _max_s) are empty without
/// per-step samples.
void write_csv(std::ostream& out, const Sweep& sweep);
/// Chrome trace event JSON: {"traceEvents": [...], "displayTimeUnit": "ms"}; one pid per
/// process, one tid per thread, "M" metadata naming them, "X" events in microseconds (times
/// rounded to the nanosecond, ends too, so spans disjoint in the trace stay disjoint) with the
/// spans' set fields as "args"; flows as "s"/"f" pairs (cat "flow", "bp": "e") at the start of
/// the spans they join, right after them; instants as "i" (scope "g" or "p"); counters as "C".
/// Processes named "" are written only if something uses them.
void write_chrome_trace(std::ostream& out, const predict::Trace& trace);

/// JSON string escaping (quotes included), shared by the writers.
[[nodiscard]] std::string json_quote(std::string_view text);

}  // namespace stepcast::report
