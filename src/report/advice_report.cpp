// write_advice_text and write_advice_json: the advisor's answer (report/advice.hpp).
#include <fmt/format.h>

#include <iterator>

#include "report/json_text.hpp"
#include "stepcast/report/advice.hpp"
#include "stepcast/units.hpp"

namespace stepcast::report {
namespace {

/// "does not fit: 168 GB reserved per GPU (150 GB allocated) > 80.0 GB", by what the GPU must
/// reserve, as fits() decides; "" when it fits (or nothing says how much there is).
std::string misfit(const predict::Result& r) {
  if (r.memory.fits()) return "";
  return fmt::format("does not fit: {} reserved per GPU ({} allocated) > {}", format_bytes(r.memory.reserved()),
                     format_bytes(r.memory.per_worker.total()), format_bytes(r.memory.gpu_memory));
}

std::string describe(const predict::Result& r) {
  // The bottleneck names a job that does not fit already.
  const std::string over = r.bottleneck_kind == predict::BottleneckKind::Memory ? "" : misfit(r);
  return fmt::format("{} samples/s, efficiency {}, step {}; bottleneck: {}{}", format_number(r.throughput),
                     format_percent(r.efficiency), format_duration(r.step_time), r.bottleneck,
                     over.empty() ? "" : " (" + over + ")");
}

void write_point(detail::JsonWriter& json, const GridPoint& p) {
  json.begin_object();
  json.key("config");
  detail::write_config_json(json, p.config);
  json.key("cost");
  json.integer(p.cost);
  json.key("money");
  if (p.result.cost.gpu_hour > 0) {
    json.number(p.money);
  } else {
    json.null();
  }
  json.key("fits");
  json.boolean(p.result.memory.fits());
  json.key("meets");
  json.boolean(p.meets);
  json.key("prediction");
  detail::write_prediction_json(json, p.result, nullptr);
  json.end_object();
}

}  // namespace

void write_advice_text(std::ostream& out, const Advice& a) {
  fmt::memory_buffer buf;
  auto it = std::back_inserter(buf);
  fmt::format_to(it, "scenario: {}\n", a.scenario);
  fmt::format_to(it, "as given: {}\n", describe(a.base));
  // Without costs "cheapest" is the fewest steps up the --vary lists, as the guide says.
  if (a.minimised.starts_with("cost")) {
    fmt::format_to(it,
                   "cheapest means least {} (cluster.cost.gpu_hour), then fewest steps up the --vary lists\n",
                   a.minimised);
  }
  if (a.cheapest.empty()) {
    if (a.best_point) {
      const GridPoint& best = a.grid[*a.best_point];
      fmt::format_to(
          it, "no configuration of the {} tried meets {}; the best that fits in GPU memory is {}: {}\n",
          a.grid.size(), a.target, config_label(best.config), describe(best.result));
    } else if (!a.grid.empty()) {
      fmt::format_to(it, "no configuration of the {} tried fits in GPU memory\n", a.grid.size());
    }
  } else {
    const GridPoint& first = a.grid[a.cheapest.front()];
    const std::string money =
        a.minimised.starts_with("cost")
            ? fmt::format("{} {}, ", a.minimised,
                          a.currency.empty() ? format_number(first.money)
                                             : format_number(first.money) + " " + a.currency)
            : std::string();
    fmt::format_to(it, "cheapest that meets {}: {} ({}{} up from the cheapest values): {}\n", a.target,
                   config_label(first.config), money, format_count(first.cost, "step", "steps"),
                   describe(first.result));
    if (a.cheapest.size() > 1) {
      fmt::format_to(it, "  tied (same cost, same throughput):");
      for (size_t k = 1; k < a.cheapest.size(); ++k)
        fmt::format_to(it, " {};", config_label(a.grid[a.cheapest[k]].config));
      buf.push_back('\n');
    }
  }
  if (a.best_changes.empty()) {
    fmt::format_to(
        it,
        "best single change: none of the varied values that fit in GPU memory raises the throughput of the "
        "scenario as given\n");
  } else {
    const Change& c = a.best_changes.front();
    fmt::format_to(it, "best single change: {} from {} to {}: {}{} samples/s ({}), to {}\n", c.key, c.from,
                   c.to, c.gain > 0 ? "+" : "", format_number(c.gain), format_signed_percent(c.gain_fraction),
                   describe(c.result));
    for (size_t k = 1; k < a.best_changes.size(); ++k) {
      fmt::format_to(it, "  as good: {} from {} to {}\n", a.best_changes[k].key, a.best_changes[k].from,
                     a.best_changes[k].to);
    }
  }
  // What does not fit stays in the grid (JSON "fits": false) but is never an answer; say so when
  // it would have been the fastest.
  std::size_t over = 0, fastest = 0;
  for (std::size_t i = 0; i < a.grid.size(); ++i) {
    if (!a.grid[i].result.memory.fits()) ++over;
    if (a.grid[i].result.throughput > a.grid[fastest].result.throughput) fastest = i;
  }
  if (over > 0) {
    fmt::format_to(it, "{} of the {} configurations do not fit in GPU memory and are not answers", over,
                   a.grid.size());
    const GridPoint& top = a.grid[fastest];
    if (!top.result.memory.fits()) {
      fmt::format_to(it, "; the fastest of all, {} ({} samples/s), {}", config_label(top.config),
                     format_number(top.result.throughput), misfit(top.result));
    }
    buf.push_back('\n');
  }
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

void write_advice_json(std::ostream& out, const Advice& a) {
  detail::JsonWriter json(out);
  json.begin_object();
  json.key("scenario");
  json.string(a.scenario);
  json.key("target");
  json.begin_object();
  json.key("efficiency");
  if (a.target_efficiency > 0) {
    json.number(a.target_efficiency);
  } else {
    json.null();
  }
  json.key("throughput_samples_per_s");
  if (a.target_throughput > 0) {
    json.number(a.target_throughput);
  } else {
    json.null();
  }
  json.end_object();
  json.key("feasible");
  json.boolean(!a.cheapest.empty());
  json.key("minimised");
  json.string(a.minimised);
  json.key("as_given");
  detail::write_prediction_json(json, a.base, nullptr);
  json.key("cheapest");
  json.begin_array();
  for (size_t i : a.cheapest) write_point(json, a.grid[i]);
  json.end_array();
  json.key("best_point");
  if (a.best_point) {
    write_point(json, a.grid[*a.best_point]);
  } else {
    json.null();
  }
  json.key("best_changes");
  json.begin_array();
  for (const Change& c : a.best_changes) {
    json.begin_object();
    json.key("key");
    json.string(c.key);
    json.key("from");
    json.string(c.from);
    json.key("to");
    json.string(c.to);
    json.key("gain_samples_per_s");
    json.number(c.gain);
    json.key("gain_fraction");
    json.number(c.gain_fraction);
    json.key("prediction");
    detail::write_prediction_json(json, c.result, nullptr);
    json.end_object();
  }
  json.end_array();
  json.key("grid");
  json.begin_array();
  for (const GridPoint& p : a.grid) write_point(json, p);
  json.end_array();
  json.end_object();
}

}  // namespace stepcast::report
