// Streaming Kineto reader. Two levels: a byte scanner walks the top-level object and finds the
// bounds of each event object inside "traceEvents" (tracking strings, escapes and nesting, and
// keeping in its buffer only the event being scanned), then simdjson on-demand parses that one
// event in place. Holding the DOM of a 1 GB trace would need several GB; this holds one chunk.
// The scanner that finds the end of each event is a 64-byte block scanner (event_scanner.hpp).
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "profile/event_scanner.hpp"
#include "profile/gzip_reader.hpp"
#include "stepcast/error.hpp"
#include "stepcast/units.hpp"
#include "stepcast/detail/profile/kineto.hpp"

namespace stepcast::profile {

std::string_view to_string(Category cat) {
  return is_named(cat) ? name_of(cat) : name_of(Category::Other);
}

Category parse_category(std::string_view cat, char ph) {
  if (ph == 's' || ph == 'f' || ph == 't') return Category::Flow;
  switch (cat.size()) {
    case 4:
      if (cat == "ac2g") return Category::Flow;
      break;
    case 5:
      if (cat == "async") return Category::Flow;
      break;
    case 6:
      if (cat == "cpu_op") return Category::CpuOp;
      if (cat == "kernel" || cat == "Kernel") return Category::Kernel;
      if (cat == "Memcpy") return Category::GpuMemcpy;
      if (cat == "Memset") return Category::GpuMemset;
      if (cat == "fwdbwd") return Category::Flow;
      break;
    case 7:
      if (cat == "Runtime") return Category::CudaRuntime;
      break;
    case 8:
      if (cat == "Operator") return Category::CpuOp;
      break;
    case 10:
      if (cat == "gpu_memcpy") return Category::GpuMemcpy;
      if (cat == "gpu_memset") return Category::GpuMemset;
      break;
    case 11:
      if (cat == "cuda_driver") return Category::CudaDriver;
      break;
    case 12:
      if (cat == "cuda_runtime") return Category::CudaRuntime;
      break;
    case 15:
      if (cat == "user_annotation") return Category::UserAnnotation;
      if (cat == "python_function") return Category::PythonFunction;
      break;
    case 16:
      if (cat == "async_cpu_to_gpu") return Category::Flow;
      break;
    case 19:
      if (cat == "gpu_user_annotation") return Category::GpuUserAnnotation;
      break;
    default:
      break;
  }
  return Category::Other;
}

int dtype_size(std::string_view dtype) {
  if (dtype == "Float" || dtype == "Int" || dtype == "float" || dtype == "int" || dtype == "Float32" ||
      dtype == "Int32" || dtype == "UInt32") {
    return 4;
  }
  if (dtype == "Half" || dtype == "BFloat16" || dtype == "Short" || dtype == "half" || dtype == "bfloat16" ||
      dtype == "Float16" || dtype == "UInt16") {
    return 2;
  }
  if (dtype == "Long" || dtype == "Double" || dtype == "ComplexFloat" || dtype == "long" ||
      dtype == "double" || dtype == "Int64" || dtype == "UInt64" || dtype == "Float64") {
    return 8;
  }
  if (dtype == "Byte" || dtype == "Char" || dtype == "Bool" || dtype == "bool" || dtype == "Float8_e4m3fn" ||
      dtype == "Float8_e5m2" || dtype == "Int8" || dtype == "UInt8") {
    return 1;
  }
  if (dtype == "ComplexDouble") return 16;
  return 0;
}

bool is_nccl_kernel_name(std::string_view name) {
  for (size_t i = 0; i + 4 <= name.size(); ++i) {
    if ((name[i] | 0x20) == 'n' && (name[i + 1] | 0x20) == 'c' && (name[i + 2] | 0x20) == 'c' &&
        (name[i + 3] | 0x20) == 'l') {
      return true;
    }
  }
  return false;
}

std::string collective_from_kernel_name(std::string_view name) {
  if (!is_nccl_kernel_name(name)) return "";
  // ncclKernel_AllReduce_RING_LL_Sum_float, ncclDevKernel_AllGather_RING_LL(...),
  // ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t: the collective is the token after "Kernel_".
  const size_t k = name.find("Kernel_");
  if (k == std::string_view::npos) return "";
  std::string_view rest = name.substr(k + 7);
  rest = rest.substr(0, std::min(rest.find('_'), rest.find('(')));
  std::string out;
  for (char c : rest) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

namespace {

using detail::InputFile;

constexpr size_t kNone = std::numeric_limits<size_t>::max();

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::optional<int64_t> as_int(simdjson::ondemand::value v) {
  // Fast path: nearly all ids are integers. A failed get_int64 leaves the value unconsumed.
  if (int64_t i = 0; v.get_int64().get(i) == simdjson::SUCCESS) return i;
  simdjson::ondemand::json_type type;
  if (v.type().get(type) != simdjson::SUCCESS) return std::nullopt;
  if (type == simdjson::ondemand::json_type::number) {
    int64_t i = 0;
    if (v.get_int64().get(i) == simdjson::SUCCESS) return i;
    double d = 0;
    if (v.get_double().get(d) == simdjson::SUCCESS && std::abs(d) < 9.2e18) return static_cast<int64_t>(d);
    return std::nullopt;
  }
  if (type == simdjson::ondemand::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s) != simdjson::SUCCESS) return std::nullopt;
    int64_t i = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
    if (ec == std::errc() && end == s.data() + s.size()) return i;
  }
  return std::nullopt;
}

std::optional<double> as_double(simdjson::ondemand::value v) {
  double d = 0;
  if (v.get_double().get(d) == simdjson::SUCCESS) return d;
  return std::nullopt;
}

/// The reading state of one file: buffer, scanner and event parser.
class KinetoReader {
 public:
  KinetoReader(const std::string& path, const EventVisitor& visit, const ReadOptions& options)
      : input_(path), visit_(visit), options_(options), scan_(detail::reader_scanner()) {
    chunk_ = std::max<size_t>(options.chunk_bytes, 64);
    result_.stats.gzip = input_.gzip();
  }

  ReadResult run() {
    char c = next_nonws("the top-level value");
    bool saw_events = false;
    if (c == '[') {
      // A bare array of events is valid Chrome trace JSON too.
      read_events();
      saw_events = true;
    } else if (c == '{') {
      c = next_nonws("a key or '}'");
      while (c != '}') {
        if (c != '"') fail_syntax("expected a key string at the top level");
        const std::string key = read_key();
        if (next_nonws("':'") != ':') fail_syntax(fmt::format("expected ':' after key \"{}\"", key));
        if (key == "traceEvents") {
          if (next_nonws("'['") != '[') fail_syntax("\"traceEvents\" is not an array");
          read_events();
          saw_events = true;
        } else {
          const bool keep = key == "deviceProperties" || key == "distributedInfo" ||
                            key == "baseTimeNanoseconds" || key == "schemaVersion";
          read_top_value(key, keep);
        }
        c = next_nonws("',' or '}'");
        if (c == ',') {
          c = next_nonws("a key");
          if (c == '}') fail_syntax("trailing comma in the top-level object");
        } else if (c != '}') {
          fail_syntax("expected ',' or '}' in the top-level object");
        }
      }
    } else {
      fail_syntax("expected '{' or '[' at the start of a trace");
    }
    // Only whitespace may follow the top-level value.
    for (;;) {
      if (pos_ == end_ && !more()) break;
      if (!is_ws(buf_[pos_])) fail_syntax("unexpected characters after the top-level value");
      ++pos_;
    }
    if (!saw_events) {
      throw Error({input_.path(), 0, "traceEvents"},
                  "not a Chrome/Kineto trace: the top-level object has no \"traceEvents\" array");
    }
    TraceMetadata& meta = result_.metadata;
    if (meta.framework.empty()) meta.framework = kineto_markers_ ? "pytorch" : "chrome-trace";
    result_.stats.bytes = input_.bytes_read();
    result_.stats.max_buffered_bytes = max_buffered_;
    return std::move(result_);
  }

 private:
  // ---- buffer -----------------------------------------------------------------------------

  /// Reads the next chunk, keeping [keep_ (or pos_), end_) and moving it to the front. Indices
  /// pos_, keep_ and end_ shift accordingly. Returns false at the end of the input.
  bool more() {
    const size_t from = keep_ != kNone ? std::min(keep_, pos_) : pos_;
    if (from > 0) {
      std::memmove(buf_.data(), buf_.data() + from, end_ - from);
      end_ -= from;
      pos_ -= from;
      if (keep_ != kNone) keep_ -= from;
      base_ += from;
    }
    // Room for a chunk, plus simdjson's padding after any event parsed in place.
    const size_t need = end_ + chunk_ + simdjson::SIMDJSON_PADDING;
    if (buf_.size() < need) buf_.resize(std::max(need, buf_.size() * 2));
    max_buffered_ = std::max(max_buffered_, buf_.size());
    const size_t got = input_.read(buf_.data() + end_, chunk_);
    end_ += got;
    return got > 0;
  }

  [[nodiscard]] uint64_t offset(size_t index) const { return base_ + index; }

  [[noreturn]] void fail_syntax(const std::string& why) const {
    throw Error({input_.path(), 0, events_open_ ? fmt::format("traceEvents[{}]", event_index_) : ""},
                fmt::format("invalid JSON at byte {}: {}", offset(pos_ > 0 ? pos_ - 1 : 0), why));
  }

  [[noreturn]] void fail_eof(std::string_view expected) const {
    if (events_open_) {
      throw Error({input_.path(), 0, fmt::format("traceEvents[{}]", event_index_)},
                  fmt::format("unexpected end of file at byte {} inside \"traceEvents\" after {} "
                              "events (expected {}); the file is truncated",
                              offset(end_), event_index_, expected));
    }
    throw Error({input_.path(), 0, ""}, fmt::format("unexpected end of file at byte {} (expected {}); "
                                                    "the file is empty or truncated",
                                                    offset(end_), expected));
  }

  /// Next non-whitespace byte, consumed.
  char next_nonws(std::string_view expected) {
    for (;;) {
      while (pos_ < end_) {
        const char c = buf_[pos_++];
        if (!is_ws(c)) return c;
      }
      if (!more()) fail_eof(expected);
    }
  }

  // ---- scanner ----------------------------------------------------------------------------

  /// With pos_ one past an opening '"', moves pos_ one past the closing quote.
  void skip_string() {
    // The opening quote is kept in the buffer, as string_end's look-back needs.
    for (;;) {
      if (const size_t end = detail::string_end(buf_.data(), pos_, end_); end != detail::kScanIncomplete) {
        pos_ = end;
        return;
      }
      pos_ = end_;
      if (!more()) fail_eof("the end of a string");
    }
  }

  /// With pos_ one past an opening '{' or '[', moves pos_ one past the matching close. This is
  /// the hot loop; scan_ (event_scanner.hpp) does the work, 64 bytes a step.
  void skip_composite() {
    detail::ScanState state;
    size_t i = pos_;
    for (;;) {
      if (const size_t r = scan_(buf_.data(), i, end_, state); r != detail::kScanIncomplete) {
        pos_ = r;
        return;
      }
      pos_ = end_;
      if (!more()) fail_eof("the end of an object or array");
      i = pos_;
    }
  }

  /// With pos_ one past the first character `first` of a scalar, moves pos_ past the scalar.
  void skip_scalar() {
    for (;;) {
      while (pos_ < end_) {
        const char c = buf_[pos_];
        if (c == ',' || c == '}' || c == ']' || is_ws(c)) return;
        ++pos_;
      }
      if (!more()) return;
    }
  }

  /// With pos_ one past the opening quote of a top-level key, returns the key (raw).
  std::string read_key() {
    keep_ = pos_ - 1;  // the opening quote too: skip_string looks back over backslashes
    skip_string();
    std::string key(buf_.data() + keep_ + 1, pos_ - 2 - keep_);
    keep_ = kNone;
    return key;
  }

  /// Skips the value of a top-level key, or parses it as metadata when `keep`.
  void read_top_value(const std::string& key, bool keep) {
    const char c = next_nonws("a value");
    const size_t start = pos_ - 1;
    keep_ = start;
    if (c == '{' || c == '[') {
      skip_composite();
    } else if (c == '"') {
      skip_string();
    } else {
      skip_scalar();
    }
    if (keep) parse_metadata(key, std::string_view(buf_.data() + keep_, pos_ - keep_));
    keep_ = kNone;
  }

  void parse_metadata(const std::string& key, std::string_view text) {
    kineto_markers_ = true;
    TraceMetadata& meta = result_.metadata;
    if (key == "baseTimeNanoseconds" || key == "schemaVersion") {
      // Scalars: simdjson on-demand does not take a scalar as a value document.
      int64_t v = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc()) return;  // not an integer: ignore, it only labels the trace
      if (key == "baseTimeNanoseconds") {
        meta.base_time_ns = v;
      } else {
        meta.schema_version = static_cast<int>(v);
      }
      return;
    }
    simdjson::padded_string padded(text);
    simdjson::ondemand::document doc;
    auto bad = [&](simdjson::error_code e) {
      throw Error({input_.path(), 0, key}, fmt::format("invalid value: {}", simdjson::error_message(e)));
    };
    if (auto e = meta_parser_.iterate(padded).get(doc); e != simdjson::SUCCESS) bad(e);
    simdjson::ondemand::value root;
    if (auto e = doc.get_value().get(root); e != simdjson::SUCCESS) bad(e);
    if (key == "distributedInfo") {
      simdjson::ondemand::object obj;
      if (root.get_object().get(obj) != simdjson::SUCCESS) return;
      for (auto field : obj) {
        std::string_view k;
        if (field.unescaped_key().get(k) != simdjson::SUCCESS) bad(field.error());
        simdjson::ondemand::value v = field.value();
        std::string_view s;
        if (k == "rank") {
          if (auto i = as_int(v)) meta.rank = static_cast<int>(*i);
        } else if (k == "world_size") {
          if (auto i = as_int(v)) meta.world_size = static_cast<int>(*i);
        } else if (k == "backend") {
          if (v.get_string().get(s) == simdjson::SUCCESS) meta.backend = std::string(s);
        } else if (k == "nccl_version") {
          if (v.get_string().get(s) == simdjson::SUCCESS) meta.nccl_version = std::string(s);
        }
      }
    } else if (key == "deviceProperties") {
      simdjson::ondemand::array arr;
      if (root.get_array().get(arr) != simdjson::SUCCESS) return;
      for (auto item : arr) {
        simdjson::ondemand::object obj;
        if (item.get_object().get(obj) != simdjson::SUCCESS) continue;
        DeviceInfo dev;
        dev.id = static_cast<int>(meta.devices.size());
        for (auto field : obj) {
          std::string_view k;
          if (field.unescaped_key().get(k) != simdjson::SUCCESS) bad(field.error());
          simdjson::ondemand::value v = field.value();
          std::string_view s;
          if (k == "id") {
            if (auto i = as_int(v)) dev.id = static_cast<int>(*i);
          } else if (k == "name") {
            if (v.get_string().get(s) == simdjson::SUCCESS) dev.name = std::string(s);
          } else if (k == "totalGlobalMem") {
            if (auto d = as_double(v)) dev.memory_bytes = *d;
          } else if (k == "numSms") {
            if (auto i = as_int(v)) dev.num_sms = static_cast<int>(*i);
          }
        }
        meta.devices.push_back(std::move(dev));
      }
    }
  }

  // ---- events -----------------------------------------------------------------------------

  void read_events() {
    events_open_ = true;
    char c = next_nonws("an event or ']'");
    if (c == ']') {
      events_open_ = false;
      return;
    }
    for (;;) {
      if (c != '{') fail_syntax("expected an event object in \"traceEvents\"");
      const size_t start = pos_ - 1;
      keep_ = start;
      skip_composite();
      // more() may have moved the event to the front: take its bounds after the scan.
      parse_event(keep_, pos_);
      keep_ = kNone;
      ++event_index_;
      c = next_nonws("',' or ']'");
      if (c == ']') break;
      if (c != ',') fail_syntax("expected ',' or ']' between events");
      c = next_nonws("an event");
    }
    events_open_ = false;
  }

  void warn(const EventView& e, const std::string& why) {
    ++result_.stats.skipped;
    ++result_.stats.num_warnings;
    if (result_.stats.warnings.size() < options_.max_warnings) {
      result_.stats.warnings.push_back(fmt::format("{}: traceEvents[{}] (byte {}, '{}'): {}; event skipped",
                                                   input_.path(), e.index, e.byte_offset, e.name, why));
    }
  }

  void parse_event(size_t begin, size_t end) {
    ++result_.stats.events;
    try {
      parse_event_fields(begin, end);
    } catch (const simdjson::simdjson_error& e) {
      // Only conversions of simdjson_result that did not expect an error get here.
      throw Error({input_.path(), 0, fmt::format("traceEvents[{}]", event_index_)},
                  fmt::format("invalid JSON in the event at byte {}: {}", offset(begin), e.what()));
    }
  }

  void parse_event_fields(size_t begin, size_t end) {
    // The buffer always has SIMDJSON_PADDING readable bytes past end_ (see more()), so the event
    // is parsed where it lies, without a copy.
    const size_t len = end - begin;
    const size_t capacity = buf_.size() - begin;
    simdjson::ondemand::document doc;
    auto bad = [&](simdjson::error_code e, std::string_view where) {
      throw Error({input_.path(), 0, fmt::format("traceEvents[{}]", event_index_)},
                  fmt::format("invalid JSON in the event at byte {}{}: {}", offset(begin), where,
                              simdjson::error_message(e)));
    };
    if (auto e = parser_.iterate(buf_.data() + begin, len, capacity).get(doc); e != simdjson::SUCCESS) {
      bad(e, "");
    }
    simdjson::ondemand::object obj;
    if (auto e = doc.get_object().get(obj); e != simdjson::SUCCESS) bad(e, "");

    EventView ev;
    ev.index = event_index_;
    ev.byte_offset = offset(begin);
    std::optional<double> ts_us;
    std::optional<double> dur_us;
    bool has_ph = false;
    for (auto field_result : obj) {
      simdjson::ondemand::field field;
      if (auto e = std::move(field_result).get(field); e != simdjson::SUCCESS) bad(e, "");
      simdjson::ondemand::raw_json_string key = field.key();
      simdjson::ondemand::value v = field.value();
      std::string_view s;
      if (key == "ph") {
        if (auto e = v.get_string().get(s); e != simdjson::SUCCESS) bad(e, ", key \"ph\"");
        ev.ph = s.empty() ? '?' : s[0];
        has_ph = true;
      } else if (key == "name") {
        // Names are usually strings; tolerate numbers by leaving the name empty.
        if (v.get_string().get(s) == simdjson::SUCCESS) ev.name = s;
      } else if (key == "cat") {
        if (v.get_string().get(s) == simdjson::SUCCESS) ev.cat_name = s;
      } else if (key == "ts") {
        double d = 0;
        if (auto e = v.get_double().get(d); e != simdjson::SUCCESS) {
          bool null = false;
          if (v.is_null().get(null) != simdjson::SUCCESS || !null) bad(e, ", key \"ts\"");
        } else {
          ts_us = d;
        }
      } else if (key == "dur") {
        double d = 0;
        if (auto e = v.get_double().get(d); e != simdjson::SUCCESS) {
          bool null = false;
          if (v.is_null().get(null) != simdjson::SUCCESS || !null) bad(e, ", key \"dur\"");
        } else {
          dur_us = d;
        }
      } else if (key == "pid") {
        if (auto i = as_int(v)) ev.pid = *i;
      } else if (key == "tid") {
        if (auto i = as_int(v)) ev.tid = *i;
      } else if (key == "args") {
        simdjson::ondemand::object args;
        if (v.get_object().get(args) == simdjson::SUCCESS) parse_args(args, ev, bad);
      }
    }
    if (!has_ph) {
      ev.ph = '?';
    }
    ev.cat = parse_category(ev.cat_name, ev.ph);
    if (ev.cat != Category::Other && ev.cat != Category::Flow) kineto_markers_ = true;

    if (ts_us) {
      if (!origin_set_ && *ts_us > 0) {
        origin_set_ = true;
        result_.metadata.origin_us = *ts_us;
      }
      // Subtracting in microseconds first keeps the resolution (both are close to the same
      // epoch, so the difference is exact); one division then gives seconds.
      ev.ts = (*ts_us - result_.metadata.origin_us) / 1e6;
    }
    if (ev.ph == 'X') {
      if (!ts_us) return warn(ev, "complete event without \"ts\"");
      if (!dur_us) return warn(ev, "complete event without \"dur\"");
      if (*dur_us < 0) return warn(ev, fmt::format("negative duration {} us", *dur_us));
      // Longer than one op or step may be (units.hpp): such an event made an invalid workload
      // whose error named no file.
      if (*dur_us > limits::kMaxDuration * 1e6) {
        return warn(ev, fmt::format("duration {} us, more than stepcast takes ({:g} s)", *dur_us, limits::kMaxDuration));
      }
      ev.dur = *dur_us / 1e6;
    } else if (!has_ph) {
      return warn(ev, "event without \"ph\"");
    }
    visit_(ev);
  }

  template <class Bad>
  void parse_args(simdjson::ondemand::object& args, EventView& ev, const Bad& bad) {
    for (auto field_result : args) {
      simdjson::ondemand::field field;
      if (auto e = std::move(field_result).get(field); e != simdjson::SUCCESS) bad(e, ", in \"args\"");
      simdjson::ondemand::raw_json_string key = field.key();
      simdjson::ondemand::value v = field.value();
      std::string_view s;
      if (key == "stream") {
        if (auto i = as_int(v)) ev.stream = *i;
      } else if (key == "correlation") {
        if (auto i = as_int(v)) ev.correlation = *i;
      } else if (key == "device") {
        if (auto i = as_int(v)) ev.device = *i;
      } else if (key == "External id") {
        if (auto i = as_int(v)) ev.external_id = *i;
      } else if (key == "Collective name") {
        if (v.get_string().get(s) == simdjson::SUCCESS) {
          ev.nccl.collective = s;
          ev.has_nccl = true;
        }
      } else if (key == "dtype") {
        if (v.get_string().get(s) == simdjson::SUCCESS) ev.nccl.dtype = s;
      } else if (key == "In msg nelems") {
        if (auto i = as_int(v)) {
          ev.nccl.in_nelems = *i;
          ev.has_nccl = true;
        }
      } else if (key == "Out msg nelems") {
        if (auto i = as_int(v)) ev.nccl.out_nelems = *i;
      } else if (key == "Group size") {
        if (auto i = as_int(v)) ev.nccl.group_size = static_cast<int>(*i);
      } else if (key == "Process Group Ranks") {
        if (v.get_string().get(s) == simdjson::SUCCESS) ev.nccl.process_group_ranks = s;
      }
    }
  }

  InputFile input_;
  const EventVisitor& visit_;
  ReadOptions options_;
  detail::ScanFn scan_;
  size_t chunk_ = 0;
  std::vector<char> buf_;
  size_t pos_ = 0;
  size_t end_ = 0;
  size_t keep_ = kNone;  // start of the bytes that must stay in the buffer, kNone: none
  uint64_t base_ = 0;    // file offset of buf_[0]
  size_t max_buffered_ = 0;
  bool events_open_ = false;
  size_t event_index_ = 0;
  bool origin_set_ = false;
  bool kineto_markers_ = false;
  simdjson::ondemand::parser parser_;
  simdjson::ondemand::parser meta_parser_;
  ReadResult result_;
};

}  // namespace

ReadResult read_kineto_events(const std::string& path, const EventVisitor& visit,
                              const ReadOptions& options) {
  KinetoReader reader(path, visit, options);
  return reader.run();
}

KinetoTrace read_kineto_trace(const std::string& path, const ReadOptions& options) {
  KinetoTrace trace;
  trace.path = path;
  // Interning: a step repeats the same few thousand names, so events carry an index.
  std::unordered_map<std::string, uint32_t> ids;
  ReadResult r = read_kineto_events(
      path,
      [&](const EventView& e) {
        KinetoEvent k;
        auto it = ids.find(std::string(e.name));
        if (it == ids.end()) {
          it = ids.emplace(std::string(e.name), static_cast<uint32_t>(trace.names.size())).first;
          trace.names.emplace_back(e.name);
        }
        k.name = it->second;
        k.cat = e.cat;
        k.ph = e.ph;
        k.pid = e.pid;
        k.tid = e.tid;
        k.ts = e.ts;
        k.dur = e.dur;
        k.stream = e.stream;
        k.correlation = e.correlation;
        k.device = e.device;
        k.external_id = e.external_id;
        if (e.has_nccl) {
          k.nccl = static_cast<int32_t>(trace.nccl.size());
          trace.nccl.push_back({std::string(e.nccl.collective), std::string(e.nccl.dtype),
                                std::string(e.nccl.process_group_ranks), e.nccl.in_nelems, e.nccl.out_nelems,
                                e.nccl.group_size});
        }
        trace.events.push_back(k);
      },
      options);
  trace.metadata = std::move(r.metadata);
  trace.stats = std::move(r.stats);
  return trace;
}

}  // namespace stepcast::profile
