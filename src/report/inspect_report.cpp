// write_json / write_table of a trace summary (`stepcast inspect`).
#include "stepcast/detail/report/inspect_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string>

#include "report/json_text.hpp"
#include "stepcast/units.hpp"

namespace stepcast::report {
namespace {

using detail::JsonWriter;

std::string ms(double seconds) { return fmt::format("{:.3f} ms", seconds * 1e3); }

std::string percent(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : "-";
}

bool is_used(const profile::TraceSummary& s, int64_t device) {
  return std::find(s.devices_used.begin(), s.devices_used.end(), device) != s.devices_used.end();
}

void write_stats(JsonWriter& json, const profile::DurationStats& s) {
  json.begin_object();
  json.key("count");
  json.integer(s.count);
  for (const auto& [key, value] : {std::pair<std::string_view, double>{"mean", s.mean},
                                   {"p50", s.p50},
                                   {"p95", s.p95},
                                   {"min", s.min},
                                   {"max", s.max},
                                   {"stddev", s.stddev}}) {
    json.key(key);
    json.number(value);
  }
  json.end_object();
}

void write_step(JsonWriter& json, const profile::StepSummary& st) {
  json.begin_object();
  json.key("name");
  json.string(st.name);
  json.key("number");
  json.integer(st.number);
  json.key("start_s");
  json.number(st.start);
  json.key("duration_s");
  json.number(st.duration);
  json.key("num_kernels");
  json.integer(st.num_kernels);
  json.key("num_kernels_launched");
  json.integer(st.num_kernels_launched);
  for (const auto& [key, value] :
       {std::pair<std::string_view, double>{"kernel_compute_sum_s", st.kernel_compute_sum},
        {"nccl_kernel_sum_s", st.nccl_kernel_sum},
        {"gpu_busy_s", st.gpu_busy},
        {"compute_s", st.compute},
        {"communication_s", st.communication},
        {"overlap_s", st.overlap},
        {"idle_s", st.idle}}) {
    json.key(key);
    json.number(value);
  }
  json.key("steady");
  json.boolean(st.steady);
  json.key("note");
  json.string(st.note);
  json.end_object();
}

void write_group(JsonWriter& json, const profile::CollectiveGroup& g) {
  json.begin_object();
  json.key("collective");
  json.string(g.collective);
  json.key("dtype");
  json.string(g.dtype);
  json.key("bytes");
  json.number(g.bytes);
  json.key("group_size");
  json.integer(g.group_size);
  json.key("count");
  json.integer(g.count);
  for (const auto& [key, value] : {std::pair<std::string_view, double>{"total_duration_s", g.total_duration},
                                   {"mean_duration_s", g.mean_duration},
                                   {"min_duration_s", g.min_duration},
                                   {"max_duration_s", g.max_duration}}) {
    json.key(key);
    json.number(value);
  }
  json.end_object();
}

void write_collective(JsonWriter& json, const profile::CollectiveRecord& c) {
  json.begin_object();
  json.key("step");
  json.string(c.step);
  json.key("collective");
  json.string(c.collective);
  json.key("dtype");
  json.string(c.dtype);
  json.key("nelems");
  json.integer(c.nelems);
  json.key("bytes");
  json.number(c.bytes);
  json.key("group_size");
  json.integer(c.group_size);
  json.key("kernel");
  json.string(c.kernel_name);
  json.key("device");
  json.integer(c.device);
  json.key("stream");
  json.integer(c.stream);
  json.key("start_s");
  json.number(c.start);
  json.key("duration_s");
  json.number(c.duration);
  json.end_object();
}

}  // namespace

void write_json(std::ostream& out, const profile::TraceSummary& s) {
  const auto& m = s.metadata;
  JsonWriter json(out, JsonWriter::Layout::OneLine);
  json.begin_object();
  json.key("file");
  json.string(s.file);
  json.key("framework");
  json.string(m.framework);
  json.key("devices");
  json.begin_array();
  for (const auto& d : m.devices) {
    json.begin_object();
    json.key("id");
    json.integer(d.id);
    json.key("name");
    json.string(d.name);
    json.key("memory_bytes");
    json.number(d.memory_bytes);
    json.key("used");
    json.boolean(is_used(s, d.id));
    json.end_object();
  }
  json.end_array();
  json.key("devices_used");
  json.begin_array();
  for (int64_t d : s.devices_used) json.integer(d);
  json.end_array();
  json.key("rank");
  json.integer(m.rank);
  json.key("world_size");
  json.integer(m.world_size);
  json.key("backend");
  json.string(m.backend);
  json.key("nccl_version");
  json.string(m.nccl_version);
  json.key("num_events");
  json.integer(s.num_events);
  json.key("steps_found");
  json.integer(s.steps.size());
  json.key("steady_steps");
  json.integer(s.step_time.count);
  json.key("step_time_s");
  write_stats(json, s.step_time);
  json.key("step_time_all_s");
  write_stats(json, s.step_time_all);
  json.key("not_steady");
  json.begin_array();
  for (const auto& st : s.steps) {
    if (!st.steady) json.string(st.name);
  }
  json.end_array();
  const auto& p = s.per_step;
  json.key("per_step_s");
  json.begin_object();
  for (const auto& [key, value] : {std::pair<std::string_view, double>{"step", p.step},
                                   {"gpu_busy", p.gpu_busy},
                                   {"compute", p.compute},
                                   {"communication", p.communication},
                                   {"overlap", p.overlap},
                                   {"compute_only", p.compute - p.overlap},
                                   {"communication_exposed", p.communication - p.overlap},
                                   {"idle", p.idle},
                                   {"kernel_compute_sum", p.kernel_compute_sum},
                                   {"nccl_kernel_sum", p.nccl_kernel_sum}}) {
    json.key(key);
    json.number(value);
  }
  json.end_object();
  json.key("steps");
  json.begin_array();
  for (const auto& st : s.steps) write_step(json, st);
  json.end_array();
  json.key("collectives_by_type");
  json.begin_array();
  for (const auto& g : s.collective_groups) write_group(json, g);
  json.end_array();
  json.key("collectives");
  json.begin_array();
  for (const auto& c : s.collectives) write_collective(json, c);
  json.end_array();
  json.key("num_warnings");
  json.integer(s.num_warnings);
  json.key("warnings");
  json.begin_array();
  for (const auto& w : s.warnings) json.string(w);
  json.end_array();
  json.end_object();
}

void write_table(std::ostream& out, const profile::TraceSummary& s) {
  const auto& m = s.metadata;
  fmt::memory_buffer buf;
  auto it = std::back_inserter(buf);
  fmt::format_to(it, "trace       {} ({} events)\n", s.file, s.num_events);
  fmt::format_to(it, "framework   {}\n", m.framework);
  if (m.devices.empty()) buf.append(std::string_view("devices     (not recorded)\n"));
  for (size_t i = 0; i < m.devices.size(); ++i) {
    const auto& d = m.devices[i];
    fmt::format_to(it, "{}GPU {}: {}, {} memory{}\n", i == 0 ? "devices     " : "            ", d.id, d.name,
                   format_bytes(d.memory_bytes), is_used(s, d.id) ? " (runs the kernels)" : "");
  }
  fmt::format_to(it, "distributed rank {} of world size {}{}{}\n", m.rank ? std::to_string(*m.rank) : "?",
                 m.world_size ? std::to_string(*m.world_size) : "?",
                 m.backend.empty() ? "" : fmt::format(", backend {}", m.backend),
                 m.nccl_version.empty() ? "" : fmt::format(" (NCCL {})", m.nccl_version));
  // summarize() throws on a trace without steps; a summary built by hand may still have none.
  if (s.steps.empty()) {
    fmt::format_to(it, "steps       0 found, {} steady\n", s.step_time.count);
  } else {
    fmt::format_to(it, "steps       {} found ({} .. {}), {} steady\n", s.steps.size(), s.steps.front().name,
                   s.steps.back().name, s.step_time.count);
  }
  for (const auto& st : s.steps) {
    if (!st.steady)
      fmt::format_to(it, "            not steady: {} ({}): {}\n", st.name, ms(st.duration), st.note);
  }
  const auto& t = s.step_time;
  fmt::format_to(it, "step time   mean {}, p50 {}, p95 {}, min {}, max {} (over {} steady steps)\n",
                 ms(t.mean), ms(t.p50), ms(t.p95), ms(t.min), ms(t.max), t.count);
  // The step-to-step variation, as the straggler key takes it (population std / mean).
  if (t.count >= 2 && t.mean > 0) {
    fmt::format_to(it, "            variation {:.2f}% (stddev / mean; workload.compute_cv: {:.4f})\n",
                   100 * t.stddev / t.mean, t.stddev / t.mean);
  }
  buf.push_back('\n');

  const auto& p = s.per_step;
  buf.append(std::string_view("GPU time per step (mean over steady steps)   time        share of step\n"));
  fmt::format_to(it, "  step                                     {:>12}  {:>7}\n", ms(p.step),
                 percent(p.step, p.step));
  fmt::format_to(it, "  GPU busy                                 {:>12}  {:>7}\n", ms(p.gpu_busy),
                 percent(p.gpu_busy, p.step));
  fmt::format_to(it, "    compute only                           {:>12}  {:>7}\n", ms(p.compute - p.overlap),
                 percent(p.compute - p.overlap, p.step));
  fmt::format_to(it, "    communication only (exposed)           {:>12}  {:>7}\n",
                 ms(p.communication - p.overlap), percent(p.communication - p.overlap, p.step));
  fmt::format_to(it, "    communication overlapped with compute  {:>12}  {:>7}\n", ms(p.overlap),
                 percent(p.overlap, p.step));
  fmt::format_to(it, "  idle                                     {:>12}  {:>7}\n", ms(p.idle),
                 percent(p.idle, p.step));
  fmt::format_to(it, "  sum of kernel durations: compute {}, NCCL {}\n\n", ms(p.kernel_compute_sum),
                 ms(p.nccl_kernel_sum));

  // The same words for the same quantities as the table above: GPU busy = compute only +
  // communication only + overlapped; step = GPU busy + idle.
  fmt::format_to(it, "{:<18} {:>10} {:>9} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}  {}\n", "step", "time",
                 "kernels", "GPU busy", "compute only", "comm only", "overlapped", "idle", "NCCL sum",
                 "steady");
  for (const auto& st : s.steps) {
    fmt::format_to(it, "{:<18} {:>10} {:>9} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}  {}\n", st.name,
                   ms(st.duration), st.num_kernels, ms(st.gpu_busy), ms(st.compute - st.overlap),
                   ms(st.communication - st.overlap), ms(st.overlap), ms(st.idle), ms(st.nccl_kernel_sum),
                   st.steady ? "yes" : "no");
  }
  buf.append(
      std::string_view("(compute only: compute kernels with no NCCL kernel running; comm only: NCCL kernels "
                       "with no compute kernel, the exposed communication; overlapped: both at once; "
                       "NCCL sum: the NCCL kernels' durations added, overlaps counted twice)\n"));
  if (s.collectives.empty()) {
    buf.append(std::string_view("\ncollectives none (no NCCL kernels)\n"));
  } else {
    fmt::format_to(it, "\ncollectives {} NCCL kernels; by type and size:\n", s.collectives.size());
    fmt::format_to(it, "  {:<16} {:<9} {:>12} {:>6} {:>6} {:>14} {:>14} {:>14}\n", "collective", "dtype",
                   "bytes", "group", "count", "mean", "min", "max");
    for (const auto& g : s.collective_groups) {
      fmt::format_to(it, "  {:<16} {:<9} {:>12} {:>6} {:>6} {:>14} {:>14} {:>14}\n", g.collective,
                     g.dtype.empty() ? "?" : g.dtype, g.bytes > 0 ? format_bytes(g.bytes) : "?",
                     g.group_size > 0 ? std::to_string(g.group_size) : "?", g.count, ms(g.mean_duration),
                     ms(g.min_duration), ms(g.max_duration));
    }
    buf.append(std::string_view("  (every collective with its step, bytes and duration: --json)\n"));
  }
  if (s.num_warnings > 0) {
    fmt::format_to(it, "\nwarnings    {} events skipped\n", s.num_warnings);
    for (const auto& w : s.warnings) fmt::format_to(it, "  {}\n", w);
    if (s.warnings.size() < s.num_warnings)
      fmt::format_to(it, "  ... {} more\n", s.num_warnings - s.warnings.size());
  }
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

void write_json(std::ostream& out, const profile::TfTimelineSummary& s) {
  JsonWriter json(out, JsonWriter::Layout::OneLine);
  json.begin_object();
  json.key("file");
  json.string(s.file);
  json.key("framework");
  json.string("tensorflow");
  json.key("device");
  json.string(s.device);
  json.key("ops");
  json.integer(s.ops);
  json.key("compute_time_s");
  json.number(s.compute_time);
  json.key("span_s");
  json.number(s.span);
  json.key("receives");
  json.integer(s.receives);
  json.key("sends");
  json.integer(s.sends);
  json.key("received_bytes");
  json.number(s.received_bytes);
  json.key("unsized_receives");
  json.integer(s.unsized_receives);
  const profile::MessageCostFit& f = s.receive_cost;
  json.key("message_cost");
  json.begin_object();
  json.key("messages");
  json.integer(f.messages);
  json.key("size_classes");
  json.integer(f.size_classes);
  json.key("overhead_s");
  if (f.overhead >= 0) {
    json.number(f.overhead);
  } else {
    json.raw("null");
  }
  json.key("bandwidth_bytes_per_s");
  if (f.bandwidth > 0) {
    json.number(f.bandwidth);
  } else {
    json.raw("null");
  }
  json.end_object();
  json.end_object();
  out << '\n';
}

void write_table(std::ostream& out, const profile::TfTimelineSummary& s) {
  fmt::memory_buffer buf;
  auto it = std::back_inserter(buf);
  fmt::format_to(it, "trace       {} (TensorFlow timeline)\n", s.file);
  fmt::format_to(it, "device      {}\n", s.device);
  fmt::format_to(it, "ops         {}, {} of compute over {} from the first op to the last\n",
                 format_count(s.ops, "op", "ops"), format_duration(s.compute_time), format_duration(s.span));
  fmt::format_to(it, "messages    {} ({}) and {} of the device's task\n",
                 format_count(s.receives, "receive", "receives"), format_bytes(s.received_bytes),
                 format_count(s.sends, "send", "sends"));
  if (s.unsized_receives > 0) {
    fmt::format_to(it, "            {} without a size (args.bytes): left out of the fit\n",
                   format_count(s.unsized_receives, "receive", "receives"));
  }
  const profile::MessageCostFit& f = s.receive_cost;
  if (f.overhead < 0) {
    buf.append(std::string_view("per message (no receive with a size to fit)\n"));
  } else {
    fmt::format_to(it, "per message {}{} (fitted through the fastest receive of each of {}, from {})\n",
                   format_duration(f.overhead),
                   f.bandwidth > 0 ? fmt::format(" + bytes / {}", format_byte_rate(f.bandwidth))
                                   : std::string(" (an upper bound: one size class, no bandwidth)"),
                   format_count(f.size_classes, "size class", "size classes"),
                   format_count(f.messages, "receive", "receives"));
    buf.append(
        std::string_view("            a pull's fixed cost: the link latency plus the CPU at both ends; set\n"
                         "            training.ps.message_overhead to about (it - cluster.rpc_latency or the "
                         "link latency) / 2\n"));
  }
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

}  // namespace stepcast::report
