// write_json / write_table of one collective (`stepcast collective`).
#include "stepcast/detail/report/collective_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "report/json_text.hpp"
#include "stepcast/units.hpp"

namespace stepcast::report {
namespace {

// The command shows at most this many links: the busiest are the ones that explain the time.
constexpr std::size_t kShownLinks = 10;

std::size_t shown_links(const CollectiveReport& r) { return std::min(r.result.links.size(), kShownLinks); }

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

void write_json(std::ostream& out, const CollectiveReport& r) {
  const cluster::ClusterSpec& spec = r.cluster;
  detail::JsonWriter json(out, detail::JsonWriter::Layout::OneLine);
  json.begin_object();
  json.key("op");
  json.string(scheme::to_string(r.op));
  json.key("algorithm");
  json.string(scheme::to_string(r.algorithm));
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
  if (const cluster::CollectiveRegime* regime = spec.regime_for(r.bytes)) {
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
  json.key("links");
  json.begin_array();
  for (std::size_t i = 0; i < shown_links(r); ++i) {
    const scheme::LinkLoad& link = r.result.links[i];
    json.begin_object();
    json.key("name");
    json.string(link.name);
    json.key("busy");
    json.number(link.busy);
    json.key("bytes");
    json.number(link.bytes);
    json.end_object();
  }
  json.end_array();
  json.end_object();
}

void write_table(std::ostream& out, const CollectiveReport& r) {
  const cluster::ClusterSpec& spec = r.cluster;
  fmt::memory_buffer buf;
  auto it = std::back_inserter(buf);
  fmt::format_to(it, "{} ({}) of {} over {} workers ({} per node) on a {} topology, NIC {}, latency {}\n",
                 scheme::to_string(r.op), scheme::to_string(r.algorithm), format_bytes(r.bytes), spec.workers,
                 spec.workers_per_node, cluster::to_string(spec.topology), format_bandwidth(spec.nic_bw),
                 format_duration(spec.latency));
  fmt::format_to(it,
                 "  time             {}\n  algbw            {:.3f} GB/s\n  busbw            {:.3f} GB/s\n",
                 format_duration(r.result.time), algorithm_bandwidth(r) / 1e9, bus_bandwidth(r) / 1e9);
  fmt::format_to(it, "  steps            {}\n  max flows/link   {} (in one step, one direction)\n",
                 r.result.stages, r.result.max_link_flows);
  if (const cluster::CollectiveRegime* regime = spec.regime_for(r.bytes)) {
    // GB/s as calibrate writes it (the fitted figure is a bus bandwidth, not a NIC's bit rate).
    fmt::format_to(it, "  regime           from {}: each step >= {}, each transfer <= {:.6g} GB/s\n",
                   format_bytes(regime->from_bytes), format_duration(regime->step_latency), regime->bw / 1e9);
  }
  if (shown_links(r) > 0) buf.append(std::string_view("  busiest links:\n"));
  for (std::size_t i = 0; i < shown_links(r); ++i) {
    const scheme::LinkLoad& link = r.result.links[i];
    fmt::format_to(it, "    {:<28} {:5.1f}% busy, {}\n", link.name, 100 * link.busy,
                   format_bytes(link.bytes));
  }
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

}  // namespace stepcast::report
