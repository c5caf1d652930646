// write_table: the sweep as an aligned text table for people, then where the time of the
// last prediction goes.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/text_table.hpp"
#include "stepcast/report/report.hpp"
#include "stepcast/units.hpp"

namespace stepcast::report {
namespace {

/// One column: its header, alignment (numbers on the right so their magnitudes compare at a
/// glance; words on the left), and its cell for a prediction.
struct Column {
  std::string_view header;
  bool right_aligned;
  std::string (*cell)(const predict::Result&);
};
using detail::append_aligned;
using detail::Row;

/// The tensors at the peak (PyTorch's max_memory_allocated).
std::string allocated_cell(const predict::Result& r) {
  const predict::MemoryCheck& m = r.memory;
  if (!m.known) return "-";
  return format_bytes(m.allocated()) + (m.activations_modelled ? "" : " + activations");
}

/// What the GPU gives the job: the allocator's pool and the CUDA context and NCCL's buffers;
/// what "fits" compares with the GPU's memory.
std::string reserved_cell(const predict::Result& r) {
  const predict::MemoryCheck& m = r.memory;
  if (!m.known) return "-";
  const std::string reserved = format_bytes(m.reserved());
  const std::string note = m.activations_modelled ? "" : " + activations";
  if (!m.fits()) return fmt::format("does not fit: {}{} > {}", reserved, note, format_bytes(m.gpu_memory));
  return reserved + note;
}

/// The columns the sweep needs: token rates and MFU for language models, memory per GPU when it
/// is known and something to compare it with (a GPU size, or activations) is.
std::vector<Column> columns_for(const std::vector<predict::Result>& predictions) {
  bool tokens = false, mfu = false, memory = false, mode = false, layout = false;
  for (const auto& r : predictions) {
    mode = mode || !r.mode.empty();
    layout = layout || !r.layout.empty();
    tokens = tokens || r.tokens.tokens_per_s > 0;
    mfu = mfu || r.tokens.mfu >= 0;
    memory = memory || (r.memory.known && (r.memory.gpu_memory > 0 || r.memory.activations_modelled));
  }
  std::vector<Column> c;
  c.push_back({"workers", true, [](const predict::Result& r) { return fmt::format("{}", r.workers); }});
  if (layout) {
    c.push_back({"layout", false,
                 [](const predict::Result& r) { return r.layout.empty() ? std::string("-") : r.layout; }});
  }
  if (mode)
    c.push_back(
        {"mode", false, [](const predict::Result& r) { return r.mode.empty() ? std::string("-") : r.mode; }});
  c.push_back({"predictor", false,
               [](const predict::Result& r) { return std::string(predict::to_string(r.predictor)); }});
  c.push_back({"step time", true, [](const predict::Result& r) { return format_duration(r.step_time); }});
  c.push_back(
      {"throughput (samples/s)", true, [](const predict::Result& r) { return format_number(r.throughput); }});
  if (tokens) {
    c.push_back(
        {"tokens/s", true, [](const predict::Result& r) { return format_number(r.tokens.tokens_per_s); }});
    c.push_back({"tokens/s per GPU", true,
                 [](const predict::Result& r) { return format_number(r.tokens.tokens_per_s_per_worker); }});
  }
  if (mfu) {
    c.push_back({"MFU", true, [](const predict::Result& r) {
                   return r.tokens.mfu >= 0 ? format_percent(r.tokens.mfu) : std::string("-");
                 }});
  }
  c.push_back({"speed-up", true, [](const predict::Result& r) { return format_number(r.speedup) + "x"; }});
  c.push_back({"efficiency", true, [](const predict::Result& r) { return format_percent(r.efficiency); }});
  if (memory) {
    c.push_back({"allocated per GPU", true, allocated_cell});
    c.push_back({"reserved per GPU", true, reserved_cell});
  }
  if (layout) {
    c.push_back({"bubble", true, [](const predict::Result& r) {
                   return r.layout.empty() ? std::string("-") : format_percent(r.bubble_fraction);
                 }});
  }
  c.push_back({"bottleneck", false, [](const predict::Result& r) { return r.bottleneck; }});
  return c;
}

/// The lines above every table: the scenario's name, its fabric and where its compute time came from.
void append_heading(fmt::memory_buffer& buf, const Sweep& sweep) {
  fmt::format_to(std::back_inserter(buf), "scenario: {}\n", sweep.scenario);
  if (!sweep.topology.empty()) fmt::format_to(std::back_inserter(buf), "topology: {}\n", sweep.topology);
  if (!sweep.compute_source.empty())
    fmt::format_to(std::back_inserter(buf), "compute: {}\n", sweep.compute_source);
}

std::string percent_of(double part, double whole) {
  if (!(whole > 0) || !std::isfinite(whole)) return "-";
  return format_percent(part / whole);
}

/// One line per prediction predicted over per-step samples: the spread of its step time.
void append_step_spreads(fmt::memory_buffer& buf, const std::vector<predict::Result>& predictions) {
  auto it = std::back_inserter(buf);
  for (const auto& r : predictions) {
    const predict::StepSpread& s = r.step_samples;
    if (s.samples == 0) continue;
    fmt::format_to(it,
                   "per-step samples ({}, {}): {}, predicted step time mean {}, p50 {}, p95 {}, min {}, "
                   "max {}\n",
                   format_count(r.workers, "worker", "workers"), predict::to_string(r.predictor),
                   format_count(static_cast<double>(s.samples), "step", "steps"), format_duration(s.mean),
                   format_duration(s.p50), format_duration(s.p95), format_duration(s.min),
                   format_duration(s.max));
  }
}

/// One line per asynchronous parameter-server prediction that measured its gradients' staleness.
void append_staleness(fmt::memory_buffer& buf, const std::vector<predict::Result>& predictions) {
  auto it = std::back_inserter(buf);
  for (const auto& r : predictions) {
    const predict::Staleness& s = r.staleness;
    if (s.pushes == 0) continue;
    fmt::format_to(
        it,
        "staleness ({}, {}): mean {}, p95 {}, max {} updates applied between a pull and its gradient's "
        "push ({})\n",
        format_count(r.workers, "worker", "workers"), predict::to_string(r.predictor), format_number(s.mean),
        format_number(s.p95), fmt::format("{:.0f}", s.max),
        format_count(static_cast<double>(s.pushes), "push", "pushes"));
  }
}

/// A convoy this much slower than the workers out of step: the phases matter enough to say so.
constexpr double kPhasesMatter = 1.01;

/// One line per asynchronous parameter-server prediction whose step depends on the workers'
/// phases (AsyncPhases: the convoy over kPhasesMatter times the step out of step).
void append_async_phases(fmt::memory_buffer& buf, const std::vector<predict::Result>& predictions) {
  auto it = std::back_inserter(buf);
  for (const auto& r : predictions) {
    const predict::AsyncPhases& p = r.async_phases;
    if (!(p.convoy > kPhasesMatter * p.out_of_step)) continue;
    fmt::format_to(
        it,
        "asynchronous phases ({}, {}): {} a step with the workers out of step, {} in a convoy (all "
        "pulling, then all pushing); where a job runs between them depends on where its workers "
        "start and drift (training.ps.async_start in fine)\n",
        format_count(r.workers, "worker", "workers"), predict::to_string(r.predictor),
        format_duration(p.out_of_step), format_duration(p.convoy));
  }
}

/// One line per prediction with a job (Options::job): start-up, steps and the whole job's time.
void append_jobs(fmt::memory_buffer& buf, const std::vector<predict::Result>& predictions) {
  auto it = std::back_inserter(buf);
  for (const auto& r : predictions) {
    const predict::Job& j = r.job;
    if (j.samples <= 0) continue;
    fmt::format_to(
        it,
        "job ({}, {}): {}{} in {} of {} after a {} start-up: {} in all{}, {} samples/s overall ({} of the "
        "time starting up)\n",
        format_count(r.workers, "worker", "workers"), predict::to_string(r.predictor),
        j.tokens > 0 ? fmt::format("{} ({})", format_count(j.tokens, "token", "tokens"),
                                   format_count(j.samples, "sample", "samples"))
                     : format_count(j.samples, "sample", "samples"),
        j.epochs > 0 ? fmt::format(" ({})", format_count(j.epochs, "epoch", "epochs")) : std::string(),
        format_count(j.steps, "step", "steps"), format_duration(r.step_time), format_duration(j.startup_time),
        detail::format_span(j.time),
        j.epochs > 0 ? fmt::format(" ({} per epoch)", detail::format_span(j.epoch_time)) : std::string(),
        format_number(j.throughput), percent_of(j.startup_time, j.time));
  }
}

/// One line per prediction with costs (Options::cost): per step, per million tokens, the job.
void append_costs(fmt::memory_buffer& buf, const std::vector<predict::Result>& predictions) {
  auto it = std::back_inserter(buf);
  for (const auto& r : predictions) {
    const predict::Cost& c = r.cost;
    if (!(c.gpu_hour > 0)) continue;
    fmt::format_to(it, "cost ({}, {}, {} per GPU-hour): {} per step",
                   format_count(r.workers, "worker", "workers"), predict::to_string(r.predictor),
                   detail::format_money(c.gpu_hour, c.currency),
                   detail::format_money(c.per_step, c.currency));
    if (c.per_million_tokens > 0) {
      fmt::format_to(it, ", {} per million tokens", detail::format_money(c.per_million_tokens, c.currency));
    }
    if (r.job.time > 0) {
      fmt::format_to(it, "; the job: {} in {}", detail::format_money(c.job, c.currency),
                     detail::format_span(r.job.time));
    }
    buf.push_back('\n');
  }
}

/// Two lines on the last prediction (usually the largest worker count, the one a reader is
/// deciding about): the step-time breakdown, then the busiest resources.
void append_where_time_goes(fmt::memory_buffer& buf, const predict::Result& r) {
  auto it = std::back_inserter(buf);
  const auto& b = r.breakdown;
  fmt::format_to(it,
                 "\nwhere the time goes ({}, {}): compute {} ({}), exposed communication {} ({}), wait {} "
                 "({})\n",
                 format_count(r.workers, "worker", "workers"), predict::to_string(r.predictor),
                 format_duration(b.compute), percent_of(b.compute, r.step_time),
                 format_duration(b.communication_exposed), percent_of(b.communication_exposed, r.step_time),
                 format_duration(b.wait), percent_of(b.wait, r.step_time));
  if (!r.layout.empty()) {
    // Where a parallel layout's exposed communication and waiting come from.
    fmt::format_to(
        it,
        "exposed by dimension ({}): tensor {} ({}), context {} ({}), pipeline {} ({}), data {} ({}){}; "
        "pipeline bubble {}\n",
        r.layout, format_duration(b.tensor), percent_of(b.tensor, r.step_time), format_duration(b.context),
        percent_of(b.context, r.step_time), format_duration(b.pipeline), percent_of(b.pipeline, r.step_time),
        format_duration(b.data), percent_of(b.data, r.step_time),
        r.layout.find(" ep") != std::string::npos
            ? fmt::format(", expert all-to-all {} ({})", format_duration(b.expert),
                          percent_of(b.expert, r.step_time))
            : std::string(),
        format_percent(r.bubble_fraction));
  }
  if (r.compute_cv > 0) {
    fmt::format_to(it, "stragglers: each worker's compute varies by {} (coefficient of variation) per step\n",
                   format_percent(r.compute_cv));
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
    fmt::format_to(it, "{} {} {}", i == 0 ? "" : ",", busiest[i]->resource, format_percent(busiest[i]->busy));
  }
  buf.push_back('\n');
  if (!r.links.empty()) {
    buf.append(std::string_view("busiest links:"));
    for (std::size_t i = 0; i < std::min<std::size_t>(r.links.size(), 3); ++i) {
      fmt::format_to(it, "{} {} {}", i == 0 ? "" : ",", r.links[i].name, format_percent(r.links[i].busy));
    }
    const std::size_t others = r.links.size() - std::min<std::size_t>(r.links.size(), 3) + r.links_left_out;
    if (others > 0)
      fmt::format_to(it, " and {}", format_count(static_cast<double>(others), "more link", "more links"));
    if (r.max_link_flows <= 1) {
      fmt::format_to(it, " (no two flows shared a link)\n");
    } else {
      fmt::format_to(it, " (at most {} shared a link)\n", format_count(r.max_link_flows, "flow", "flows"));
    }
  }
}

/// Per prediction of a language model: memory per GPU by kind, and MFU both ways.
void append_models(fmt::memory_buffer& buf, const std::vector<predict::Result>& predictions) {
  auto it = std::back_inserter(buf);
  for (const auto& r : predictions) {
    const predict::MemoryCheck& m = r.memory;
    if (!m.known || !(m.gpu_memory > 0 || m.activations_modelled)) continue;
    const predict::Memory& p = m.per_worker;
    fmt::format_to(
        it,
        "memory per GPU ({}): parameters {}, gradients {}, optimizer {}, activations {}, "
        "gathered buffers {}: allocated {}; reserved {} (allocator pool with {} unused, and {} outside it: "
        "CUDA context, NCCL){}\n",
        format_count(r.workers, "worker", "workers"), format_bytes(p.parameters), format_bytes(p.gradients),
        format_bytes(p.optimizer), m.activations_modelled ? format_bytes(p.activations) : "not modelled",
        format_bytes(p.buffers), format_bytes(m.allocated()), format_bytes(m.reserved()),
        format_percent(m.allocator_overhead), format_bytes(m.outside_allocator),
        m.gpu_memory > 0
            ? fmt::format(" of {} ({})", format_bytes(m.gpu_memory), m.fits() ? "fits" : "does not fit")
            : std::string());
  }
  const predict::Result& last = predictions.back();
  if (last.optimizer_step_time > 0) {
    fmt::format_to(
        it, "optimizer step ({}): {} of each step's compute (memory-bound, cluster.gpu.memory_bandwidth)\n",
        format_count(last.workers, "worker", "workers"), format_duration(last.optimizer_step_time));
  }
  if (last.tokens.model_flops_per_s_per_worker > 0) {
    fmt::format_to(it, "model FLOPs ({}): {} per GPU", format_count(last.workers, "worker", "workers"),
                   format_flops(last.tokens.model_flops_per_s_per_worker));
    if (last.tokens.mfu >= 0) {
      fmt::format_to(it, ", MFU {} with attention, {} as 6 N per token", format_percent(last.tokens.mfu),
                     format_percent(last.tokens.mfu_6nd));
    } else {
      buf.append(std::string_view(" (MFU needs cluster.gpu.peak_flops)"));
    }
    buf.push_back('\n');
  }
}

/// What auto chose for the all-reduce buckets of the last prediction: runs of equal choices,
/// "all-reduce buckets (64 workers): 1-3 tree/LL128 (1.05 MB .. 16 MB), 4-6 ring/Simple (25 MB)".
void append_collectives(fmt::memory_buffer& buf, const predict::Result& r) {
  if (r.collectives.empty()) return;
  auto it = std::back_inserter(buf);
  fmt::format_to(it, "all-reduce buckets ({}):", format_count(r.workers, "worker", "workers"));
  for (std::size_t first = 0; first < r.collectives.size();) {
    const predict::BucketCollective& b = r.collectives[first];
    std::size_t last = first;
    double lo = b.bytes, hi = b.bytes;
    while (last + 1 < r.collectives.size() && r.collectives[last + 1].algorithm == b.algorithm &&
           r.collectives[last + 1].protocol == b.protocol) {
      ++last;
      lo = std::min(lo, r.collectives[last].bytes);
      hi = std::max(hi, r.collectives[last].bytes);
    }
    const std::string ran = b.protocol == "links" ? b.algorithm : b.algorithm + "/" + b.protocol;
    const std::string which = first == last ? fmt::format("{}", first) : fmt::format("{}-{}", first, last);
    const std::string sizes =
        lo == hi ? format_bytes(lo) : fmt::format("{} .. {}", format_bytes(lo), format_bytes(hi));
    fmt::format_to(it, "{} {} {} ({})", first == 0 ? "" : ",", which, ran, sizes);
    first = last + 1;
  }
  buf.push_back('\n');
}

}  // namespace

void write_table(std::ostream& out, const Sweep& sweep) {
  std::vector<Column> columns = columns_for(sweep.predictions);
  // Swept keys first: the table reads as one block of worker counts per configuration.
  const std::size_t swept = sweep.configs.empty() ? 0 : sweep.configs.front().size();
  std::vector<Row> rows;
  rows.reserve(sweep.predictions.size());
  for (std::size_t i = 0; i < sweep.predictions.size(); ++i) {
    Row row;
    for (std::size_t k = 0; k < swept; ++k) row.push_back(sweep.configs[i][k].value);
    for (const Column& c : columns) row.push_back(c.cell(sweep.predictions[i]));
    rows.push_back(std::move(row));
  }
  Row header;
  std::vector<bool> right_aligned;
  for (std::size_t k = 0; k < swept; ++k) {
    header.push_back(sweep.configs.front()[k].key);
    right_aligned.push_back(false);
  }
  for (const Column& c : columns) {
    header.emplace_back(c.header);
    right_aligned.push_back(c.right_aligned);
  }

  fmt::memory_buffer buf;
  append_heading(buf, sweep);
  append_aligned(buf, header, right_aligned, rows);
  if (rows.empty()) {
    buf.append(std::string_view("(no predictions)\n"));
  } else {
    append_step_spreads(buf, sweep.predictions);
    append_staleness(buf, sweep.predictions);
    append_async_phases(buf, sweep.predictions);
    append_jobs(buf, sweep.predictions);
    append_costs(buf, sweep.predictions);
    append_models(buf, sweep.predictions);
    append_collectives(buf, sweep.predictions.back());
    append_where_time_goes(buf, sweep.predictions.back());
  }
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

void write_comparison_table(std::ostream& out, const Sweep& sweep) {
  const std::vector<PredictorComparison> comparisons = compare_predictors(sweep);
  // A column per predictor that ran anywhere, in the enum's order (fine, coarse, analytic).
  std::vector<predict::Predictor> ran;
  for (predict::Predictor p :
       {predict::Predictor::Fine, predict::Predictor::Coarse, predict::Predictor::Analytic}) {
    const bool any = std::any_of(comparisons.begin(), comparisons.end(), [&](const PredictorComparison& c) {
      return c.prediction[static_cast<std::size_t>(p)] >= 0;
    });
    if (any) ran.push_back(p);
  }
  const bool coarse = std::any_of(comparisons.begin(), comparisons.end(),
                                  [](const PredictorComparison& c) { return c.coarse_vs_fine.has_value(); });
  const bool analytic = std::any_of(comparisons.begin(), comparisons.end(), [](const PredictorComparison& c) {
    return c.analytic_vs_fine.has_value();
  });
  const std::size_t swept = sweep.configs.empty() ? 0 : sweep.configs.front().size();

  Row header;
  std::vector<bool> right_aligned;
  auto column = [&](std::string name, bool right) {
    header.push_back(std::move(name));
    right_aligned.push_back(right);
  };
  for (std::size_t k = 0; k < swept; ++k) column(sweep.configs.front()[k].key, false);
  column("workers", true);
  for (predict::Predictor p : ran) column(fmt::format("{} step", predict::to_string(p)), true);
  for (predict::Predictor p : ran) column(fmt::format("{} samples/s", predict::to_string(p)), true);
  if (coarse) column("coarse vs fine", true);
  if (analytic) column("analytic vs fine", true);
  column("spread", false);

  auto signed_percent = [](const std::optional<double>& fraction) {
    return fraction ? format_signed_percent(*fraction) : std::string("-");
  };
  std::vector<Row> rows;
  for (const PredictorComparison& c : comparisons) {
    Row row;
    for (std::size_t k = 0; k < swept; ++k) row.push_back(sweep.configs[c.first][k].value);
    row.push_back(fmt::format("{}", c.workers));
    auto cell = [&](predict::Predictor p, auto text) {
      const int index = c.prediction[static_cast<std::size_t>(p)];
      return index < 0 ? std::string("-") : text(sweep.predictions[static_cast<std::size_t>(index)]);
    };
    for (predict::Predictor p : ran) {
      row.push_back(cell(p, [](const predict::Result& r) { return format_duration(r.step_time); }));
    }
    for (predict::Predictor p : ran) {
      row.push_back(cell(p, [](const predict::Result& r) { return format_number(r.throughput); }));
    }
    if (coarse) row.push_back(signed_percent(c.coarse_vs_fine));
    if (analytic) row.push_back(signed_percent(c.analytic_vs_fine));
    row.push_back(c.disagrees() ? fmt::format("{} (over {:.0f}%)", format_percent(c.spread),
                                              100 * kPredictorDisagreement)
                                : format_percent(c.spread));
    rows.push_back(std::move(row));
  }

  fmt::memory_buffer buf;
  append_heading(buf, sweep);
  append_aligned(buf, header, right_aligned, rows);
  if (rows.empty())
    buf.append(std::string_view("(no configuration was predicted by more than one predictor)\n"));
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

std::string config_label(const Config& config) {
  std::string out;
  for (const Input& setting : config)
    out += fmt::format("{}{}={}", out.empty() ? "" : ", ", setting.key, setting.value);
  return out;
}

}  // namespace stepcast::report
