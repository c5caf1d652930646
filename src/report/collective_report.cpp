// write_json / write_table of one collective (`stepcast collective`).
#include "stepcast/detail/report/collective_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "report/json_text.hpp"
#include "stepcast/units.hpp"

namespace stepcast::report {
namespace {

// The command shows at most this many links: the busiest are the ones that explain the time.
std::size_t shown_links(const CollectiveReport& r) {
  return r.links_shown == 0 ? r.result.links.size() : std::min(r.result.links.size(), r.links_shown);
}

}  // namespace

double algorithm_bandwidth(const CollectiveReport& r) {
  return r.result.time > 0 ? r.bytes / r.result.time : 0;
}

double bus_bandwidth(const CollectiveReport& r) {
  const double n = r.cluster.workers;
  double factor = 1;
  switch (r.op) {
    case scheme::CollectiveOp::AllReduce:
      factor = 2 * (n - 1) / n;
      break;
    case scheme::CollectiveOp::AllGather:
    case scheme::CollectiveOp::ReduceScatter:
      factor = (n - 1) / n;
      break;
    case scheme::CollectiveOp::Broadcast:
      factor = 1;
      break;
  }
  return algorithm_bandwidth(r) * factor;
}

namespace {

/// The size regime that applied (only under protocol links).
const cluster::CollectiveRegime* shown_regime(const CollectiveReport& r) {
  return r.result.protocol == scheme::CollectiveProtocol::Links ? r.cluster.regime_for(r.bytes) : nullptr;
}

/// "tree/LL", "ring": what ran, for tables.
std::string ran(const CollectiveReport& r) {
  if (r.result.protocol == scheme::CollectiveProtocol::Links) return scheme::to_string(r.result.algorithm);
  return fmt::format("{}/{}", scheme::to_string(r.result.algorithm), scheme::to_string(r.result.protocol));
}

void write_object(detail::JsonWriter& json, const CollectiveReport& r, const Config* config) {
  const cluster::ClusterSpec& spec = r.cluster;
  json.begin_object();
  if (config != nullptr) {
    json.key("config");
    detail::write_config_json(json, *config);
  }
  json.key("op");
  json.string(scheme::to_string(r.op));
  json.key("algorithm");
  json.string(scheme::to_string(r.algorithm));
  // What ran: the algorithm and protocol auto chose (or those asked for).
  json.key("ran_algorithm");
  json.string(scheme::to_string(r.result.algorithm));
  json.key("protocol");
  json.string(scheme::to_string(r.result.protocol));
  json.key("topology");
  json.string(cluster::to_string(spec.topology));
  json.key("workers");
  json.integer(spec.workers);
  json.key("size_bytes");
  json.number(r.bytes);
  json.key("time_s");
  json.number(r.result.time);
  json.key("algbw_GBps");
  json.number(algorithm_bandwidth(r) / 1e9);
  json.key("busbw_GBps");
  json.number(bus_bandwidth(r) / 1e9);
  json.key("steps");
  json.integer(r.result.stages);
  json.key("max_link_flows");
  json.integer(r.result.max_link_flows);
  json.key("regime");
  if (const cluster::CollectiveRegime* regime = shown_regime(r)) {
    json.begin_object();
    json.key("from_bytes");
    json.number(regime->from_bytes);
    json.key("step_latency_s");
    json.number(regime->step_latency);
    json.key("bandwidth_Bps");
    json.number(regime->bw);
    json.end_object();
  } else {
    json.null();
  }
  detail::write_links_json(json, r.result.links, shown_links(r), r.result.links_left_out);
  json.end_object();
}

}  // namespace

void write_json(std::ostream& out, const CollectiveReport& r) {
  detail::JsonWriter json(out, detail::JsonWriter::Layout::OneLine);
  write_object(json, r, nullptr);
}

void write_json(std::ostream& out, const std::vector<CollectiveReport>& rows,
                const std::vector<Config>& configs) {
  detail::JsonWriter json(out, detail::JsonWriter::Layout::Indented);
  json.begin_object();
  json.key("collectives");
  json.begin_array();
  for (std::size_t i = 0; i < rows.size(); ++i)
    write_object(json, rows[i], i < configs.size() ? &configs[i] : nullptr);
  json.end_array();
  json.end_object();
}

void write_table(std::ostream& out, const std::vector<CollectiveReport>& rows,
                 const std::vector<Config>& configs) {
  fmt::memory_buffer buf;
  auto it = std::back_inserter(buf);
  if (!rows.empty()) {
    const CollectiveReport& first = rows.front();
    fmt::format_to(it, "{} ({}) on a {} topology, {} per node\n", scheme::to_string(first.op),
                   scheme::to_string(first.algorithm), cluster::to_string(first.cluster.topology),
                   first.cluster.workers_per_node);
  }
  // nccl-tests' columns: one row per size, worker count and swept configuration.
  std::vector<std::string> header;
  const std::size_t swept = configs.empty() ? 0 : configs.front().size();
  for (std::size_t k = 0; k < swept; ++k) header.push_back(configs.front()[k].key);
  // What ran, when it may differ from row to row or from the algorithm asked for.
  const bool chosen = std::any_of(rows.begin(), rows.end(), [](const CollectiveReport& r) {
    return r.algorithm == scheme::AllReduceAlgorithm::Auto ||
           r.result.protocol != scheme::CollectiveProtocol::Links;
  });
  for (const char* h : {"workers", "size", "time", "algbw (GB/s)", "busbw (GB/s)", "steps", "flows/link"}) {
    header.emplace_back(h);
  }
  if (chosen) header.emplace_back("ran");
  std::vector<std::vector<std::string>> cells;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const CollectiveReport& r = rows[i];
    std::vector<std::string> row;
    for (std::size_t k = 0; k < swept; ++k) row.push_back(configs[i][k].value);
    row.push_back(fmt::format("{}", r.cluster.workers));
    row.push_back(format_bytes(r.bytes));
    row.push_back(format_duration(r.result.time));
    row.push_back(format_number(algorithm_bandwidth(r) / 1e9));
    row.push_back(format_number(bus_bandwidth(r) / 1e9));
    row.push_back(fmt::format("{}", r.result.stages));
    row.push_back(fmt::format("{}", r.result.max_link_flows));
    if (chosen) row.push_back(ran(r));
    cells.push_back(std::move(row));
  }
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : cells) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& row) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (c > 0) buf.append(std::string_view("  "));
      // Swept values on the left like words, the numbers on the right.
      if (c < swept) {
        fmt::format_to(it, "{:<{}}", row[c], width[c]);
      } else {
        fmt::format_to(it, "{:>{}}", row[c], width[c]);
      }
    }
    buf.push_back('\n');
  };
  line(header);
  for (const auto& row : cells) line(row);
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

void write_table(std::ostream& out, const CollectiveReport& r) {
  const cluster::ClusterSpec& spec = r.cluster;
  fmt::memory_buffer buf;
  auto it = std::back_inserter(buf);
  fmt::format_to(it, "{} ({}) of {} over {} ({} per node) on a {} topology, NIC {}, latency {}\n",
                 scheme::to_string(r.op), scheme::to_string(r.algorithm), format_bytes(r.bytes),
                 format_count(spec.workers, "worker", "workers"), spec.workers_per_node,
                 cluster::to_string(spec.topology), format_bandwidth(spec.nic_bw),
                 format_duration(spec.latency));
  fmt::format_to(it, "  time             {}\n  algbw            {} GB/s\n  busbw            {} GB/s\n",
                 format_duration(r.result.time), format_number(algorithm_bandwidth(r) / 1e9),
                 format_number(bus_bandwidth(r) / 1e9));
  fmt::format_to(it, "  steps            {}\n  max flows/link   {} (in one step, one direction)\n",
                 r.result.stages, r.result.max_link_flows);
  if (r.algorithm == scheme::AllReduceAlgorithm::Auto ||
      r.result.protocol != scheme::CollectiveProtocol::Links) {
    fmt::format_to(it, "  ran              {}{}\n", ran(r),
                   r.algorithm == scheme::AllReduceAlgorithm::Auto
                       ? " (auto: least closed-form time at this size)"
                       : "");
  }
  if (const cluster::CollectiveRegime* regime = shown_regime(r)) {
    // GB/s as calibrate writes it (the fitted figure is a bus bandwidth, not a NIC's bit rate).
    fmt::format_to(it, "  regime           from {}: each step >= {}, each transfer <= {:.6g} GB/s\n",
                   format_bytes(regime->from_bytes), format_duration(regime->step_latency), regime->bw / 1e9);
  }
  if (shown_links(r) > 0) buf.append(std::string_view("  busiest links:\n"));
  for (std::size_t i = 0; i < shown_links(r); ++i) {
    const scheme::LinkLoad& link = r.result.links[i];
    fmt::format_to(it, "    {:<28} {:>6} busy, {}\n", link.name, format_percent(link.busy),
                   format_bytes(link.bytes));
  }
  if (const std::size_t others = r.result.links.size() - shown_links(r) + r.result.links_left_out;
      others > 0) {
    fmt::format_to(it, "    ... and {} (--all-links lists them)\n",
                   format_count(static_cast<double>(others), "more link", "more links"));
  }
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

}  // namespace stepcast::report
