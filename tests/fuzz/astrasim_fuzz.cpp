// ASTRA-sim 1.0 text workloads (profile::parse_astrasim_workload, workload.profile: x.txt).
#include "fuzz_support.hpp"
#include "stepcast/detail/profile/astrasim_workload.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stepcast_fuzz::only_input_errors([&] {
    std::vector<std::string> warnings;
    const auto w = stepcast::profile::parse_astrasim_workload(stepcast_fuzz::as_text(data, size), "fuzz.txt",
                                                              {}, &warnings);
    stepcast_fuzz::check_workload(w, "parse_astrasim_workload");
  });
  return 0;
}
