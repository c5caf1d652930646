// The alpha-beta fit of the ring all-reduce and its translation into scenario keys.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <tuple>

#include "stepcast/detail/calibrate/ring_calibration.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/error.hpp"
#include "stepcast/units.hpp"

namespace stepcast::calibrate {

namespace {

/// The sizes a fit may use, in words after a space: " from 2 GB up", " up to 16 MB", " from 1 MB
/// to 16 MB", or "" when any size may (not "in [2000000000, inf] B").
std::string size_range(const FitOptions& o) {
  const bool capped = std::isfinite(o.max_bytes);
  if (o.min_bytes > 0 && capped)
    return fmt::format(" from {} to {}", format_bytes(o.min_bytes), format_bytes(o.max_bytes));
  if (o.min_bytes > 0) return fmt::format(" from {} up", format_bytes(o.min_bytes));
  if (capped) return fmt::format(" up to {}", format_bytes(o.max_bytes));
  return "";
}

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
Solution least_squares(std::span<const Row> rows) {
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
double inverse_bw_without_latency(std::span<const Row> rows) {
  double num = 0, den = 0;
  for (const Row& r : rows) {
    const double w = 1 / (r.time * r.time);
    num += w * r.volume * r.time;
    den += w * r.volume * r.volume;
  }
  return num / den;
}

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Regimes: the smallest number of regimes whose leave-one-out score is within this factor of the
// best is chosen, so a regime that barely helps is not added. The score is the mean |relative
// error|, not the RMS: a sweep's few outlier sizes (XLA's table has two latency-bound sizes 35-45%
// faster than their neighbours, which no regime predicts) would dominate an RMS and hide what
// a regime gains on every other size.
constexpr double kRegimeScoreSlack = 1.05;

// The ring line of one contiguous range of sizes: relative least squares, a < 0 clamped to 0.
struct SegmentFit {
  Solution s;
  bool clamped = false;
  double cost = kInfinity;  // sum of squared relative errors; infinity when no positive B fits
};

SegmentFit fit_segment(std::span<const Row> rows) {
  SegmentFit f;
  f.s = least_squares(rows);
  if (f.s.a < 0) {
    f.clamped = true;
    f.s = {0, inverse_bw_without_latency(rows)};
  }
  if (!(f.s.inverse_bw > 0) || !std::isfinite(f.s.inverse_bw) || !std::isfinite(f.s.a)) return f;
  f.cost = 0;
  for (const Row& r : rows) {
    const double e = (r.steps * f.s.a + r.volume * f.s.inverse_bw - r.time) / r.time;
    f.cost += e * e;
  }
  return f;
}

// Rows [begin, end) of a sweep sorted by size, and their fit.
struct Segment {
  size_t begin = 0;
  size_t end = 0;
  SegmentFit fit;
};

// The split of `rows` (ascending size) into k contiguous ranges of at least kMinRegimeSizes rows
// that minimises the summed cost, for every k in 1..max_k, by dynamic programming over the
// range ends; result[k - 1] is empty when no such split has a finite cost. Ties go to the split
// whose ranges end first, so the result is deterministic.
std::vector<std::vector<Segment>> best_segmentations(std::span<const Row> rows, int max_k) {
  const size_t n = rows.size();
  const auto k_count = static_cast<size_t>(max_k);
  // fits[i][j]: the fit of rows [i, j), for j - i >= kMinRegimeSizes.
  std::vector<std::vector<SegmentFit>> fits(n + 1, std::vector<SegmentFit>(n + 1));
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + kMinRegimeSizes; j <= n; ++j) fits[i][j] = fit_segment(rows.subspan(i, j - i));
  }
  // cost[k][j]: the least cost of k ranges covering rows [0, j); start[k][j]: where the last begins.
  std::vector<std::vector<double>> cost(k_count + 1, std::vector<double>(n + 1, kInfinity));
  std::vector<std::vector<size_t>> start(k_count + 1, std::vector<size_t>(n + 1, 0));
  cost[0][0] = 0;
  for (size_t k = 1; k <= k_count; ++k) {
    for (size_t j = k * kMinRegimeSizes; j <= n; ++j) {
      for (size_t i = (k - 1) * kMinRegimeSizes; i + kMinRegimeSizes <= j; ++i) {
        const double c = cost[k - 1][i] + fits[i][j].cost;
        if (c < cost[k][j]) {
          cost[k][j] = c;
          start[k][j] = i;
        }
      }
    }
  }
  std::vector<std::vector<Segment>> result(k_count);
  for (size_t k = 1; k <= k_count; ++k) {
    if (!std::isfinite(cost[k][n])) continue;
    std::vector<Segment>& segments = result[k - 1];
    for (size_t j = n, kk = k; kk > 0; --kk) {
      const size_t i = start[kk][j];
      segments.push_back({i, j, fits[i][j]});
      j = i;
    }
    std::reverse(segments.begin(), segments.end());
  }
  return result;
}

// The regimes of `segments` over sizes `bytes` (ascending, one per row).
RegimeFit make_regime_fit(int workers, std::span<const double> bytes, const std::vector<Segment>& segments) {
  RegimeFit fit{workers, {}};
  for (const Segment& seg : segments) {
    Regime r;
    r.first_bytes = bytes[seg.begin];
    r.last_bytes = bytes[seg.end - 1];
    r.count = static_cast<int>(seg.end - seg.begin);
    // Whole bytes, so that the printed table, the written keys and the simulator agree exactly.
    r.from_bytes =
        fit.regimes.empty() ? 0 : std::round(std::sqrt(fit.regimes.back().last_bytes * r.first_bytes));
    r.step_latency = seg.fit.s.a;
    r.bw = 1 / seg.fit.s.inverse_bw;
    r.latency_clamped = seg.fit.clamped;
    fit.regimes.push_back(r);
  }
  return fit;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A size's measured and predicted time; the leave-one-out fields are left to the caller.
SizeError score(const Measurement& m, double predicted, bool used) {
  SizeError e;
  e.bytes = m.bytes;
  e.measured = m.time;
  e.predicted = predicted;
  e.error = (predicted - m.time) / m.time;
  e.used = used;
  e.line = m.line;
  return e;
}

// Median and max of |error| (or of |loo_error| with `loo`) over the sizes >= report_min_bytes
// that `scored` admits.
template <typename Scored>
void summarise(Calibration& c, bool loo, Scored scored) {
  std::vector<double> summary;
  for (const SizeError& e : c.sizes) {
    if (e.bytes >= c.options.report_min_bytes && scored(e)) {
      summary.push_back(std::abs(loo ? e.loo_error : e.error));
    }
  }
  c.summary_count = static_cast<int>(summary.size());
  if (!summary.empty()) {
    c.median_error = median(summary);
    c.max_error = *std::max_element(summary.begin(), summary.end());
  }
}

// One sweep of an NCCL fit: every measured size, the eligible ones (ascending, distinct, at least
// two) and its ranks.
struct NcclGroup {
  const std::vector<Measurement>* points = nullptr;
  std::vector<Measurement> eligible;
  int workers = 2;
};

// FitMethod::Nccl on one sweep or on sweeps at several node counts. Every link of the calibrated
// cluster runs at a multiple of B and every latency constant is a scale times NCCL's (lambda on the
// base latencies and the hops inside a node, lambda_net on the hops between nodes, equal to lambda
// unless the sweeps span two node counts or more), so each candidate c (ring or tree, one protocol)
// of a sweep costs lambda L_c + lambda_net H_c + S sum_p F_p max(1 / cap_c, P_p / (e_c B)) exactly
// (scheme::pattern_costs: L_c, H_c, F_p and P_p from its plan at unit scales and B = 1 GB/s; e_c
// its efficiency; cap_c its bus-bandwidth cap, which depends on B through the channel count, on
// the node count through NCCL's tables, and on the LL cap): the search over (lambda, lambda_net, B,
// LL cap) never rebuilds a plan.
Calibration calibrate_nccl(const std::vector<NcclGroup>& groups, const FitOptions& options) {
  STEPCAST_ASSERT(!groups.empty());
  const int per_node = options.workers_per_node;
  for (const NcclGroup& g : groups) {
    if (per_node < 1 || per_node > g.workers) {
      throw Error({"", 0, "--workers-per-node"},
                  fmt::format("expected an integer in [1, --workers = {}], got {}", g.workers, per_node));
    }
  }
  const int workers = groups.front().workers;
  constexpr double kReferenceBw = 1e9;
  NcclFit reference{workers, per_node, kReferenceBw, 1};
  reference.gpu_generation = options.gpu_generation;
  reference.cpu_vendor = options.cpu_vendor;
  reference.nics_per_node = options.nics_per_node;
  // The network hops' latency is told apart from the rest only by sweeps at two node counts or
  // more (at one, the ring's 2(M-1) and the tree's 2 floor(log2 M) network hops are fixed numbers).
  std::vector<int> node_counts;
  for (const NcclGroup& g : groups) node_counts.push_back((g.workers + per_node - 1) / per_node);
  std::sort(node_counts.begin(), node_counts.end());
  const bool split = std::unique(node_counts.begin(), node_counts.end()) - node_counts.begin() > 1;
  struct Candidate {
    bool tree = false;
    cluster::NcclProtocol protocol = cluster::NcclProtocol::Simple;
    double latency = 0;      // s at unit scales, all but the network hops
    double net_latency = 0;  // s at unit scales, the network hops
    double efficiency = 1;
    std::vector<scheme::PatternCost> patterns;  // at B = kReferenceBw
  };
  std::vector<std::vector<Candidate>> candidates(groups.size());
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const int ranks = groups[gi].workers;
    NcclFit without_net = reference;
    without_net.net_latency_scale = 0.0;
    const cluster::Cluster cluster = cluster::build_cluster(reference.spec(ranks));
    const cluster::Cluster local = cluster::build_cluster(without_net.spec(ranks));
    for (scheme::AllReduceAlgorithm algorithm :
         {scheme::AllReduceAlgorithm::Ring, scheme::AllReduceAlgorithm::Tree}) {
      for (const auto& [protocol, nccl_protocol] :
           {std::pair{scheme::CollectiveProtocol::LL, cluster::NcclProtocol::LL},
            std::pair{scheme::CollectiveProtocol::LL128, cluster::NcclProtocol::LL128},
            std::pair{scheme::CollectiveProtocol::Simple, cluster::NcclProtocol::Simple}}) {
        const scheme::AllReducePlanner planner(cluster, algorithm, protocol);
        const scheme::AllReducePlanner::Choice choice = planner.choose(1);
        const scheme::CollectivePlan& plan = planner.plan(choice);
        const double all = scheme::collective_cost(cluster, plan, choice.terms).latency;
        const scheme::AllReducePlanner local_planner(local, algorithm, protocol);
        const scheme::AllReducePlanner::Choice local_choice = local_planner.choose(1);
        const double rest =
            scheme::collective_cost(local, local_planner.plan(local_choice), local_choice.terms).latency;
        candidates[gi].push_back({algorithm == scheme::AllReduceAlgorithm::Tree, nccl_protocol, rest,
                                  std::max(0.0, all - rest), choice.terms.protocol->efficiency,
                                  scheme::pattern_costs(cluster, plan)});
      }
    }
  }
  // Seconds per byte of each candidate of sweep gi at (B, LL cap; 0: NCCL's table).
  auto per_byte = [&](size_t gi, double bw, double ll_bw, double channels_bw) {
    NcclFit at = reference;
    at.nic_bw = bw;
    at.ll_bw = ll_bw;
    at.channels_bw = channels_bw;
    const cluster::ClusterSpec spec = at.spec(groups[gi].workers);
    std::vector<double> out;
    for (const Candidate& c : candidates[gi]) {
      const double cap = cluster::nccl_bus_bw_cap(spec, c.tree, c.protocol);
      double sum = 0;
      for (const scheme::PatternCost& p : c.patterns)
        sum += p.fraction * std::max(1 / cap, p.links_seconds_per_byte * kReferenceBw / (c.efficiency * bw));
      out.push_back(sum);
    }
    return out;
  };
  auto objective = [&](double log_lambda, double log_net, double log_bw, double ll_bw, double channels_bw) {
    const double lambda = std::exp(log_lambda), net = std::exp(log_net), bw = std::exp(log_bw);
    double sum = 0;
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const std::vector<double> k = per_byte(gi, bw, ll_bw, channels_bw);
      const std::vector<Candidate>& cs = candidates[gi];
      for (const Measurement& m : groups[gi].eligible) {
        double best = kInfinity;
        for (size_t i = 0; i < cs.size(); ++i)
          best = std::min(best, lambda * cs[i].latency + net * cs[i].net_latency + m.bytes * k[i]);
        const double e = (best - m.time) / m.time;
        sum += e * e;
      }
    }
    return sum;
  };
  // A grid over (lambda = lambda_net 1e-2 .. 1e3, B 1 MB/s .. 1 PB/s) with NCCL's caps, then
  // coordinate refinement with a shrinking step (lambda_net freed when several node counts
  // determine it): the objective is a sum of min-of-lines terms, piecewise smooth, not convex.
  // Then the LL cap is freed (a grid over it, and all refined): kept only if it gains more than
  // kNcclCapGain.
  const double l_lo = std::log(1e-2), l_hi = std::log(1e3), b_lo = std::log(1e6),
               b_hi = std::log(limits::kMaxBandwidth);
  constexpr int kGrid = 120;
  struct Point {
    // log lambda, log lambda_net, log B, log LL cap, log channels' speed
    double l = 0, n = 0, b = 0, cap = 0, ch = 0;
    double value = kInfinity;
  };
  const bool known_bw = options.nic_bw > 0;  // B given (the NICs' line rate), not fitted
  // Whether the search moves the channels' speed (else none: the NICs and NCCL's tables).
  bool free_channels = false;
  auto value_of = [&](const Point& q, bool free_cap) {
    return objective(q.l, split ? q.n : q.l, q.b, free_cap ? std::exp(q.cap) : 0.0,
                     free_channels ? std::exp(q.ch) : 0.0);
  };
  auto refine = [&](Point p, bool free_cap, double first_step) {
    for (double step = first_step; step > 1e-9; step /= 2) {
      for (bool moved = true; moved;) {
        moved = false;
        for (int axis = 0; axis < 5; ++axis) {
          if ((axis == 1 && !split) || (axis == 2 && known_bw) || (axis == 3 && !free_cap) ||
              (axis == 4 && !free_channels))
            continue;
          for (const double d : {step, -step}) {
            Point q = p;
            (axis == 0 ? q.l : axis == 1 ? q.n : axis == 2 ? q.b : axis == 3 ? q.cap : q.ch) += d;
            q.value = value_of(q, free_cap);
            if (q.value < p.value) {
              p = q;
              moved = true;
            }
          }
        }
      }
    }
    if (!split) p.n = p.l;
    return p;
  };
  Point table;
  for (int i = 0; i <= kGrid; ++i) {
    for (int j = 0; j <= (known_bw ? 0 : kGrid); ++j) {
      const double l = l_lo + (l_hi - l_lo) * i / kGrid,
                   b = known_bw ? std::log(options.nic_bw) : b_lo + (b_hi - b_lo) * j / kGrid;
      const double v = objective(l, l, b, 0, 0);
      if (v < table.value) table = {l, l, b, 0, 0, v};
    }
  }
  table = refine(table, false, (l_hi - l_lo) / kGrid);
  const double c_lo = std::log(1e8), c_hi = std::log(1e13);  // 0.1 GB/s .. 10 TB/s
  // A grid over one cap (`field`, log B/s) from `from`, the best point refined.
  auto grid_over = [&](const Point& from, double Point::*field, bool free_cap) {
    Point best_q = from;
    best_q.value = kInfinity;
    for (int i = 0; i <= kGrid; ++i) {
      Point q = from;
      q.*field = c_lo + (c_hi - c_lo) * i / kGrid;
      q.value = value_of(q, free_cap);
      if (q.value < best_q.value) best_q = q;
    }
    return refine(best_q, free_cap, (c_hi - c_lo) / kGrid);
  };
  const Point capped = grid_over(table, &Point::cap, true);
  // The freed search may also have left a local minimum of (lambda, B): the table refined from
  // where it ended, so that the gain compared is the cap's alone.
  Point from_capped = capped;
  from_capped.value = value_of(capped, false);
  from_capped = refine(from_capped, false, (l_hi - l_lo) / kGrid);
  if (from_capped.value < table.value) table = from_capped;
  // The gain is relative to the table's error, but a sweep both reproduce to rounding (the model's
  // own) is no evidence: errors below kNoise per size count as none.
  constexpr double kNoise = 1e-4;
  size_t eligible_count = 0;
  for (const NcclGroup& g : groups) eligible_count += g.eligible.size();
  const double floor = static_cast<double>(eligible_count) * kNoise * kNoise;
  const double gain = std::max(0.0, (table.value - capped.value) / (table.value + floor));
  const bool fit_cap = gain > kNcclCapGain;
  Point best = fit_cap ? capped : table;
  // Then the channels' own speed (a cap on every candidate's bus bandwidth, the same at every node
  // count; NCCL's tables cap LL, LL128 and the tree but not the ring's Simple): a grid over it from
  // the fit so far, all refined, kept only if it gains more than kNcclCapGain. Without it a sweep's
  // one limit can only go into B, where the 2-node tree's once-per-byte NIC traffic halves it.
  free_channels = true;
  const Point channels = grid_over(best, &Point::ch, fit_cap);
  const double channels_gain = std::max(0.0, (best.value - channels.value) / (best.value + floor));
  const bool fit_channels = channels_gain > kNcclCapGain;
  if (fit_channels) best = channels;
  Calibration c;
  c.options = options;
  c.fit.workers = workers;
  c.nccl = reference;
  c.nccl.nic_bw = known_bw ? options.nic_bw : std::exp(best.b);
  c.nccl.latency_scale = std::exp(best.l);
  if (split) c.nccl.net_latency_scale = std::exp(best.n);
  c.nccl.ll_bw = fit_cap ? std::exp(best.cap) : 0.0;
  c.nccl.channels_bw = fit_channels ? std::exp(best.ch) : 0.0;
  c.nccl_ll_fitted_bw = std::exp(capped.cap);
  c.nccl_ll_gain = gain;
  c.nccl_channels_fitted_bw = std::exp(channels.ch);
  c.nccl_channels_gain = channels_gain;
  for (const Measurement& m : *groups.front().points) {
    const bool used = m.bytes >= options.min_bytes && m.bytes <= options.max_bytes;
    SizeError e = score(m, c.nccl.time(m.bytes), used);
    e.loo_predicted = e.predicted;
    e.loo_error = e.error;
    c.sizes.push_back(e);
  }
  std::sort(c.sizes.begin(), c.sizes.end(),
            [](const SizeError& a, const SizeError& b) { return a.bytes < b.bytes; });
  c.summary_in_sample = std::none_of(c.sizes.begin(), c.sizes.end(), [&](const SizeError& e) {
    return e.bytes >= options.report_min_bytes && !e.used;
  });
  summarise(c, /*loo=*/false, [&](const SizeError& e) { return c.summary_in_sample || !e.used; });
  if (groups.size() > 1) {
    for (const NcclGroup& g : groups) {
      NodeCountScore s = score_node_count(c.nccl, *g.points, g.workers, options.report_min_bytes);
      for (SizeError& e : s.sizes) e.used = e.bytes >= options.min_bytes && e.bytes <= options.max_bytes;
      c.node_counts.push_back(std::move(s));
    }
  }
  return c;
}

// FitMethod::Regimes on the eligible sizes (ascending, distinct, at least two).
Calibration calibrate_regimes(const std::vector<Measurement>& points,
                              const std::vector<Measurement>& eligible, int workers,
                              const FitOptions& options) {
  if (options.max_regimes < 1 || options.max_regimes > kMaxRegimes) {
    throw Error({"", 0, "--max-regimes"},
                fmt::format("expected an integer in [1, {}], got {}", kMaxRegimes, options.max_regimes));
  }
  const size_t n = eligible.size();
  const int max_k = options.max_regimes;
  std::vector<Row> rows;
  std::vector<double> bytes;
  for (const Measurement& m : eligible) {
    rows.push_back(row(m, workers));
    bytes.push_back(m.bytes);
  }
  const std::vector<std::vector<Segment>> full = best_segmentations(rows, max_k);

  // loo[k - 1][m]: eligible size m predicted by k regimes fitted to all the others; NaN where
  // those do not fit.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::vector<double>> loo(static_cast<size_t>(max_k), std::vector<double>(n, nan));
  for (size_t m = 0; m < n; ++m) {
    std::vector<Row> sub_rows;
    std::vector<double> sub_bytes;
    for (size_t i = 0; i < n; ++i) {
      if (i == m) continue;
      sub_rows.push_back(rows[i]);
      sub_bytes.push_back(bytes[i]);
    }
    const std::vector<std::vector<Segment>> segmentations = best_segmentations(sub_rows, max_k);
    for (size_t k = 0; k < segmentations.size(); ++k) {
      if (segmentations[k].empty()) continue;
      loo[k][m] = make_regime_fit(workers, sub_bytes, segmentations[k]).time(bytes[m]);
    }
  }
  Calibration c;
  c.options = options;
  double best = kInfinity;
  for (size_t k = 0; k < loo.size(); ++k) {
    double sum = 0;
    bool feasible = !full[k].empty();
    for (size_t m = 0; m < n && feasible; ++m) {
      feasible = !std::isnan(loo[k][m]);
      const double e = (loo[k][m] - eligible[m].time) / eligible[m].time;
      sum += std::abs(e);
    }
    c.regime_scores.push_back(feasible ? sum / static_cast<double>(n) : kInfinity);
    best = std::min(best, c.regime_scores.back());
  }
  if (!std::isfinite(best)) {
    throw Error({"", 0, "--fit"},
                fmt::format("a regime fit needs at least {} sizes whose time grows with the size (each of "
                            "the leave-one-out fits needs {} per regime); got {} sizes{}",
                            kMinRegimeSizes + 1, kMinRegimeSizes, n, size_range(options)));
  }
  size_t chosen = 0;
  while (!(c.regime_scores[chosen] <= best * kRegimeScoreSlack)) ++chosen;

  c.regimes = make_regime_fit(workers, bytes, full[chosen]);
  for (const Regime& r : c.regimes.regimes) {
    if (!(std::isfinite(r.bw) && r.bw > 0 && r.bw <= limits::kMaxBandwidth)) {
      throw Error({"", 0, ""},
                  fmt::format("the measured time does not grow with the size between {} B and {} B; "
                              "no positive bandwidth fits (none below 1 PB/s)",
                              r.first_bytes, r.last_bytes));
    }
  }
  c.fit = c.regimes.envelope();
  c.latency_clamped = std::any_of(c.regimes.regimes.begin(), c.regimes.regimes.end(),
                                  [](const Regime& r) { return r.latency_clamped; });
  for (const Measurement& m : points) {
    const auto it = std::find(bytes.begin(), bytes.end(), m.bytes);
    SizeError e = score(m, c.regimes.time(m.bytes), it != bytes.end());
    e.loo_predicted = e.used ? loo[chosen][static_cast<size_t>(it - bytes.begin())] : e.predicted;
    e.loo_error = (e.loo_predicted - e.measured) / e.measured;
    c.sizes.push_back(e);
  }
  std::sort(c.sizes.begin(), c.sizes.end(),
            [](const SizeError& a, const SizeError& b) { return a.bytes < b.bytes; });
  // Every size is scored by a fit that did not see it: the others left out one at a time, the
  // sizes outside --min-size/--max-size by the final fit.
  c.summary_in_sample = false;
  summarise(c, /*loo=*/true, [](const SizeError&) { return true; });
  return c;
}

}  // namespace

double RingFit::time(double bytes) const {
  const double n = workers;
  return 2 * (n - 1) * step_latency + 2 * (n - 1) / n * bytes / bw;
}

const Regime& RegimeFit::regime_for(double bytes) const {
  STEPCAST_ASSERT(!regimes.empty());
  for (auto it = regimes.rbegin(); it != regimes.rend(); ++it) {
    if (bytes >= it->from_bytes) return *it;
  }
  return regimes.front();
}

double RegimeFit::time(double bytes) const {
  const Regime& r = regime_for(bytes);
  return RingFit{workers, r.step_latency, r.bw}.time(bytes);
}

RingFit RegimeFit::envelope() const {
  STEPCAST_ASSERT(!regimes.empty());
  RingFit fit{workers, regimes.front().step_latency, regimes.front().bw};
  for (const Regime& r : regimes) {
    fit.step_latency = std::min(fit.step_latency, r.step_latency);
    fit.bw = std::max(fit.bw, r.bw);
  }
  return fit;
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
    throw Error({"", 0, "--min-size"},
                fmt::format("expected at least two distinct sizes{} to fit latency and bandwidth, got {}",
                            size_range(options), eligible.size()));
  }
  if (options.method == FitMethod::Regimes) return calibrate_regimes(points, eligible, workers, options);
  if (options.method == FitMethod::Nccl)
    return calibrate_nccl({NcclGroup{&points, eligible, workers}}, options);
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
  // A flat sweep leaves a rounding-level slope: a bandwidth of 1e20 GB/s is no fit either.
  if (!(s.inverse_bw >= 1 / limits::kMaxBandwidth) || !std::isfinite(s.inverse_bw)) {
    throw Error({"", 0, ""},
                fmt::format("the measured time does not grow with the size between {} B and {} B; "
                            "no positive bandwidth fits (none below 1 PB/s)",
                            used.front().bytes, used.back().bytes));
  }
  c.fit.step_latency = s.a;
  c.fit.bw = 1 / s.inverse_bw;

  bool any_held_out = false;
  for (const Measurement& m : points) {
    SizeError e = score(
        m, c.fit.time(m.bytes),
        std::any_of(used.begin(), used.end(), [&](const Measurement& u) { return u.bytes == m.bytes; }));
    e.loo_predicted = e.predicted;
    e.loo_error = e.error;
    if (m.bytes >= options.report_min_bytes && !e.used) any_held_out = true;
    c.sizes.push_back(e);
  }
  std::sort(c.sizes.begin(), c.sizes.end(),
            [](const SizeError& a, const SizeError& b) { return a.bytes < b.bytes; });
  c.summary_in_sample = !any_held_out;
  summarise(c, /*loo=*/false, [&](const SizeError& e) { return c.summary_in_sample || !e.used; });
  return c;
}

Calibration calibrate_nccl_sweeps(const std::vector<NodeCountSweep>& sweeps, const FitOptions& options) {
  if (sweeps.empty()) throw Error({"", 0, "--workers"}, "expected at least one sweep");
  std::vector<NcclGroup> groups;
  for (const NodeCountSweep& sweep : sweeps) {
    if (sweep.workers < 2) {
      throw Error({"", 0, "--workers"},
                  fmt::format("expected at least 2 workers for an all-reduce, got {}", sweep.workers));
    }
    NcclGroup g{&sweep.points, {}, sweep.workers};
    for (const Measurement& m : sweep.points) {
      if (m.bytes >= options.min_bytes && m.bytes <= options.max_bytes) g.eligible.push_back(m);
    }
    std::sort(g.eligible.begin(), g.eligible.end(),
              [](const Measurement& a, const Measurement& b) { return a.bytes < b.bytes; });
    groups.push_back(std::move(g));
  }
  size_t eligible = 0;
  for (const NcclGroup& g : groups) eligible += g.eligible.size();
  if (eligible < 2) {
    throw Error({"", 0, "--min-size"},
                fmt::format("expected at least two sizes{} to fit latency and bandwidth, got {}",
                            size_range(options), eligible));
  }
  FitOptions o = options;
  o.method = FitMethod::Nccl;
  return calibrate_nccl(groups, o);
}

NodeCountScore score_node_count(const NcclFit& fit, const std::vector<Measurement>& points, int workers,
                                double report_min_bytes) {
  NodeCountScore s;
  s.workers = workers;
  s.nodes = fit.spec(workers).num_worker_nodes();
  std::vector<double> summary;
  for (const Measurement& m : points) {
    SizeError e = score(m, fit.time(m.bytes, workers), false);
    e.loo_predicted = e.predicted;
    e.loo_error = e.error;
    if (m.bytes >= report_min_bytes) summary.push_back(std::abs(e.error));
    s.sizes.push_back(e);
  }
  std::sort(s.sizes.begin(), s.sizes.end(),
            [](const SizeError& a, const SizeError& b) { return a.bytes < b.bytes; });
  s.summary_count = static_cast<int>(summary.size());
  if (!summary.empty()) {
    s.median_error = median(summary);
    s.max_error = *std::max_element(summary.begin(), summary.end());
  }
  return s;
}

cluster::ClusterSpec NcclFit::spec(int ranks) const {
  cluster::ClusterSpec s;
  s.workers = ranks;
  s.workers_per_node = std::min(workers_per_node, ranks);
  s.nic_bw = nic_bw;
  s.nics_per_node = std::clamp(nics_per_node, 1, s.workers_per_node);
  s.gpu_generation = gpu_generation;
  s.cpu_vendor = cpu_vendor;
  s.intra_node_bw = kNcclIntraToNic * nic_bw;
  for (cluster::NcclCost* costs : {s.nccl.ring, s.nccl.tree}) {
    for (int p = 0; p < cluster::kNcclProtocols; ++p) {
      costs[p].base_latency *= latency_scale;
      for (int h = 0; h < cluster::kNcclHops; ++h) {
        const bool net = h == static_cast<int>(cluster::NcclHop::Net);
        costs[p].hop_latency[h] *= net ? net_latency_scale.value_or(latency_scale) : latency_scale;
      }
    }
  }
  if (ll_bw > 0) {
    constexpr int kLL = static_cast<int>(cluster::NcclProtocol::LL);
    s.nccl.ring[kLL].max_bw = ll_bw;
    s.nccl.tree[kLL].max_bw = ll_bw;
  }
  if (channels_bw > 0) {
    // The channels' own speed: every candidate's bus bandwidth at most channels_bw x its protocol's
    // efficiency (NCCL's busBw = channels x the graph's per-channel speed, before the protocols'
    // caps), the same at every node count; NCCL's tables' caps still apply under it. LL's table
    // follows the node count, and a cap written here replaces it at every node count: where LL's
    // cap is NCCL's table, the channels' speed is written for LL only when it is below the table at
    // every node count (the table's value for more than 2 nodes, its lowest), so that the cluster
    // of `ranks` and a file written at another node count say the same.
    cluster::ClusterSpec many = s;
    many.workers = 3 * s.workers_per_node;
    for (cluster::NcclCost* costs : {s.nccl.ring, s.nccl.tree}) {
      const bool tree = costs == s.nccl.tree;
      for (int p = 0; p < cluster::kNcclProtocols; ++p) {
        const double own = channels_bw * costs[p].efficiency;
        const double lowest = cluster::nccl_max_bw(many, tree, static_cast<cluster::NcclProtocol>(p));
        // LL's fitted cap (cost.max_bw set above, and in `many`) or the table's lowest, or none.
        if (lowest <= 0 || own <= lowest) costs[p].max_bw = own;
      }
    }
  }
  return s;
}

double NcclFit::time(double bytes, int ranks) const {
  return scheme::simulate_collective(spec(ranks > 0 ? ranks : workers), bytes,
                                     scheme::CollectiveOp::AllReduce, scheme::AllReduceAlgorithm::Auto,
                                     scheme::NetworkKind::MaxMin, true, scheme::CollectiveProtocol::Auto)
      .time;
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

cluster::ClusterSpec apply_regime_fit(const RegimeFit& fit, int workers_per_node, cluster::ClusterSpec base) {
  STEPCAST_ASSERT(!fit.regimes.empty());
  base = apply_fit(fit.envelope(), workers_per_node, std::move(base));
  base.collective_regimes.clear();
  for (const Regime& r : fit.regimes) base.collective_regimes.push_back({r.from_bytes, r.step_latency, r.bw});
  return base;
}

const char* to_string(FitMethod method) {
  return name_c_str(method);
}

}  // namespace stepcast::calibrate
