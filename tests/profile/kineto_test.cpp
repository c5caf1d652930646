// The Kineto reader on small traces the tests write: fields and units, gzip and plain
// equivalence, every error case (each naming the file), and the streaming memory bound.
#include "stepcast/detail/profile/kineto.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "profile/kineto_fixtures.hpp"
#include "stepcast/error.hpp"
#include "stepcast/detail/profile/trace_summary.hpp"

namespace stepcast_profile_test {
namespace {
namespace kineto_test {  // this file's own names: test files are compiled several to a unit

using stepcast::Error;
using stepcast::profile::Category;
using stepcast::profile::KinetoTrace;
using stepcast::profile::read_kineto_events;
using stepcast::profile::read_kineto_trace;
using stepcast::profile::ReadOptions;

/// Runs `f`, expecting a stepcast::Error whose message contains every one of `parts`.
template <class F>
void expect_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected stepcast::Error";
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const auto& p : parts)
      EXPECT_NE(what.find(p), std::string::npos) << "'" << p << "' not in: " << what;
  }
}

class KinetoReader : public TraceDirTest {};

TEST_F(KinetoReader, ReadsFieldsMetadataAndConvertsToSeconds) {
  const KinetoTrace t = read_kineto_trace(plain("t.json", small_trace()));
  EXPECT_EQ(t.metadata.framework, "pytorch");
  EXPECT_EQ(t.metadata.schema_version, 1);
  ASSERT_EQ(t.metadata.devices.size(), 1u);
  EXPECT_EQ(t.metadata.devices[0].name, "Test GPU \"X\"");
  EXPECT_EQ(t.metadata.devices[0].memory_bytes, 1000);
  EXPECT_EQ(t.metadata.devices[0].num_sms, 8);
  EXPECT_EQ(t.metadata.rank, 1);
  EXPECT_EQ(t.metadata.world_size, 2);
  EXPECT_EQ(t.metadata.backend, "nccl");
  EXPECT_EQ(t.metadata.nccl_version, "2.17.1");
  EXPECT_EQ(t.metadata.base_time_ns, 1700000000000000000);  // after traceEvents in the file
  EXPECT_EQ(t.metadata.origin_us, 1e15);
  ASSERT_EQ(t.events.size(), 10u);
  EXPECT_EQ(t.stats.skipped, 0u);
  EXPECT_TRUE(t.stats.warnings.empty());

  const auto& step = t.events[0];
  EXPECT_EQ(t.name(step), "ProfilerStep#7");
  EXPECT_EQ(step.cat, Category::UserAnnotation);
  EXPECT_EQ(step.ph, 'X');
  EXPECT_EQ(step.ts, 0.0);
  EXPECT_DOUBLE_EQ(step.dur, 0.010);  // 10000 us

  const auto& gemm = t.events[2];
  EXPECT_EQ(t.name(gemm), "gemm {weird} [name] \\ \" end");
  EXPECT_EQ(gemm.cat, Category::Kernel);
  EXPECT_DOUBLE_EQ(gemm.ts, 0.001);
  EXPECT_DOUBLE_EQ(gemm.dur, 0.002);
  EXPECT_EQ(gemm.stream, 7);
  EXPECT_EQ(gemm.correlation, 1);
  EXPECT_EQ(gemm.device, 0);
  EXPECT_EQ(gemm.external_id, 11);
  EXPECT_EQ(gemm.pid, 0);
  EXPECT_EQ(gemm.tid, 7);
  EXPECT_EQ(t.nccl_args(gemm), nullptr);

  const auto& nccl = t.events[4];
  const auto* args = t.nccl_args(nccl);
  ASSERT_NE(args, nullptr);
  EXPECT_EQ(args->collective, "allreduce");
  EXPECT_EQ(args->dtype, "Half");
  EXPECT_EQ(args->in_nelems, 1000);
  EXPECT_EQ(args->out_nelems, 1000);
  EXPECT_EQ(args->group_size, 2);
  EXPECT_EQ(args->process_group_ranks, "[0, 1]");

  EXPECT_EQ(t.events[5].cat, Category::GpuMemcpy);
  EXPECT_EQ(t.events[6].cat, Category::Flow);
  EXPECT_EQ(t.events[6].ph, 's');
  // Unknown category: Other, no error; string pid/tid: -1.
  EXPECT_EQ(t.events[7].cat, Category::Other);
  EXPECT_EQ(t.events[7].pid, -1);
  // Fractional microseconds survive next to an epoch-sized timestamp.
  EXPECT_NEAR(t.events[9].ts, 0.0110005, 1e-12);
}

TEST_F(KinetoReader, GzipAndPlainGiveTheSameTrace) {
  const KinetoTrace a = read_kineto_trace(plain("t.json", small_trace()));
  const KinetoTrace b = read_kineto_trace(gzipped("t.json.gz", small_trace()));
  EXPECT_FALSE(a.stats.gzip);
  EXPECT_TRUE(b.stats.gzip);
  EXPECT_EQ(a.metadata, b.metadata);
  EXPECT_EQ(a.names, b.names);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.nccl, b.nccl);
  EXPECT_EQ(a.stats.bytes, b.stats.bytes);
}

TEST_F(KinetoReader, TinyChunksGiveTheSameTrace) {
  // Every chunk size from 64 to 160 bytes puts chunk boundaries at every kind of place: inside
  // keys, strings, escapes (also in top-level keys) and numbers.
  std::string text = small_trace();
  text.insert(text.find("\"traceName\""), R"("odd \\\" key \\": {"a": "}\\"}, )");
  const std::string path = plain("t.json", text);
  const KinetoTrace a = read_kineto_trace(path);
  ASSERT_EQ(a.events.size(), 10u);
  for (size_t chunk = 64; chunk <= 160; ++chunk) {
    ReadOptions tiny;
    tiny.chunk_bytes = chunk;
    const KinetoTrace b = read_kineto_trace(path, tiny);
    EXPECT_EQ(a.metadata, b.metadata) << chunk;
    EXPECT_EQ(a.names, b.names) << chunk;
    EXPECT_EQ(a.events, b.events) << chunk;
    EXPECT_EQ(a.nccl, b.nccl) << chunk;
  }
}

TEST_F(KinetoReader, BareEventArrayIsAChromeTrace) {
  const auto t = read_kineto_trace(plain(
      "a.json", R"([{"ph": "X", "name": "op", "cat": "misc", "ts": 5, "dur": 2, "pid": 1, "tid": 1}])"));
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.metadata.framework, "chrome-trace");
  EXPECT_DOUBLE_EQ(t.events[0].dur, 2e-6);
}

TEST_F(KinetoReader, TruncatedGzipIsAnErrorNamingTheFile) {
  std::string big = "{\"traceEvents\": [";
  for (int i = 0; i < 2000; ++i) {
    big += (i ? ",\n" : "") + std::string(R"({"ph": "X", "cat": "kernel", "name": "k)") + std::to_string(i) +
           R"(", "ts": )" + std::to_string(1000 + 10 * i) + R"(, "dur": 5, "pid": 0, "tid": 7})";
  }
  big += "]}";
  const std::string path = gzipped("cut.json.gz", big);
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size / 2);
  expect_error([&] { (void)read_kineto_trace(path); }, {path, "truncated gzip"});
  // Cut inside the 8-byte trailer only: all data inflates, the stream is still incomplete.
  const std::string path2 = gzipped("cut2.json.gz", big);
  std::filesystem::resize_file(path2, std::filesystem::file_size(path2) - 4);
  expect_error([&] { (void)read_kineto_trace(path2); }, {path2, "gzip"});
}

TEST_F(KinetoReader, CorruptGzipIsAnError) {
  std::string bytes = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03";
  bytes += std::string(200, '\x7f');
  const std::string path = plain("bad.json.gz", bytes);
  expect_error([&] { (void)read_kineto_trace(path); }, {path, "gzip"});
}

TEST_F(KinetoReader, TruncatedPlainJsonIsAnError) {
  const std::string text = small_trace();
  const std::string path = plain("cut.json", text.substr(0, text.find("ProfilerStep#8")));
  expect_error([&] { (void)read_kineto_trace(path); }, {path, "traceEvents[8]", "end of file", "truncated"});
}

TEST_F(KinetoReader, InvalidJsonNamesTheEventAndByte) {
  const std::string text = R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1},
 {"ph": "X", "name": , "ts": 2, "dur": 1}]})";
  const std::string path = plain("bad.json", text);
  expect_error([&] { (void)read_kineto_trace(path); }, {path, "traceEvents[1]", "byte 63", "invalid JSON"});
  const std::string path2 =
      plain("bad2.json", R"({"traceEvents": [{"ph": "X", "ts": 1, "dur": 1} {"ph": "i"}]})");
  expect_error([&] { (void)read_kineto_trace(path2); }, {path2, "traceEvents[1]", "expected ',' or ']'"});
  const std::string path3 = plain("bad3.json", R"({"traceEvents": [1, 2]})");
  expect_error([&] { (void)read_kineto_trace(path3); }, {path3, "expected an event object"});
  const std::string path4 = plain("bad4.json", "not json at all");
  expect_error([&] { (void)read_kineto_trace(path4); }, {path4, "expected '{' or '['"});
  const std::string path5 = plain("bad5.json", R"({"traceEvents": []} trailing)");
  expect_error([&] { (void)read_kineto_trace(path5); }, {path5, "after the top-level value"});
  const std::string path6 = plain("bad6.json", R"({"traceEvents": [{"ph": "X", "ts": "soon", "dur": 1}]})");
  expect_error([&] { (void)read_kineto_trace(path6); }, {path6, "traceEvents[0]", "\"ts\""});
}

TEST_F(KinetoReader, EmptyOrMissingFileIsAnError) {
  const std::string empty = plain("empty.json", "");
  expect_error([&] { (void)read_kineto_trace(empty); }, {empty, "end of file"});
  const std::string missing = (dir_ / "missing.json").string();
  expect_error([&] { (void)read_kineto_trace(missing); }, {missing, "cannot open"});
}

TEST_F(KinetoReader, MissingTraceEventsIsAnError) {
  const std::string path = plain("m.json", R"({"schemaVersion": 1, "deviceProperties": []})");
  expect_error([&] { (void)read_kineto_trace(path); }, {path, "traceEvents", "no \"traceEvents\""});
}

TEST_F(KinetoReader, NegativeOrMissingDurationsAreSkippedWithWarnings) {
  const std::string path = plain("d.json", R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "good", "ts": 10, "dur": 1},
    {"ph": "X", "cat": "kernel", "name": "negative", "ts": 10, "dur": -3},
    {"ph": "X", "cat": "kernel", "name": "missing", "ts": 10},
    {"ph": "X", "cat": "kernel", "name": "null", "ts": 10, "dur": null},
    {"ph": "X", "cat": "kernel", "name": "no ts", "dur": 4},
    {"ph": "i", "cat": "marker", "name": "instant", "ts": 12}
  ]})");
  const KinetoTrace t = read_kineto_trace(path);
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.name(t.events[0]), "good");
  EXPECT_EQ(t.name(t.events[1]), "instant");
  EXPECT_EQ(t.stats.events, 6u);
  EXPECT_EQ(t.stats.skipped, 4u);
  ASSERT_EQ(t.stats.warnings.size(), 4u);
  EXPECT_EQ(t.stats.num_warnings, 4u);
  for (const auto& w : t.stats.warnings) EXPECT_NE(w.find(path), std::string::npos) << w;
  EXPECT_NE(t.stats.warnings[0].find("traceEvents[1]"), std::string::npos);
  EXPECT_NE(t.stats.warnings[0].find("'negative'"), std::string::npos);
  EXPECT_NE(t.stats.warnings[0].find("negative duration -3 us"), std::string::npos);
  EXPECT_NE(t.stats.warnings[1].find("without \"dur\""), std::string::npos);
  EXPECT_NE(t.stats.warnings[2].find("without \"dur\""), std::string::npos);
  EXPECT_NE(t.stats.warnings[3].find("without \"ts\""), std::string::npos);
}

TEST_F(KinetoReader, UnknownCategoriesAreOther) {
  using stepcast::profile::parse_category;
  EXPECT_EQ(parse_category("brand_new_category", 'X'), Category::Other);
  EXPECT_EQ(parse_category("", 'X'), Category::Other);
  EXPECT_EQ(parse_category("Operator", 'X'), Category::CpuOp);
  EXPECT_EQ(parse_category("Runtime", 'X'), Category::CudaRuntime);
  EXPECT_EQ(parse_category("Kernel", 'X'), Category::Kernel);
  EXPECT_EQ(parse_category("Memset", 'X'), Category::GpuMemset);
  EXPECT_EQ(parse_category("cuda_driver", 'X'), Category::CudaDriver);
  EXPECT_EQ(parse_category("python_function", 'X'), Category::PythonFunction);
  EXPECT_EQ(parse_category("gpu_user_annotation", 'X'), Category::GpuUserAnnotation);
  EXPECT_EQ(parse_category("anything", 'f'), Category::Flow);
  EXPECT_EQ(parse_category("async_cpu_to_gpu", 'X'), Category::Flow);
}

TEST(KinetoHelpers, DtypeSizesAndCollectiveNames) {
  using namespace stepcast::profile;
  EXPECT_EQ(dtype_size("Float"), 4);
  EXPECT_EQ(dtype_size("Half"), 2);
  EXPECT_EQ(dtype_size("BFloat16"), 2);
  EXPECT_EQ(dtype_size("Long"), 8);
  EXPECT_EQ(dtype_size("Double"), 8);
  EXPECT_EQ(dtype_size("Int"), 4);
  EXPECT_EQ(dtype_size("Byte"), 1);
  EXPECT_EQ(dtype_size("Char"), 1);
  EXPECT_EQ(dtype_size("Bool"), 1);
  EXPECT_EQ(dtype_size("Mystery"), 0);
  EXPECT_EQ(collective_from_kernel_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)"), "allreduce");
  EXPECT_EQ(collective_from_kernel_name("ncclDevKernel_AllGather_RING_LL(ncclDevComm*)"), "allgather");
  EXPECT_EQ(collective_from_kernel_name("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)"),
            "sendrecv");
  EXPECT_EQ(collective_from_kernel_name("void gemm<float>()"), "");
  EXPECT_TRUE(is_nccl_kernel_name("ncclKernel_Broadcast_RING_LL_Sum_int8_t"));
  EXPECT_FALSE(is_nccl_kernel_name("volta_sgemm_128x64_nn"));
}

TEST_F(KinetoReader, StreamsA50MBTraceInABoundedBuffer) {
  // ~50 MB of kernel events read in 64 KiB chunks: the buffer must stay near one chunk, far
  // below the file size, which shows the reader never holds the file or its DOM.
  std::string text = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
  const std::string args =
      R"(, "args": {"External id": 12353, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 57541, "registers per thread": 40, "grid": [512, 1, 1], "block": [512, 1, 1]}})";
  size_t n = 0;
  text.reserve(52u << 20);
  while (text.size() < (50u << 20)) {
    if (n) text += ",\n";
    text +=
        R"JSON(  {"ph": "X", "cat": "kernel", "name": "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 32, true, 1>(float, cudnnTensorStruct)", "pid": 0, "tid": 7, "ts": )JSON";
    text += std::to_string(4458676983543 + 10 * n);
    text += ".183, \"dur\": 4.5";
    text += args;
    ++n;
  }
  text += "\n]}\n";
  const std::string path = plain("big.json", text);
  text.clear();
  text.shrink_to_fit();

  ReadOptions options;
  options.chunk_bytes = 64u << 10;
  size_t seen = 0;
  double total_dur = 0;
  const auto r = read_kineto_events(
      path,
      [&](const stepcast::profile::EventView& e) {
        ++seen;
        total_dur += e.dur;
      },
      options);
  EXPECT_EQ(seen, n);
  EXPECT_EQ(r.stats.events, n);
  EXPECT_NEAR(total_dur, static_cast<double>(n) * 4.5e-6, 1e-9 * static_cast<double>(n));
  EXPECT_GE(r.stats.bytes, 50u << 20);
  EXPECT_LT(r.stats.max_buffered_bytes, 256u << 10)
      << "the reader buffered " << r.stats.max_buffered_bytes << " bytes";
}

TEST_F(KinetoReader, SummaryOfTheSmallTraceMatchesHandComputedTimes) {
  // See small_trace(): step 7 = [0, 10 ms): gemm [1, 3] ms, all-reduce [2, 5] ms, memcpy [6, 7] ms.
  // busy = [1, 5] + [6, 7] = 5 ms; compute = 2 + 1 = 3 ms; communication 3 ms; overlap [2, 3] = 1 ms.
  const std::string path = gzipped("t.json.gz", small_trace());
  const auto s = stepcast::profile::summarize_kineto_file(path);
  ASSERT_EQ(s.steps.size(), 2u);
  const auto& a = s.steps[0];
  EXPECT_EQ(a.name, "ProfilerStep#7");
  EXPECT_EQ(a.number, 7);
  EXPECT_DOUBLE_EQ(a.duration, 0.010);
  EXPECT_EQ(a.num_kernels, 2);
  EXPECT_EQ(a.num_kernels_launched, 2);
  EXPECT_NEAR(a.gpu_busy, 0.005, 1e-12);
  EXPECT_NEAR(a.compute, 0.003, 1e-12);
  EXPECT_NEAR(a.communication, 0.003, 1e-12);
  EXPECT_NEAR(a.overlap, 0.001, 1e-12);
  EXPECT_NEAR(a.idle, 0.005, 1e-12);
  EXPECT_NEAR(a.kernel_compute_sum, 0.002, 1e-12);
  EXPECT_NEAR(a.nccl_kernel_sum, 0.003, 1e-12);
  const auto& b = s.steps[1];
  EXPECT_EQ(b.num_kernels, 1);
  EXPECT_EQ(b.num_kernels_launched, 0);
  EXPECT_NEAR(b.gpu_busy, 0.004, 1e-12);
  EXPECT_TRUE(a.steady);
  EXPECT_TRUE(b.steady);
  EXPECT_EQ(s.step_time.count, 2);
  EXPECT_DOUBLE_EQ(s.step_time.mean, 0.010);
  ASSERT_EQ(s.collectives.size(), 1u);
  const auto& c = s.collectives[0];
  EXPECT_EQ(c.step, "ProfilerStep#7");
  EXPECT_EQ(c.collective, "allreduce");
  EXPECT_EQ(c.dtype, "Half");
  EXPECT_EQ(c.bytes, 2000);  // 1000 x 2 bytes
  EXPECT_EQ(c.group_size, 2);
  EXPECT_NEAR(c.duration, 0.003, 1e-12);
  EXPECT_EQ(c.kernel_name, "ncclKernel_AllReduce_RING_LL_Sum_float");
  ASSERT_EQ(s.collective_groups.size(), 1u);
  EXPECT_EQ(s.collective_groups[0].count, 1);
  EXPECT_EQ(s.devices_used, std::vector<int64_t>{0});
  // The in-memory path gives the same summary, apart from the file name it carries.
  auto t = read_kineto_trace(path);
  EXPECT_EQ(stepcast::profile::summarize(t), s);
}

TEST_F(KinetoReader, TraceWithoutStepsIsAnErrorForTheSummary) {
  const std::string path = plain("nosteps.json", R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 10, "dur": 1}]})");
  EXPECT_EQ(read_kineto_trace(path).events.size(), 1u);  // reading alone is fine
  expect_error([&] { (void)stepcast::profile::summarize_kineto_file(path); },
               {path, "no steps", "ProfilerStep#N"});
}

TEST_F(KinetoReader, CutShortStepIsNotSteady) {
  // Four steps of 10 ms with 10 kernels of 0.5 ms each, and a fifth of 3 ms the profiler cut
  // after 2 kernels: it is reported, and left out of the steady mean.
  std::string text = "{\"traceEvents\": [";
  double ts = 1000;
  bool first = true;
  auto add = [&](const std::string& e) {
    text += (first ? "" : ",\n") + e;
    first = false;
  };
  for (int step = 0; step < 5; ++step) {
    const double dur = step == 4 ? 3000 : 10000;
    add(R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)" + std::to_string(step) +
        R"(", "ts": )" + std::to_string(ts) + R"(, "dur": )" + std::to_string(dur) + "}");
    for (int k = 0; k < (step == 4 ? 2 : 10); ++k) {
      add(R"({"ph": "X", "cat": "kernel", "name": "k", "ts": )" + std::to_string(ts + 10 + 1000 * k) +
          R"(, "dur": 500})");
    }
    ts += dur;
  }
  text += "]}";
  const auto s = stepcast::profile::summarize_kineto_file(plain("cut.json", text));
  ASSERT_EQ(s.steps.size(), 5u);
  EXPECT_FALSE(s.steps[4].steady);
  EXPECT_NE(s.steps[4].note.find("2 kernels"), std::string::npos) << s.steps[4].note;
  EXPECT_EQ(s.step_time.count, 4);
  EXPECT_NEAR(s.step_time.mean, 0.010, 1e-12);
  EXPECT_EQ(s.step_time_all.count, 5);
}

}  // namespace kineto_test
}  // namespace
}  // namespace stepcast_profile_test
