// A validator of Chrome trace event JSON (the format Perfetto and chrome://tracing read), for
// tests of write_chrome_trace and of the traces the simulator records; Debian has no Perfetto
// trace processor to load them with. Checks, over the whole document:
// - the document is {"traceEvents": [...]} and every event has the fields its "ph" requires
//   (X: name, ts, dur, pid, tid; M: a known name, pid, args.name (and tid for thread_name);
//   s/f: name, cat, id, ts, pid, tid; i: name, ts, scope g/p/t with pid (and tid) as it needs;
//   C: name, ts, pid, args of numbers), ts and dur numbers >= 0, args an object;
// - flows: every id has one "s" and one "f" of the same cat and name, the "s" not later than
//   the "f", and each lies inside an X slice on its own (pid, tid) (the slice it binds to);
// - metadata names every pid used and every (pid, tid) that a slice, flow or thread instant uses;
// - on every (pid, tid) the X slices are properly nested or disjoint (Perfetto draws nothing
//   else), compared in integer nanoseconds.
//
//   const TraceCheck c = check_trace_events(json);
//   EXPECT_TRUE(c.errors.empty()) << c.summary();
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cli/cli_support.hpp"

namespace stepcast_trace_test {

using stepcast_cli_test::Json;

struct TraceCheck {
  std::vector<std::string> errors;  ///< the first kMaxErrors problems found
  std::size_t problems = 0;         ///< all problems found
  std::map<std::string, std::size_t> events;  ///< per "ph"
  std::size_t partial_overlaps = 0;
  std::size_t flows = 0;                      ///< complete s/f pairs
  std::map<std::string, std::size_t> flow_names;  ///< pairs per flow name
  std::set<std::string> counters;             ///< counter names
  std::set<std::string> thread_names;
  std::set<std::string> process_names;

  static constexpr std::size_t kMaxErrors = 20;
  [[nodiscard]] bool ok() const { return problems == 0; }
  [[nodiscard]] std::string summary() const {
    std::string s = std::to_string(problems) + " problems";
    for (const std::string& e : errors) s += "\n  " + e;
    return s;
  }
};

namespace detail {

inline int64_t ns(double microseconds) { return std::llround(microseconds * 1000.0); }

}  // namespace detail

inline TraceCheck check_trace_events(const std::string& text) {
  TraceCheck check;
  auto problem = [&](const std::string& what) {
    if (check.errors.size() < TraceCheck::kMaxErrors) check.errors.push_back(what);
    ++check.problems;
  };
  Json doc;
  stepcast_cli_test::JsonParser parser(text);
  if (!parser.parse(doc)) {
    problem("invalid JSON: " + parser.error());
    return check;
  }
  if (!doc.is_object() || !doc["traceEvents"].is_array()) {
    problem("not an object with a traceEvents array");
    return check;
  }

  using Track = std::pair<int64_t, int64_t>;
  struct Slice {
    int64_t start, end;
    std::size_t event;
  };
  struct FlowEnd {
    int count = 0;
    std::string cat, name;
    int64_t ts = 0;
    Track track{};
    std::size_t event = 0;
  };
  std::map<Track, std::vector<Slice>> slices;
  std::map<std::string, FlowEnd> flow_starts, flow_ends;  // by id
  std::set<int64_t> named_pids, used_pids;
  std::set<Track> named_tracks, used_tracks;
  std::vector<std::pair<Track, int64_t>> flow_points;  // must lie inside a slice of their track
  std::vector<std::size_t> flow_point_events;

  const std::vector<Json>& events = doc["traceEvents"].array;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Json& e = events[i];
    const std::string where = "traceEvents[" + std::to_string(i) + "]";
    if (!e.is_object() || !e["ph"].is_string()) {
      problem(where + ": not an object with a string ph");
      continue;
    }
    const std::string& ph = e["ph"].string;
    check.events[ph]++;
    auto need_string = [&](std::string_view key) {
      if (!e[key].is_string()) problem(where + " (ph " + ph + "): no string " + std::string(key));
    };
    auto need_number = [&](std::string_view key, bool non_negative) {
      const Json& v = e[key];
      if (!v.is_number()) {
        problem(where + " (ph " + ph + "): no number " + std::string(key));
        return 0.0;
      }
      if (non_negative && !(v.number >= 0)) problem(where + ": negative " + std::string(key));
      return v.number;
    };
    auto need_int = [&](std::string_view key) {
      const double v = need_number(key, false);
      if (v != std::floor(v)) problem(where + ": " + std::string(key) + " is not an integer");
      return static_cast<int64_t>(v);
    };
    if (e.has("args") && !e["args"].is_object()) problem(where + ": args is not an object");

    if (ph == "X") {
      need_string("name");
      const double ts = need_number("ts", true), dur = need_number("dur", true);
      const Track track{need_int("pid"), need_int("tid")};
      used_pids.insert(track.first);
      used_tracks.insert(track);
      slices[track].push_back({detail::ns(ts), detail::ns(ts + dur), i});
    } else if (ph == "M") {
      need_string("name");
      const std::string& name = e["name"].string;
      const int64_t pid = need_int("pid");
      if (!e["args"]["name"].is_string() && (name == "process_name" || name == "thread_name")) {
        problem(where + ": " + name + " without args.name");
      }
      if (name == "process_name") {
        named_pids.insert(pid);
        check.process_names.insert(e["args"]["name"].string);
      } else if (name == "thread_name") {
        named_tracks.insert({pid, need_int("tid")});
        check.thread_names.insert(e["args"]["name"].string);
      } else if (name != "process_sort_index" && name != "thread_sort_index" && name != "process_labels") {
        problem(where + ": unknown metadata " + name);
      }
    } else if (ph == "s" || ph == "f") {
      need_string("name");
      need_string("cat");
      const double ts = need_number("ts", true);
      const Track track{need_int("pid"), need_int("tid")};
      used_pids.insert(track.first);
      used_tracks.insert(track);
      std::string id;
      if (e["id"].is_number()) {
        id = e["id"].number_text;
      } else if (e["id"].is_string()) {
        id = e["id"].string;
      } else {
        problem(where + ": flow without an id");
        continue;
      }
      if (ph == "f" && e.has("bp") && e["bp"].string != "e") problem(where + ": bp other than \"e\"");
      FlowEnd& end = (ph == "s" ? flow_starts : flow_ends)[id];
      end.count++;
      end.cat = e["cat"].string;
      end.name = e["name"].string;
      end.ts = detail::ns(ts);
      end.track = track;
      end.event = i;
      flow_points.emplace_back(track, detail::ns(ts));
      flow_point_events.push_back(i);
    } else if (ph == "i" || ph == "I") {
      need_string("name");
      need_number("ts", true);
      const std::string scope = e.has("s") ? e["s"].string : "t";
      if (scope == "p" || scope == "t") used_pids.insert(need_int("pid"));
      if (scope == "t") used_tracks.insert({need_int("pid"), need_int("tid")});
      if (scope != "g" && scope != "p" && scope != "t") problem(where + ": instant scope " + scope);
    } else if (ph == "C") {
      need_string("name");
      need_number("ts", true);
      used_pids.insert(need_int("pid"));
      check.counters.insert(e["name"].string);
      const Json& args = e["args"];
      if (!args.is_object() || args.object.empty()) {
        problem(where + ": counter without args");
      } else {
        for (const auto& [key, value] : args.object) {
          if (!value.is_number()) problem(where + ": counter series " + key + " is not a number");
        }
      }
    } else if (ph == "B" || ph == "E") {
      need_number("ts", true);
      used_tracks.insert({need_int("pid"), need_int("tid")});
    } else if (ph == "b" || ph == "e" || ph == "n") {
      need_string("cat");
      need_number("ts", true);
      used_pids.insert(need_int("pid"));
      if (!e.has("id") && !e.has("id2")) problem(where + ": async event without an id");
    } else {
      problem(where + ": unknown ph " + ph);
    }
  }

  // Flows pair up.
  for (const auto& [id, start] : flow_starts) {
    auto it = flow_ends.find(id);
    if (start.count != 1 || it == flow_ends.end() || it->second.count != 1) {
      problem("flow id " + id + ": " + std::to_string(start.count) + " starts and " +
              std::to_string(it == flow_ends.end() ? 0 : it->second.count) + " finishes");
      continue;
    }
    const FlowEnd& end = it->second;
    if (end.cat != start.cat || end.name != start.name) problem("flow id " + id + ": cat or name differ at its ends");
    if (end.ts < start.ts) problem("flow id " + id + ": finishes before it starts");
    check.flows++;
    check.flow_names[start.name]++;
  }
  for (const auto& [id, end] : flow_ends) {
    if (!flow_starts.count(id)) problem("flow id " + id + ": finish without a start");
  }

  // Names for everything used.
  for (int64_t pid : used_pids) {
    if (!named_pids.count(pid)) problem("pid " + std::to_string(pid) + " has no process_name");
  }
  for (const Track& t : used_tracks) {
    if (!named_tracks.count(t)) {
      problem("pid " + std::to_string(t.first) + " tid " + std::to_string(t.second) + " has no thread_name");
    }
  }

  // Nesting on every track, and flow ends inside a slice of theirs.
  for (auto& [track, list] : slices) {
    std::sort(list.begin(), list.end(), [](const Slice& a, const Slice& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    std::vector<const Slice*> open;
    for (const Slice& s : list) {
      while (!open.empty() && open.back()->end <= s.start) open.pop_back();
      if (!open.empty() && s.end > open.back()->end) {
        check.partial_overlaps++;
        problem("pid " + std::to_string(track.first) + " tid " + std::to_string(track.second) + ": traceEvents[" +
                std::to_string(s.event) + "] overlaps traceEvents[" + std::to_string(open.back()->event) +
                "] without nesting");
        continue;
      }
      open.push_back(&s);
    }
  }
  for (std::size_t k = 0; k < flow_points.size(); ++k) {
    const auto& [track, ts] = flow_points[k];
    auto it = slices.find(track);
    const auto at = ts;  // clang 14 cannot capture a structured binding (C++20 allows it)
    const bool inside = it != slices.end() && std::any_of(it->second.begin(), it->second.end(), [&](const Slice& s) {
                          return s.start <= at && at <= s.end;
                        });
    if (!inside) problem("traceEvents[" + std::to_string(flow_point_events[k]) + "]: flow event in no slice of its track");
  }
  return check;
}

}  // namespace stepcast_trace_test
