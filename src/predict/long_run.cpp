#include "predict/long_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "stepcast/units.hpp"

namespace stepcast::predict {

void LongRunWarning::progress(double fraction) {
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start_;
  progress_at(elapsed.count(), fraction);
}

void LongRunWarning::progress_at(double elapsed, double fraction) {
  if (warned_ || !sink_ || elapsed < kProjectAfter) return;
  // The work is not equally dear all through a step (a parameter server's pushes cost more
  // re-sharing than its pulls), so the rest is projected at the recent rate, or at the mean rate
  // where that says more; with nothing done yet the time so far is all there is to go on.
  // A first look only opens the window: a slow start (a parameter server's first pulls) alone
  // says little about the rest.
  const bool have_window = window_start_ >= 0;
  double projected = fraction > 0 ? elapsed / fraction : elapsed;
  if (have_window && fraction > window_fraction_ && elapsed > window_start_) {
    const double recent_rate = (fraction - window_fraction_) / (elapsed - window_start_);
    projected = std::max(projected, elapsed + (1 - fraction) / recent_rate);
  }
  if (!have_window || elapsed - window_start_ >= kWindow) {
    window_start_ = elapsed;
    window_fraction_ = fraction;
  }
  if (!(projected > kLimit && (have_window || elapsed > kLimit))) return;
  warned_ = true;
  const std::string how_long =
      projected >= 120 ? fmt::format("{:.0f} min", projected / 60) : format_duration(projected);
  sink_(
      fmt::format("the fine prediction for {} workers is projected to take about {} on the full "
                  "event-by-event engine (no exact fast path applies to it; docs/models.md, Exact fast "
                  "paths); predictor: coarse or analytic answers in milliseconds (--set predictor=coarse)",
                  workers_, how_long));
}

}  // namespace stepcast::predict
