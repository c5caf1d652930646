// TensorFlow 1 timelines (profile::read_tf_timeline, plain or gzipped; workload.profile: x.json
// when the trace is one), with the sniffing that picks this reader.
#include "fuzz_support.hpp"
#include "stepcast/detail/profile/tf_timeline.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const stepcast_fuzz::InputFile file("timeline.json");
  const std::string& path = file.write(stepcast_fuzz::as_text(data, size));
  (void)stepcast::profile::looks_like_tf_timeline(path);  // never throws
  stepcast_fuzz::only_input_errors([&] {
    std::vector<std::string> warnings;
    const auto w = stepcast::profile::read_tf_timeline(path, {}, &warnings);
    stepcast_fuzz::check_workload(w, "read_tf_timeline");
  });
  return 0;
}
