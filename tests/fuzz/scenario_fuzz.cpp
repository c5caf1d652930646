// Scenario files (scenario::parse_scenario on the input text), then what `stepcast predict` and
// `stepcast options --resolved` do with a scenario before predicting: the model, the compute
// source in words, every resolved key, the consistency checks at another worker count.
#include "fuzz_support.hpp"
#include "scenario_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const stepcast_fuzz::InputFile file("scenario.yaml");
  stepcast_fuzz::check_scenario_text(stepcast_fuzz::as_text(data, size), file.path(), {});
  return 0;
}
