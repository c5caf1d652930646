// Layer tables (profile::parse_layer_table, the CSV behind workload.profile: x.csv).
#include "fuzz_support.hpp"
#include "stepcast/detail/profile/layer_table.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stepcast_fuzz::only_input_errors([&] {
    const auto w = stepcast::profile::parse_layer_table(stepcast_fuzz::as_text(data, size), "fuzz.csv");
    stepcast_fuzz::check_workload(w, "parse_layer_table");
  });
  return 0;
}
