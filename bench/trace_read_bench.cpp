// Kineto trace reading speed (issue 3: >= 300 MB/s on one core, >= 20x Python's json.load).
// The file comes from STEPCAST_TRACE_BENCH_FILE (build one with scripts/make-large-trace.py);
// without it, a ~30 MB synthetic trace is written to the temporary directory and removed at
// exit, so the benchmark always runs.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "stepcast/profile/kineto.hpp"
#include "stepcast/profile/trace_summary.hpp"

namespace {

namespace fs = std::filesystem;

struct BenchFile {
  std::string path;
  bool owned = false;
  BenchFile() {
    if (const char* env = std::getenv("STEPCAST_TRACE_BENCH_FILE"); env != nullptr && *env != '\0') {
      path = env;
      return;
    }
    path = (fs::temp_directory_path() / ("stepcast_trace_bench_" + std::to_string(::getpid()) + ".json"))
               .string();
    owned = true;
    std::ofstream out(path);
    out << "{\"schemaVersion\": 1, \"traceEvents\": [\n";
    size_t bytes = 0;
    for (size_t i = 0; bytes < (30u << 20); ++i) {
      // One step annotation per 1000 kernels, each kernel with its launch: a Kineto-like mix.
      std::string e;
      if (i % 1000 == 0) {
        e += "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#" +
             std::to_string(i / 1000) +
             "\", \"pid\": 1, \"tid\": 1, \"ts\": " + std::to_string(1000000 + 10 * i) +
             ", \"dur\": 10000},\n";
      }
      e += "  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, "
           "\"tid\": 1, "
           "\"ts\": " +
           std::to_string(1000000 + 10 * i) +
           ", \"dur\": 3.5, \"args\": {\"External id\": " + std::to_string(i) +
           ", \"cbid\": 211, \"correlation\": " + std::to_string(i) + "}},\n";
      e += "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void "
           "at::native::vectorized_elementwise_kernel<4, "
           "at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, "
           "at::native::CUDAFunctor_add<float>, "
           "at::detail::Array<char*, 3>)\", \"pid\": 0, \"tid\": 7, \"ts\": " +
           std::to_string(1000004 + 10 * i) +
           ", \"dur\": 5.2, \"args\": {\"External id\": " + std::to_string(i) +
           ", \"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 7, \"correlation\": " +
           std::to_string(i) +
           ", \"registers per thread\": 20, \"shared memory\": 0, \"grid\": [110, 1, 1], \"block\": [128, 1, "
           "1]}}";
      out << (i ? ",\n" : "") << e;
      bytes += e.size();
    }
    out << "\n]}\n";
  }
  ~BenchFile() {
    if (owned) std::remove(path.c_str());
  }
};

const BenchFile& bench_file() {
  static const BenchFile file;
  return file;
}

void BM_ReadKinetoEvents(benchmark::State& state) {
  const std::string& path = bench_file().path;
  const auto size = static_cast<int64_t>(fs::file_size(path));
  size_t events = 0;
  size_t buffered = 0;
  for (auto _ : state) {
    size_t n = 0;
    const auto r =
        stepcast::profile::read_kineto_events(path, [&](const stepcast::profile::EventView&) { ++n; });
    benchmark::DoNotOptimize(n);
    events = n;
    buffered = r.stats.max_buffered_bytes;
  }
  state.SetBytesProcessed(size * state.iterations());
  state.counters["events"] = static_cast<double>(events);
  state.counters["file_MB"] = static_cast<double>(size) / 1e6;
  state.counters["buffer_KiB"] = static_cast<double>(buffered) / 1024;
}
BENCHMARK(BM_ReadKinetoEvents)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SummarizeKinetoFile(benchmark::State& state) {
  const std::string& path = bench_file().path;
  const auto size = static_cast<int64_t>(fs::file_size(path));
  for (auto _ : state) {
    auto s = stepcast::profile::summarize_kineto_file(path);
    benchmark::DoNotOptimize(s.steps.size());
  }
  state.SetBytesProcessed(size * state.iterations());
}
BENCHMARK(BM_SummarizeKinetoFile)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
