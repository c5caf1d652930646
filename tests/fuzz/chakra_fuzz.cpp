// Chakra execution traces (profile::read_chakra_trace: length-delimited protobuf messages).
#include "fuzz_support.hpp"
#include "stepcast/detail/profile/chakra_trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const stepcast_fuzz::InputFile file("trace.0.et");
  const std::string& path = file.write(stepcast_fuzz::as_text(data, size));
  stepcast_fuzz::only_input_errors([&] {
    std::vector<std::string> warnings;
    const auto w = stepcast::profile::read_chakra_trace(path, &warnings);
    stepcast_fuzz::check_workload(w, "read_chakra_trace");
  });
  return 0;
}
