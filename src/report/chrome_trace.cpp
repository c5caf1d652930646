// write_chrome_trace: the synthetic execution trace as Chrome trace event JSON, which
// chrome://tracing and Perfetto open. A fine prediction of a large cluster has millions of
// spans, so events go straight through one small buffer to the stream.
#include <fmt/format.h>

#include <cmath>
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

/// Seconds -> trace microseconds, rounded to the nanosecond: 0.1 s prints as 100000, not
/// 100000.00000000001, which keeps files smaller and diffs stable; the simulator's times
/// mean nothing below a nanosecond anyway.
void append_microseconds(fmt::memory_buffer& buf, double seconds) {
  append_json_number(buf, std::round(seconds * 1e9) / 1e3);
}

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

}  // namespace

void write_chrome_trace(std::ostream& out, const predict::Trace& trace) {
  // Metadata first so viewers name tracks before any span lands on them. Every listed
  // process is named (even if idle, it is part of the cluster); threads are named per
  // process only where a span uses them, since thread_name is per (pid, tid) and naming
  // every pair would invent empty "network in" tracks on compute-only processes.
  std::set<std::pair<int, int>> used;
  std::pair<int, int> last{-1, -1};  // spans come in runs on one track; skip the set lookup
  for (const auto& span : trace.spans) {
    std::pair<int, int> track{span.process, span.thread};
    if (track == last && !used.empty()) continue;
    used.insert(track);
    last = track;
  }

  EventStream events(out);
  std::string scratch;
  auto process_name = [&](int process) {
    auto& buf = events.next();
    fmt::format_to(
        std::back_inserter(buf),
        "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"name\":", pid_of(process));
    append_json_string(buf, name_or(trace.processes, process, scratch, "process"));
    buf.append(std::string_view("}}"));
  };
  for (std::size_t p = 0; p < trace.processes.size(); ++p) process_name(static_cast<int>(p));
  int last_unlisted = -1;
  for (const auto& [process, thread] : used) {
    bool listed = process >= 0 && static_cast<std::size_t>(process) < trace.processes.size();
    if (!listed && process != last_unlisted) {
      process_name(process);
      last_unlisted = process;
    }
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

  for (const auto& span : trace.spans) {
    auto& buf = events.next();
    buf.append(std::string_view("{\"name\":"));
    append_json_string(buf, span.name);
    buf.append(std::string_view(",\"cat\":"));
    append_json_string(buf, span.category);
    buf.append(std::string_view(",\"ph\":\"X\",\"ts\":"));
    append_microseconds(buf, span.start);
    buf.append(std::string_view(",\"dur\":"));
    append_microseconds(buf, span.duration);
    fmt::format_to(std::back_inserter(buf), ",\"pid\":{},\"tid\":{}}}", pid_of(span.process),
                   tid_of(span.thread));
  }
  events.finish();
}

}  // namespace stepcast::report
