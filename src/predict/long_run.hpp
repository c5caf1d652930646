// Private to predict/: the warning a fine prediction raises when it is projected to run for more
// than a minute (the full engine where no exact fast path applies). After a couple of seconds of
// wall time it projects the run's length from the fraction of its work done (every worker's ops
// and transfers, SimulationOptions::progress), at the recent rate of progress, and warns once. It reads the
// wall clock but never touches the simulation, so results stay deterministic.
#pragma once

#include <chrono>
#include <utility>

#include "stepcast/predict/predict.hpp"

namespace stepcast::predict {

class LongRunWarning {
 public:
  static constexpr double kLimit = 60;        ///< s of wall time worth a warning
  static constexpr double kProjectAfter = 2;  ///< s of wall time before projecting
  static constexpr double kWindow = 1;        ///< s of wall time the recent rate is taken over

  LongRunWarning(WarningSink sink, int workers) : sink_(std::move(sink)), workers_(workers) {}

  /// The run has done `fraction` (0..1) of its work; reads the wall clock.
  void progress(double fraction);
  /// Same with the wall time elapsed given (tests).
  void progress_at(double elapsed, double fraction);

  [[nodiscard]] bool warned() const { return warned_; }

 private:
  WarningSink sink_;  // a copy: a caller's temporary may not outlive this
  int workers_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double window_start_ = -1;  ///< s elapsed where the recent rate's window began (-1: none yet)
  double window_fraction_ = 0;
  bool warned_ = false;
};

}  // namespace stepcast::predict
