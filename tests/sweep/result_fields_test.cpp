// Every field of predict::Result reaches every writer: for each field in Result's list
// (stepcast/predict/result_fields.hpp), nested structs and vector elements included, a Result that
// differs from a baseline in that field alone must come back equal from the MPI wire
// (src/sweep/result_wire.cpp) and must change the JSON (write_json) and the CSV (write_csv), but
// for the fields kLeftOut names, with the reason. A field added to Result (and, as the build
// demands, to its list) that a writer does not print fails here, naming the field and the writer.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "stepcast/predict/result_fields.hpp"
#include "stepcast/report/report.hpp"
#include "sweep/result_wire.hpp"

namespace stepcast::sweep {
namespace {
namespace result_fields_test {  // this file's own names: test files are compiled several to a unit

using predict::Result;

enum class Writer { Wire, Json, Csv };

const char* to_string(Writer w) {
  switch (w) {
    case Writer::Wire:
      return "the MPI wire (src/sweep/result_wire.cpp)";
    case Writer::Json:
      return "write_json (src/report/json.cpp)";
    case Writer::Csv:
      return "write_csv (src/report/csv.cpp)";
  }
  return "?";
}

/// A field a writer leaves out on purpose: `path` and every path under it ("staleness" covers
/// "staleness.pushes"; "links" covers "links[0].busy" and "links[+]"). The test checks that the
/// writer's output indeed does not change, so an entry cannot outlive the reason for it.
struct LeftOut {
  std::string_view path;
  Writer writer;
  std::string_view reason;
};

// clang-format off
const LeftOut kLeftOut[] = {
    {"trace", Writer::Wire, "rank 0 makes the traced prediction itself (src/sweep/result_wire.hpp)"},
    {"trace", Writer::Json, "written by write_chrome_trace (predict --trace), not in the prediction"},
    {"trace", Writer::Csv, "written by write_chrome_trace (predict --trace), not in the row"},
    // The CSV is one flat row of the headline numbers (predict --csv, plan --csv); the detail
    // below is in the JSON.
    {"bottleneck_kind", Writer::Csv, "the bottleneck column gives it in words"},
    {"bottleneck_resource", Writer::Csv, "the bottleneck column gives it in words"},
    {"optimizer_step_time", Writer::Csv, "part of compute_s; the JSON splits it out"},
    {"utilization", Writer::Csv, "a list of resources, no fixed columns"},
    {"events", Writer::Csv, "the simulator's bookkeeping, not a prediction"},
    {"engine", Writer::Csv, "the simulator's bookkeeping, not a prediction"},
    {"max_link_flows", Writer::Csv, "the simulator's bookkeeping, not a prediction"},
    {"links", Writer::Csv, "per-link loads are a list, no fixed columns"},
    {"links_left_out", Writer::Csv, "goes with the links"},
    {"link_classes", Writer::Csv, "a list of classes, no fixed columns"},
    {"step_samples.step_times", Writer::Csv, "a list; the row has the spread's summary"},
    {"saturation_workers", Writer::Csv, "analytic detail, in the JSON"},
    {"compute_cv", Writer::Csv, "an input echoed back, in the JSON"},
    {"job.samples", Writer::Csv, "the row has the job's start-up and time, not its size"},
    {"job.steps", Writer::Csv, "the row has the job's start-up and time"},
    {"job.throughput", Writer::Csv, "the row has the job's start-up and time"},
    {"job.epochs", Writer::Csv, "an input echoed back, in the JSON"},
    {"job.epoch_time", Writer::Csv, "the row has the job's start-up and time"},
    {"cost.gpu_hour", Writer::Csv, "an input echoed back; it only turns the cost columns on"},
    {"cost.currency", Writer::Csv, "amounts are bare numbers in the CSV; the JSON names the currency"},
    {"mode", Writer::Csv, "profile detail, in the JSON"},
    {"gpu_busy_fraction", Writer::Csv, "profile detail, in the JSON"},
    {"memory.activations_modelled", Writer::Csv, "the JSON says it by a null; the row has the total"},
    {"tokens.model_flops_per_s_per_worker", Writer::Csv, "the row has MFU, its ratio to the peak"},
    {"collectives", Writer::Csv, "a list of buckets, no fixed columns"},
    {"staleness", Writer::Csv, "asynchronous detail, in the JSON and the table"},
    {"async_phases", Writer::Csv, "asynchronous detail, in the JSON and the table"},
};
// clang-format on

bool covers(std::string_view left_out, std::string_view path) {
  if (!path.starts_with(left_out)) return false;
  if (path.size() == left_out.size()) return true;
  const char next = path[left_out.size()];
  return next == '.' || next == '[';
}

const LeftOut* left_out(std::string_view path, Writer writer) {
  for (const LeftOut& l : kLeftOut) {
    if (l.writer == writer && covers(l.path, path)) return &l;
  }
  return nullptr;
}

// ---- A distinctive value, one per field type: a type added to Result without a case here does
// not compile, and the test then wants one.
void change(double& x) { x = x == 0 ? 0.375 : x * 1.5; }
void change(bool& b) { b = !b; }
void change(std::string& s) { s += "#"; }
template <class T>
requires std::is_integral_v<T>
void change(T& n) {
  n = static_cast<T>(n + 1);
}
void change(predict::Predictor& p) {
  p = p == predict::Predictor::Fine ? predict::Predictor::Coarse : predict::Predictor::Fine;
}
void change(predict::BottleneckKind& k) {
  k = k == predict::BottleneckKind::Compute ? predict::BottleneckKind::Memory : predict::BottleneckKind::Compute;
}
void change(std::vector<double>& v) { v.push_back(0.625); }
void change(predict::Trace& t) { t.processes.emplace_back("worker 9"); }

/// One field changed: its path ("memory.per_worker.parameters", "links[0].busy", "links[+]" for
/// one more element) and how.
struct Change {
  std::string path;
  std::function<void(Result&)> apply;
};

template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};
/// A vector of structs with a field list (utilization, links, collectives).
template <class T>
concept vector_of_listed = is_vector<T>::value && predict::has_field_list<typename T::value_type>;

std::string join(const std::string& prefix, std::string_view name) {
  return prefix.empty() ? std::string(name) : prefix + "." + std::string(name);
}

/// The changes of the field at `at(result)`, of type T, and of every field inside it.
template <class T>
void collect(const std::string& path, const std::function<T&(Result&)>& at, std::vector<Change>& out) {
  if constexpr (predict::has_field_list<T>) {
    std::apply(
        [&](const auto&... fields) {
          (
              [&](const auto& field) {
                using Member = std::remove_reference_t<decltype(std::declval<T&>().*(field.member))>;
                const auto member = field.member;
                collect<Member>(
                    join(path, field.name),
                    std::function<Member&(Result&)>([at, member](Result& r) -> Member& { return at(r).*member; }),
                    out);
              }(fields),
              ...);
        },
        predict::FieldList<T>::fields);
  } else if constexpr (vector_of_listed<T>) {
    using Element = typename T::value_type;
    out.push_back({path + "[+]", [at](Result& r) {
                     T& items = at(r);
                     items.push_back(items.at(0));  // throws (a failure, not a crash) on an empty baseline
                   }});
    collect<Element>(path + "[0]",
                     std::function<Element&(Result&)>([at](Result& r) -> Element& { return at(r).at(0); }), out);
  } else {
    out.push_back({path, [at](Result& r) { change(at(r)); }});
  }
}

std::vector<Change> every_change() {
  std::vector<Change> out;
  collect<Result>("", std::function<Result&(Result&)>([](Result& r) -> Result& { return r; }), out);
  return out;
}

/// Every optional part present (a job, costs, memory with a GPU size, tokens, a layout, per-step
/// samples, staleness, async phases, one element in every list), so that each field is printed
/// where its writer prints it at all. No trace: the wire drops it.
Result baseline() {
  Result r;
  r.workers = 16;
  r.predictor = predict::Predictor::Fine;
  r.step_time = 0.25;
  r.throughput = 4096.5;
  r.speedup = 12.5;
  r.efficiency = 0.78125;
  r.bottleneck = "PS messages 97% busy";
  r.bottleneck_kind = predict::BottleneckKind::PsMessages;
  r.bottleneck_resource = "PS messages";
  r.breakdown = {.compute = 0.1,
                 .communication_exposed = 0.05,
                 .wait = 0.1,
                 .tensor = 0.01,
                 .context = 0.02,
                 .pipeline = 0.03,
                 .data = 0.04};
  r.optimizer_step_time = 0.005;
  r.utilization = {{"PS messages", 0.97}, {"worker compute (mean)", 0.4}};
  r.bytes_sent = 1.5e9;
  r.bytes_received = 1.25e9;
  r.events = 123456;
  r.engine = "full";
  r.max_link_flows = 7;
  r.links = {{"server0.nic.up", 0.5, 3.75e8}};
  r.links_left_out = 17;
  r.link_classes = {{"worker NIC", 32, 0.5, 0.25, 6e9}};
  r.step_samples = {.samples = 2,
                    .mean = 0.25,
                    .p50 = 0.25,
                    .p95 = 0.26,
                    .min = 0.24,
                    .max = 0.26,
                    .step_times = {0.24, 0.26}};
  r.saturation_workers = 7.5;
  r.compute_cv = 0.125;
  r.job = {.samples = 1e6,
           .steps = 100,
           .startup_time = 30,
           .time = 55,
           .throughput = 18000,
           .epochs = 2,
           .epoch_time = 12.5,
           .tokens = 2e9};
  r.cost = {.gpu_hour = 2.5, .currency = "USD", .per_step = 0.01, .per_million_tokens = 0.5, .job = 4.25};
  r.mode = "extrapolated";
  r.gpu_busy_fraction = 0.875;
  r.memory = {.known = true,
              .per_worker = {.parameters = 1e9, .gradients = 1e9, .optimizer = 4e9, .activations = 2e9, .buffers = 5e8},
              .activations_modelled = true,
              .gpu_memory = 80e9,
              .outside_allocator = 1e9,
              .allocator_overhead = 0.0625};
  r.tokens = {.tokens_per_s = 1e5,
              .tokens_per_s_per_worker = 6250,
              .model_flops_per_s_per_worker = 1e14,
              .mfu = 0.4,
              .mfu_6nd = 0.35};
  r.collectives = {{2.5e7, "ring", "Simple"}};
  r.staleness = {.pushes = 1234, .mean = 6.75, .p95 = 9.5, .max = 12};
  r.layout = "tp4 cp1 pp2 vp1 dp2";
  r.bubble_fraction = 0.125;
  r.async_phases = {.out_of_step = 0.125, .convoy = 0.25};
  return r;
}

report::Sweep sweep_of(const Result& r) {
  report::Sweep sweep;
  sweep.scenario = "fields";
  sweep.predictions = {r};
  return sweep;
}

std::string json_of(const Result& r) {
  std::ostringstream out;
  report::write_json(out, sweep_of(r));
  return out.str();
}

std::string csv_of(const Result& r) {
  std::ostringstream out;
  report::write_csv(out, sweep_of(r));
  return out.str();
}

Result round_trip(const Result& r) {
  wire::Outcome sent;
  sent.results = {r};
  wire::Outcome got = wire::decode(wire::encode(sent));
  return got.results.at(0);
}

TEST(ResultFields, TheListReachesIntoEveryNestedStruct) {
  const std::vector<Change> changes = every_change();
  std::set<std::string> paths;
  for (const Change& c : changes) {
    EXPECT_TRUE(paths.insert(c.path).second) << "twice: " << c.path;
  }
  // A few from each depth, to see the walk is the one the file's comment describes.
  for (const char* path : {"workers", "breakdown.data", "memory.per_worker.buffers", "utilization[+]",
                           "utilization[0].resource", "links[0].bytes", "collectives[0].protocol",
                           "step_samples.step_times", "async_phases.convoy", "trace"}) {
    EXPECT_TRUE(paths.contains(path)) << path;
  }
  EXPECT_GE(changes.size(), 80u);
}

TEST(ResultFields, TheBaselineComesBackEqualFromTheWire) {
  const Result base = baseline();
  EXPECT_EQ(round_trip(base), base);
  EXPECT_EQ(round_trip(Result{}), Result{});
}

TEST(ResultFields, EveryFieldReachesTheWireTheJsonAndTheCsv) {
  const Result base = baseline();
  const Result base_wire = round_trip(base);
  const std::string base_json = json_of(base);
  const std::string base_csv = csv_of(base);
  std::set<const LeftOut*> left_out_used;
  for (const Change& c : every_change()) {
    SCOPED_TRACE("field " + c.path);
    Result changed = base;
    c.apply(changed);
    ASSERT_TRUE(changed != base) << "the test's change did not change the field";

    const Result got = round_trip(changed);
    if (const LeftOut* l = left_out(c.path, Writer::Wire)) {
      left_out_used.insert(l);
      EXPECT_TRUE(got == base_wire) << c.path << " is listed as left out of " << to_string(Writer::Wire)
                                << " but crosses it; remove it from kLeftOut";
    } else {
      EXPECT_TRUE(got == changed) << c.path << " does not come back from " << to_string(Writer::Wire);
    }

    const auto check_text = [&](Writer writer, const std::string& base_text, const std::string& text) {
      if (const LeftOut* l = left_out(c.path, writer)) {
        left_out_used.insert(l);
        EXPECT_TRUE(text == base_text) << c.path << " is listed as left out of " << to_string(writer) << " ("
                                   << l->reason << ") but its output changes with it; remove it from kLeftOut";
      } else {
        EXPECT_TRUE(text != base_text) << to_string(writer) << " does not print " << c.path
                                   << ": print it, or add it to kLeftOut with the reason";
      }
    };
    check_text(Writer::Json, base_json, json_of(changed));
    check_text(Writer::Csv, base_csv, csv_of(changed));
  }
  for (const LeftOut& l : kLeftOut) {
    EXPECT_TRUE(left_out_used.contains(&l)) << "kLeftOut names " << l.path << " for " << to_string(l.writer)
                                         << ", which matches no field";
  }
}

}  // namespace result_fields_test
}  // namespace
}  // namespace stepcast::sweep
