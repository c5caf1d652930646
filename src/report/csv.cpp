// write_csv: one row per prediction for spreadsheets and pandas; SI units named in the header.
#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <string_view>

#include "report/json_text.hpp"
#include "stepcast/report/report.hpp"

namespace stepcast::report {
namespace {

/// RFC 4180 field: always quoted, embedded quotes doubled. Commas, quotes and newlines in
/// the bottleneck text ("PS NIC out 97% busy, \"shard 0\"") then survive a round trip.
void append_csv_quoted(fmt::memory_buffer& buf, std::string_view text) {
  buf.push_back('"');
  for (char c : text) {
    if (c == '"') buf.push_back('"');
    buf.push_back(c);
  }
  buf.push_back('"');
}

}  // namespace

void write_csv(std::ostream& out, const Sweep& sweep) {
  fmt::memory_buffer buf;
  auto it = std::back_inserter(buf);
  fmt::format_to(it,
                 "workers,predictor,step_time_s,throughput_samples_per_s,speedup,efficiency,"
                 "compute_s,communication_exposed_s,wait_s,bytes_sent,bytes_received,"
                 "bottleneck,step_samples,step_time_mean_s,step_time_p50_s,step_time_p95_s,"
                 "step_time_min_s,step_time_max_s,job_startup_s,job_time_s,"
                 "tokens_per_s,tokens_per_s_per_worker,mfu,mfu_6nd,"
                 "memory_per_worker_bytes,memory_reserved_bytes,gpu_memory_bytes,fits,"
                 "layout,bubble_fraction,tensor_s,context_s,pipeline_s,data_s,expert_s,"
                 "job_tokens,cost_per_step,cost_per_million_tokens,job_cost");
  // The swept keys last, named after the keys, values as given.
  const std::size_t swept = sweep.configs.empty() ? 0 : sweep.configs.front().size();
  for (std::size_t k = 0; k < swept; ++k) {
    buf.push_back(',');
    append_csv_quoted(buf, sweep.configs.front()[k].key);
  }
  buf.push_back('\n');
  for (std::size_t i = 0; i < sweep.predictions.size(); ++i) {
    const predict::Result& r = sweep.predictions[i];
    // "{}" gives round-trip doubles; NaN/Inf print as nan/inf, which pandas and R read back.
    // Byte counts as whole numbers in digits, as the JSON writes them (JsonWriter::bytes).
    auto whole = [](double bytes) { return std::round(bytes) + 0.0; };
    fmt::format_to(it, "{},{},{},{},{},{},{},{},{},{:.0f},{:.0f},", r.workers,
                   predict::to_string(r.predictor), r.step_time, r.throughput, r.speedup, r.efficiency,
                   r.breakdown.compute, r.breakdown.communication_exposed, r.breakdown.wait,
                   whole(r.bytes_sent), whole(r.bytes_received));
    append_csv_quoted(buf, r.bottleneck);
    // Per-step spread last, so the columns above keep their places; empty cells without samples.
    const predict::StepSpread& spread = r.step_samples;
    if (spread.samples == 0) {
      buf.append(std::string_view(",,,,,,"));
    } else {
      fmt::format_to(it, ",{},{},{},{},{},{}", spread.samples, spread.mean, spread.p50, spread.p95,
                     spread.min, spread.max);
    }
    if (r.job.samples > 0) {
      fmt::format_to(it, ",{},{}", r.job.startup_time, r.job.time);
    } else {
      buf.append(std::string_view(",,"));
    }
    // Language models and memory: empty cells where unknown.
    auto optional = [&](bool known, double value) {
      if (known) {
        fmt::format_to(it, ",{}", value);
      } else {
        buf.push_back(',');
      }
    };
    const bool tokens = r.tokens.tokens_per_s > 0;
    optional(tokens, r.tokens.tokens_per_s);
    optional(tokens, r.tokens.tokens_per_s_per_worker);
    optional(r.tokens.mfu >= 0, r.tokens.mfu);
    optional(r.tokens.mfu_6nd >= 0, r.tokens.mfu_6nd);
    auto optional_bytes = [&](bool known, double bytes) {
      if (known) {
        fmt::format_to(it, ",{:.0f}", whole(bytes));
      } else {
        buf.push_back(',');
      }
    };
    optional_bytes(r.memory.known, r.memory.allocated());
    optional_bytes(r.memory.known, r.memory.reserved());
    optional_bytes(r.memory.gpu_memory > 0, r.memory.gpu_memory);
    if (r.memory.known && r.memory.gpu_memory > 0) {
      buf.append(std::string_view(r.memory.fits() ? ",true" : ",false"));
    } else {
      buf.push_back(',');
    }
    // A parallel layout: its name, bubble and exposed communication by dimension; empty otherwise.
    if (r.layout.empty()) {
      buf.append(std::string_view(",,,,,,,"));
    } else {
      buf.push_back(',');
      append_csv_quoted(buf, r.layout);
      fmt::format_to(it, ",{},{},{},{},{},{}", r.bubble_fraction, r.breakdown.tensor, r.breakdown.context,
                     r.breakdown.pipeline, r.breakdown.data, r.breakdown.expert);
    }
    // Tokens and money (in the scenario's currency, cluster.cost.gpu_hour): empty where not given.
    optional(r.job.tokens > 0, r.job.tokens);
    const bool costs = r.cost.gpu_hour > 0;
    optional(costs, r.cost.per_step);
    optional(costs && r.cost.per_million_tokens > 0, r.cost.per_million_tokens);
    optional(costs && r.job.time > 0, r.cost.job);
    for (std::size_t k = 0; k < swept; ++k) {
      buf.push_back(',');
      append_csv_quoted(buf, sweep.configs[i][k].value);
    }
    buf.push_back('\n');
    if (buf.size() >= detail::kFlushBytes) {
      out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.clear();
    }
  }
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

}  // namespace stepcast::report
