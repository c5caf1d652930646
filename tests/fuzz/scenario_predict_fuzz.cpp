// Scenarios that parse, predicted: scenario::build_workload and predict::predict with every
// predictor, as `stepcast predict` runs them, so that a value the scenario checks let through but
// a predictor cannot take (an assertion, a stall, a NaN) is found. Kept short so that libFuzzer
// runs thousands a minute: at most 16 workers (the simulator at 4), one measured step.
#include "fuzz_support.hpp"
#include "stepcast/scenario/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace scenario = stepcast::scenario;
  namespace predict = stepcast::predict;
  static const stepcast_fuzz::InputFile file("scenario.yaml");
  stepcast_fuzz::only_input_errors([&] {
    scenario::Scenario s = scenario::parse_scenario(stepcast_fuzz::as_text(data, size), file.path());
    if (s.cluster.workers > 16 || !s.workload.profile.empty() || !s.workload.layer_times.empty()) return;
    const stepcast::workload::Workload w = scenario::build_workload(s);
    if (w.ops.size() > 5000) return;
    s.options.warmup_steps = std::min(s.options.warmup_steps, 1);
    s.options.measure_steps = std::min(s.options.measure_steps, 1);
    for (const auto predictor : {predict::Predictor::Coarse, predict::Predictor::Analytic, predict::Predictor::Fine}) {
      if (predictor == predict::Predictor::Fine && s.cluster.workers > 4) continue;
      s.options.predictor = predictor;
      stepcast_fuzz::only_input_errors([&] {
        const predict::Result r = predict::predict(w, s.cluster, s.scheme, s.options);
        if (!std::isfinite(r.step_time) || r.step_time < 0 || std::isnan(r.throughput)) {
          stepcast_fuzz::bug("predicted step time " + std::to_string(r.step_time) + ", throughput " +
                             std::to_string(r.throughput) + " (" + predict::to_string(predictor) + ")");
        }
      });
    }
  });
  return 0;
}
