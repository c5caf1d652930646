#include "scheme/trace_network.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <utility>

namespace stepcast::scheme {

TracedNetwork::TracedNetwork(net::NetworkModel& inner, std::size_t links) : inner_(inner), links_(links) {}

net::FlowId TracedNetwork::start_flow(const net::FlowSpec& flow, double now) {
  const net::FlowId id = inner_.start_flow(flow, now);
  const uint32_t f = net::index(id);
  if (f >= flows_.size()) flows_.resize(f + 1);
  flows_[f].path = flow.path;
  flows_[f].rate = 0;
  now_ = std::max(now_, now);
  // An empty path completes at once and loads no link.
  if (!flow.path.empty()) open(f);
  return id;
}

void TracedNetwork::open(uint32_t f) {
  Flow& flow = flows_[f];
  flow.open = true;
  open_.push_back(f);
  for (const net::LinkUse& use : flow.path) change(use.link, now_, 0, use.count);
}

std::vector<net::FlowId> TracedNetwork::advance_to(double t) {
  std::vector<net::FlowId> done;
  advance_to(t, done);
  return done;
}

void TracedNetwork::advance_to(double t, std::vector<net::FlowId>& done) {
  // The rates that held since the last instant: the model re-shares only when flows start or
  // end, which happens at instants, so reading them now is exact.
  for (uint32_t f : open_) {
    Flow& flow = flows_[f];
    const double r = inner_.rate(net::FlowId{f});
    if (r == flow.rate) continue;
    for (const net::LinkUse& use : flow.path) change(use.link, now_, (r - flow.rate) * use.count, 0);
    flow.rate = r;
  }
  inner_.advance_to(t, done);
  now_ = std::max(now_, t);
  bool closed = false;
  for (net::FlowId id : done) {
    const uint32_t f = net::index(id);
    if (f >= flows_.size() || !flows_[f].open) continue;
    Flow& flow = flows_[f];
    for (const net::LinkUse& use : flow.path) {
      change(use.link, now_, -flow.rate * use.count, -static_cast<int64_t>(use.count));
    }
    flow.rate = 0;
    flow.open = false;
    closed = true;
  }
  if (closed) std::erase_if(open_, [&](uint32_t f) { return !flows_[f].open; });
}

void TracedNetwork::restart_flow(net::FlowId id, double bytes) {
  inner_.restart_flow(id, bytes);
  const uint32_t f = net::index(id);
  // The same connection's next message: its rate is read back at the next instant.
  if (f < flows_.size() && !flows_[f].open && !flows_[f].path.empty()) open(f);
}

void TracedNetwork::change(uint32_t l, double time, double rate, int64_t members) {
  Link& link = links_[l];
  integrate(link, link.since, time);
  link.since = std::max(link.since, time);
  link.rate += rate;
  link.members = static_cast<uint32_t>(static_cast<int64_t>(link.members) + members);
  if (link.members == 0 || link.rate < 0) link.rate = 0;  // no drift left behind
}

void TracedNetwork::cover(double t) {
  while (t > static_cast<double>(kBins) * width_) {
    for (Link& link : links_) {
      if (link.bytes.empty()) continue;
      for (std::size_t i = 0; i < kBins / 2; ++i) {
        link.bytes[i] = link.bytes[2 * i] + link.bytes[2 * i + 1];
        link.members_time[i] = link.members_time[2 * i] + link.members_time[2 * i + 1];
      }
      std::fill(link.bytes.begin() + kBins / 2, link.bytes.end(), 0.0);
      std::fill(link.members_time.begin() + kBins / 2, link.members_time.end(), 0.0);
    }
    width_ *= 2;
  }
}

void TracedNetwork::integrate(Link& link, double from, double to) {
  if (!(to > from) || (link.rate == 0 && link.members == 0)) return;
  cover(to);
  if (link.bytes.empty()) {
    link.bytes.assign(kBins, 0.0);
    link.members_time.assign(kBins, 0.0);
  }
  std::size_t i = std::min(kBins - 1, static_cast<std::size_t>(from / width_));
  for (double a = from; a < to; ++i) {
    const double end = i + 1 >= kBins ? to : std::min(to, static_cast<double>(i + 1) * width_);
    if (end <= a) continue;
    link.bytes[i] += link.rate * (end - a);
    link.members_time[i] += static_cast<double>(link.members) * (end - a);
    a = end;
  }
}

void TracedNetwork::finish(double end) {
  now_ = std::max(now_, end);
  for (Link& link : links_) {
    integrate(link, link.since, now_);
    link.since = now_;
  }
}

double TracedNetwork::bytes_in(const Link& link, double t0, double t1) const {
  if (link.bytes.empty()) return 0;
  double sum = 0;
  for (std::size_t i = 0; i < kBins; ++i) {
    const double a = static_cast<double>(i) * width_, b = a + width_;
    const double overlap = std::min(b, t1) - std::max(a, t0);
    if (overlap > 0) sum += link.bytes[i] * overlap / width_;
  }
  return sum;
}

namespace {

/// Counter values rounded to 1/scale, so that repeats coalesce and the text stays short.
double rounded(double value, double scale) { return std::round(value * scale) / scale; }

void add_sample(sim::TraceCounter& c, double time, std::initializer_list<double> values) {
  const std::size_t n = c.series.size();
  if (!c.times.empty() &&
      std::equal(values.begin(), values.end(), c.values.end() - static_cast<std::ptrdiff_t>(n)))
    return;
  c.times.push_back(time);
  c.values.insert(c.values.end(), values.begin(), values.end());
}

}  // namespace

void TracedNetwork::add_counters(sim::Trace& trace, const cluster::Cluster& cluster, int process, double t0,
                                 double t1) const {
  t1 = std::min(t1, now_);
  if (!(t1 > t0)) return;
  const std::size_t first = std::min(kBins - 1, static_cast<std::size_t>(t0 / width_));
  const std::size_t last = std::min(kBins - 1, static_cast<std::size_t>(std::ceil(t1 / width_)));
  // A bin's mean over its part inside the run and the kept window.
  auto span_of = [&](std::size_t i) {
    const double a = std::max(t0, static_cast<double>(i) * width_);
    const double b = std::min(t1, static_cast<double>(i + 1) * width_);
    return std::pair{a, b - a};
  };

  std::vector<std::pair<double, uint32_t>> busiest;
  for (uint32_t l = 0; l < links_.size(); ++l) {
    const double bytes = bytes_in(links_[l], t0, t1);
    if (bytes > 0) busiest.emplace_back(bytes, l);
  }
  std::sort(busiest.begin(), busiest.end(), [&](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first
                              : cluster.links.name(a.second) < cluster.links.name(b.second);
  });
  if (busiest.size() > kLinks) busiest.resize(kLinks);

  for (const auto& [bytes, l] : busiest) {
    const Link& link = links_[l];
    sim::TraceCounter c{process, cluster.links.name(l), {"utilisation", "flows"}, {}, {}};
    for (std::size_t i = first; i <= last; ++i) {
      const auto [at, width] = span_of(i);
      if (!(width > 0)) continue;
      // Bin integrals are over the whole bin; its part outside [t0, t1] is assumed alike.
      const double full =
          std::min(static_cast<double>(i + 1) * width_, now_) - static_cast<double>(i) * width_;
      add_sample(c, at,
                 {rounded(link.bytes[i] / (cluster.links[l].bw * full), 1e4),
                  rounded(link.members_time[i] / full, 1e3)});
    }
    add_sample(c, t1, {0.0, 0.0});
    trace.counters.push_back(std::move(c));
  }

  // The NICs' mean utilisation each way, workers' and servers' apart.
  const int worker_nodes = cluster.spec.num_worker_nodes();
  struct Group {
    const char* name;
    std::vector<uint32_t> links;
  };
  Group groups[4] = {{"worker NICs out (mean)", {}},
                     {"worker NICs in (mean)", {}},
                     {"server NICs out (mean)", {}},
                     {"server NICs in (mean)", {}}};
  for (std::size_t nic = 0; nic < cluster.nic_up.size(); ++nic) {
    const bool server = cluster.links[cluster.nic_up[nic]].from >= worker_nodes;
    groups[server ? 2 : 0].links.push_back(cluster.nic_up[nic]);
    groups[server ? 3 : 1].links.push_back(cluster.nic_down[nic]);
  }
  for (const Group& g : groups) {
    if (g.links.empty()) continue;
    sim::TraceCounter c{process, g.name, {"utilisation"}, {}, {}};
    for (std::size_t i = first; i <= last; ++i) {
      const auto [at, width] = span_of(i);
      if (!(width > 0)) continue;
      const double full =
          std::min(static_cast<double>(i + 1) * width_, now_) - static_cast<double>(i) * width_;
      double sum = 0;
      for (uint32_t l : g.links) {
        if (!links_[l].bytes.empty()) sum += links_[l].bytes[i] / (cluster.links[l].bw * full);
      }
      add_sample(c, at, {rounded(sum / static_cast<double>(g.links.size()), 1e4)});
    }
    add_sample(c, t1, {0.0});
    if (c.times.size() > 1 || c.values.front() != 0) trace.counters.push_back(std::move(c));
  }
}

}  // namespace stepcast::scheme
