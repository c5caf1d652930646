// The alpha-beta fit of the ring all-reduce and its translation into scenario keys.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "stepcast/calibrate/ring_calibration.hpp"
#include "stepcast/error.hpp"

namespace stepcast::calibrate {

namespace {

// t = x0 * steps + x1 * volume with x0 = a, x1 = 1/B: both coefficients are known per size.
struct Row {
  double steps = 0;   // 2(N-1)
  double volume = 0;  // 2(N-1)/N S, bytes each rank sends
  double time = 0;    // s
};

Row row(const Measurement& m, int workers) {
  const double n = workers;
  return {2 * (n - 1), 2 * (n - 1) / n * m.bytes, m.time};
}

struct Solution {
  double a = 0;
  double inverse_bw = 0;
};

// Weighted least squares on the 2x2 normal equations, weight 1/t^2: minimises the sum of
// squared relative errors, so a microsecond-scale size counts as much as a 50 ms one.
Solution least_squares(const std::vector<Row>& rows) {
  double s00 = 0, s01 = 0, s11 = 0, r0 = 0, r1 = 0;
  for (const Row& r : rows) {
    const double w = 1 / (r.time * r.time);
    s00 += w * r.steps * r.steps;
    s01 += w * r.steps * r.volume;
    s11 += w * r.volume * r.volume;
    r0 += w * r.steps * r.time;
    r1 += w * r.volume * r.time;
  }
  const double det = s00 * s11 - s01 * s01;
  if (det == 0) return {0, r1 / s11};
  return {(r0 * s11 - s01 * r1) / det, (s00 * r1 - s01 * r0) / det};
}

// With a = 0 only B is left: the same weighted least squares in one unknown.
double inverse_bw_without_latency(const std::vector<Row>& rows) {
  double num = 0, den = 0;
  for (const Row& r : rows) {
    const double w = 1 / (r.time * r.time);
    num += w * r.volume * r.time;
    den += w * r.volume * r.volume;
  }
  return num / den;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// "339.797GB/s": six significant digits in a unit that keeps the number between 1 and 1000,
/// so parse_bandwidth reads it back within 5e-7.
std::string bandwidth_value(double bytes_per_second) {
  if (bytes_per_second >= 1e9) return fmt::format("{:.6g}GB/s", bytes_per_second / 1e9);
  if (bytes_per_second >= 1e6) return fmt::format("{:.6g}MB/s", bytes_per_second / 1e6);
  if (bytes_per_second >= 1e3) return fmt::format("{:.6g}kB/s", bytes_per_second / 1e3);
  return fmt::format("{:.6g}B/s", bytes_per_second);
}

std::string duration_value(double seconds) {
  if (seconds == 0) return "0us";
  if (seconds >= 1e-3) return fmt::format("{:.6g}ms", seconds * 1e3);
  if (seconds >= 1e-6) return fmt::format("{:.6g}us", seconds * 1e6);
  return fmt::format("{:.6g}ns", seconds * 1e9);
}

// Table cells are padded; a line's trailing padding (and the "# " of an empty comment line)
// is dropped so the written file has no trailing whitespace.
std::string strip_trailing_spaces(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\n') {
      while (!out.empty() && out.back() == ' ') out.pop_back();
    }
    out += c;
  }
  return out;
}

// Percent with the sign of a rounding-level error dropped, so an exact fit prints +0.0%.
double percent(double fraction) { return std::abs(fraction) < 5e-7 ? 0.0 : fraction * 100; }

std::string method_name(FitMethod method) {
  return method == FitMethod::Endpoints ? "endpoints" : "least-squares";
}

}  // namespace

double RingFit::time(double bytes) const {
  const double n = workers;
  return 2 * (n - 1) * step_latency + 2 * (n - 1) / n * bytes / bw;
}

Calibration calibrate_ring(const std::vector<Measurement>& points, int workers, const FitOptions& options) {
  if (workers < 2) {
    throw Error({"", 0, "--workers"},
                fmt::format("expected at least 2 workers for an all-reduce, got {}", workers));
  }
  std::vector<Measurement> eligible;
  for (const Measurement& m : points) {
    if (m.bytes >= options.min_bytes && m.bytes <= options.max_bytes) eligible.push_back(m);
  }
  std::sort(eligible.begin(), eligible.end(),
            [](const Measurement& a, const Measurement& b) { return a.bytes < b.bytes; });
  if (eligible.size() < 2 || eligible.front().bytes == eligible.back().bytes) {
    throw Error(
        {"", 0, "--min-size"},
        fmt::format("expected at least two distinct sizes in [{}, {}] B to fit latency and bandwidth, got {}",
                    options.min_bytes, options.max_bytes, eligible.size()));
  }
  std::vector<Measurement> used;
  if (options.method == FitMethod::Endpoints) {
    used = {eligible.front(), eligible.back()};
  } else {
    used = eligible;
  }
  std::vector<Row> rows;
  for (const Measurement& m : used) rows.push_back(row(m, workers));

  Calibration c;
  c.options = options;
  c.fit.workers = workers;
  // Two sizes give (a, 1/B) exactly; least squares on two rows is the same solve.
  Solution s = least_squares(rows);
  if (s.a < 0) {
    // A negative fixed cost has no meaning for the simulator (it would shorten every step);
    // it happens when the eligible small sizes run faster than the line through the large
    // ones, e.g. with --min-size in the middle of a protocol switch.
    c.latency_clamped = true;
    s = {0, inverse_bw_without_latency(rows)};
  }
  if (!(s.inverse_bw > 0) || !std::isfinite(s.inverse_bw)) {
    throw Error({"", 0, ""},
                fmt::format("the measured time does not grow with the size between {} B and {} B; "
                            "no positive bandwidth fits",
                            used.front().bytes, used.back().bytes));
  }
  c.fit.step_latency = s.a;
  c.fit.bw = 1 / s.inverse_bw;

  std::vector<double> held_out, in_sample;
  for (const Measurement& m : points) {
    SizeError e;
    e.bytes = m.bytes;
    e.measured = m.time;
    e.predicted = c.fit.time(m.bytes);
    e.error = (e.predicted - e.measured) / e.measured;
    e.used = std::any_of(used.begin(), used.end(), [&](const Measurement& u) { return u.bytes == m.bytes; });
    e.line = m.line;
    if (m.bytes >= options.report_min_bytes) (e.used ? in_sample : held_out).push_back(std::abs(e.error));
    c.sizes.push_back(e);
  }
  std::sort(c.sizes.begin(), c.sizes.end(),
            [](const SizeError& a, const SizeError& b) { return a.bytes < b.bytes; });
  const std::vector<double>& summary = held_out.empty() ? in_sample : held_out;
  c.summary_in_sample = held_out.empty();
  c.summary_count = static_cast<int>(summary.size());
  if (!summary.empty()) {
    c.median_error = median(summary);
    c.max_error = *std::max_element(summary.begin(), summary.end());
  }
  return c;
}

cluster::ClusterSpec apply_fit(const RingFit& fit, int workers_per_node, cluster::ClusterSpec base) {
  STEPCAST_ASSERT(workers_per_node >= 1 && fit.bw > 0 && fit.step_latency >= 0);
  base.workers = fit.workers;
  base.workers_per_node = std::min(workers_per_node, fit.workers);
  if (base.workers_per_node == fit.workers) {
    // One node: every ring hop is GPU to GPU over the intra-node links, whose latency the
    // simulator charges once per hop (half on the sender's link, half on the receiver's).
    base.intra_node_bw = fit.bw;
    base.intra_node_latency = fit.step_latency;
  } else {
    // Several nodes: a ring step lasts until its slowest member is done, i.e. the node-to-node
    // hop at min(nic_bw, intra_node_bw) plus max(latency, intra_node_latency). An all-reduce
    // alone cannot tell the two hops apart, so the fit goes on the NIC hop, and the intra-node
    // link is kept from being the bottleneck.
    base.nic_bw = fit.bw;
    base.latency = fit.step_latency;
    if (base.workers_per_node > 1) {
      base.intra_node_bw = std::max(base.intra_node_bw, fit.bw);
      base.intra_node_latency = std::min(base.intra_node_latency, fit.step_latency);
    }
  }
  return base;
}

std::string error_table(const Calibration& c, const std::string& prefix) {
  std::string out = fmt::format("{}{:>12} {:>14} {:>15} {:>8}  {}\n", prefix, "size (B)", "measured (us)",
                                "predicted (us)", "error", "");
  for (const SizeError& e : c.sizes) {
    out += fmt::format("{}{:>12.0f} {:>14.1f} {:>15.1f} {:>+7.1f}%  {}\n", prefix, e.bytes, e.measured * 1e6,
                       e.predicted * 1e6, percent(e.error), e.used ? "fit" : "");
  }
  if (c.summary_count > 0) {
    out += fmt::format("{}sizes >= {:.0f} B {}: median |error| {:.1f}%, max {:.1f}% over {} sizes\n", prefix,
                       c.options.report_min_bytes,
                       c.summary_in_sample ? "(all used in the fit)" : "not used in the fit",
                       c.median_error * 100, c.max_error * 100, c.summary_count);
  } else {
    out += fmt::format("{}no size >= {:.0f} B to score\n", prefix, c.options.report_min_bytes);
  }
  return strip_trailing_spaces(out);
}

std::string calibration_header(const Calibration& c, const CalibrationSource& source,
                               const std::string& prefix) {
  const RingFit& fit = c.fit;
  const cluster::ClusterSpec spec = apply_fit(fit, source.workers_per_node);

  std::string used;
  int count = 0;
  double first_used = 0, last_used = 0;
  for (const SizeError& e : c.sizes) {
    if (!e.used) continue;
    if (count == 0) first_used = e.bytes;
    last_used = e.bytes;
    used += fmt::format("{}{:.0f} B", count == 0 ? "" : " and ", e.bytes);
    ++count;
  }
  if (c.options.method == FitMethod::LeastSquares) {
    used = fmt::format("{} sizes from {:.0f} B to {:.0f} B, relative error", count,
                       c.sizes.empty() ? 0.0 : first_used, last_used);
  }
  std::string out;
  const std::string_view placement = source.format != LogFormat::NcclTests       ? ""
                                     : source.placement == Placement::OutOfPlace ? ", out-of-place times"
                                                                                 : ", in-place times";
  out += fmt::format("{}source: {} ({}{}), {} workers, {} per node\n", prefix, source.file,
                     to_string(source.format), placement, fit.workers, spec.workers_per_node);
  out += prefix + "model: ring all-reduce, t(S) = 2(N-1) a + 2(N-1)/N S / B\n";
  out += fmt::format("{}fit: {} ({}){}\n", prefix, method_name(c.options.method), used,
                     c.latency_clamped ? "; a < 0 clamped to 0" : "");
  out += fmt::format("{}a = {:.6g} us per ring step, B = {:.6g} GB/s per ring step (bus bandwidth)\n", prefix,
                     fit.step_latency * 1e6, fit.bw / 1e9);
  out += prefix + "\n";
  out += error_table(c, prefix);
  return strip_trailing_spaces(out);
}

std::string calibration_yaml(const Calibration& c, const CalibrationSource& source) {
  const cluster::ClusterSpec defaults;
  const cluster::ClusterSpec spec = apply_fit(c.fit, source.workers_per_node, defaults);
  const bool one_node = spec.workers_per_node == spec.workers;
  std::string out = "# Calibrated by `stepcast calibrate nccl-tests` from a measured all-reduce sweep.\n";
  out += calibration_header(c, source, "# ");
  out += "cluster:\n";
  out += fmt::format("  workers: {}\n", spec.workers);
  out += fmt::format("  workers_per_node: {}\n", spec.workers_per_node);
  if (one_node) {
    out += "  intra_node:\n";
    out += fmt::format("    bandwidth: {}  # B: all ring hops are inside the node\n",
                       bandwidth_value(spec.intra_node_bw));
    out += fmt::format("    latency: {}  # a: charged once per ring step\n",
                       duration_value(spec.intra_node_latency));
    return out;
  }
  out += fmt::format("  nic_bandwidth: {}  # B: the ring step's bottleneck, put on the node-to-node hop\n",
                     bandwidth_value(spec.nic_bw));
  out += fmt::format("  link_latency: {}  # a: a ring step pays its slowest hop's latency once\n",
                     duration_value(spec.latency));
  const bool raise_bw = spec.intra_node_bw != defaults.intra_node_bw;
  const bool lower_latency = spec.intra_node_latency != defaults.intra_node_latency;
  if (raise_bw || lower_latency) {
    out += "  intra_node:\n";
    if (raise_bw) {
      out += fmt::format(
          "    bandwidth: {}  # at least B so the NIC hop stays the bottleneck; "
          "raise to the real link figure\n",
          bandwidth_value(spec.intra_node_bw));
    }
    if (lower_latency) {
      out += fmt::format("    latency: {}  # at most a so the NIC hop's latency is the slowest\n",
                         duration_value(spec.intra_node_latency));
    }
  }
  return out;
}

}  // namespace stepcast::calibrate
