// Step windows, GPU time split and collectives of a Kineto trace. GPU time is measured on
// unions of intervals (several streams run at once, so summing durations would double count);
// the sums are reported too because HTA and the shared step_summary.csv use them.
#include "stepcast/detail/profile/trace_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "stepcast/error.hpp"

namespace stepcast::profile {

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (pos - static_cast<double>(lo));
}

namespace {

struct Interval {
  double start = 0;
  double end = 0;
};

/// Sorted, disjoint intervals with prefix sums of their lengths, for measuring any window in
/// O(log n).
class IntervalSet {
 public:
  IntervalSet() = default;
  /// From intervals sorted by start (overlaps allowed): merges them.
  explicit IntervalSet(const std::vector<Interval>& sorted) {
    for (const Interval& iv : sorted) {
      if (iv.end <= iv.start) continue;
      if (!list_.empty() && iv.start <= list_.back().end) {
        list_.back().end = std::max(list_.back().end, iv.end);
      } else {
        list_.push_back(iv);
      }
    }
    index();
  }

  [[nodiscard]] const std::vector<Interval>& list() const { return list_; }

  /// Intersection with another set.
  [[nodiscard]] IntervalSet intersect(const IntervalSet& other) const {
    IntervalSet out;
    size_t i = 0;
    size_t j = 0;
    while (i < list_.size() && j < other.list_.size()) {
      const double a = std::max(list_[i].start, other.list_[j].start);
      const double b = std::min(list_[i].end, other.list_[j].end);
      if (a < b) out.list_.push_back({a, b});
      if (list_[i].end < other.list_[j].end) {
        ++i;
      } else {
        ++j;
      }
    }
    out.index();
    return out;
  }

  /// Length of the union inside [a, b), seconds.
  [[nodiscard]] double measure(double a, double b) const {
    if (list_.empty() || b <= a) return 0;
    // First interval ending after a, first starting at or after b.
    const auto lo = static_cast<size_t>(
        std::partition_point(list_.begin(), list_.end(), [&](const Interval& iv) { return iv.end <= a; }) -
        list_.begin());
    const auto hi = static_cast<size_t>(
        std::partition_point(list_.begin(), list_.end(), [&](const Interval& iv) { return iv.start < b; }) -
        list_.begin());
    if (lo >= hi) return 0;
    double total = prefix_[hi] - prefix_[lo];
    total -= std::max(0.0, a - list_[lo].start);
    total -= std::max(0.0, list_[hi - 1].end - b);
    return std::max(0.0, total);
  }

 private:
  void index() {
    prefix_.assign(list_.size() + 1, 0.0);
    for (size_t i = 0; i < list_.size(); ++i) prefix_[i + 1] = prefix_[i] + (list_[i].end - list_[i].start);
  }
  std::vector<Interval> list_;
  std::vector<double> prefix_;
};

struct StepWindow {
  std::string name;
  int64_t number = 0;
  double start = 0;
  double duration = 0;
};

struct GpuActivity {
  double start = 0;
  double end = 0;
  bool kernel = false;
  bool nccl = false;
  int64_t correlation = -1;
};

DurationStats stats_of(const std::vector<double>& v) {
  DurationStats s;
  s.count = static_cast<int>(v.size());
  if (v.empty()) return s;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - s.mean) * (x - s.mean);
  s.stddev = std::sqrt(var / static_cast<double>(v.size()));
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  s.p50 = quantile(v, 0.5);
  s.p95 = quantile(v, 0.95);
  return s;
}

/// Collects what the summary needs from a stream of events, then computes it.
class SummaryBuilder {
 public:
  explicit SummaryBuilder(const SummaryOptions& options) : options_(options) {}

  void add(const EventView& e) {
    ++num_events_;
    if (e.ph != 'X') return;
    switch (e.cat) {
      case Category::UserAnnotation:
      case Category::CpuOp:  // 2021 traces record ProfilerStep#N as an "Operator"
        if (e.name.starts_with("ProfilerStep#")) add_step(e);
        break;
      case Category::CudaRuntime:
      case Category::CudaDriver:
        if (e.correlation >= 0) launches_.emplace(e.correlation, e.ts);
        break;
      case Category::Kernel: {
        const bool nccl = e.has_nccl || is_nccl_kernel_name(e.name);
        gpu_.push_back({e.ts, e.ts + e.dur, true, nccl, e.correlation});
        if (e.device >= 0) devices_.insert(e.device);
        if (nccl) add_collective(e);
        break;
      }
      case Category::GpuMemcpy:
      case Category::GpuMemset:
        gpu_.push_back({e.ts, e.ts + e.dur, false, false, -1});
        break;
      default:
        break;
    }
  }

  TraceSummary finish(const std::string& file, TraceMetadata metadata, const ReadStats& stats) {
    TraceSummary out;
    out.file = file;
    out.metadata = std::move(metadata);
    out.num_events = num_events_;
    out.devices_used.assign(devices_.begin(), devices_.end());
    out.warnings = stats.warnings;
    out.num_warnings = stats.num_warnings;
    if (steps_.empty()) {
      throw Error({file, 0, "traceEvents"},
                  "no steps found: the trace has no \"ProfilerStep#N\" annotations (record the profile with "
                  "torch.profiler.schedule and call prof.step() once per training step)");
    }
    std::sort(steps_.begin(), steps_.end(), [](const StepWindow& a, const StepWindow& b) {
      return std::tie(a.start, a.number) < std::tie(b.start, b.number);
    });
    std::sort(gpu_.begin(), gpu_.end(),
              [](const GpuActivity& a, const GpuActivity& b) { return a.start < b.start; });

    // Kernels by start time with prefix sums of their durations, split NCCL / other.
    std::vector<double> kernel_start;
    std::vector<double> compute_prefix{0.0};
    std::vector<double> nccl_prefix{0.0};
    std::vector<double> launch_ts;
    std::vector<Interval> compute_iv;
    std::vector<Interval> nccl_iv;
    std::vector<Interval> all_iv;
    for (const GpuActivity& g : gpu_) {
      all_iv.push_back({g.start, g.end});
      (g.nccl ? nccl_iv : compute_iv).push_back({g.start, g.end});
      if (!g.kernel) continue;
      kernel_start.push_back(g.start);
      compute_prefix.push_back(compute_prefix.back() + (g.nccl ? 0.0 : g.end - g.start));
      nccl_prefix.push_back(nccl_prefix.back() + (g.nccl ? g.end - g.start : 0.0));
      if (auto it = launches_.find(g.correlation); g.correlation >= 0 && it != launches_.end()) {
        launch_ts.push_back(it->second);
      }
    }
    std::sort(launch_ts.begin(), launch_ts.end());
    const IntervalSet busy(all_iv);
    const IntervalSet compute(compute_iv);
    const IntervalSet communication(nccl_iv);
    const IntervalSet overlap = compute.intersect(communication);

    auto count_in = [](const std::vector<double>& sorted, double a, double b) {
      return static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), b) -
                                 std::lower_bound(sorted.begin(), sorted.end(), a));
    };
    for (const StepWindow& w : steps_) {
      StepSummary s;
      s.name = w.name;
      s.number = w.number;
      s.start = w.start;
      s.duration = w.duration;
      const double a = w.start;
      const double b = w.start + w.duration;
      const auto lo = static_cast<size_t>(std::lower_bound(kernel_start.begin(), kernel_start.end(), a) -
                                          kernel_start.begin());
      const auto hi = static_cast<size_t>(std::lower_bound(kernel_start.begin(), kernel_start.end(), b) -
                                          kernel_start.begin());
      s.num_kernels = static_cast<int>(hi - lo);
      s.kernel_compute_sum = compute_prefix[hi] - compute_prefix[lo];
      s.nccl_kernel_sum = nccl_prefix[hi] - nccl_prefix[lo];
      s.num_kernels_launched = static_cast<int>(count_in(launch_ts, a, b));
      s.gpu_busy = busy.measure(a, b);
      s.compute = compute.measure(a, b);
      s.communication = communication.measure(a, b);
      s.overlap = overlap.measure(a, b);
      s.idle = std::max(0.0, w.duration - s.gpu_busy);
      out.steps.push_back(std::move(s));
    }

    // A window the profiler cut short (or one still draining the backlog of earlier, unprofiled
    // steps) runs far fewer kernels than the others and keeps the GPU busy for less time; its
    // duration is not a step time. Both signals must agree: a data-loader stall can move kernels
    // between windows while the GPU stays as busy as in the other steps (kineto_sample ..._4).
    std::vector<double> counts;
    std::vector<double> busy_times;
    for (const auto& s : out.steps) {
      counts.push_back(s.num_kernels);
      busy_times.push_back(s.gpu_busy);
    }
    const double median_kernels = quantile(counts, 0.5);
    const double median_busy = quantile(busy_times, 0.5);
    const double f = options_.min_kernel_fraction;
    for (auto& s : out.steps) {
      if (median_kernels > 0 && s.num_kernels < f * median_kernels && s.gpu_busy < f * median_busy) {
        s.steady = false;
        s.note = fmt::format(
            "{} kernels and {:.3f} ms of GPU work in the window, fewer than {:.0f}% of the medians ({:g} "
            "kernels, "
            "{:.3f} ms): cut short by the profiler window",
            s.num_kernels, s.gpu_busy * 1e3, f * 100, median_kernels, median_busy * 1e3);
      }
    }

    std::vector<double> all_times;
    std::vector<double> steady_times;
    GpuTimeBreakdown& p = out.per_step;
    for (const auto& s : out.steps) {
      all_times.push_back(s.duration);
      if (!s.steady) continue;
      steady_times.push_back(s.duration);
      p.step += s.duration;
      p.gpu_busy += s.gpu_busy;
      p.compute += s.compute;
      p.communication += s.communication;
      p.overlap += s.overlap;
      p.idle += s.idle;
      p.kernel_compute_sum += s.kernel_compute_sum;
      p.nccl_kernel_sum += s.nccl_kernel_sum;
    }
    out.step_time_all = stats_of(all_times);
    out.step_time = stats_of(steady_times);
    if (!steady_times.empty()) {
      const auto n = static_cast<double>(steady_times.size());
      for (double* x : {&p.step, &p.gpu_busy, &p.compute, &p.communication, &p.overlap, &p.idle,
                        &p.kernel_compute_sum, &p.nccl_kernel_sum}) {
        *x /= n;
      }
    }

    // Collectives: the step holding each kernel's start, then groups.
    std::sort(collectives_.begin(), collectives_.end(),
              [](const CollectiveRecord& a, const CollectiveRecord& b) { return a.start < b.start; });
    for (auto& c : collectives_) {
      auto it = std::upper_bound(out.steps.begin(), out.steps.end(), c.start,
                                 [](double t, const StepSummary& s) { return t < s.start; });
      if (it != out.steps.begin()) {
        --it;
        if (c.start < it->start + it->duration) c.step = it->name;
      }
    }
    std::map<std::tuple<std::string, std::string, double, int>, size_t> group_of;
    for (const auto& c : collectives_) {
      auto key = std::make_tuple(c.collective, c.dtype, c.bytes, c.group_size);
      auto [it, inserted] = group_of.emplace(key, out.collective_groups.size());
      if (inserted) {
        CollectiveGroup g;
        g.collective = c.collective;
        g.dtype = c.dtype;
        g.bytes = c.bytes;
        g.group_size = c.group_size;
        g.min_duration = c.duration;
        g.max_duration = c.duration;
        out.collective_groups.push_back(g);
      }
      CollectiveGroup& g = out.collective_groups[it->second];
      ++g.count;
      g.total_duration += c.duration;
      g.min_duration = std::min(g.min_duration, c.duration);
      g.max_duration = std::max(g.max_duration, c.duration);
    }
    for (auto& g : out.collective_groups) g.mean_duration = g.total_duration / g.count;
    std::sort(out.collective_groups.begin(), out.collective_groups.end(),
              [](const CollectiveGroup& a, const CollectiveGroup& b) {
                return std::tie(a.collective, b.bytes, a.dtype, a.group_size) <
                       std::tie(b.collective, a.bytes, b.dtype, b.group_size);
              });
    out.collectives = std::move(collectives_);
    return out;
  }

 private:
  void add_step(const EventView& e) {
    int64_t number = 0;
    const std::string_view digits = e.name.substr(13);
    std::from_chars(digits.data(), digits.data() + digits.size(), number);
    // Some traces record the step twice (CPU op and annotation); keep the first.
    if (!step_names_.insert(std::string(e.name)).second) return;
    steps_.push_back({std::string(e.name), number, e.ts, e.dur});
  }

  void add_collective(const EventView& e) {
    CollectiveRecord c;
    c.collective =
        !e.nccl.collective.empty() ? std::string(e.nccl.collective) : collective_from_kernel_name(e.name);
    c.dtype = std::string(e.nccl.dtype);
    c.nelems = e.nccl.in_nelems;
    c.out_nelems = e.nccl.out_nelems;
    const int size = dtype_size(c.dtype);
    if (c.nelems >= 0 && size > 0) c.bytes = static_cast<double>(c.nelems) * size;
    c.group_size = e.nccl.group_size;
    c.process_group_ranks = std::string(e.nccl.process_group_ranks);
    // Kernel names carry the full C++ signature; the part before '(' names the kernel.
    c.kernel_name = std::string(e.name.substr(0, e.name.find('(')));
    c.device = e.device;
    c.stream = e.stream;
    c.start = e.ts;
    c.duration = e.dur;
    collectives_.push_back(std::move(c));
  }

  SummaryOptions options_;
  size_t num_events_ = 0;
  std::vector<StepWindow> steps_;
  std::set<std::string> step_names_;
  std::vector<GpuActivity> gpu_;
  std::unordered_map<int64_t, double> launches_;  // correlation id -> launch time, s
  std::set<int64_t> devices_;
  std::vector<CollectiveRecord> collectives_;
};

}  // namespace

TraceSummary summarize_kineto_file(const std::string& path, const SummaryOptions& options,
                                   const ReadOptions& read_options) {
  SummaryBuilder builder(options);
  ReadResult r = read_kineto_events(
      path, [&](const EventView& e) { builder.add(e); }, read_options);
  return builder.finish(path, std::move(r.metadata), r.stats);
}

TraceSummary summarize(const KinetoTrace& trace, const SummaryOptions& options) {
  SummaryBuilder builder(options);
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const KinetoEvent& k = trace.events[i];
    EventView e;
    e.index = i;
    e.name = trace.name(k);
    e.cat = k.cat;
    e.ph = k.ph;
    e.pid = k.pid;
    e.tid = k.tid;
    e.ts = k.ts;
    e.dur = k.dur;
    e.stream = k.stream;
    e.correlation = k.correlation;
    e.device = k.device;
    e.external_id = k.external_id;
    if (const NcclArgs* n = trace.nccl_args(k)) {
      e.has_nccl = true;
      e.nccl = {n->collective, n->dtype, n->process_group_ranks, n->in_nelems, n->out_nelems, n->group_size};
    }
    builder.add(e);
  }
  return builder.finish(trace.path, trace.metadata, trace.stats);
}

}  // namespace stepcast::profile
