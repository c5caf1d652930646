// The block scanners of the Kineto reader against the scalar reference (event_scanner.hpp):
// hand-made cases with known answers, seeded random JSON-like inputs (escapes and backslash
// runs across 64-byte blocks, braces and brackets inside strings, nested "args", invalid JSON)
// scanned whole and resumed at every offset, then the reader itself with either scanner on
// corrupted traces (same events or the same error message) and on the shared real traces.
#include "profile/event_scanner.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "profile/kineto_fixtures.hpp"
#include "stepcast/error.hpp"
#include "stepcast/detail/profile/kineto.hpp"

namespace stepcast_profile_test {
namespace {
namespace event_scanner_test {  // this file's own names: test files are compiled several to a unit

using stepcast::profile::detail::kScanIncomplete;
using stepcast::profile::detail::ScanFn;
using stepcast::profile::detail::ScannerKind;
using stepcast::profile::detail::ScanState;

struct NamedScanner {
  std::string name;
  ScanFn fn;
};

/// Every block scanner this machine runs (the portable one always; SSE2 and AVX2 on x86-64).
std::vector<NamedScanner> block_scanners() {
  namespace d = stepcast::profile::detail;
  std::vector<NamedScanner> out{{"portable", &d::scan_composite_block_portable}};
  if (ScanFn f = d::scan_composite_block_sse2(); f != nullptr) out.push_back({"sse2", f});
  if (ScanFn f = d::scan_composite_block_avx2(); f != nullptr) out.push_back({"avx2", f});
  return out;
}

struct Outcome {
  size_t end = 0;
  ScanState state;
  friend bool operator==(const Outcome&, const Outcome&) = default;
};

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  return os << "{end " << (o.end == kScanIncomplete ? std::string("incomplete") : std::to_string(o.end))
            << ", depth " << o.state.depth << ", in_string " << o.state.in_string << "}";
}

/// Scans text from index 1 (text[0] is the opening '{') to its end in one call.
Outcome scan_whole(ScanFn fn, const std::string& text) {
  Outcome o;
  o.end = fn(text.data(), 1, text.size(), o.state);
  return o;
}

/// The same in two calls, as when the reader's buffer ends at `cut`: [1, cut), then [cut, end).
/// `at_cut` gets the state after the first call (depth 0 when it already closed).
Outcome scan_split(ScanFn fn, const std::string& text, size_t cut, Outcome& at_cut) {
  Outcome o;
  at_cut.end = fn(text.data(), 1, cut, o.state);
  at_cut.state = o.state;
  if (at_cut.end != kScanIncomplete) {
    o.end = at_cut.end;
    return o;
  }
  o.end = fn(text.data(), cut, text.size(), o.state);
  return o;
}

const ScanFn kReference = &stepcast::profile::detail::scan_composite_scalar;

/// Concatenation by appending (GCC 12 warns falsely on "literal" + std::string temporaries).
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::string s;
  ((s += parts), ...);
  return s;
}

// ---- known answers ----------------------------------------------------------------------------

TEST(EventScanner, KnownAnswers) {
  struct Case {
    std::string text;
    size_t end;  // one past the closing byte, or kScanIncomplete
  };
  std::vector<Case> cases = {
      {R"({"a": 1} tail)", 8},
      {R"({"a": "}"} tail)", 10},
      {R"({"a": "x\"}"} tail)", 13},
      {R"({"a": "x\\"} tail)", 12},
      {R"({"a": "\\\"}]", "b": [1, {"c": []}]}, {)", 36},
      {R"({"a": "{[", "b": "]}"})", 22},
      {R"({"a": "\\\\\\\\" })", 18},
      {R"({"a": [}} )", 9},  // kinds are not matched: '}' closes '['
      {R"({"a": "never closed } ] })", kScanIncomplete},
      {R"({"a": {"b": {"c": 1}})", kScanIncomplete},
  };
  // A backslash run crossing every position of a 64-byte block, then a quote it escapes (odd
  // run) or not (even run). Even: the string ends and the '}' after it closes the event. Odd:
  // the quote and the '}' are string content, the next '"' ends the string, the last '}' closes.
  for (size_t pad = 0; pad < 64; ++pad) {
    for (size_t run = 0; run < 140; ++run) {
      const std::string text = cat("{", std::string(pad, ' '), "\"", std::string(run, '\\'), "\"}\"}");
      const size_t string_end = 1 + pad + 1 + run + 1;  // one past the quote after the run
      cases.push_back({text, run % 2 == 0 ? string_end + 1 : text.size()});
    }
  }
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(scan_whole(kReference, c.text).end, c.end);
    for (const auto& s : block_scanners()) EXPECT_EQ(scan_whole(s.fn, c.text).end, c.end) << s.name;
  }
}

// ---- seeded random inputs ---------------------------------------------------------------------

/// JSON-like text: valid events with hard strings, the same with random damage, and byte soup
/// from the characters that matter to the scanner (backslashes outside strings included).
class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  size_t below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  std::string ws() {
    static const char kWs[] = " \n\t\r";
    std::string s;
    const size_t n = chance(0.7) ? below(2) : below(70);  // sometimes long: shifts the blocks
    for (size_t i = 0; i < n; ++i) s += kWs[below(4)];
    return s;
  }

  /// A JSON string literal with the quotes.
  std::string string_literal() {
    std::string s = "\"";
    const size_t pieces = chance(0.2) ? below(60) : below(8);
    for (size_t i = 0; i < pieces; ++i) {
      switch (below(12)) {
        case 0:
          s += "\\\"";  // escaped quote
          break;
        case 1:
          s += std::string(2 * below(chance(0.1) ? 80 : 4), '\\');  // escaped backslashes
          break;
        case 2:
          s += std::string(2 * below(40), '\\') + "\\\"";  // backslash run then escaped quote
          break;
        case 3: {
          static const char kBraces[] = "{}[]";
          s += kBraces[below(4)];
          break;
        }
        case 4:
          s += "\\n\\t\\/\\u0041";
          break;
        case 5:
          s += std::string(below(70), 'x');
          break;
        case 6:
          s += ", \\\"k\\\": {\\\"v\\\": [1, 2]}";  // JSON inside a string
          break;
        case 7:
          s += "\xc3\xa9\xe2\x82\xac";  // UTF-8
          break;
        default:
          s += "abc_def";
          break;
      }
    }
    return s + "\"";
  }

  std::string value(int depth) {
    const size_t kind = depth >= 5 ? below(4) : below(7);
    switch (kind) {
      case 0:
        return string_literal();
      case 1:
        return std::to_string(static_cast<int64_t>(rng_() >> 20) - (int64_t{1} << 40)) +
               (chance(0.5) ? ".25" : "");
      case 2:
        return chance(0.5) ? "true" : "null";
      case 3:
        return "[]";
      case 4:
      case 5:
        return object(depth + 1);
      default: {
        std::string s = cat("[", ws());
        const size_t n = below(5);
        for (size_t i = 0; i < n; ++i) s += cat(i ? "," : "", ws(), value(depth + 1), ws());
        return s + "]";
      }
    }
  }

  std::string object(int depth) {
    std::string s = cat("{", ws());
    const size_t n = below(depth == 0 ? 9 : 5);
    for (size_t i = 0; i < n; ++i) {
      if (i) s += cat(",", ws());
      s += cat(string_literal(), ws(), ":", ws(), value(depth), ws());
    }
    return s + "}";
  }

  /// A Kineto-like event with nested "args", followed by more text the scan must not reach.
  std::string event() {
    std::string s = cat(R"({"ph": "X", "cat": "kernel", "name": )", string_literal(), ", \"ts\": 1.5,", ws(),
                        "\"args\": ", object(1));
    const size_t extra = below(4);
    for (size_t i = 0; i < extra; ++i) s += cat(", ", string_literal(), ": ", value(2));
    s += ws() + "}";
    return cat(s, ",", ws(), object(0).substr(0, below(200)));
  }

  std::string damaged() {
    std::string s = event();
    static const char kBad[] = "\"\\{}[]\\\"";
    const size_t n = 1 + below(4);
    for (size_t i = 0; i < n; ++i) {
      const size_t at = 1 + below(s.size() - 1);
      if (chance(0.5)) {
        s[at] = kBad[below(sizeof(kBad) - 1)];
      } else {
        s.insert(at, std::string(1 + below(chance(0.3) ? 70 : 3), kBad[below(sizeof(kBad) - 1)]));
      }
    }
    return s;
  }

  std::string soup() {
    static const char kSoup[] = "\"\\\\\\{}[]a ,:x";
    std::string s = "{";
    const size_t n = 20 + below(600);
    for (size_t i = 0; i < n; ++i) s += kSoup[below(sizeof(kSoup) - 1)];
    return s;
  }

  std::string any(size_t i) {
    switch (i % 4) {
      case 0:
      case 1:
        return event();
      case 2:
        return damaged();
      default:
        return soup();
    }
  }

 private:
  std::mt19937_64 rng_;
};

/// Deliberately wrong scanners: if the inputs did not tell these from the reference, the tests
/// below could pass with a broken block scanner.
Outcome naive_ignoring_escapes(const std::string& t) {
  int depth = 1;
  bool in_string = false;
  for (size_t i = 1; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '"') {
      in_string = !in_string;
    } else if (!in_string && (c == '{' || c == '[')) {
      ++depth;
    } else if (!in_string && (c == '}' || c == ']') && --depth == 0) {
      return {i + 1, {0, false}};
    }
  }
  return {kScanIncomplete, {depth, in_string}};
}

Outcome naive_single_backslash(const std::string& t) {  // a '"' after any backslash is escaped
  int depth = 1;
  bool in_string = false;
  for (size_t i = 1; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '"' && !(in_string && t[i - 1] == '\\')) {
      in_string = !in_string;
    } else if (!in_string && (c == '{' || c == '[')) {
      ++depth;
    } else if (!in_string && (c == '}' || c == ']') && --depth == 0) {
      return {i + 1, {0, false}};
    }
  }
  return {kScanIncomplete, {depth, in_string}};
}

TEST(EventScanner, RandomInputsScannedWholeMatchTheReference) {
  Generator gen(20261129);
  const auto scanners = block_scanners();
  size_t closed_far = 0;
  size_t incomplete = 0;
  size_t fooled_escapes = 0;
  size_t fooled_runs = 0;
  constexpr size_t kInputs = 20000;
  for (size_t n = 0; n < kInputs; ++n) {
    const std::string text = gen.any(n);
    const Outcome want = scan_whole(kReference, text);
    for (const auto& s : scanners) {
      const Outcome got = scan_whole(s.fn, text);
      ASSERT_EQ(got, want) << s.name << ", input " << n << ":\n" << text;
    }
    closed_far += want.end != kScanIncomplete && want.end > 192;
    incomplete += want.end == kScanIncomplete;
    fooled_escapes += naive_ignoring_escapes(text) != want;
    fooled_runs += naive_single_backslash(text) != want;
  }
  // The inputs are hard enough: most events span several blocks, some never close, and
  // scanners that get escapes or backslash runs wrong disagree on many of them.
  EXPECT_GT(closed_far, kInputs / 4);
  EXPECT_GT(incomplete, kInputs / 20);
  EXPECT_GT(fooled_escapes, kInputs / 5);
  EXPECT_GT(fooled_runs, kInputs / 20);
}

TEST(EventScanner, RandomInputsResumedAtEveryOffsetMatchTheReference) {
  // The reader's buffer can end anywhere in an event; the scan resumes from the state after
  // more bytes arrive. Each cut also starts the second call's blocks at another phase.
  Generator gen(7);
  const auto scanners = block_scanners();
  for (size_t n = 0; n < 240; ++n) {
    const std::string text = gen.any(n);
    const Outcome want = scan_whole(kReference, text);
    for (size_t cut = 1; cut <= text.size(); ++cut) {
      Outcome want_at_cut;
      ASSERT_EQ(scan_split(kReference, text, cut, want_at_cut), want) << "reference, cut " << cut;
      for (const auto& s : scanners) {
        Outcome at_cut;
        const Outcome got = scan_split(s.fn, text, cut, at_cut);
        ASSERT_EQ(at_cut, want_at_cut) << s.name << ", input " << n << ", cut " << cut << ":\n" << text;
        ASSERT_EQ(got, want) << s.name << ", input " << n << ", cut " << cut << ":\n" << text;
      }
    }
  }
}

TEST(EventScanner, RandomInputsInManyPiecesMatchTheReference) {
  Generator gen(99);
  const auto scanners = block_scanners();
  for (size_t n = 0; n < 3000; ++n) {
    const std::string text = gen.any(n);
    const Outcome want = scan_whole(kReference, text);
    for (const auto& s : scanners) {
      ScanState state;
      size_t i = 1;
      size_t end = kScanIncomplete;
      while (i < text.size()) {
        const size_t to = std::min(text.size(), i + 1 + gen.below(gen.chance(0.5) ? 8 : 150));
        end = s.fn(text.data(), i, to, state);
        if (end != kScanIncomplete) break;
        i = to;
      }
      ASSERT_EQ(end, want.end) << s.name << ", input " << n << ":\n" << text;
      if (end == kScanIncomplete) {
        ASSERT_EQ(state, want.state) << s.name << ", input " << n;
      }
    }
  }
}

// ---- the reader with either scanner -------------------------------------------------------------

/// Sets the reader's scanner for the scope.
class ScannerScope {
 public:
  explicit ScannerScope(ScanFn fn) { stepcast::profile::detail::set_reader_scanner(fn); }
  ~ScannerScope() { stepcast::profile::detail::set_reader_scanner(nullptr); }
  ScannerScope(const ScannerScope&) = delete;
  ScannerScope& operator=(const ScannerScope&) = delete;
};

/// Everything the reader reports for a file: each event's fields, or the error message.
std::string read_all(const std::string& path, ScanFn fn, size_t chunk) {
  const ScannerScope scope(fn);
  stepcast::profile::ReadOptions options;
  options.chunk_bytes = chunk;
  std::string out;
  try {
    const auto r = stepcast::profile::read_kineto_events(
        path,
        [&](const stepcast::profile::EventView& e) {
          out += cat(std::to_string(e.index), " ", std::to_string(e.byte_offset), " ", e.name, " ",
                     std::string(1, e.ph), " ", std::to_string(e.ts), " ", std::to_string(e.dur), " ",
                     std::to_string(e.correlation), "\n");
        },
        options);
    out += cat("events ", std::to_string(r.stats.events), ", skipped ", std::to_string(r.stats.skipped),
               ", bytes ", std::to_string(r.stats.bytes), ", framework ", r.metadata.framework);
  } catch (const stepcast::Error& e) {
    out += std::string("error: ") + e.what();
  }
  return out;
}

class EventScannerReader : public TraceDirTest {};

TEST_F(EventScannerReader, CorruptedTracesGiveTheSameEventsOrErrorWithEitherScanner) {
  std::string base = small_trace();
  // Long strings with escapes and backslash runs so that events span several blocks.
  const std::string hard = cat(R"(  {"ph": "X", "cat": "kernel", "name": "k )", std::string(7, '\\'),
                               R"(" {[}] )", std::string(90, '\\'),
                               R"( end", "pid": 0, "tid": 7, "ts": 1000000000011500, "dur": 10, "args": )"
                               R"({"nested": {"a": [1, {"b": "}}]]\""}], "c": {}}, "stream": 7}},
)");
  base.insert(base.find(R"(  {"ph": "X", "cat": "kernel", "name": "relu")"), hard);
  ASSERT_NE(read_all(plain("base.json", base), kReference, 64).find("events 11, skipped 0"),
            std::string::npos);
  const auto scanners = block_scanners();
  std::mt19937_64 rng(3);
  const std::string specials = "\"\\{}[],:";
  size_t errors = 0;
  size_t oks = 0;
  for (size_t n = 0; n < 400; ++n) {
    std::string text = base;
    if (n % 4 == 0) {
      text = text.substr(0, rng() % text.size());  // truncated
    } else {
      const size_t edits = 1 + rng() % 3;
      for (size_t k = 0; k < edits; ++k) {
        const size_t at = rng() % text.size();
        const char c = specials[rng() % specials.size()];
        if (rng() % 2) {
          text[at] = c;
        } else {
          text.insert(at, std::string(1 + rng() % 5, c));
        }
      }
    }
    const std::string path = plain(cat("t", std::to_string(n), ".json"), text);
    for (size_t chunk : {size_t{64}, size_t{97}, size_t{1} << 20}) {
      const std::string want = read_all(path, kReference, chunk);
      for (const auto& s : scanners) {
        ASSERT_EQ(read_all(path, s.fn, chunk), want)
            << s.name << ", input " << n << ", chunk " << chunk << ":\n"
            << text;
      }
      (want.starts_with("error: ") ? errors : oks) += 1;
    }
  }
  EXPECT_GT(errors, 150u);  // both kinds of outcome are compared
  EXPECT_GT(oks, 150u);
}

TEST_F(EventScannerReader, EveryChunkSizeGivesTheSameEventsWithEitherScanner) {
  std::string text = small_trace();
  text.insert(text.find("\"traceName\""), R"("odd \\\" key \\": {"a": "}\\"}, )");
  const std::string path = plain("t.json", text);
  const std::string want = read_all(path, kReference, size_t{1} << 20);
  ASSERT_NE(want.find("events 10, skipped 0"), std::string::npos) << want;
  for (const auto& s : block_scanners()) {
    for (size_t chunk = 64; chunk <= 400; ++chunk)
      EXPECT_EQ(read_all(path, s.fn, chunk), want) << s.name << chunk;
  }
}

TEST(EventScannerSharedData, RealTracesGiveTheSameEventsWithEitherScanner) {
  const fs::path traces = fs::path(STEPCAST_SHARED_DATA) / "traces";
  if (!fs::is_directory(traces)) {
    GTEST_SKIP() << "skipped: shared trace data not found at " << traces.string();
  }
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(traces)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(".json.gz") && !name.ends_with(".json")) continue;
    SCOPED_TRACE(name);
    ++files;
    const std::string want = read_all(entry.path().string(), kReference, size_t{1} << 20);
    ASSERT_FALSE(want.starts_with("error: ")) << want.substr(0, 300);
    ASSERT_NE(want.find("framework pytorch"), std::string::npos);
    size_t chunk = 4099;  // odd sizes: events straddle chunks at many places
    for (const auto& s : block_scanners()) {
      EXPECT_EQ(read_all(entry.path().string(), s.fn, chunk), want) << s.name;
      chunk = chunk * 16 + 1;
    }
  }
  EXPECT_GE(files, 7u);
}

TEST(EventScanner, ReaderUsesTheFastestBlockScannerByDefault) {
  namespace d = stepcast::profile::detail;
  const auto scanners = block_scanners();  // fastest last
  EXPECT_EQ(d::reader_scanner(), scanners.back().fn);
  EXPECT_EQ(d::scanner(ScannerKind::Block), scanners.back().fn);
  EXPECT_EQ(d::scanner(ScannerKind::Scalar), kReference);
  EXPECT_STREQ(d::scanner_name(kReference), "scalar");
  for (const auto& s : scanners) EXPECT_EQ(d::scanner_name(s.fn), "block-" + s.name);
#if defined(__x86_64__)
  EXPECT_GE(scanners.size(), 2u) << "SSE2 is part of x86-64";
#endif
}

}  // namespace event_scanner_test
}  // namespace
}  // namespace stepcast_profile_test
