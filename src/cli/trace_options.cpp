#include "cli/trace_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string_view>

#include "stepcast/error.hpp"

namespace stepcast::cli {
namespace {

[[noreturn]] void fail(const std::string& text, const std::string& why) {
  throw Error({"", 0, "--trace-workers"},
              fmt::format("expected worker indices and ranges such as 0-3,8 (or all), got '{}': {}", text, why));
}

int parse_index(std::string_view part, const std::string& text) {
  int value = 0;
  auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
  if (part.empty() || ec != std::errc() || end != part.data() + part.size() || value < 0) {
    fail(text, fmt::format("'{}' is not a worker index", part));
  }
  return value;
}

}  // namespace

sim::TraceSelection trace_selection(const std::string& workers_text, int steps, int workers, bool tracing) {
  if (!tracing) {
    if (!workers_text.empty()) throw Error({"", 0, "--trace-workers"}, "applies to a trace: give --trace-out too");
    if (steps != 0) throw Error({"", 0, "--trace-steps"}, "applies to a trace: give --trace-out too");
    return {};
  }
  sim::TraceSelection kept;
  kept.steps = steps;
  if (workers_text.empty()) {
    kept.first_workers = kDefaultTraceWorkers;
    return kept;
  }
  if (workers_text == "all") return kept;
  std::string_view rest = workers_text;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    const size_t dash = part.find('-');
    const int first = parse_index(part.substr(0, dash), workers_text);
    const int last = dash == std::string_view::npos ? first : parse_index(part.substr(dash + 1), workers_text);
    if (last < first) fail(workers_text, fmt::format("the range '{}' is empty", part));
    if (last >= workers) {
      fail(workers_text, fmt::format("worker {} does not exist ({} workers: 0-{})", last, workers, workers - 1));
    }
    for (int w = first; w <= last; ++w) kept.workers.push_back(w);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  std::sort(kept.workers.begin(), kept.workers.end());
  kept.workers.erase(std::unique(kept.workers.begin(), kept.workers.end()), kept.workers.end());
  return kept;
}

std::vector<int> traced_workers(const sim::Trace& trace, int workers) {
  std::vector<int> kept;
  const int named = std::min(workers, static_cast<int>(trace.processes.size()));
  for (int w = 0; w < named; ++w) {
    if (!trace.processes[static_cast<size_t>(w)].empty()) kept.push_back(w);
  }
  return kept;
}

std::string describe_workers(const std::vector<int>& kept) {
  std::string text;
  for (size_t i = 0; i < kept.size();) {
    size_t last = i;
    while (last + 1 < kept.size() && kept[last + 1] == kept[last] + 1) ++last;
    if (!text.empty()) text += ", ";
    text += last == i ? fmt::format("{}", kept[i]) : fmt::format("{}-{}", kept[i], kept[last]);
    i = last + 1;
  }
  return text;
}

}  // namespace stepcast::cli
