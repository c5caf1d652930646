// write_plan_text, write_plan_json and write_plan_csv: the answer of `stepcast plan`
// (report/plan.hpp).
#include <fmt/format.h>

#include <iterator>

#include "report/json_text.hpp"
#include "report/text_table.hpp"
#include "stepcast/error.hpp"
#include "stepcast/report/plan.hpp"
#include "stepcast/units.hpp"

namespace stepcast::report {

bool PlanCount::orders_agree() const {
  for (std::size_t i = 0; i < top.size(); ++i) {
    if (top[i].coarse_rank != i) return false;
  }
  return true;
}

const char* to_string(PlanRank rank) {
  return name_c_str(rank);
}

PlanRank parse_plan_rank(std::string_view text, std::string_view option) {
  if (const auto rank = parse_name<PlanRank>(text)) return *rank;
  throw Error({"", 0, std::string(option)},
              fmt::format("expected tokens_per_gpu, time or cost, got '{}'", text));
}

double rank_value(const predict::Result& r, PlanRank rank) {
  switch (rank) {
    case PlanRank::TokensPerGpu:
      return -r.tokens.tokens_per_s_per_worker;
    case PlanRank::Time:
      return r.job.time;
    case PlanRank::Cost:
      return r.job.time > 0 ? r.cost.job : r.cost.per_million_tokens;
  }
  return 0;
}

namespace {

std::string rank_words(PlanRank rank, bool job) {
  switch (rank) {
    case PlanRank::TokensPerGpu:
      return "tokens/s per GPU";
    case PlanRank::Time:
      return "time to train";
    case PlanRank::Cost:
      return job ? "cost to train" : "cost per million tokens";
  }
  return "?";
}

/// ", 12 d 3 h to train, 1.23 M USD" for a row with a job and costs; "" without.
std::string job_words(const predict::Result& f) {
  std::string out;
  if (f.job.time > 0) out += fmt::format(", {} to train", detail::format_span(f.job.time));
  if (f.cost.gpu_hour > 0) {
    out += f.job.time > 0 ? fmt::format(" for {}", detail::format_money(f.cost.job, f.cost.currency))
                          : fmt::format(", {} per million tokens",
                                        detail::format_money(f.cost.per_million_tokens, f.cost.currency));
  }
  return out;
}

std::string share(double part, double step) {
  return step > 0 ? format_percent(part / step) : std::string("-");
}

/// What the GPU must reserve, as the fit check counts it, and what that leaves of its memory (the
/// allocated bytes alone would overstate the headroom by the allocator's pool and the context).
std::string memory_cell(const predict::MemoryCheck& m) {
  if (!m.known) return "-";
  const double reserved = m.reserved();
  if (!(m.gpu_memory > 0)) return format_bytes(reserved);
  return fmt::format("{} ({} free)", format_bytes(reserved), format_bytes(m.gpu_memory - reserved));
}

std::string exposed_cell(const predict::Result& r) {
  const predict::Breakdown& b = r.breakdown;
  return fmt::format("{} / {} / {} / {}", share(b.tensor, r.step_time), share(b.context, r.step_time),
                     share(b.pipeline, r.step_time), share(b.data, r.step_time));
}

std::string rejected_line(const PlanCount& c) {
  std::string by_key;
  for (const auto& [key, n] : c.rejected.invalid_by_key) {
    by_key += fmt::format("{}{} {}", by_key.empty() ? "" : ", ", key, n);
  }
  return fmt::format("{} layouts considered: {} invalid{}, {} do not fit in GPU memory{}, {} fit{}",
                     c.considered, c.rejected.invalid,
                     by_key.empty() ? "" : " (by the rule's key: " + by_key + ")", c.rejected.no_fit,
                     c.rejected.pruned > 0 ? fmt::format(", {} pruned", c.rejected.pruned) : "", c.fitting,
                     c.fitting > 0 ? " (predicted by coarse)" : "");
}

}  // namespace

void write_plan_text(std::ostream& out, const Plan& plan) {
  fmt::memory_buffer buf;
  auto it = std::back_inserter(buf);
  fmt::format_to(it, "scenario: {}\n", plan.scenario);
  if (!plan.compute_source.empty()) fmt::format_to(it, "compute: {}\n", plan.compute_source);
  fmt::format_to(it, "searched: {}\n", fmt::join(plan.searched, ", "));
  if (!plan.held.empty())
    fmt::format_to(it, "held at the scenario's value: {}\n", fmt::join(plan.held, ", "));
  for (const PlanCount& c : plan.counts) {
    fmt::format_to(it, "\n{} GPUs: {}\n", c.gpus, rejected_line(c));
    if (c.closest_miss) {
      const PlanMiss& m = *c.closest_miss;
      fmt::format_to(it, "closest miss: {} needs {} reserved per GPU ({} allocated), {} more than the {}\n",
                     m.label, format_bytes(m.memory.reserved()), format_bytes(m.memory.allocated()),
                     format_bytes(m.memory.reserved() - m.memory.gpu_memory),
                     format_bytes(m.memory.gpu_memory));
    }
    if (c.top.empty()) {
      fmt::format_to(it, "no layout is valid and fits at {}\n", format_count(c.gpus, "GPU", "GPUs"));
      continue;
    }
    const predict::Result& first = c.top.front().fine;
    const bool job = first.job.time > 0, costs = first.cost.gpu_hour > 0;
    fmt::format_to(it, "top {} by coarse, ranked by fine ({}):\n", c.top.size(),
                   rank_words(plan.rank_by, job));
    detail::Row header{"rank", "layout", "step time", "tokens/s per GPU", "MFU"};
    std::vector<bool> right{true, false, true, true, true};
    if (job) {
      header.emplace_back("time to train");
      right.push_back(true);
    }
    if (costs) {
      header.emplace_back(
          fmt::format("per M tokens ({})", first.cost.currency.empty() ? "cost" : first.cost.currency));
      right.push_back(true);
      if (job) {
        header.emplace_back(
            fmt::format("cost to train ({})", first.cost.currency.empty() ? "cost" : first.cost.currency));
        right.push_back(true);
      }
    }
    for (const char* name : {"reserved per GPU", "bubble", "exposed tp / cp / pp / dp", "bottleneck"}) {
      header.emplace_back(name);
    }
    right.insert(right.end(), {true, true, true, false});
    std::vector<detail::Row> rows;
    for (std::size_t i = 0; i < c.top.size(); ++i) {
      const PlanRow& r = c.top[i];
      const predict::Result& f = r.fine;
      detail::Row row{fmt::format("{}", i + 1), r.label, format_duration(f.step_time),
                      format_number(f.tokens.tokens_per_s_per_worker),
                      f.tokens.mfu >= 0 ? format_percent(f.tokens.mfu) : std::string("-")};
      if (job) row.push_back(detail::format_span(f.job.time));
      if (costs) {
        row.push_back(detail::format_amount(f.cost.per_million_tokens));
        if (job) row.push_back(detail::format_amount(f.cost.job));
      }
      for (std::string cell :
           {memory_cell(f.memory), format_percent(f.bubble_fraction), exposed_cell(f), f.bottleneck}) {
        row.push_back(std::move(cell));
      }
      rows.push_back(std::move(row));
    }
    detail::append_aligned(buf, header, right, rows);
    if (c.orders_agree()) {
      fmt::format_to(it, "coarse and fine rank these {} layouts in the same order\n", c.top.size());
    } else {
      std::string moved;
      for (std::size_t i = 0; i < c.top.size(); ++i) {
        if (c.top[i].coarse_rank == i) continue;
        moved += fmt::format("{}fine's {} was coarse's {}", moved.empty() ? "" : ", ", i + 1,
                             c.top[i].coarse_rank + 1);
      }
      fmt::format_to(it, "coarse and fine rank these {} layouts differently: {}\n", c.top.size(), moved);
    }
    const PlanRow& best = c.top.front();
    fmt::format_to(it,
                   "best at {} GPUs: {} ({} tokens/s per GPU by fine, {} by coarse{}); its settings: {}\n",
                   c.gpus, best.label, format_number(best.fine.tokens.tokens_per_s_per_worker),
                   format_number(best.coarse.tokens.tokens_per_s_per_worker), job_words(best.fine),
                   config_label(best.config));
  }
  if (plan.counts.size() > 1 && plan.best_count) {
    const PlanCount& c = plan.counts[*plan.best_count];
    const PlanRow& best = c.top.front();
    fmt::format_to(it, "\nbest of all counts by {}: {} GPUs, {} ({} tokens/s per GPU{})\n",
                   rank_words(plan.rank_by, best.fine.job.time > 0), c.gpus, best.label,
                   format_number(best.fine.tokens.tokens_per_s_per_worker), job_words(best.fine));
  }
  fmt::format_to(it, "searched in {}\n", format_duration(plan.elapsed));
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

void write_plan_json(std::ostream& out, const Plan& plan) {
  detail::JsonWriter json(out);
  uint64_t considered = 0, fitting = 0, invalid = 0, no_fit = 0, pruned = 0;
  for (const PlanCount& c : plan.counts) {
    considered += c.considered;
    fitting += c.fitting;
    invalid += c.rejected.invalid;
    no_fit += c.rejected.no_fit;
    pruned += c.rejected.pruned;
  }
  auto rejected = [&](uint64_t bad, uint64_t over, uint64_t cut) {
    json.key("invalid");
    json.integer(bad);
    json.key("does_not_fit");
    json.integer(over);
    json.key("pruned");
    json.integer(cut);
  };
  json.begin_object();
  json.key("scenario");
  json.string(plan.scenario);
  json.key("compute_source");
  json.string(plan.compute_source);
  json.key("top_k");
  json.integer(plan.top_k);
  json.key("rank_by");
  json.string(to_string(plan.rank_by));
  json.key("best");
  if (plan.best_count) {
    json.begin_object();
    json.key("gpus");
    json.integer(plan.counts[*plan.best_count].gpus);
    json.key("label");
    json.string(plan.counts[*plan.best_count].top.front().label);
    json.end_object();
  } else {
    json.null();
  }
  json.key("searched");
  json.begin_array();
  for (const std::string& k : plan.searched) json.string(k);
  json.end_array();
  json.key("held");
  json.begin_array();
  for (const std::string& k : plan.held) json.string(k);
  json.end_array();
  json.key("layouts_considered");
  json.integer(considered);
  json.key("layouts_fitting");
  json.integer(fitting);
  json.key("rejected");
  json.begin_object();
  rejected(invalid, no_fit, pruned);
  json.end_object();
  json.key("counts");
  json.begin_array();
  for (const PlanCount& c : plan.counts) {
    json.begin_object();
    json.key("gpus");
    json.integer(c.gpus);
    json.key("layouts_considered");
    json.integer(c.considered);
    json.key("layouts_fitting");
    json.integer(c.fitting);
    json.key("rejected");
    json.begin_object();
    rejected(c.rejected.invalid, c.rejected.no_fit, c.rejected.pruned);
    json.key("invalid_by_key");
    json.begin_object();
    for (const auto& [key, n] : c.rejected.invalid_by_key) {
      json.key(key);
      json.integer(n);
    }
    json.end_object();
    json.end_object();
    json.key("closest_miss");
    if (c.closest_miss) {
      json.begin_object();
      json.key("label");
      json.string(c.closest_miss->label);
      json.key("config");
      detail::write_config_json(json, c.closest_miss->config);
      json.key("memory_per_gpu_bytes");
      json.bytes(c.closest_miss->memory.allocated());
      json.key("memory_reserved_bytes");
      json.bytes(c.closest_miss->memory.reserved());
      json.key("gpu_memory_bytes");
      json.bytes(c.closest_miss->memory.gpu_memory);
      json.end_object();
    } else {
      json.null();
    }
    json.key("orders_agree");
    json.boolean(c.orders_agree());
    json.key("ranked");
    json.begin_array();
    for (std::size_t i = 0; i < c.top.size(); ++i) {
      const PlanRow& r = c.top[i];
      json.begin_object();
      json.key("rank");
      json.integer(i + 1);
      json.key("coarse_rank");
      json.integer(r.coarse_rank + 1);
      json.key("label");
      json.string(r.label);
      json.key("config");
      detail::write_config_json(json, r.config);
      json.key("coarse");
      json.begin_object();
      json.key("step_time_s");
      json.number(r.coarse.step_time);
      json.key("tokens_per_s_per_gpu");
      json.number(r.coarse.tokens.tokens_per_s_per_worker);
      json.end_object();
      json.key("prediction");
      detail::write_prediction_json(json, r.fine, nullptr);
      json.end_object();
    }
    json.end_array();
    json.end_object();
  }
  json.end_array();
  json.end_object();
}

void write_plan_csv(std::ostream& out, const Plan& plan) {
  Sweep sweep;
  sweep.scenario = plan.scenario;
  for (const PlanCount& c : plan.counts) {
    for (const PlanRow& r : c.top) {
      sweep.predictions.push_back(r.fine);
      sweep.configs.push_back(r.config);
    }
  }
  write_csv(out, sweep);
}

}  // namespace stepcast::report
