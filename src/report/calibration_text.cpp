// The text forms of a calibration (calibration_report.hpp): the per-size error table, the
// header naming the source, model and fit, and the YAML scenario fragment of the fitted keys.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>

#include "stepcast/detail/report/calibration_report.hpp"

namespace stepcast::report {

using namespace stepcast::calibrate;

namespace {

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
/// A fraction in percent as the tables print it (one decimal): what rounds to zero is +0.0%, not
/// "-0.0%".
double percent(double fraction) { return std::abs(fraction * 100) < 0.05 ? 0.0 : fraction * 100; }

std::string regime_error_table(const Calibration& c, const std::string& prefix) {
  std::string out = fmt::format("{}{:>12} {:>14} {:>15} {:>8} {:>7} {:>9}  {}\n", prefix, "size (B)",
                                "measured (us)", "predicted (us)", "error", "regime", "LOO error", "");
  const std::vector<Regime>& regimes = c.regimes.regimes;
  for (const SizeError& e : c.sizes) {
    const auto j = &c.regimes.regime_for(e.bytes) - regimes.data() + 1;
    out += fmt::format("{}{:>12.0f} {:>14.1f} {:>15.1f} {:>+7.1f}% {:>7} {:>+8.1f}%  {}\n", prefix, e.bytes,
                       e.measured * 1e6, e.predicted * 1e6, percent(e.error), j, percent(e.loo_error),
                       e.used ? "fit" : "");
  }
  if (c.summary_count > 0) {
    out += fmt::format(
        "{}sizes >= {:.0f} B, each predicted leave-one-out (by a fit that did not see it): "
        "median |error| {:.1f}%, max {:.1f}% over {} sizes\n",
        prefix, c.options.report_min_bytes, c.median_error * 100, c.max_error * 100, c.summary_count);
  } else {
    out += fmt::format("{}no size >= {:.0f} B to score\n", prefix, c.options.report_min_bytes);
  }
  return strip_trailing_spaces(out);
}

// The model, fit, cross-validation scores and regimes lines of calibration_header.
std::string regime_summary(const Calibration& c, int count, double first_used, double last_used,
                           const std::string& prefix) {
  const RegimeFit& fit = c.regimes;
  const int n = fit.workers;
  std::string out = prefix +
                    "model: ring all-reduce in size regimes, t(S) = 2(N-1) a_j + 2(N-1)/N S / B_j, "
                    "regime j the last whose from-size <= S\n";
  out += fmt::format(
      "{}fit: regimes ({} sizes from {:.0f} B to {:.0f} B, relative error, >= {} sizes per regime); "
      "{} of at most {} regimes, chosen by leave-one-out{}\n",
      prefix, count, first_used, last_used, kMinRegimeSizes, fit.regimes.size(), c.options.max_regimes,
      c.latency_clamped ? "; a < 0 clamped to 0 where marked" : "");
  std::string scores;
  for (size_t k = 0; k < c.regime_scores.size(); ++k) {
    const double score = c.regime_scores[k];
    scores += fmt::format("{}{} {}", k == 0 ? "" : ", ", k + 1,
                          std::isfinite(score) ? fmt::format("{:.3g}%", score * 100) : "-");
    if (k + 1 == fit.regimes.size()) scores += " (chosen)";
  }
  out += fmt::format("{}leave-one-out mean |error| by number of regimes: {}\n", prefix, scores);
  out += fmt::format("{}{:>6} {:>12}  {:<27} {:>12} {:>13} {:>10}\n", prefix, "regime", "from (B)",
                     "fitted sizes (B)", "a (us/step)", "2(N-1)a (us)", "B (GB/s)");
  for (size_t j = 0; j < fit.regimes.size(); ++j) {
    const Regime& r = fit.regimes[j];
    out += fmt::format(
        "{}{:>6} {:>12.0f}  {:<27} {:>12.6g} {:>13.6g} {:>10.6g}{}\n", prefix, j + 1, r.from_bytes,
        fmt::format("{:.0f} - {:.0f} ({})", r.first_bytes, r.last_bytes, r.count), r.step_latency * 1e6,
        2 * (n - 1) * r.step_latency * 1e6, r.bw / 1e9, r.latency_clamped ? "  a < 0 clamped" : "");
  }
  out += fmt::format(
      "{}links: a = {:.6g} us, B = {:.6g} GB/s (min a_j, max B_j); each regime caps a step's transfers at "
      "B_j and makes the step last >= a_j\n",
      prefix, c.fit.step_latency * 1e6, c.fit.bw / 1e9);
  return out;
}

}  // namespace

std::string error_table(const Calibration& c, const std::string& prefix) {
  if (c.options.method == FitMethod::Regimes) return regime_error_table(c, prefix);
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
  const cluster::ClusterSpec spec = c.options.method == FitMethod::Nccl
                                        ? c.nccl.spec(fit.workers)
                                        : apply_fit(fit, source.workers_per_node);

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
  if (c.options.method == FitMethod::LeastSquares || c.options.method == FitMethod::Nccl) {
    used = fmt::format("{} sizes from {:.0f} B to {:.0f} B, relative error", count,
                       c.sizes.empty() ? 0.0 : first_used, last_used);
  }
  std::string out;
  const std::string_view placement = source.format != LogFormat::NcclTests       ? ""
                                     : source.placement == Placement::OutOfPlace ? ", out-of-place times"
                                                                                 : ", in-place times";
  out += fmt::format("{}source: {} ({}{}), {} workers, {} per node\n", prefix, source.file,
                     to_string(source.format), placement, fit.workers, spec.workers_per_node);
  if (c.options.method == FitMethod::Regimes) {
    out += regime_summary(c, count, first_used, last_used, prefix);
  } else if (c.options.method == FitMethod::Nccl) {
    out += prefix +
           "model: NCCL's tuning model as `training.allreduce.algorithm: auto` runs it: ring or tree, LL, "
           "LL128 or\n" +
           prefix +
           "  Simple, the fastest for each size; NCCL 2.18's latency constants x lambda, node NIC B\n";
    out += fmt::format("{}fit: nccl ({})\n", prefix, used);
    out +=
        fmt::format("{}B = {:.6g} GB/s per NIC{}, {} per node (intra-node links {:g} x B), lambda = {:.4g}\n",
                    prefix, c.nccl.nic_bw / 1e9, c.options.nic_bw > 0 ? " (given)" : "", spec.nics_per_node,
                    calibrate::kNcclIntraToNic, c.nccl.latency_scale);
    // What holds at every node count (fitted) apart from what changes with it, and which of the
    // latter the sweeps identified.
    const size_t counts = std::max<size_t>(1, c.node_counts.size());
    out += fmt::format(
        "{}the same at every node count (fitted): {}lambda (base latencies, hops inside a node){}\n", prefix,
        c.options.nic_bw > 0 ? "" : "B, ", c.nccl.channels_bw > 0 ? ", the channels' speed" : "");
    if (c.nccl.net_latency_scale) {
      out += fmt::format(
          "{}changes with the node count M: network hops (ring 2(M-1), tree 2 floor(log2 M)) x NCCL's hop "
          "latency x lambda_net = {:.4g}, fitted across {} node counts\n",
          prefix, *c.nccl.net_latency_scale, counts);
    } else {
      out += fmt::format(
          "{}changes with the node count M: network hops (ring 2(M-1), tree 2 floor(log2 M)) x NCCL's hop "
          "latency x lambda; not identified\n{}  from one node count (its own scale needs sweeps at two "
          "or more: `calibrate nccl-tests a.log b.log --workers N1,N2`)\n",
          prefix, prefix);
    }
    out += fmt::format(
        "{}not identified from the sweep{}, kept as NCCL's: channels per NIC (NCCL's rule: {} at this node "
        "count), the\n{}  protocol caps by node count (NCCL's tables), the protocol switch points (NCCL's "
        "tuner picks the\n{}  fastest; a network plugin's own thresholds are not modelled)\n",
        prefix, counts > 1 ? "s" : "", cluster::nccl_channels(spec), prefix, prefix);
    NcclFit table_fit = c.nccl;
    table_fit.latency_scale = 1;
    table_fit.ll_bw = 0;
    const double table_ll =
        cluster::nccl_max_bw(table_fit.spec(fit.workers), false, cluster::NcclProtocol::LL);
    out += fmt::format(
        "{}LL's cap = {:.6g} GB/s of bus bandwidth ({}); NCCL's table at {} nodes: {:.6g} GB/s; the sweep\n",
        prefix, cluster::nccl_max_bw(spec, false, cluster::NcclProtocol::LL) / 1e9,
        c.nccl.ll_bw > 0 ? "fitted" : "NCCL's table", spec.num_worker_nodes(), table_ll / 1e9);
    out += fmt::format(
        "{}  alone puts it at {:.6g} GB/s, {:.1f}% less squared error ({} above {:g}%); other caps: NCCL's\n",
        prefix, c.nccl_ll_fitted_bw / 1e9, 100 * c.nccl_ll_gain, c.nccl.ll_bw > 0 ? "taken" : "taken only",
        calibrate::kNcclCapGain * 100);
    out +=
        fmt::format("{}  tables x {} channels (NCCL's rule for B)\n", prefix, cluster::nccl_channels(spec));
    out += fmt::format(
        "{}the channels' speed (a cap on every protocol's bus bandwidth x its efficiency): {}; the sweep{}\n"
        "{}  put it at {:.6g} GB/s, {:.1f}% less squared error ({} above {:g}%)\n",
        prefix,
        c.nccl.channels_bw > 0 ? fmt::format("{:.6g} GB/s", c.nccl.channels_bw / 1e9) : std::string("none"),
        counts > 1 ? "s" : "", prefix, c.nccl_channels_fitted_bw / 1e9, 100 * c.nccl_channels_gain,
        c.nccl.channels_bw > 0 ? "taken" : "taken only", calibrate::kNcclCapGain * 100);
  } else {
    out += prefix + "model: ring all-reduce, t(S) = 2(N-1) a + 2(N-1)/N S / B\n";
    out += fmt::format("{}fit: {} ({}){}\n", prefix, to_string(c.options.method), used,
                       c.latency_clamped ? "; a < 0 clamped to 0" : "");
    out += fmt::format("{}a = {:.6g} us per ring step, B = {:.6g} GB/s per ring step (bus bandwidth)\n",
                       prefix, fit.step_latency * 1e6, fit.bw / 1e9);
  }
  out += prefix + "\n";
  out += error_table(c, prefix);
  for (const NodeCountScore& n : c.node_counts) {
    out += fmt::format(
        "{}{} nodes ({} ranks): median |error| {:.1f}%, max {:.1f}% over {} sizes >= {:.0f} B{}\n", prefix,
        n.nodes, n.workers, n.median_error * 100, n.max_error * 100, n.summary_count,
        c.options.report_min_bytes,
        std::all_of(n.sizes.begin(), n.sizes.end(), [](const SizeError& e) { return e.used; })
            ? " (in sample)"
            : "");
  }
  return strip_trailing_spaces(out);
}

/// The keys of an NCCL fit: the node NICs (bandwidth and count), the GPU generation and host CPU
/// that pick NCCL's tables, the intra-node links, every latency constant scaled, and algorithm auto (so that
/// a scenario including the file runs NCCL's choice).
std::string nccl_yaml(const Calibration& c, const CalibrationSource& source) {
  const cluster::ClusterSpec spec = c.nccl.spec(c.nccl.workers);
  std::string out =
      "# Calibrated by `stepcast calibrate nccl-tests --fit nccl` from a measured all-reduce sweep.\n";
  out += calibration_header(c, source, "# ");
  out += "cluster:\n";
  out += fmt::format("  workers: {}\n", spec.workers);
  out += fmt::format("  workers_per_node: {}\n", spec.workers_per_node);
  out += fmt::format("  nic_bandwidth: {}  # B\n", bandwidth_value(spec.nic_bw));
  // What the fit ran with besides B: the NICs B is each of, and what picks NCCL's tables and
  // channel rule. Without them a scenario including the file gets the defaults (1 NIC, hopper,
  // intel) and no longer reproduces the fit.
  out += fmt::format("  nics_per_node: {}\n", spec.nics_per_node);
  out += fmt::format("  gpu:\n    generation: {}\n", cluster::to_string(spec.gpu_generation));
  out += fmt::format("  cpu:\n    vendor: {}\n", cluster::to_string(spec.cpu_vendor));
  out += "  intra_node:\n";
  out += fmt::format(
      "    bandwidth: {}  # {:g} x B so the network stays the bottleneck; raise to the real link figure\n",
      bandwidth_value(spec.intra_node_bw), calibrate::kNcclIntraToNic);
  out +=
      c.nccl.net_latency_scale
          ? fmt::format(
                "  nccl:  # NCCL 2.18's latency constants x lambda = {:.6g}, network hops x lambda_net = "
                "{:.6g}\n",
                c.nccl.latency_scale, *c.nccl.net_latency_scale)
          : fmt::format("  nccl:  # NCCL 2.18's latency constants x lambda = {:.6g}\n", c.nccl.latency_scale);
  for (const bool tree : {false, true}) {
    out += fmt::format("    {}:\n", tree ? "tree" : "ring");
    for (int p = 0; p < cluster::kNcclProtocols; ++p) {
      const cluster::NcclCost& cost = (tree ? spec.nccl.tree : spec.nccl.ring)[p];
      const std::string key = cluster::nccl_key(tree, static_cast<cluster::NcclProtocol>(p));
      out += fmt::format("      {}:\n", key.substr(key.rfind('.') + 1));
      out += fmt::format("        base_latency: {}\n", duration_value(cost.base_latency));
      out += "        hop_latency:\n";
      out += fmt::format("          nvlink: {}\n",
                         duration_value(cost.hop_latency[static_cast<int>(cluster::NcclHop::NvLink)]));
      out += fmt::format("          pcie: {}\n",
                         duration_value(cost.hop_latency[static_cast<int>(cluster::NcclHop::Pcie)]));
      out += fmt::format("          net: {}\n",
                         duration_value(cost.hop_latency[static_cast<int>(cluster::NcclHop::Net)]));
      if (cost.max_bw) {
        out += c.nccl.channels_bw > 0
                   ? fmt::format(
                         "        max_bw: {}  # the channels' speed x efficiency (fitted), under "
                         "NCCL's table\n",
                         bandwidth_value(*cost.max_bw))
                   : fmt::format(
                         "        max_bw: {}  # fitted (LL's cap); NCCL's table follows the node count\n",
                         bandwidth_value(*cost.max_bw));
      }
    }
  }
  out += "training:\n  allreduce:\n    algorithm: auto  # protocol auto follows\n";
  return out;
}

std::string calibration_yaml(const Calibration& c, const CalibrationSource& source) {
  if (c.options.method == FitMethod::Nccl) return nccl_yaml(c, source);
  const cluster::ClusterSpec defaults;
  const bool regimes = c.options.method == FitMethod::Regimes;
  const cluster::ClusterSpec spec = regimes ? apply_regime_fit(c.regimes, source.workers_per_node, defaults)
                                            : apply_fit(c.fit, source.workers_per_node, defaults);
  const bool one_node = spec.workers_per_node == spec.workers;
  // What the link keys hold: the fit's (a, B), or with regimes the fastest of them.
  const std::string_view b = regimes ? "max B_j" : "B";
  const std::string_view a = regimes ? "min a_j" : "a";
  std::string out = "# Calibrated by `stepcast calibrate nccl-tests` from a measured all-reduce sweep.\n";
  out += calibration_header(c, source, "# ");
  out += "cluster:\n";
  out += fmt::format("  workers: {}\n", spec.workers);
  out += fmt::format("  workers_per_node: {}\n", spec.workers_per_node);
  if (one_node) {
    out += "  intra_node:\n";
    out += fmt::format("    bandwidth: {}  # {}: all ring hops are inside the node\n",
                       bandwidth_value(spec.intra_node_bw), b);
    out += fmt::format("    latency: {}  # {}: charged once per ring step\n",
                       duration_value(spec.intra_node_latency), a);
  } else {
    out += fmt::format("  nic_bandwidth: {}  # {}: the ring step's bottleneck, put on the node-to-node hop\n",
                       bandwidth_value(spec.nic_bw), b);
    out += fmt::format("  link_latency: {}  # {}: a ring step pays its slowest hop's latency once\n",
                       duration_value(spec.latency), a);
    const bool raise_bw = spec.intra_node_bw != defaults.intra_node_bw;
    const bool lower_latency = spec.intra_node_latency != defaults.intra_node_latency;
    if (raise_bw || lower_latency) {
      out += "  intra_node:\n";
      if (raise_bw) {
        out += fmt::format(
            "    bandwidth: {}  # at least {} so the NIC hop stays the bottleneck; "
            "raise to the real link figure\n",
            bandwidth_value(spec.intra_node_bw), b);
      }
      if (lower_latency) {
        out += fmt::format("    latency: {}  # at most {} so the NIC hop's latency is the slowest\n",
                           duration_value(spec.intra_node_latency), a);
      }
    }
  }
  if (regimes) {
    out +=
        "  # From SIZE (bytes of the all-reduce) up: each ring step's transfers move at most BANDWIDTH\n"
        "  # (B_j) and the step lasts at least LATENCY (a_j) after they end.\n";
    out += "  collective_regimes:\n";
    for (const Regime& r : c.regimes.regimes) {
      out += fmt::format("    - \"{} {} {}\"  # fitted on {:.0f} B - {:.0f} B ({} sizes)\n",
                         fmt::format("{:.0f}B", r.from_bytes), duration_value(r.step_latency),
                         bandwidth_value(r.bw), r.first_bytes, r.last_bytes, r.count);
    }
  }
  return out;
}

}  // namespace stepcast::report
