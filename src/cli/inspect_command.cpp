// `stepcast inspect TRACE [--json]`: what a PyTorch profiler trace holds (framework, devices,
// ranks, steps, step time, GPU time split, collectives). Registered by main.cpp through
// add_inspect_command; errors are stepcast::Error, which main turns into exit code 2.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "stepcast/profile/trace_summary.hpp"
#include "stepcast/units.hpp"

namespace stepcast::cli {

namespace {

struct InspectArgs {
  std::string trace;
  bool json = false;
};

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

/// JSON has no NaN or infinity.
std::string json_number(double x) { return std::isfinite(x) ? fmt::format("{}", x) : "null"; }

std::string ms(double seconds) { return fmt::format("{:.3f} ms", seconds * 1e3); }

std::string percent(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : "-";
}

std::string json_stats(const profile::DurationStats& s) {
  return fmt::format(
      R"({{"count": {}, "mean": {}, "p50": {}, "p95": {}, "min": {}, "max": {}, "stddev": {}}})", s.count,
      json_number(s.mean), json_number(s.p50), json_number(s.p95), json_number(s.min), json_number(s.max),
      json_number(s.stddev));
}

void print_json(const profile::TraceSummary& s) {
  const auto& m = s.metadata;
  std::string out = "{";
  out += fmt::format("\"file\": {}, \"framework\": {}, ", json_string(s.file), json_string(m.framework));
  out += "\"devices\": [";
  for (size_t i = 0; i < m.devices.size(); ++i) {
    const auto& d = m.devices[i];
    const bool used = std::find(s.devices_used.begin(), s.devices_used.end(), d.id) != s.devices_used.end();
    out += fmt::format("{}{{\"id\": {}, \"name\": {}, \"memory_bytes\": {}, \"used\": {}}}", i ? ", " : "",
                       d.id, json_string(d.name), json_number(d.memory_bytes), used ? "true" : "false");
  }
  out += "], \"devices_used\": [";
  for (size_t i = 0; i < s.devices_used.size(); ++i)
    out += fmt::format("{}{}", i ? ", " : "", s.devices_used[i]);
  out += "], ";
  out += fmt::format("\"rank\": {}, \"world_size\": {}, \"backend\": {}, \"nccl_version\": {}, ",
                     m.rank ? std::to_string(*m.rank) : "null",
                     m.world_size ? std::to_string(*m.world_size) : "null", json_string(m.backend),
                     json_string(m.nccl_version));
  out += fmt::format("\"num_events\": {}, \"steps_found\": {}, \"steady_steps\": {}, ", s.num_events,
                     s.steps.size(), s.step_time.count);
  out += fmt::format("\"step_time_s\": {}, \"step_time_all_s\": {}, ", json_stats(s.step_time),
                     json_stats(s.step_time_all));
  out += "\"not_steady\": [";
  bool first = true;
  for (const auto& st : s.steps) {
    if (st.steady) continue;
    out += fmt::format("{}{}", first ? "" : ", ", json_string(st.name));
    first = false;
  }
  out += "], ";
  const auto& p = s.per_step;
  out += fmt::format(
      "\"per_step_s\": {{\"step\": {}, \"gpu_busy\": {}, \"compute\": {}, \"communication\": {}, "
      "\"overlap\": {}, "
      "\"compute_only\": {}, \"communication_exposed\": {}, \"idle\": {}, \"kernel_compute_sum\": {}, "
      "\"nccl_kernel_sum\": {}}}, ",
      json_number(p.step), json_number(p.gpu_busy), json_number(p.compute), json_number(p.communication),
      json_number(p.overlap), json_number(p.compute - p.overlap), json_number(p.communication - p.overlap),
      json_number(p.idle), json_number(p.kernel_compute_sum), json_number(p.nccl_kernel_sum));
  out += "\"steps\": [";
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const auto& st = s.steps[i];
    out += fmt::format(
        "{}{{\"name\": {}, \"number\": {}, \"start_s\": {}, \"duration_s\": {}, \"num_kernels\": {}, "
        "\"num_kernels_launched\": {}, \"kernel_compute_sum_s\": {}, \"nccl_kernel_sum_s\": {}, "
        "\"gpu_busy_s\": {}, "
        "\"compute_s\": {}, \"communication_s\": {}, \"overlap_s\": {}, \"idle_s\": {}, \"steady\": {}, "
        "\"note\": {}}}",
        i ? ", " : "", json_string(st.name), st.number, json_number(st.start), json_number(st.duration),
        st.num_kernels, st.num_kernels_launched, json_number(st.kernel_compute_sum),
        json_number(st.nccl_kernel_sum), json_number(st.gpu_busy), json_number(st.compute),
        json_number(st.communication), json_number(st.overlap), json_number(st.idle),
        st.steady ? "true" : "false", json_string(st.note));
  }
  out += "], \"collectives_by_type\": [";
  for (size_t i = 0; i < s.collective_groups.size(); ++i) {
    const auto& g = s.collective_groups[i];
    out += fmt::format(
        "{}{{\"collective\": {}, \"dtype\": {}, \"bytes\": {}, \"group_size\": {}, \"count\": {}, "
        "\"total_duration_s\": {}, \"mean_duration_s\": {}, \"min_duration_s\": {}, \"max_duration_s\": {}}}",
        i ? ", " : "", json_string(g.collective), json_string(g.dtype), json_number(g.bytes), g.group_size,
        g.count, json_number(g.total_duration), json_number(g.mean_duration), json_number(g.min_duration),
        json_number(g.max_duration));
  }
  out += "], \"collectives\": [";
  for (size_t i = 0; i < s.collectives.size(); ++i) {
    const auto& c = s.collectives[i];
    out += fmt::format(
        "{}{{\"step\": {}, \"collective\": {}, \"dtype\": {}, \"nelems\": {}, \"bytes\": {}, \"group_size\": "
        "{}, "
        "\"kernel\": {}, \"device\": {}, \"stream\": {}, \"start_s\": {}, \"duration_s\": {}}}",
        i ? ", " : "", json_string(c.step), json_string(c.collective), json_string(c.dtype), c.nelems,
        json_number(c.bytes), c.group_size, json_string(c.kernel_name), c.device, c.stream,
        json_number(c.start), json_number(c.duration));
  }
  out += fmt::format("], \"num_warnings\": {}, \"warnings\": [", s.num_warnings);
  for (size_t i = 0; i < s.warnings.size(); ++i)
    out += fmt::format("{}{}", i ? ", " : "", json_string(s.warnings[i]));
  out += "]}";
  fmt::print("{}\n", out);
}

void print_text(const profile::TraceSummary& s) {
  const auto& m = s.metadata;
  fmt::print("trace       {} ({} events)\n", s.file, s.num_events);
  fmt::print("framework   {}\n", m.framework);
  if (m.devices.empty()) {
    fmt::print("devices     (not recorded)\n");
  }
  for (size_t i = 0; i < m.devices.size(); ++i) {
    const auto& d = m.devices[i];
    const bool used = std::find(s.devices_used.begin(), s.devices_used.end(), d.id) != s.devices_used.end();
    fmt::print("{}GPU {}: {}, {} memory{}\n", i == 0 ? "devices     " : "            ", d.id, d.name,
               format_bytes(d.memory_bytes), used ? " (runs the kernels)" : "");
  }
  fmt::print("distributed rank {} of world size {}{}{}\n", m.rank ? std::to_string(*m.rank) : "?",
             m.world_size ? std::to_string(*m.world_size) : "?",
             m.backend.empty() ? "" : fmt::format(", backend {}", m.backend),
             m.nccl_version.empty() ? "" : fmt::format(" (NCCL {})", m.nccl_version));
  fmt::print("steps       {} found ({} .. {}), {} steady\n", s.steps.size(), s.steps.front().name,
             s.steps.back().name, s.step_time.count);
  for (const auto& st : s.steps) {
    if (!st.steady) fmt::print("            not steady: {} ({}): {}\n", st.name, ms(st.duration), st.note);
  }
  const auto& t = s.step_time;
  fmt::print("step time   mean {}, p50 {}, p95 {}, min {}, max {} (over {} steady steps)\n", ms(t.mean),
             ms(t.p50), ms(t.p95), ms(t.min), ms(t.max), t.count);
  // The step-to-step variation, as the straggler key takes it (population std / mean).
  if (t.count >= 2 && t.mean > 0) {
    fmt::print("            variation {:.2f}% (stddev / mean; workload.compute_cv: {:.4f})\n",
               100 * t.stddev / t.mean, t.stddev / t.mean);
  }
  fmt::print("\n");

  const auto& p = s.per_step;
  fmt::print("GPU time per step (mean over steady steps)   time        share of step\n");
  fmt::print("  step                                     {:>12}  {:>7}\n", ms(p.step),
             percent(p.step, p.step));
  fmt::print("  GPU busy                                 {:>12}  {:>7}\n", ms(p.gpu_busy),
             percent(p.gpu_busy, p.step));
  fmt::print("    compute only                           {:>12}  {:>7}\n", ms(p.compute - p.overlap),
             percent(p.compute - p.overlap, p.step));
  fmt::print("    communication only (exposed)           {:>12}  {:>7}\n", ms(p.communication - p.overlap),
             percent(p.communication - p.overlap, p.step));
  fmt::print("    communication overlapped with compute  {:>12}  {:>7}\n", ms(p.overlap),
             percent(p.overlap, p.step));
  fmt::print("  idle                                     {:>12}  {:>7}\n", ms(p.idle),
             percent(p.idle, p.step));
  fmt::print("  sum of kernel durations: compute {}, NCCL {}\n\n", ms(p.kernel_compute_sum),
             ms(p.nccl_kernel_sum));

  fmt::print("{:<18} {:>10} {:>9} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}  {}\n", "step", "time", "kernels",
             "GPU busy", "compute", "comm", "overlap", "idle", "NCCL sum", "steady");
  for (const auto& st : s.steps) {
    fmt::print("{:<18} {:>10} {:>9} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}  {}\n", st.name,
               ms(st.duration), st.num_kernels, ms(st.gpu_busy), ms(st.compute), ms(st.communication),
               ms(st.overlap), ms(st.idle), ms(st.nccl_kernel_sum), st.steady ? "yes" : "no");
  }
  if (s.collectives.empty()) {
    fmt::print("\ncollectives none (no NCCL kernels)\n");
  } else {
    fmt::print("\ncollectives {} NCCL kernels; by type and size:\n", s.collectives.size());
    fmt::print("  {:<16} {:<9} {:>12} {:>6} {:>6} {:>14} {:>14} {:>14}\n", "collective", "dtype", "bytes",
               "group", "count", "mean", "min", "max");
    for (const auto& g : s.collective_groups) {
      fmt::print("  {:<16} {:<9} {:>12} {:>6} {:>6} {:>14} {:>14} {:>14}\n", g.collective,
                 g.dtype.empty() ? "?" : g.dtype, g.bytes > 0 ? format_bytes(g.bytes) : "?",
                 g.group_size > 0 ? std::to_string(g.group_size) : "?", g.count, ms(g.mean_duration),
                 ms(g.min_duration), ms(g.max_duration));
    }
    fmt::print("  (every collective with its step, bytes and duration: --json)\n");
  }
  if (s.num_warnings > 0) {
    fmt::print("\nwarnings    {} events skipped\n", s.num_warnings);
    for (const auto& w : s.warnings) fmt::print("  {}\n", w);
    if (s.warnings.size() < s.num_warnings) fmt::print("  ... {} more\n", s.num_warnings - s.warnings.size());
  }
}

}  // namespace

/// Registers `inspect` on `app`; the returned function runs it once parsed. Throws
/// stepcast::Error for unreadable or invalid traces.
std::pair<CLI::App*, std::function<int()>> add_inspect_command(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand("inspect",
                                     "Show what a PyTorch profiler (Kineto) trace holds: steps, "
                                     "step time, GPU time split, collectives");
  cmd->add_option("trace", args->trace, "Trace file (.json or .json.gz)")->required();
  cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
  return {cmd, [args] {
            const profile::TraceSummary s = profile::summarize_kineto_file(args->trace);
            if (args->json) {
              print_json(s);
            } else {
              print_text(s);
            }
            return 0;
          }};
}

}  // namespace stepcast::cli
