// predict::validate: the scheme-level checks plus the options every predictor reads.
#include "stepcast/scheme/validate.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <string_view>

#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"

namespace stepcast::predict {
namespace {

// Same bound as the steps.* keys: a prediction simulates warmup + measure steps.
constexpr int kMaxSteps = 1000;

[[noreturn]] void fail(std::string_view key, const std::string& message) {
  throw Error({"", 0, std::string(key)}, message);
}

// NaN fails every comparison, so the checks ask for what is valid.
void expect_non_negative(std::string_view key, double value, std::string_view what) {
  if (!(std::isfinite(value) && value >= 0)) {
    fail(key, fmt::format("expected a finite {} >= 0, got {}", what, value));
  }
}

bool known(Predictor v) {
  switch (v) {
    case Predictor::Fine:
    case Predictor::Coarse:
    case Predictor::Analytic:
      return true;
  }
  return false;
}
bool known(StartupIo v) {
  switch (v) {
    case StartupIo::Sequential:
    case StartupIo::Parallel:
      return true;
  }
  return false;
}

}  // namespace

void validate(const workload::Workload& workload, const cluster::ClusterSpec& cluster,
              const scheme::SchemeConfig& scheme, const Options& options) {
  scheme::validate(workload, cluster, scheme);
  if (!known(options.predictor)) {
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
    expect_non_negative("workload.compute_cv", options.compute_cv, "coefficient of variation");
  }
  const JobOptions& job = options.job;
  expect_non_negative("job.samples", job.samples, "number of samples");
  // Negative means "the model's parameter bytes"; only NaN and infinities are meaningless.
  if (!std::isfinite(job.startup_bytes)) {
    fail("job.startup.bytes", fmt::format("expected a finite size, got {}", job.startup_bytes));
  }
  expect_non_negative("job.startup.storage_bandwidth", job.storage_bw, "bandwidth (bytes/s; 0 = unset)");
  if (!known(job.io)) fail("job.startup.io", fmt::format("unknown value {}", static_cast<int>(job.io)));
  expect_non_negative("job.startup.fixed", job.startup_fixed, "duration (s)");
}

}  // namespace stepcast::predict
