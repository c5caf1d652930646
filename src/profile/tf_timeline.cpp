// TensorFlow 1 timeline reader; see the header for the mapping. TF timelines are small (one
// step), so the document is parsed whole with simdjson's DOM rather than streamed.
#include "stepcast/detail/profile/tf_timeline.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cctype>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string_view>

#include "profile/gzip_reader.hpp"
#include "stepcast/error.hpp"
#include "stepcast/units.hpp"

namespace stepcast::profile {
namespace {

using simdjson::dom::element;

struct Event {
  size_t index = 0;  // in traceEvents
  int64_t pid = 0;
  double ts = 0;     // s
  double dur = 0;    // s
  std::string node;  // args.name, else the event name
  std::string op;    // args.op, else the event name
  std::vector<std::string> inputs;
  std::optional<double> bytes;
};

std::string read_all(const std::string& path, size_t limit = std::string::npos) {
  detail::InputFile in(path);
  std::string text;
  char buffer[1 << 16];
  while (text.size() < limit) {
    const size_t got = in.read(buffer, sizeof buffer);
    if (got == 0) break;
    text.append(buffer, got);
  }
  return text;
}

std::optional<double> number_of(element e) {
  double d = 0;
  if (e.get_double().get(d) == simdjson::SUCCESS) return d;
  int64_t i = 0;
  if (e.get_int64().get(i) == simdjson::SUCCESS) return static_cast<double>(i);
  uint64_t u = 0;
  if (e.get_uint64().get(u) == simdjson::SUCCESS) return static_cast<double>(u);
  return std::nullopt;
}

std::optional<element> member(element e, std::string_view key) {
  element out;
  if (e.at_key(key).get(out) != simdjson::SUCCESS) return std::nullopt;
  return out;
}

std::string string_of(element e) {
  std::string_view s;
  return e.get_string().get(s) == simdjson::SUCCESS ? std::string(s) : std::string();
}

bool is_recv(std::string_view op) { return op == "_Recv" || op == "_HostRecv" || op == "RecvTensor"; }
bool is_send(std::string_view op) { return op == "_Send" || op == "_HostSend"; }

/// "edge_12_dense/kernel/read" or "dense/kernel/read/_5" -> "dense/kernel".
std::string variable_of(std::string name) {
  if (name.starts_with("edge_")) {
    size_t i = 5;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
    if (i > 5 && i < name.size() && name[i] == '_') name = name.substr(i + 1);
  }
  for (bool changed = true; changed;) {
    changed = false;
    const size_t slash = name.rfind('/');
    if (slash != std::string::npos && slash + 1 < name.size()) {
      const std::string last = name.substr(slash + 1);
      const bool numbered = last.size() > 1 && last[0] == '_' &&
                            std::all_of(last.begin() + 1, last.end(),
                                        [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
      if (numbered || last == "read") {
        name.resize(slash);
        changed = true;
      }
    }
  }
  return name;
}

/// Input names as TF writes them: "^ctrl", "node:1".
std::string input_node(std::string name) {
  if (!name.empty() && name[0] == '^') name.erase(0, 1);
  const size_t colon = name.rfind(':');
  if (colon != std::string::npos && colon + 1 < name.size() &&
      std::all_of(name.begin() + static_cast<long>(colon) + 1, name.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    name.resize(colon);
  }
  return name;
}

workload::OpKind kind_of(const Event& e) {
  const std::string& n = e.node;
  if (n.starts_with("gradients/") || n.find("/gradients/") != std::string::npos)
    return workload::OpKind::Backward;
  if (e.op.starts_with("Apply") || e.op.starts_with("ResourceApply") ||
      n.find("update_") != std::string::npos) {
    return workload::OpKind::Other;
  }
  return workload::OpKind::Forward;
}

/// "/job:worker/replica:0/task:0/device:GPU:0 Compute" -> "/job:worker/replica:0/task:0".
std::string task_of(const std::string& process) {
  const size_t device = process.find("/device:");
  return device == std::string::npos ? std::string() : process.substr(0, device);
}

/// The events of a timeline, and those of the device to read: its compute ops and its task's
/// transfers, each in time order (pointers into `ops`).
struct Parsed {
  std::vector<Event> ops;  // "X" events
  std::string device;
  std::vector<const Event*> compute, recvs, sends;
};

Parsed parse_timeline(const std::string& path, const TfTimelineOptions& options) {
  const simdjson::padded_string json(read_all(path));
  simdjson::dom::parser parser;
  element doc;
  if (auto error = parser.parse(json).get(doc); error) {
    throw Error({path, 0, ""}, fmt::format("invalid JSON: {}", simdjson::error_message(error)));
  }
  simdjson::dom::array events;
  if (doc.is_array()) {
    events = doc.get_array().value_unsafe();
  } else if (doc["traceEvents"].get_array().get(events) != simdjson::SUCCESS) {
    throw Error({path, 0, "traceEvents"},
                "expected a Chrome trace: an array of events or an object with traceEvents");
  }

  std::map<int64_t, std::string> process_name;
  Parsed parsed;
  std::vector<Event>& ops = parsed.ops;  // "X" events
  size_t index = 0;
  for (element e : events) {
    const std::string key = fmt::format("traceEvents[{}]", index);
    const size_t i = index++;
    simdjson::dom::object object;
    if (e.get_object().get(object) != simdjson::SUCCESS)
      throw Error({path, 0, key}, "expected an event object");
    auto text = [&](std::string_view k) {
      auto m = member(e, k);
      return m ? string_of(*m) : std::string();
    };
    const std::string ph = text("ph");
    int64_t pid = 0;
    if (auto p = member(e, "pid")) {
      if (auto n = number_of(*p)) {
        // A process id is an integer; 1E25 would not convert (and two such would collapse).
        if (!(std::fabs(*n) <= 0x1.0p53 && *n == std::floor(*n))) {
          throw Error({path, 0, key}, fmt::format("event {}: pid {} is not an integer process id", i, *n));
        }
        pid = static_cast<int64_t>(*n);
      }
    }
    if (ph == "M") {
      if (text("name") == "process_name") {
        if (auto a = member(e, "args")) {
          if (auto n = member(*a, "name")) process_name[pid] = string_of(*n);
        }
      }
      continue;
    }
    if (ph != "X") continue;
    Event ev;
    ev.index = i;
    ev.pid = pid;
    auto field = [&](const char* name) -> double {
      auto f = member(e, name);
      if (!f) throw Error({path, 0, key}, fmt::format("complete event without '{}'", name));
      auto v = number_of(*f);
      if (!v) throw Error({path, 0, key}, fmt::format("'{}' is not a number", name));
      return *v;
    };
    ev.ts = field("ts") * 1e-6;
    ev.dur = field("dur") * 1e-6;
    if (ev.dur < 0) throw Error({path, 0, key}, fmt::format("negative duration {} us", ev.dur * 1e6));
    // An op longer than stepcast takes (units.hpp) made an invalid workload, reported without the file.
    if (!(ev.dur <= limits::kMaxDuration)) {
      throw Error({path, 0, key},
                  fmt::format("duration {} us is more than one op takes ({:g} s)", ev.dur * 1e6, limits::kMaxDuration));
    }
    const std::string event_name = text("name");
    ev.node = event_name;
    ev.op = event_name;
    simdjson::dom::object args;
    if (auto a = member(e, "args"); a && a->get_object().get(args) == simdjson::SUCCESS) {
      for (auto [k, v] : args) {
        if (k == "name") {
          if (auto s = string_of(v); !s.empty()) ev.node = s;
        } else if (k == "op") {
          if (auto s = string_of(v); !s.empty()) ev.op = s;
        } else if (k.starts_with("input")) {
          if (auto s = string_of(v); !s.empty()) ev.inputs.push_back(input_node(s));
        } else if (k == "bytes" || k == "tensor_bytes" || k == "size") {
          if (auto n = number_of(v)) {
            if (!(*n >= 0 && *n <= limits::kMaxBytes)) {
              throw Error({path, 0, key + ".args." + std::string(k)},
                          fmt::format("expected a size in [0, {:g}] bytes, got {}", limits::kMaxBytes, *n));
            }
            ev.bytes = *n;
          } else if (auto s = string_of(v); !s.empty()) {
            ev.bytes = parse_bytes(s, {path, 0, key + ".args." + std::string(k)});
          }
        }
      }
    }
    ops.push_back(std::move(ev));
  }

  // The compute process to read.
  std::map<int64_t, size_t> count;
  for (const Event& e : ops) {
    if (!is_recv(e.op) && !is_send(e.op)) ++count[e.pid];
  }
  int64_t chosen = -1;
  if (!options.device.empty()) {
    size_t best = 0;
    for (const auto& [pid, n] : count) {
      if (process_name[pid].find(options.device) != std::string::npos && (chosen < 0 || n > best)) {
        chosen = pid;
        best = n;
      }
    }
    if (chosen < 0) {
      std::string known;
      for (const auto& [pid, name] : process_name)
        known += (known.empty() ? "" : ", ") + fmt::format("'{}'", name);
      throw Error({path, 0, "device"}, fmt::format("no process with ops matches '{}' (processes: {})",
                                                   options.device, known.empty() ? "none named" : known));
    }
  } else {
    // GPU executor ops ("... device:GPU:0 Compute") first, then the stream:all view of the same
    // kernels, then a single stream, then CPU; never a parameter server's device.
    auto rank = [&](int64_t pid) {
      const std::string& name = process_name[pid];
      if (name.find("/job:ps") != std::string::npos) return 9;
      const bool gpu = name.find("GPU") != std::string::npos || name.find("gpu") != std::string::npos;
      if (gpu && name.find("stream:") == std::string::npos) return 0;
      if (gpu && name.find("stream:all") != std::string::npos) return 1;
      if (gpu) return 2;
      return name.find("Compute") != std::string::npos ? 3 : 4;
    };
    std::pair<int, size_t> best{10, 0};
    for (const auto& [pid, n] : count) {
      const int r = rank(pid);
      if (r < 9 && (r < best.first || (r == best.first && n > best.second))) {
        best = {r, n};
        chosen = pid;
      }
    }
  }
  if (chosen < 0) throw Error({path, 0, "traceEvents"}, "no compute ops (\"X\" events) on any worker device");
  parsed.device = process_name[chosen];
  const std::string& device = parsed.device;
  const std::string task = task_of(device);

  std::vector<const Event*>& compute = parsed.compute;
  std::vector<const Event*>& recvs = parsed.recvs;
  std::vector<const Event*>& sends = parsed.sends;
  for (const Event& e : ops) {
    const bool same_task = e.pid == chosen || (!task.empty() && task_of(process_name[e.pid]) == task);
    if (is_recv(e.op) && same_task) {
      recvs.push_back(&e);
    } else if (is_send(e.op) && same_task) {
      sends.push_back(&e);
    } else if (e.pid == chosen && !is_recv(e.op) && !is_send(e.op)) {
      compute.push_back(&e);
    }
  }
  auto by_time = [](const Event* a, const Event* b) { return a->ts < b->ts; };
  std::stable_sort(compute.begin(), compute.end(), by_time);
  std::stable_sort(recvs.begin(), recvs.end(), by_time);
  std::stable_sort(sends.begin(), sends.end(), by_time);
  if (compute.empty())
    throw Error({path, 0, "traceEvents"}, fmt::format("no compute ops on device '{}'", device));

  return parsed;
}

}  // namespace

workload::Workload read_tf_timeline(const std::string& path, const TfTimelineOptions& options,
                                    std::vector<std::string>* warnings) {
  auto warn = [&](const std::string& text) {
    if (warnings != nullptr) warnings->push_back(fmt::format("{}: {}", path, text));
  };
  Parsed parsed = parse_timeline(path, options);
  const std::string& device = parsed.device;
  const std::vector<const Event*>& compute = parsed.compute;
  const std::vector<const Event*>& recvs = parsed.recvs;
  const std::vector<const Event*>& sends = parsed.sends;

  workload::Workload w;
  w.name = std::filesystem::path(path).stem().string();
  if (w.name.ends_with(".json")) w.name.resize(w.name.size() - 5);
  const bool gpu = device.find("GPU") != std::string::npos || device.find("gpu") != std::string::npos;
  w.lanes = {gpu ? "gpu" : "cpu"};
  std::map<std::string, int> op_by_node;
  for (const Event* e : compute) {
    workload::Op op{
        .name = e->node, .kind = kind_of(*e), .duration = e->dur, .lane = 0, .layer = -1, .deps = {}};
    if (!w.ops.empty()) op.deps.push_back(static_cast<int>(w.ops.size()) - 1);
    op_by_node.emplace(e->node, static_cast<int>(w.ops.size()));
    w.ops.push_back(std::move(op));
  }
  // A step boundary shows as an op starting long after the previous one ended; TF timelines are
  // normally of one step (RunMetadata of one session.run).
  int last_backward = -1;
  for (int i = 0; i < static_cast<int>(w.ops.size()); ++i) {
    if (w.ops[i].kind == workload::OpKind::Backward) last_backward = i;
  }
  const int default_producer = last_backward >= 0 ? last_backward : static_cast<int>(w.ops.size()) - 1;

  std::map<std::string, int> tensor_of;
  int unsized = 0;
  for (const Event* r : recvs) {
    const std::string variable = variable_of(r->node);
    // Consumer: the first op at or after the receive that names it among its inputs.
    int consumer = -1;
    for (size_t i = 0; i < compute.size() && consumer < 0; ++i) {
      const Event* c = compute[i];
      if (c->ts + c->dur < r->ts) continue;
      for (const std::string& in : c->inputs) {
        if (in == r->node || in == variable || variable_of(in) == variable) {
          consumer = static_cast<int>(i);
          break;
        }
      }
    }
    if (consumer < 0) {
      for (size_t i = 0; i < compute.size(); ++i) {
        if (compute[i]->ts >= r->ts + r->dur) {
          consumer = static_cast<int>(i);
          break;
        }
      }
    }
    int producer = default_producer;
    for (const Event* s : sends) {
      bool names_it = s->node.find(variable) != std::string::npos;
      for (const std::string& in : s->inputs) names_it = names_it || in.find(variable) != std::string::npos;
      if (!names_it) continue;
      // The gradient leaves once the op before the send has produced it.
      int before = -1;
      for (size_t i = 0; i < compute.size(); ++i) {
        if (compute[i]->ts + compute[i]->dur <= s->ts + 1e-9) before = static_cast<int>(i);
      }
      if (!s->inputs.empty()) {
        if (auto it = op_by_node.find(s->inputs[0]); it != op_by_node.end()) before = it->second;
      }
      if (before >= 0) producer = before;
      break;
    }
    auto [it, fresh] = tensor_of.try_emplace(variable, static_cast<int>(w.tensors.size()));
    if (fresh) w.tensors.push_back({.name = variable, .bytes = 0, .producer = producer, .consumers = {}});
    workload::Tensor& t = w.tensors[static_cast<size_t>(it->second)];
    if (r->bytes) {
      t.bytes = std::max(t.bytes, *r->bytes);
    } else if (fresh) {
      ++unsized;
    }
    if (consumer >= 0 && std::find(t.consumers.begin(), t.consumers.end(), consumer) == t.consumers.end()) {
      t.consumers.push_back(consumer);
      std::sort(t.consumers.begin(), t.consumers.end());
    }
  }
  if (unsized > 0) {
    warn(fmt::format("{} received tensors have no size in args (bytes): counted as 0 bytes", unsized));
  }
  return w;
}

MessageCostFit fit_message_costs(const std::vector<std::pair<double, double>>& bytes_and_seconds) {
  MessageCostFit fit;
  std::map<int, std::pair<double, double>> fastest;  // size class -> (bytes, s) of its fastest message
  for (const auto& [bytes, seconds] : bytes_and_seconds) {
    if (!(std::isfinite(bytes) && bytes >= 0 && std::isfinite(seconds) && seconds >= 0)) continue;
    ++fit.messages;
    const int size_class = bytes < 1 ? -1 : static_cast<int>(std::floor(std::log2(bytes)));
    auto [it, fresh] = fastest.try_emplace(size_class, bytes, seconds);
    if (!fresh && seconds < it->second.second) it->second = {bytes, seconds};
  }
  fit.size_classes = static_cast<int>(fastest.size());
  if (fastest.empty()) return fit;
  double least = std::numeric_limits<double>::infinity();
  for (const auto& [size_class, point] : fastest) least = std::min(least, point.second);
  fit.overhead = least;
  if (fastest.size() < 2) return fit;
  // Least squares of seconds on bytes over the classes' fastest messages.
  double mean_x = 0, mean_y = 0;
  for (const auto& [size_class, point] : fastest) {
    mean_x += point.first;
    mean_y += point.second;
  }
  const auto k = static_cast<double>(fastest.size());
  mean_x /= k;
  mean_y /= k;
  double sxx = 0, sxy = 0;
  for (const auto& [size_class, point] : fastest) {
    sxx += (point.first - mean_x) * (point.first - mean_x);
    sxy += (point.first - mean_x) * (point.second - mean_y);
  }
  const double slope = sxx > 0 ? sxy / sxx : 0;
  if (!(slope > 0)) return fit;  // no size dependence seen: the overhead is the fastest message
  fit.bandwidth = 1 / slope;
  fit.overhead = std::max(0.0, mean_y - slope * mean_x);
  return fit;
}

TfTimelineSummary summarize_tf_timeline(const std::string& path, const TfTimelineOptions& options) {
  const Parsed parsed = parse_timeline(path, options);
  TfTimelineSummary s;
  s.file = path;
  s.device = parsed.device;
  s.ops = static_cast<int>(parsed.compute.size());
  double first = std::numeric_limits<double>::infinity(), last = 0;
  for (const Event* e : parsed.compute) {
    s.compute_time += e->dur;
    first = std::min(first, e->ts);
    last = std::max(last, e->ts + e->dur);
  }
  s.span = parsed.compute.empty() ? 0 : last - first;
  s.receives = static_cast<int>(parsed.recvs.size());
  s.sends = static_cast<int>(parsed.sends.size());
  std::vector<std::pair<double, double>> sized;
  for (const Event* r : parsed.recvs) {
    if (!r->bytes) {
      ++s.unsized_receives;
      continue;
    }
    s.received_bytes += *r->bytes;
    sized.emplace_back(*r->bytes, r->dur);
  }
  s.receive_cost = fit_message_costs(sized);
  return s;
}

bool looks_like_tf_timeline(const std::string& path) {
  try {
    const std::string head = read_all(path, 1 << 20);
    auto has = [&](std::string_view s) { return head.find(s) != std::string::npos; };
    const bool op_category = has("\"cat\": \"Op\"") || has("\"cat\":\"Op\"");
    const bool op_arg = has("\"op\":") || has("\"op\" :");
    return has("traceEvents") && op_category && op_arg && !has("ProfilerStep#") && !has("\"cpu_op\"");
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace stepcast::profile
