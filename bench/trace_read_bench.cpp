// Kineto trace reading speed (issue 3: >= 300 MB/s on one core, >= 20x Python's json.load).
// The file comes from STEPCAST_TRACE_BENCH_FILE (build one with scripts/make-large-trace.py);
// without it, a ~30 MB synthetic trace is written to the temporary directory and removed at
// exit, so the benchmark always runs.
//
// The reader's event scanners (src/profile/event_scanner.hpp) are compared in one run: /scalar
// is the scalar reference scanner, /block the 64-byte block scanner the reader uses by default
// (AVX2 where the CPU has it, else SSE2), /sse2 etc. one block scanner. BM_ScanEvents times the
// scanner alone on the first 64 MiB of the file in memory; BM_ReadKinetoEvents the whole reader.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

// Private header of src/profile (the benchmarks do not get src/ as an include directory).
#include "../src/profile/event_scanner.hpp"
#include "stepcast/detail/profile/kineto.hpp"
#include "stepcast/detail/profile/trace_summary.hpp"

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

namespace detail = stepcast::profile::detail;

/// The scanner named `which`: "scalar", "block" (what the reader uses by default), or one block
/// scanner: "block-portable", "block-sse2", "block-avx2". nullptr when this machine lacks it.
detail::ScanFn scan_fn(const std::string& which) {
  if (which == "scalar") return detail::scanner(detail::ScannerKind::Scalar);
  if (which == "block") return detail::scanner(detail::ScannerKind::Block);
  if (which == "block-portable") return &detail::scan_composite_block_portable;
  if (which == "block-sse2") return detail::scan_composite_block_sse2();
  if (which == "block-avx2") return detail::scan_composite_block_avx2();
  return nullptr;
}

/// The scanner alone: finds the bounds of every event in the first 64 MiB of the file, held in
/// memory (no I/O, no parsing), the way the reader walks "traceEvents".
void BM_ScanEvents(benchmark::State& state, const std::string& which) {
  const detail::ScanFn scan = scan_fn(which);
  if (scan == nullptr) {
    state.SkipWithError((which + ": not available on this machine").c_str());
    return;
  }
  std::string text;
  {
    std::ifstream in(bench_file().path, std::ios::binary);
    text.resize(size_t{64} << 20);
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
  }
  const size_t begin = text.find('[', text.find("\"traceEvents\""));
  if (begin == std::string::npos) {
    state.SkipWithError("no \"traceEvents\" array in the file");
    return;
  }
  size_t events = 0;
  size_t scanned = 0;
  for (auto _ : state) {
    events = 0;
    size_t i = begin + 1;
    for (;;) {
      while (i < text.size() && (text[i] == ',' || text[i] == ' ' || text[i] == '\n')) ++i;
      if (i >= text.size() || text[i] != '{') break;
      detail::ScanState st;
      const size_t end = scan(text.data(), i + 1, text.size(), st);
      if (end == detail::kScanIncomplete) break;  // the event cut by the 64 MiB limit
      i = end;
      ++events;
    }
    scanned = i - begin;
    benchmark::DoNotOptimize(events);
  }
  state.SetBytesProcessed(static_cast<int64_t>(scanned) * state.iterations());
  state.SetLabel(detail::scanner_name(scan));
  state.counters["events"] = static_cast<double>(events);
}
BENCHMARK_CAPTURE(BM_ScanEvents, scalar, std::string("scalar"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ScanEvents, block, std::string("block"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ScanEvents, portable, std::string("block-portable"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ScanEvents, sse2, std::string("block-sse2"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ScanEvents, avx2, std::string("block-avx2"))->Unit(benchmark::kMillisecond);

/// The reader with the scanner named `which` (see scan_fn), events to a no-op visitor.
void BM_ReadKinetoEvents(benchmark::State& state, const std::string& which) {
  const detail::ScanFn scan = scan_fn(which);
  if (scan == nullptr) {
    state.SkipWithError((which + ": not available on this machine").c_str());
    return;
  }
  detail::set_reader_scanner(scan);
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
  detail::set_reader_scanner(nullptr);
  state.SetBytesProcessed(size * state.iterations());
  state.SetLabel(detail::scanner_name(scan));
  state.counters["events"] = static_cast<double>(events);
  state.counters["file_MB"] = static_cast<double>(size) / 1e6;
  state.counters["buffer_KiB"] = static_cast<double>(buffered) / 1024;
}
BENCHMARK_CAPTURE(BM_ReadKinetoEvents, scalar, std::string("scalar"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_ReadKinetoEvents, block, std::string("block"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_ReadKinetoEvents, sse2, std::string("block-sse2"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

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
