// Measured all-reduce sweeps (calibrate/collective_log: nccl-tests logs and XLA tables, the input
// of `stepcast calibrate nccl-tests`), then the calibration the command runs on them and the
// scenario fragment it writes.
#include "fuzz_support.hpp"
#include "stepcast/detail/calibrate/collective_log.hpp"
#include "stepcast/detail/calibrate/ring_calibration.hpp"
#include "stepcast/detail/report/calibration_report.hpp"

namespace {

using namespace stepcast::calibrate;

void calibrate_every_way(const CollectiveLog& log) {
  if (log.points.empty()) stepcast_fuzz::bug("a collective log without points was returned");
  for (size_t i = 1; i < log.points.size(); ++i) {
    if (!(log.points[i - 1].bytes < log.points[i].bytes)) stepcast_fuzz::bug("points not sorted by distinct size");
  }
  for (const Measurement& m : log.points) {
    if (!std::isfinite(m.bytes) || !std::isfinite(m.time) || !(m.time > 0) || m.bytes < 0) {
      stepcast_fuzz::bug("a point of " + std::to_string(m.bytes) + " bytes in " + std::to_string(m.time) + " s");
    }
  }
  for (const FitMethod method : {FitMethod::Endpoints, FitMethod::LeastSquares, FitMethod::Regimes}) {
    stepcast_fuzz::only_input_errors([&] {
      FitOptions options;
      options.method = method;
      const Calibration c = calibrate_ring(log.points, 8, options);
      if (!(c.fit.bw > 0) || !std::isfinite(c.fit.bw) || !std::isfinite(c.fit.step_latency) ||
          c.fit.step_latency < 0) {
        stepcast_fuzz::bug("fitted bandwidth " + std::to_string(c.fit.bw) + " B/s, step latency " +
                           std::to_string(c.fit.step_latency) + " s");
      }
      const CalibrationSource source{log.file, log.format, Placement::OutOfPlace, 4};
      (void)stepcast::report::calibration_yaml(c, source);
    });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = stepcast_fuzz::as_text(data, size);
  for (const Placement placement : {Placement::OutOfPlace, Placement::InPlace}) {
    stepcast_fuzz::only_input_errors(
        [&] { calibrate_every_way(parse_nccl_tests_log(text, "fuzz.log", placement)); });
  }
  stepcast_fuzz::only_input_errors([&] { calibrate_every_way(parse_xla_table(text, "fuzz.csv")); });
  // The command's way in: the file, its format detected.
  static const stepcast_fuzz::InputFile file("all_reduce.log");
  stepcast_fuzz::only_input_errors([&] { calibrate_every_way(read_collective_log(file.write(text))); });
  return 0;
}
