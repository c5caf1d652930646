// What the scenario targets do with a scenario text (scenario_fuzz.cpp, scenario_set_fuzz.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace stepcast_fuzz {

/// Parses `yaml` as the file `file_name` (relative paths in it resolve in the fuzzer's own empty
/// directory) with `overrides`, then renders and re-checks it as the command does.
inline void check_scenario_text(std::string_view yaml, const std::string& file_name,
                                const std::vector<std::string>& overrides) {
  namespace scenario = stepcast::scenario;
  bool parsed = false;
  std::string failed_key;
  try {
    const scenario::Scenario s = scenario::parse_scenario(yaml, file_name, overrides);
    parsed = true;
    (void)scenario::resolved_keys(s);
    (void)scenario::compute_source_text(s);
    if (s.workload.profile.empty()) only_input_errors([&] { (void)scenario::model_of(s); });
    // `--workers N` re-checks the rules at other counts.
    for (const int workers : {1, 2, 3, 64, 16384}) {
      scenario::Scenario at = s;
      at.cluster.workers = workers;
      only_input_errors([&] { scenario::check_consistency(at); });
    }
  } catch (const stepcast::Error& e) {
    failed_key = e.where().key;
  }
  // The other ways in, where they can differ (most mutated inputs fail on an unknown key, and the
  // same parse again costs the fuzzer its speed): at a sweep of worker counts, as
  // `stepcast predict --workers 1,7,4096` checks the text, and for `stepcast collective
  // --scenario`, which needs no workload.
  if (parsed) {
    only_input_errors([&] {
      (void)scenario::parse_scenario(yaml, file_name, overrides, scenario::Needs::Workload, {1, 7, 4096});
    });
  }
  if (parsed || failed_key.rfind("workload", 0) == 0) {
    only_input_errors(
        [&] { (void)scenario::parse_scenario(yaml, file_name, overrides, scenario::Needs::ClusterOnly); });
  }
}

}  // namespace stepcast_fuzz
