// PyTorch profiler (Kineto) traces: the streaming reader (profile::read_kineto_trace, plain or
// gzipped), the step summary of `stepcast inspect`, the conversion to a workload (measured and
// simulated collectives) and the per-layer times of workload.layer_times.
#include "fuzz_support.hpp"
#include "stepcast/detail/profile/kineto.hpp"
#include "stepcast/detail/profile/kineto_workload.hpp"
#include "stepcast/detail/profile/layer_times.hpp"
#include "stepcast/detail/profile/trace_summary.hpp"

namespace profile = stepcast::profile;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const stepcast_fuzz::InputFile file("trace.json");
  const std::string& path = file.write(stepcast_fuzz::as_text(data, size));
  stepcast_fuzz::only_input_errors([&] {
    const profile::KinetoTrace trace = profile::read_kineto_trace(path);
    // The reader's chunking must not change what it reads: small chunks split most events.
    profile::ReadOptions tiny;
    tiny.chunk_bytes = 64;  // the least the reader takes
    const profile::KinetoTrace again = profile::read_kineto_trace(path, tiny);
    if (again.events != trace.events || again.metadata != trace.metadata) {
      stepcast_fuzz::bug("read_kineto_trace reads other events with 64-byte chunks");
    }
    stepcast_fuzz::only_input_errors([&] { (void)profile::summarize(trace); });
    for (const auto collectives : {profile::KinetoWorkloadOptions::Collectives::Measured,
                                   profile::KinetoWorkloadOptions::Collectives::Simulated}) {
      stepcast_fuzz::only_input_errors([&] {
        profile::KinetoWorkloadOptions options;
        options.collectives = collectives;
        const profile::KinetoWorkload k = profile::convert_kineto(trace, options);
        stepcast_fuzz::check_workload(k.workload, "convert_kineto");
      });
    }
  });
  stepcast_fuzz::only_input_errors([&] { (void)profile::read_layer_times(path); });
  return 0;
}
