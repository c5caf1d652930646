// Scenario overrides (`--set key=value`): the input's first line is the override, the rest the
// YAML text it applies to (scenario::parse_scenario with overrides).
#include "fuzz_support.hpp"
#include "scenario_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const stepcast_fuzz::InputFile file("scenario.yaml");
  const std::string_view text = stepcast_fuzz::as_text(data, size);
  const size_t newline = text.find('\n');
  const std::string_view line = text.substr(0, newline);
  const std::string_view yaml = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
  stepcast_fuzz::check_scenario_text(yaml, file.path(), {std::string(line)});
  return 0;
}
