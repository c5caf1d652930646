// write_chrome_trace: the synthetic execution trace as Chrome trace event JSON, which
// chrome://tracing and Perfetto open. A fine prediction of a large cluster has millions of
// spans, so events go straight through one small buffer to the stream. Times are written in
// microseconds rounded to the nanosecond: 0.1 s prints as 100000, not 100000.00000000001, which
// keeps files smaller and diffs stable; the simulator's times mean nothing below a nanosecond.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/json_text.hpp"
#include "stepcast/report/report.hpp"

namespace stepcast::report {
namespace {

using detail::append_json_number;
using detail::append_json_string;

/// Names for indices the trace does not list, so a span never loses its track.
std::string_view name_or(const std::vector<std::string>& names, int index, std::string& scratch,
                         std::string_view kind) {
  if (index >= 0 && static_cast<std::size_t>(index) < names.size())
    return names[static_cast<std::size_t>(index)];
  scratch = fmt::format("{} {}", kind, index);
  return scratch;
}

class EventStream {
 public:
  explicit EventStream(std::ostream& out) : out_(out) { buf_.append(std::string_view("{\"traceEvents\":[")); }
  EventStream(const EventStream&) = delete;
  EventStream& operator=(const EventStream&) = delete;

  /// Starts the next event; returns the buffer to append its object to.
  fmt::memory_buffer& next() {
    if (buf_.size() >= detail::kFlushBytes) flush();
    buf_.append(first_ ? std::string_view("\n") : std::string_view(",\n"));
    first_ = false;
    return buf_;
  }

  void finish() {
    buf_.append(std::string_view("\n],\n\"displayTimeUnit\":\"ms\"}\n"));
    flush();
  }

 private:
  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

  std::ostream& out_;
  fmt::memory_buffer buf_;
  bool first_ = true;
};

// Chrome trace ids start at 1 by convention (pid 0 is sometimes treated as "no process").
int pid_of(int process) { return process + 1; }
int tid_of(int thread) { return thread + 1; }

/// Seconds -> integer nanoseconds, the resolution everything is written at.
int64_t nanoseconds(double seconds) { return std::llround(seconds * 1e9); }
void append_ns(fmt::memory_buffer& buf, int64_t ns) { append_json_number(buf, static_cast<double>(ns) / 1e3); }

/// A span's start and end in ns, each rounded (not start and duration), so that rounding keeps
/// disjoint spans disjoint and nested ones nested.
std::pair<int64_t, int64_t> span_ns(const predict::TraceSpan& span) {
  const int64_t start = nanoseconds(span.start);
  return {start, std::max(start, nanoseconds(span.start + span.duration))};
}

void append_args(fmt::memory_buffer& buf, const predict::TraceSpan& span, const predict::Trace& trace) {
  bool first = true;
  auto key = [&](std::string_view name) {
    buf.append(first ? std::string_view(",\"args\":{") : std::string_view(","));
    first = false;
    append_json_string(buf, name);
    buf.push_back(':');
  };
  auto integer = [&](std::string_view name, int value) {
    if (value < 0) return;
    key(name);
    fmt::format_to(std::back_inserter(buf), "{}", value);
  };
  integer("step", span.step);
  if (span.bytes >= 0) {
    key("bytes");
    append_json_number(buf, span.bytes);
  }
  integer("shard", span.shard);
  integer("worker", span.worker);
  integer("bucket", span.bucket);
  integer("unit", span.unit);
  if (span.path >= 0 && static_cast<std::size_t>(span.path) < trace.paths.size()) {
    key("path");
    append_json_string(buf, trace.paths[static_cast<std::size_t>(span.path)]);
  }
  if (!first) buf.push_back('}');
}

}  // namespace

void write_chrome_trace(std::ostream& out, const predict::Trace& trace) {
  // Metadata first so viewers name tracks before any event lands on them. Every listed
  // process with a name is named (even if idle, it is part of the cluster); threads are named
  // per process only where a span uses them, since thread_name is per (pid, tid) and naming
  // every pair would invent empty tracks on processes that never use them.
  std::set<std::pair<int, int>> used;
  std::set<int> used_processes;
  std::pair<int, int> last{-1, -1};  // spans come in runs on one track; skip the set lookup
  for (const auto& span : trace.spans) {
    std::pair<int, int> track{span.process, span.thread};
    if (track == last && !used.empty()) continue;
    used.insert(track);
    used_processes.insert(span.process);
    last = track;
  }
  for (const auto& counter : trace.counters) used_processes.insert(counter.process);
  for (const auto& instant : trace.instants) {
    if (instant.process >= 0) used_processes.insert(instant.process);
  }

  EventStream events(out);
  std::string scratch;
  auto process_name = [&](int process) {
    std::string_view name = name_or(trace.processes, process, scratch, "process");
    if (name.empty()) {
      scratch = fmt::format("process {}", process);
      name = scratch;
    }
    auto& buf = events.next();
    fmt::format_to(
        std::back_inserter(buf),
        "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"name\":", pid_of(process));
    append_json_string(buf, name);
    buf.append(std::string_view("}}"));
  };
  for (std::size_t p = 0; p < trace.processes.size(); ++p) {
    const int process = static_cast<int>(p);
    if (!trace.processes[p].empty() || used_processes.count(process) != 0) process_name(process);
  }
  for (int process : used_processes) {
    if (process < 0 || static_cast<std::size_t>(process) >= trace.processes.size()) process_name(process);
  }
  for (const auto& [process, thread] : used) {
    auto& buf = events.next();
    fmt::format_to(std::back_inserter(buf),
                   "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},"
                   "\"args\":{{\"name\":",
                   pid_of(process), tid_of(thread));
    append_json_string(buf, name_or(trace.threads, thread, scratch, "thread"));
    buf.append(std::string_view("}}"));
  }

  // Flows: an "s" right after the span it leaves, an "f" right after the one it enters, both at
  // that span's start, so viewers that sort events by time (stably) find the span open. A flow
  // whose ends are missing or out of order in time is left out, both events.
  const std::size_t spans = trace.spans.size();
  std::vector<std::pair<std::size_t, std::size_t>> starts, ends;  // (span, flow)
  for (std::size_t f = 0; f < trace.flows.size(); ++f) {
    const sim::TraceFlow& flow = trace.flows[f];
    if (flow.from >= spans || flow.to >= spans || flow.from == flow.to) continue;
    if (span_ns(trace.spans[flow.to]).first < span_ns(trace.spans[flow.from]).first) continue;
    starts.emplace_back(flow.from, f);
    ends.emplace_back(flow.to, f);
  }
  std::sort(starts.begin(), starts.end());
  std::sort(ends.begin(), ends.end());
  auto flow_event = [&](std::size_t f, const predict::TraceSpan& span, int64_t ts, bool start) {
    auto& buf = events.next();
    buf.append(std::string_view("{\"name\":"));
    append_json_string(buf, trace.flows[f].name);
    buf.append(start ? std::string_view(",\"cat\":\"flow\",\"ph\":\"s\",\"id\":")
                     : std::string_view(",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":"));
    fmt::format_to(std::back_inserter(buf), "{}", f + 1);
    buf.append(std::string_view(",\"ts\":"));
    append_ns(buf, ts);
    fmt::format_to(std::back_inserter(buf), ",\"pid\":{},\"tid\":{}}}", pid_of(span.process), tid_of(span.thread));
  };

  auto next_start = starts.begin();
  auto next_end = ends.begin();
  for (std::size_t i = 0; i < spans; ++i) {
    const auto& span = trace.spans[i];
    const auto [start, end] = span_ns(span);
    auto& buf = events.next();
    buf.append(std::string_view("{\"name\":"));
    append_json_string(buf, span.name);
    buf.append(std::string_view(",\"cat\":"));
    append_json_string(buf, span.category);
    buf.append(std::string_view(",\"ph\":\"X\",\"ts\":"));
    append_ns(buf, start);
    buf.append(std::string_view(",\"dur\":"));
    append_ns(buf, end - start);
    fmt::format_to(std::back_inserter(buf), ",\"pid\":{},\"tid\":{}", pid_of(span.process), tid_of(span.thread));
    append_args(buf, span, trace);
    buf.push_back('}');
    for (; next_start != starts.end() && next_start->first == i; ++next_start) flow_event(next_start->second, span, start, true);
    for (; next_end != ends.end() && next_end->first == i; ++next_end) flow_event(next_end->second, span, start, false);
  }

  for (const auto& instant : trace.instants) {
    auto& buf = events.next();
    buf.append(std::string_view("{\"name\":"));
    append_json_string(buf, instant.name);
    buf.append(std::string_view(",\"cat\":\"marker\",\"ph\":\"i\",\"ts\":"));
    append_ns(buf, nanoseconds(instant.time));
    if (instant.process >= 0) {
      fmt::format_to(std::back_inserter(buf), ",\"s\":\"p\",\"pid\":{}}}", pid_of(instant.process));
    } else {
      buf.append(std::string_view(",\"s\":\"g\"}"));
    }
  }

  for (const auto& counter : trace.counters) {
    const std::size_t n = counter.series.size();
    if (n == 0 || counter.values.size() < counter.times.size() * n) continue;
    for (std::size_t k = 0; k < counter.times.size(); ++k) {
      auto& buf = events.next();
      buf.append(std::string_view("{\"name\":"));
      append_json_string(buf, counter.name);
      buf.append(std::string_view(",\"ph\":\"C\",\"ts\":"));
      append_ns(buf, nanoseconds(counter.times[k]));
      fmt::format_to(std::back_inserter(buf), ",\"pid\":{},\"args\":{{", pid_of(counter.process));
      for (std::size_t j = 0; j < n; ++j) {
        if (j > 0) buf.push_back(',');
        append_json_string(buf, counter.series[j]);
        buf.push_back(':');
        const double v = counter.values[k * n + j];
        append_json_number(buf, std::isfinite(v) ? v : 0.0);  // a counter's value must be a number
      }
      buf.append(std::string_view("}}"));
    }
  }
  events.finish();
}

}  // namespace stepcast::report
