// predict::validate: the scheme-level checks plus the options every predictor reads.
#include "stepcast/scheme/validate.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <string_view>

#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"
#include "stepcast/units.hpp"

namespace stepcast::predict {
namespace {

// Same bound as the steps.* keys: a prediction simulates warmup + measure steps.
constexpr int kMaxSteps = 1000;

[[noreturn]] void fail(std::string_view key, const std::string& message) {
  throw Error({"", 0, std::string(key)}, message);
}

// NaN fails every comparison, so the checks ask for what is valid.
void expect_non_negative(std::string_view key, double value, std::string_view what, double max) {
  if (!(std::isfinite(value) && value >= 0 && value <= max)) {
    fail(key, fmt::format("expected a finite {} >= 0 and <= {:g}, got {}", what, max, value));
  }
}

}  // namespace

void validate(const workload::Workload& workload, const cluster::ClusterSpec& cluster,
              const scheme::SchemeConfig& scheme, const Options& options) {
  scheme::validate(workload, cluster, scheme);
  if (!is_named(options.predictor)) {
    fail("predictor", fmt::format("unknown value {}", static_cast<int>(options.predictor)));
  }
  if (options.warmup_steps < 0 || options.warmup_steps > kMaxSteps) {
    fail("steps.warmup",
         fmt::format("expected an integer in [0, {}], got {}", kMaxSteps, options.warmup_steps));
  }
  if (options.measure_steps < 1 || options.measure_steps > kMaxSteps) {
    fail("steps.measure",
         fmt::format("expected an integer in [1, {}], got {}", kMaxSteps, options.measure_steps));
  }
  // With compute_cv_auto the value is replaced by the workload's own variation.
  if (!options.compute_cv_auto) {
    expect_non_negative("workload.compute_cv", options.compute_cv, "coefficient of variation",
                        limits::kMaxCv);
  }
  const JobOptions& job = options.job;
  expect_non_negative("job.samples", job.samples, "number of samples", limits::kMaxSamples);
  expect_non_negative("workload.tokens", job.tokens, "number of tokens", limits::kMaxTokens);
  if (job.tokens > 0 && !(workload.facts.tokens_per_sample > 0)) {
    fail("workload.tokens",
         fmt::format(
             "the workload '{}' is not a language model (no tokens per sample): give the job in samples "
             "(job.samples) instead",
             workload.name));
  }
  if (job.tokens > 0 && job.samples > 0) {
    fail("workload.tokens", "give workload.tokens or job.samples, not both");
  }
  expect_non_negative("cluster.cost.gpu_hour", options.cost.gpu_hour, "amount of money per GPU-hour",
                      limits::kMaxGpuHour);
  // Negative means "the model's parameter bytes"; only NaN, infinities and the absurd are meaningless.
  if (!(std::isfinite(job.startup_bytes) && job.startup_bytes <= limits::kMaxBytes)) {
    fail("job.startup.bytes",
         fmt::format("expected a finite size <= {:g} bytes (negative: the model's), got {}",
                     limits::kMaxBytes, job.startup_bytes));
  }
  if (job.storage_bw != 0 && !(std::isfinite(job.storage_bw) && job.storage_bw >= limits::kMinBandwidth &&
                               job.storage_bw <= limits::kMaxBandwidth)) {
    fail("job.startup.storage_bandwidth",
         fmt::format("expected a finite bandwidth >= 0 (0: unset), else in [{:g}, {:g}] bytes/s, got {}",
                     limits::kMinBandwidth, limits::kMaxBandwidth, job.storage_bw));
  }
  if (!is_named(job.io)) fail("job.startup.io", fmt::format("unknown value {}", static_cast<int>(job.io)));
  expect_non_negative("job.startup.fixed", job.startup_fixed, "duration (s)", limits::kMaxDuration);
  // What a trace keeps: named after the predict flags that set it.
  const sim::TraceSelection& kept = options.trace_selection;
  for (size_t i = 0; i < kept.workers.size(); ++i) {
    const int w = kept.workers[i];
    if (w < 0 || w >= cluster.workers || (i > 0 && w <= kept.workers[i - 1])) {
      fail("--trace-workers",
           fmt::format("expected increasing worker indices in [0, {}], got {}", cluster.workers - 1, w));
    }
  }
  if (kept.first_workers < 0) {
    fail("--trace-workers", fmt::format("expected a number of workers >= 0, got {}", kept.first_workers));
  }
  if (kept.steps < 0 || kept.steps > options.measure_steps) {
    fail("--trace-steps",
         fmt::format("expected a number of measured steps in [1, {}] (steps.measure), got {}",
                     options.measure_steps, kept.steps));
  }
}

}  // namespace stepcast::predict
