// Reports on hand-built Results: JSON, CSV, table and Chrome trace text checked structurally.
#include "stepcast/report/report.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>

namespace stepcast::report {
namespace {
namespace report_test {  // this file's own names: test files are compiled several to a unit

using predict::Predictor;
using predict::Result;

// ---- A tiny strict JSON validator (RFC 8259 grammar), since the test links no JSON library.
class JsonChecker {
 public:
  explicit JsonChecker(std::string_view text) : s_(text) {}
  /// Empty when `text` is exactly one valid JSON value (surrounding whitespace allowed);
  /// otherwise what went wrong and where.
  std::string error() {
    skip_ws();
    if (!value()) return message_.empty() ? at("bad value") : message_;
    skip_ws();
    if (i_ != s_.size()) return at("trailing text");
    return {};
  }

 private:
  std::string at(const std::string& what) {
    message_ = what + " at offset " + std::to_string(i_) + ": '" + std::string(s_.substr(i_, 40)) + "'";
    return message_;
  }
  bool fail(const std::string& what) {
    at(what);
    return false;
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return fail("bad literal");
    i_ += word.size();
    return true;
  }
  bool value() {
    if (++depth_ > 64) return fail("too deep");
    bool ok = false;
    if (i_ >= s_.size()) return fail("unexpected end");
    switch (s_[i_]) {
      case '{':
        ok = object();
        break;
      case '[':
        ok = array();
        break;
      case '"':
        ok = string();
        break;
      case 't':
        ok = literal("true");
        break;
      case 'f':
        ok = literal("false");
        break;
      case 'n':
        ok = literal("null");
        break;
      default:
        ok = number();
        break;
    }
    --depth_;
    return ok;
  }
  bool object() {
    ++i_;
    skip_ws();
    if (i_ < s_.size() && s_[i_] == '}') return ++i_, true;
    for (;;) {
      skip_ws();
      if (i_ >= s_.size() || s_[i_] != '"') return fail("expected key");
      if (!string()) return false;
      skip_ws();
      if (i_ >= s_.size() || s_[i_] != ':') return fail("expected ':'");
      ++i_;
      skip_ws();
      if (!value()) return false;
      skip_ws();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == '}') return ++i_, true;
      return fail("expected ',' or '}'");
    }
  }
  bool array() {
    ++i_;
    skip_ws();
    if (i_ < s_.size() && s_[i_] == ']') return ++i_, true;
    for (;;) {
      skip_ws();
      if (!value()) return false;
      skip_ws();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == ']') return ++i_, true;
      return fail("expected ',' or ']'");
    }
  }
  bool string() {
    ++i_;
    while (i_ < s_.size()) {
      auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') return ++i_, true;
      if (c < 0x20) return fail("raw control character in string");
      if (c == '\\') {
        ++i_;
        if (i_ >= s_.size()) break;
        char e = s_[i_];
        if (e == 'u') {
          for (int k = 1; k <= 4; ++k)
            if (i_ + k >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_ + k])))
              return fail("bad \\u escape");
          i_ += 4;
        } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
          return fail("bad escape");
        }
      }
      ++i_;
    }
    return fail("unterminated string");
  }
  bool number() {
    std::size_t start = i_;
    auto digits = [&] {
      std::size_t d = i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      return i_ > d;
    };
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') {
      ++i_;
    } else if (!digits()) {
      i_ = start;
      return fail("bad number");
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!digits()) return fail("bad fraction");
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!digits()) return fail("bad exponent");
    }
    return true;
  }

  std::string_view s_;
  std::size_t i_ = 0;
  int depth_ = 0;
  std::string message_;
};

std::string json_error(const std::string& text) { return JsonChecker(text).error(); }

std::size_t count(std::string_view text, std::string_view needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string_view::npos;
       pos = text.find(needle, pos + needle.size()))
    ++n;
  return n;
}

std::string without_whitespace(const std::string& text) {
  // Only safe on text whose strings hold no spaces that matter to the assertion.
  std::string out;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"' && (i == 0 || text[i - 1] != '\\')) in_string = !in_string;
    if (!in_string && (c == ' ' || c == '\n' || c == '\t')) continue;
    out.push_back(c);
  }
  return out;
}

// ---- Hand-built results. Numbers chosen so each column has a recognisable value.
Result make_result(int workers, Predictor predictor, double step_time) {
  Result r;
  r.workers = workers;
  r.predictor = predictor;
  r.step_time = step_time;
  r.throughput = workers * 32 / step_time;  // batch 32 per worker
  r.speedup = r.throughput / (32 / 0.1);    // single worker, no communication: 0.1 s/step
  r.efficiency = r.speedup / workers;
  r.bottleneck = "PS NIC out 97% busy";
  r.breakdown = {.compute = 0.1, .communication_exposed = step_time - 0.1 - 0.005, .wait = 0.005};
  r.utilization = {{"worker compute", 0.8},
                   {"ps NIC out (max over shards)", 0.97},
                   {"ps NIC in", 0.5},
                   {"worker NIC out", 0.25},
                   {"ps apply", 0.1}};
  r.bytes_sent = 1.5e9;
  r.bytes_received = 2.5e9;
  r.events = 123456;
  return r;
}

Sweep make_sweep() {
  Sweep sweep;
  sweep.scenario = "resnet50-ps";
  sweep.inputs = {{"cluster.nic_bandwidth", "10 Gbps", false},
                  {"cluster.workers", "8", true},
                  {"workload.model", "resnet50", false},
                  {"scheme.kind", "ps", false},
                  {"cluster.latency_s", "5e-06", true}};
  sweep.predictions = {make_result(1, Predictor::Fine, 0.1), make_result(2, Predictor::Fine, 0.125),
                       make_result(8, Predictor::Fine, 0.25)};
  return sweep;
}

template <typename Value>
std::string render(void (*write)(std::ostream&, const Value&), const Value& value) {
  std::ostringstream out;
  write(out, value);
  return out.str();
}

// ---- json_quote

TEST(JsonQuote, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(json_quote("plain"), "\"plain\"");
  EXPECT_EQ(json_quote("say \"hi\""), R"("say \"hi\"")");
  EXPECT_EQ(json_quote("C:\\dir"), R"("C:\\dir")");
  EXPECT_EQ(json_quote("a\nb\tc\rd"), R"("a\nb\tc\rd")");
  EXPECT_EQ(json_quote(std::string_view("\x01\x1f", 2)), R"("\u0001\u001f")");
  EXPECT_EQ(json_quote(std::string_view("nul\0x", 5)), R"("nul\u0000x")");
  EXPECT_EQ(json_quote(""), "\"\"");
  // UTF-8 passes through untouched.
  EXPECT_EQ(json_quote("\xc2\xb5s"), "\"\xc2\xb5s\"");
  EXPECT_EQ(json_error(json_quote("every \x01 \x7f \" \\ \n byte")), "");
}

// ---- write_json

TEST(WriteJson, SweepIsValidJsonWithEveryRequiredKey) {
  std::string json = render(write_json, make_sweep());
  ASSERT_EQ(json_error(json), "") << json;
  for (std::string_view key :
       {"\"scenario\"", "\"predictions\"", "\"workers\"", "\"predictor\"", "\"step_time_s\"",
        "\"throughput_samples_per_s\"", "\"speedup\"", "\"efficiency\"", "\"bottleneck\"", "\"breakdown_s\"",
        "\"compute\"", "\"communication_exposed\"", "\"wait\"", "\"utilization\"", "\"bytes_sent\"",
        "\"bytes_received\"", "\"events\""})
    EXPECT_NE(json.find(key), std::string::npos) << key;
  std::string compact = without_whitespace(json);
  EXPECT_EQ(compact.rfind("{\"scenario\":{\"name\":\"resnet50-ps\"", 0), 0u) << compact;
  EXPECT_EQ(count(compact, "{\"workers\":"), 3u);  // one per prediction object
  EXPECT_NE(compact.find("\"workers\":8,\"predictor\":\"fine\",\"step_time_s\":0.25,"), std::string::npos)
      << compact;
  EXPECT_NE(
      compact.find(
          "\"bytes_sent\":1500000000,\"bytes_received\":2500000000,"
          "\"events\":123456,\"engine\":null,\"saturation_workers\":null,\"compute_cv\":0,\"job\":null,"
          "\"cost\":null,"
          // No parameter count, no GPU, no tokens: every memory and token field null.
          "\"memory_per_worker_bytes\":null,\"gpu_memory_bytes\":null,\"fits\":null,"
          "\"tokens_per_s\":null,\"tokens_per_s_per_worker\":null,\"model_flops_per_s_per_worker\":null,"
          "\"mfu\":null,\"mfu_6nd\":null,\"collectives\":[],"
          "\"max_link_flows\":0,\"links\":[],\"links_left_out\":0,\"link_classes\":[],\"step_time_samples\":"
          "null,"
          "\"staleness\":"
          "null,\"async_phases_s\":null}"),
      std::string::npos);
  EXPECT_NE(compact.find("\"utilization\":{\"worker compute\":0.8,"
                         "\"ps NIC out (max over shards)\":0.97,"),
            std::string::npos);
  EXPECT_NE(compact.find("\"breakdown_s\":{\"compute\":0.1,"), std::string::npos);
}

/// 8 workers over three measured steps predicted at 0.24, 0.25 and 0.26 s.
Sweep sweep_with_samples() {
  Sweep sweep = make_sweep();
  sweep.predictions[2].step_samples = {.samples = 3,
                                       .mean = 0.25,
                                       .p50 = 0.25,
                                       .p95 = 0.259,
                                       .min = 0.24,
                                       .max = 0.26,
                                       .step_times = {0.24, 0.26, 0.25}};
  return sweep;
}

TEST(WriteJson, StepTimeSamplesAreAnObjectOrNull) {
  std::string json = render(write_json, sweep_with_samples());
  ASSERT_EQ(json_error(json), "") << json;
  std::string compact = without_whitespace(json);
  EXPECT_EQ(count(compact, "\"step_time_samples\":null"), 2u) << compact;
  EXPECT_NE(compact.find("\"step_time_samples\":{\"count\":3,\"mean_s\":0.25,\"p50_s\":0.25,\"p95_s\":0.259,"
                         "\"min_s\":0.24,\"max_s\":0.26,\"step_times_s\":[0.24,0.26,0.25]},"),
            std::string::npos)
      << compact;
}

TEST(WriteJson, StalenessIsAnObjectOrNull) {
  Sweep sweep = make_sweep();
  sweep.predictions[1].staleness = {.pushes = 560, .mean = 6.5, .p95 = 7, .max = 9};
  const std::string json = render(write_json, sweep);
  ASSERT_EQ(json_error(json), "") << json;
  const std::string compact = without_whitespace(json);
  EXPECT_EQ(count(compact, "\"staleness\":null"), 2u) << compact;
  EXPECT_NE(compact.find("\"staleness\":{\"pushes\":560,\"mean\":6.5,\"p95\":7,\"max\":9},"),
            std::string::npos)
      << compact;
}

TEST(WriteTable, StalenessLineOnlyWhereMeasured) {
  Sweep sweep = make_sweep();
  std::string table = render(write_table, sweep);
  EXPECT_EQ(table.find("staleness"), std::string::npos) << table;
  sweep.predictions[1].staleness = {.pushes = 560, .mean = 6.5, .p95 = 7, .max = 9};
  table = render(write_table, sweep);
  EXPECT_EQ(count(table, "staleness ("), 1u) << table;
  EXPECT_NE(table.find("mean 6.50, p95 7.00, max 9 updates"), std::string::npos) << table;
  EXPECT_NE(table.find("(560 pushes)"), std::string::npos) << table;
}

TEST(WriteJson, AsyncPhasesAreAnObjectOrNull) {
  Sweep sweep = make_sweep();
  sweep.predictions[2].async_phases = {.out_of_step = 0.19, .convoy = 0.26};
  const std::string compact = without_whitespace(render(write_json, sweep));
  ASSERT_EQ(json_error(compact), "") << compact;
  EXPECT_EQ(count(compact, "\"async_phases_s\":null"), 2u) << compact;
  EXPECT_NE(compact.find("\"async_phases_s\":{\"out_of_step\":0.19,\"convoy\":0.26}}"), std::string::npos)
      << compact;
}

TEST(WriteTable, AsyncPhasesLineOnlyWhereTheyMatter) {
  Sweep sweep = make_sweep();
  // The convoy within 1% of out of step: the phases do not matter, no line.
  sweep.predictions[2].async_phases = {.out_of_step = 0.19, .convoy = 0.1915};
  EXPECT_EQ(render(write_table, sweep).find("asynchronous phases"), std::string::npos);
  sweep.predictions[2].async_phases = {.out_of_step = 0.19, .convoy = 0.26};
  const std::string table = render(write_table, sweep);
  EXPECT_EQ(count(table, "asynchronous phases ("), 1u) << table;
  EXPECT_NE(table.find("190 ms a step with the workers out of step, 260 ms in a convoy"), std::string::npos)
      << table;
}

TEST(WriteJson, DottedKeysBecomeNestedObjectsInFirstAppearanceOrder) {
  std::string compact = without_whitespace(render(write_json, make_sweep()));
  EXPECT_NE(compact.find("\"scenario\":{\"name\":\"resnet50-ps\","
                         "\"cluster\":{\"nic_bandwidth\":\"10 Gbps\",\"workers\":8,"
                         "\"latency_s\":5e-06},"
                         "\"workload\":{\"model\":\"resnet50\"},"
                         "\"scheme\":{\"kind\":\"ps\"}}"),
            std::string::npos)
      << compact;
}

TEST(WriteJson, NumbersUnquotedOnlyWhenTheyAreJsonNumbers) {
  Sweep sweep;
  sweep.scenario = "n";
  sweep.inputs = {{"a.int", "8", true},       {"a.real", "-1.25e3", true}, {"a.text", "8", false},
                  {"a.bad", "10 Gbps", true}, {"a.inf", "inf", true},      {"a.lead", ".5", true}};
  std::string json = render(write_json, sweep);
  ASSERT_EQ(json_error(json), "") << json;
  std::string compact = without_whitespace(json);
  EXPECT_NE(compact.find("\"int\":8,"), std::string::npos) << compact;
  EXPECT_NE(compact.find("\"real\":-1.25e3,"), std::string::npos);
  EXPECT_NE(compact.find("\"text\":\"8\","), std::string::npos);
  // Labelled numbers that JSON cannot hold unquoted stay strings rather than corrupt the file.
  EXPECT_NE(compact.find("\"bad\":\"10 Gbps\","), std::string::npos);
  EXPECT_NE(compact.find("\"inf\":\"inf\","), std::string::npos);
  EXPECT_NE(compact.find("\"lead\":\".5\"}"), std::string::npos);
}

TEST(WriteJson, KeyThatIsAlsoAPrefixKeepsBothValues) {
  Sweep sweep;
  sweep.scenario = "n";
  sweep.inputs = {{"net", "maxmin", false}, {"net.tolerance", "1e-9", true}};
  std::string json = render(write_json, sweep);
  ASSERT_EQ(json_error(json), "") << json;
  EXPECT_NE(without_whitespace(json).find("\"net\":{\"\":\"maxmin\",\"tolerance\":1e-9}"), std::string::npos)
      << json;
}

TEST(WriteJson, NonFiniteDoublesBecomeNull) {
  Sweep sweep = make_sweep();
  sweep.predictions[0].step_time = std::numeric_limits<double>::quiet_NaN();
  sweep.predictions[0].speedup = std::numeric_limits<double>::infinity();
  sweep.predictions[0].utilization[0].busy = -std::numeric_limits<double>::infinity();
  std::string json = render(write_json, sweep);
  ASSERT_EQ(json_error(json), "") << json;
  std::string compact = without_whitespace(json);
  EXPECT_NE(compact.find("\"step_time_s\":null,"), std::string::npos);
  EXPECT_NE(compact.find("\"speedup\":null,"), std::string::npos);
  EXPECT_NE(compact.find("\"worker compute\":null,"), std::string::npos);
  EXPECT_EQ(json.find("nan"), std::string::npos);
  EXPECT_EQ(json.find("inf"), std::string::npos);
}

TEST(WriteJson, DoublesRoundTrip) {
  Sweep sweep = make_sweep();
  sweep.predictions.resize(1);
  sweep.predictions[0].throughput = 0.1 + 0.2;  // 0.30000000000000004: needs 17 digits
  std::string json = render(write_json, sweep);
  EXPECT_NE(json.find("0.30000000000000004"), std::string::npos) << json;
}

TEST(WriteJson, EmptySweepIsValid) {
  std::string json = render(write_json, Sweep{});
  ASSERT_EQ(json_error(json), "") << json;
  EXPECT_EQ(without_whitespace(json), "{\"scenario\":{\"name\":\"\"},\"predictions\":[]}");
}

TEST(WriteJson, StringsAreEscaped) {
  Sweep sweep = make_sweep();
  sweep.scenario = "quote \" and\nnewline";
  sweep.inputs.push_back({"file", "C:\\data\\trace.json", false});
  sweep.predictions[1].bottleneck = "tab\there";
  std::string json = render(write_json, sweep);
  ASSERT_EQ(json_error(json), "") << json;
  EXPECT_NE(json.find(R"("quote \" and\nnewline")"), std::string::npos);
  EXPECT_NE(json.find(R"("C:\\data\\trace.json")"), std::string::npos);
  EXPECT_NE(json.find(R"("tab\there")"), std::string::npos);
}

// ---- write_csv

TEST(WriteCsv, HeaderThenOneRowPerPrediction) {
  std::string csv = render(write_csv, make_sweep());
  const std::string header =
      "workers,predictor,step_time_s,throughput_samples_per_s,speedup,efficiency,compute_s,"
      "communication_exposed_s,wait_s,bytes_sent,bytes_received,bottleneck,step_samples,"
      "step_time_mean_s,step_time_p50_s,step_time_p95_s,step_time_min_s,step_time_max_s,job_startup_s,"
      "job_time_s,tokens_per_s,tokens_per_s_per_worker,mfu,mfu_6nd,memory_per_worker_bytes,"
      "memory_reserved_bytes,gpu_memory_bytes,fits,layout,bubble_fraction,tensor_s,context_s,"
      "pipeline_s,data_s,expert_s,job_tokens,cost_per_step,cost_per_million_tokens,job_cost\n";
  ASSERT_EQ(csv.rfind(header, 0), 0u) << csv;
  EXPECT_EQ(count(csv, "\n"), 4u);
  // 8 workers, 0.25 s: throughput 8*32/0.25 = 1024, speed-up 1024/320 = 3.2, efficiency 0.4.
  EXPECT_NE(csv.find("\n8,fine,0.25,1024,3.2,0.4,0.1,"), std::string::npos) << csv;
  // No per-step samples, no job, no tokens, no memory, no layout and no costs: the last 27 cells are
  // empty.
  EXPECT_NE(csv.find(",1500000000,2500000000,\"PS NIC out 97% busy\",,,,,,,,,,,,,,,,,,,,,,,,,,,\n"),
            std::string::npos);
}

TEST(WriteCsv, StepTimeSamplesFillTheLastColumns) {
  std::string csv = render(write_csv, sweep_with_samples());
  EXPECT_EQ(count(csv, "\n"), 4u);
  EXPECT_NE(csv.find("\"PS NIC out 97% busy\",3,0.25,0.25,0.259,0.24,0.26,,,,,,,,,,,,,,,,,,,,,\n"),
            std::string::npos)
      << csv;
  EXPECT_EQ(count(csv, "\",,,,,,,,,,,,,,,,,,,,,,,,,,,\n"), 2u) << csv;
}

TEST(WriteCsv, JobFillsItsTwoColumns) {
  Sweep sweep = make_sweep();
  sweep.predictions.resize(1);
  sweep.predictions[0].job = {
      .samples = 1000, .steps = 32, .startup_time = 4.5, .time = 7.7, .throughput = 129.87};
  std::string csv = render(write_csv, sweep);
  EXPECT_NE(csv.find("\"PS NIC out 97% busy\",,,,,,,4.5,7.7,,,,,,,,,,,,,,,,,,,\n"), std::string::npos) << csv;
  const std::string json = without_whitespace(render(write_json, sweep));
  EXPECT_NE(json.find("\"job\":{\"samples\":1000,\"steps\":32,\"startup_s\":4.5,\"time_s\":7.7,"
                      "\"throughput_samples_per_s\":129.87,\"epochs\":0,\"epoch_time_s\":0,\"tokens\":null}"),
            std::string::npos)
      << json;
}

TEST(WriteCsv, ByteCountsAreWholeNumbersAsInTheJson) {
  // Reserved memory is allocated / (1 - overhead) + outside: 6e10 / 0.9 = 66,666,666,666.67 bytes.
  Sweep sweep = make_sweep();
  sweep.predictions.resize(1);
  predict::MemoryCheck& m = sweep.predictions[0].memory;
  m.known = true;
  m.per_worker.parameters = 6e10;
  m.allocator_overhead = 0.1;
  m.gpu_memory = 8e10;
  sweep.predictions[0].bytes_sent = 1234.6;
  const std::string csv = render(write_csv, sweep);
  EXPECT_NE(csv.find(",60000000000,66666666667,80000000000,true,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",1235,2500000000,"), std::string::npos) << csv;
  const std::string json = without_whitespace(render(write_json, sweep));
  EXPECT_NE(json.find("\"reserved\":66666666667"), std::string::npos) << json;
}

TEST(WriteCsv, BottleneckWithCommaAndQuoteIsQuoted) {
  Sweep sweep = make_sweep();
  sweep.predictions.resize(1);
  sweep.predictions[0].bottleneck = "PS NIC, \"shard 0\"";
  sweep.predictions[0].predictor = Predictor::Coarse;
  std::string csv = render(write_csv, sweep);
  EXPECT_EQ(count(csv, "\n"), 2u);
  EXPECT_NE(csv.find("\n1,coarse,"), std::string::npos) << csv;
  std::string row = csv.substr(csv.find('\n') + 1);
  EXPECT_EQ(row.substr(row.size() - 49), "\"PS NIC, \"\"shard 0\"\"\",,,,,,,,,,,,,,,,,,,,,,,,,,,\n") << row;
  // Outside the quoted field, exactly the 38 separators of 39 columns.
  std::string before = row.substr(0, row.find('"'));
  std::string after = row.substr(row.rfind('"'));
  EXPECT_EQ(count(before, ",") + count(after, ","), 38u) << row;
}

TEST(WriteCsv, EmptySweepIsHeaderOnly) {
  std::string csv = render(write_csv, Sweep{});
  EXPECT_EQ(count(csv, "\n"), 1u);
  EXPECT_EQ(csv.rfind("workers,", 0), 0u);
}

// ---- write_table

TEST(WriteTable, NamesScenarioAndListsEveryWorkerCountWithUnits) {
  std::string table = render(write_table, make_sweep());
  EXPECT_EQ(table.rfind("scenario: resnet50-ps\n", 0), 0u) << table;
  for (std::string_view heading : {"workers", "predictor", "step time", "throughput (samples/s)", "speed-up",
                                   "efficiency", "bottleneck"})
    EXPECT_NE(table.find(heading), std::string::npos) << heading;
  // Rows: 1 worker 320 samples/s 1.00x 100%; 2 workers 0.125 s: 512, 1.60x, 80%;
  // 8 workers 0.25 s: 1024, 3.20x, 40%; at 3 significant digits (1024 is 1020).
  for (std::string_view cell : {"100 ms", "125 ms", "250 ms", " 320 ", " 512 ", " 1020 ", "1.00x", "1.60x",
                                "3.20x", " 100% ", "80.0%", "40.0%"})
    EXPECT_NE(table.find(cell), std::string::npos) << cell << "\n" << table;
  std::istringstream lines(table);
  std::string line;
  std::getline(lines, line);  // scenario
  std::getline(lines, line);  // header
  std::size_t header_size = line.find("bottleneck");
  std::getline(lines, line);  // first row
  for (std::string_view workers : {"1", "2", "8"}) {
    // Right-aligned workers column, and every row starts its bottleneck where the header does.
    EXPECT_EQ(line.substr(0, 7), std::string(7 - workers.size(), ' ') + std::string(workers)) << line;
    EXPECT_EQ(line.find("PS NIC"), header_size) << line;
    std::getline(lines, line);
  }
}

TEST(WriteTable, OneSpreadLinePerPredictionWithSamples) {
  EXPECT_EQ(render(write_table, make_sweep()).find("per-step samples"), std::string::npos);
  const std::string table = render(write_table, sweep_with_samples());
  EXPECT_EQ(count(table, "per-step samples"), 1u) << table;
  EXPECT_NE(table.find("\nper-step samples (8 workers, fine): 3 steps, predicted step time mean 250 ms, "
                       "p50 250 ms, p95 259 ms, min 240 ms, max 260 ms\n"),
            std::string::npos)
      << table;
  // Under the rows, before the breakdown of the last prediction.
  EXPECT_LT(table.find("per-step samples"), table.find("where the time goes")) << table;
}

TEST(WriteTable, WhereTheTimeGoesForTheLastPrediction) {
  std::string table = render(write_table, make_sweep());
  // Last row: 8 workers, 0.25 s = compute 0.1 (40%) + exposed 0.145 (58%) + wait 0.005 (2%).
  EXPECT_NE(table.find("where the time goes (8 workers, fine): compute 100 ms (40.0%), "
                       "exposed communication 145 ms (58.0%), wait 5.00 ms (2.00%)"),
            std::string::npos)
      << table;
  // Top 4 of 5 utilizations, busiest first; the fifth (ps apply) is left out.
  EXPECT_NE(table.find("busiest: ps NIC out (max over shards) 97.0%, worker compute 80.0%, "
                       "ps NIC in 50.0%, worker NIC out 25.0%\n"),
            std::string::npos)
      << table;
  EXPECT_EQ(table.find("ps apply"), std::string::npos);
  // No stragglers, no line about them; with them, the variation used.
  EXPECT_EQ(table.find("stragglers"), std::string::npos) << table;
  Sweep noisy = make_sweep();
  noisy.predictions.back().compute_cv = 0.05;
  table = render(write_table, noisy);
  EXPECT_NE(table.find("stragglers: each worker's compute varies by 5.00%"), std::string::npos) << table;
  EXPECT_NE(without_whitespace(render(write_json, noisy)).find("\"compute_cv\":0.05,"), std::string::npos);
}

TEST(WriteTable, EmptySweepAndNonFiniteValuesDoNotBreakIt) {
  std::string empty = render(write_table, Sweep{.scenario = "none", .inputs = {}, .predictions = {}});
  EXPECT_NE(empty.find("(no predictions)"), std::string::npos);
  Sweep sweep = make_sweep();
  sweep.predictions.back().step_time = 0;
  sweep.predictions.back().utilization[2].busy = std::numeric_limits<double>::quiet_NaN();
  std::string table = render(write_table, sweep);
  EXPECT_NE(table.find("compute 100 ms (-)"), std::string::npos) << table;
}

// ---- write_chrome_trace

predict::Trace make_trace() {
  predict::Trace trace;
  trace.processes = {"worker 0", "worker 1", "ps 0"};
  trace.threads = {"compute", "network in", "network out"};
  trace.spans = {
      {.process = 0,
       .thread = 0,
       .name = "conv1 fwd",
       .category = "compute",
       .start = 1.5,
       .duration = 0.002},
      {.process = 0,
       .thread = 0,
       .name = "conv1 bwd",
       .category = "compute",
       .start = 1.502,
       .duration = 0.004},
      {.process = 1, .thread = 2, .name = "push \"w\"", .category = "push", .start = 0.1, .duration = 0.3},
      {.process = 2, .thread = 1, .name = "recv", .category = "push", .start = 0.1, .duration = 0.3},
  };
  return trace;
}

TEST(WriteChromeTrace, IsValidJsonWithMetadataPerProcessAndThread) {
  std::string json = render(write_chrome_trace, make_trace());
  ASSERT_EQ(json_error(json), "") << json;
  EXPECT_EQ(json.rfind("{\"traceEvents\":[", 0), 0u);
  EXPECT_NE(json.find("\"displayTimeUnit\":\"ms\"}"), std::string::npos);
  EXPECT_EQ(count(json, "\"process_name\""), 3u);
  for (int pid = 1; pid <= 3; ++pid)
    EXPECT_EQ(count(json, "\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ","), 1u)
        << pid;
  EXPECT_NE(json.find("\"pid\":1,\"args\":{\"name\":\"worker 0\"}"), std::string::npos);
  // Threads are named per (pid, tid) in use: (1,1), (2,3), (3,2).
  EXPECT_EQ(count(json, "\"thread_name\""), 3u);
  EXPECT_NE(json.find("\"pid\":2,\"tid\":3,\"args\":{\"name\":\"network out\"}"), std::string::npos);
  EXPECT_EQ(count(json, "\"ph\":\"X\""), 4u);
}

TEST(WriteChromeTrace, TimesInMicroseconds) {
  std::string json = render(write_chrome_trace, make_trace());
  // 1.5 s -> 1500000 us; 2 ms -> 2000 us; 1.502 s -> 1502000 us (rounded to the ns, not
  // 1501999.9999999998); 0.1 s -> 100000 us.
  EXPECT_NE(json.find("{\"name\":\"conv1 fwd\",\"cat\":\"compute\",\"ph\":\"X\",\"ts\":1500000,"
                      "\"dur\":2000,\"pid\":1,\"tid\":1}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"ts\":1502000,\"dur\":4000,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"name\":\"push \\\"w\\\"\",\"cat\":\"push\",\"ph\":\"X\",\"ts\":100000,"
                      "\"dur\":300000,\"pid\":2,\"tid\":3}"),
            std::string::npos)
      << json;
}

TEST(WriteChromeTrace, UnlistedIndicesStillGetNamedTracks) {
  predict::Trace trace;
  trace.processes = {"worker 0"};
  trace.spans = {
      {.process = 4, .thread = 7, .name = "x", .category = "compute", .start = 0, .duration = 1e-9}};
  std::string json = render(write_chrome_trace, trace);
  ASSERT_EQ(json_error(json), "") << json;
  EXPECT_EQ(count(json, "\"process_name\""), 2u);
  EXPECT_NE(json.find("\"pid\":5,\"args\":{\"name\":\"process 4\"}"), std::string::npos);
  EXPECT_NE(json.find("\"pid\":5,\"tid\":8,\"args\":{\"name\":\"thread 7\"}"), std::string::npos);
  EXPECT_NE(json.find("\"ts\":0,\"dur\":0.001,"), std::string::npos) << json;
}

TEST(WriteChromeTrace, EmptyTraceAndLargeTraceAreValid) {
  EXPECT_EQ(json_error(render(write_chrome_trace, predict::Trace{})), "");
  // Enough spans to cross the flush threshold several times.
  predict::Trace trace = make_trace();
  for (int i = 0; i < 20000; ++i)
    trace.spans.push_back({.process = i % 3,
                           .thread = i % 2,
                           .name = "op " + std::to_string(i),
                           .category = "compute",
                           .start = i * 1e-3,
                           .duration = 1e-3});
  std::string json = render(write_chrome_trace, trace);
  ASSERT_EQ(json_error(json), "");
  EXPECT_EQ(count(json, "\"ph\":\"X\""), trace.spans.size());
  EXPECT_NE(json.find("\"name\":\"op 19999\",\"cat\":\"compute\",\"ph\":\"X\",\"ts\":19999000,"),
            std::string::npos);
}

}  // namespace report_test
}  // namespace
}  // namespace stepcast::report
