// write_table: the sweep as an aligned text table for people, then where the time of the
// last prediction goes.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "stepcast/report/report.hpp"
#include "stepcast/units.hpp"

namespace stepcast::report {
namespace {

constexpr std::size_t kColumns = 7;
using Row = std::array<std::string, kColumns>;

constexpr std::array<std::string_view, kColumns> kHeader{
    "workers", "predictor", "step time", "throughput (samples/s)", "speed-up", "efficiency", "bottleneck"};
// Numbers line up on the right so their magnitudes compare at a glance; words on the left.
constexpr std::array<bool, kColumns> kRightAligned{true, false, true, true, true, true, false};

Row cells(const predict::Result& r) {
  return {fmt::format("{}", r.workers),
          predict::to_string(r.predictor),
          format_duration(r.step_time),
          fmt::format("{:.1f}", r.throughput),
          fmt::format("{:.2f}x", r.speedup),
          fmt::format("{:.1f}%", r.efficiency * 100),
          r.bottleneck};
}

template <typename Cells>
void append_row(fmt::memory_buffer& buf, const Cells& row, const std::array<std::size_t, kColumns>& width) {
  auto it = std::back_inserter(buf);
  for (std::size_t c = 0; c < kColumns; ++c) {
    if (c > 0) buf.append(std::string_view("  "));
    if (c + 1 == kColumns) {
      // Last column unpadded: no trailing blanks, and a long bottleneck does not widen the table.
      buf.append(row[c]);
    } else if (kRightAligned[c]) {
      fmt::format_to(it, "{:>{}}", row[c], width[c]);
    } else {
      fmt::format_to(it, "{:<{}}", row[c], width[c]);
    }
  }
  buf.push_back('\n');
}

std::string percent_of(double part, double whole) {
  if (!(whole > 0) || !std::isfinite(whole)) return "-";
  return fmt::format("{:.1f}%", part / whole * 100);
}

/// One line per prediction predicted over per-step samples: the spread of its step time.
void append_step_spreads(fmt::memory_buffer& buf, const std::vector<predict::Result>& predictions) {
  auto it = std::back_inserter(buf);
  for (const auto& r : predictions) {
    const predict::StepSpread& s = r.step_samples;
    if (s.samples == 0) continue;
    fmt::format_to(it,
                   "per-step samples ({} worker{}, {}): {} steps, predicted step time mean {:.3f} ms, "
                   "p50 {:.3f} ms, p95 {:.3f} ms, min {:.3f} ms, max {:.3f} ms\n",
                   r.workers, r.workers == 1 ? "" : "s", predict::to_string(r.predictor), s.samples,
                   s.mean * 1e3, s.p50 * 1e3, s.p95 * 1e3, s.min * 1e3, s.max * 1e3);
  }
}

/// One line per prediction with a job (Options::job): start-up, steps and the whole job's time.
void append_jobs(fmt::memory_buffer& buf, const std::vector<predict::Result>& predictions) {
  auto it = std::back_inserter(buf);
  for (const auto& r : predictions) {
    const predict::Job& j = r.job;
    if (j.samples <= 0) continue;
    fmt::format_to(it,
                   "job ({} worker{}, {}): {:.0f} samples in {:.0f} steps of {:.2f} ms after a {:.2f} s "
                   "start-up: {:.1f} s in all, {:.1f} samples/s overall ({:.1f}% of the time starting up)\n",
                   r.workers, r.workers == 1 ? "" : "s", predict::to_string(r.predictor), j.samples, j.steps,
                   r.step_time * 1e3, j.startup_time, j.time, j.throughput, 100 * j.startup_time / j.time);
  }
}

/// Two lines on the last prediction (usually the largest worker count, the one a reader is
/// deciding about): the step-time breakdown, then the busiest resources.
void append_where_time_goes(fmt::memory_buffer& buf, const predict::Result& r) {
  auto it = std::back_inserter(buf);
  const auto& b = r.breakdown;
  fmt::format_to(it,
                 "\nwhere the time goes ({} workers, {}): compute {:.2f} ms ({}), exposed "
                 "communication {:.2f} ms ({}), wait {:.2f} ms ({})\n",
                 r.workers, predict::to_string(r.predictor), b.compute * 1e3,
                 percent_of(b.compute, r.step_time), b.communication_exposed * 1e3,
                 percent_of(b.communication_exposed, r.step_time), b.wait * 1e3,
                 percent_of(b.wait, r.step_time));
  if (r.compute_cv > 0) {
    fmt::format_to(
        it, "stragglers: each worker's compute varies by {:.2f}% (coefficient of variation) per step\n",
        100 * r.compute_cv);
  }
  if (r.utilization.empty()) return;

  std::vector<const predict::Utilization*> busiest;
  for (const auto& u : r.utilization) busiest.push_back(&u);
  // NaN ranks last: comparing NaN directly would break the strict weak order sort needs.
  auto key = [](const predict::Utilization* u) {
    return std::isnan(u->busy) ? -std::numeric_limits<double>::infinity() : u->busy;
  };
  std::stable_sort(busiest.begin(), busiest.end(), [&](auto* a, auto* b) { return key(a) > key(b); });
  busiest.resize(std::min<std::size_t>(busiest.size(), 4));
  buf.append(std::string_view("busiest:"));
  for (std::size_t i = 0; i < busiest.size(); ++i) {
    fmt::format_to(it, "{} {} {:.1f}%", i == 0 ? "" : ",", busiest[i]->resource, busiest[i]->busy * 100);
  }
  buf.push_back('\n');
  if (!r.links.empty()) {
    buf.append(std::string_view("busiest links:"));
    for (std::size_t i = 0; i < std::min<std::size_t>(r.links.size(), 3); ++i) {
      fmt::format_to(it, "{} {} {:.1f}%", i == 0 ? "" : ",", r.links[i].resource, r.links[i].busy * 100);
    }
    fmt::format_to(it, " (at most {} flows shared a link)\n", r.max_link_flows);
  }
}

}  // namespace

void write_table(std::ostream& out, const Sweep& sweep) {
  std::vector<Row> rows;
  rows.reserve(sweep.predictions.size());
  for (const auto& r : sweep.predictions) rows.push_back(cells(r));

  std::array<std::size_t, kColumns> width{};
  for (std::size_t c = 0; c < kColumns; ++c) {
    width[c] = kHeader[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }

  fmt::memory_buffer buf;
  fmt::format_to(std::back_inserter(buf), "scenario: {}\n", sweep.scenario);
  append_row(buf, kHeader, width);
  if (rows.empty()) {
    buf.append(std::string_view("(no predictions)\n"));
  } else {
    for (const auto& row : rows) append_row(buf, row, width);
    append_step_spreads(buf, sweep.predictions);
    append_jobs(buf, sweep.predictions);
    append_where_time_goes(buf, sweep.predictions.back());
  }
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

}  // namespace stepcast::report
