#include "stepcast/detail/profile/kineto_workload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <string_view>
#include <unordered_map>

#include "stepcast/error.hpp"

namespace stepcast::profile {
namespace {

using workload::OpKind;

constexpr int kNone = -1;
constexpr double kEps = 1e-6;  // s: slack for "ends inside the call" (trace times are in us)
// Largest table for aligning the differing middle of two CPU lanes (a longest common
// subsequence); steps that differ more are not sampled.
constexpr size_t kMaxAlignCells = size_t{4} << 20;

bool is_cpu(Category c) {
  return c == Category::CpuOp || c == Category::UserAnnotation || c == Category::CudaRuntime;
}
bool is_gpu(Category c) {
  return c == Category::Kernel || c == Category::GpuMemcpy || c == Category::GpuMemset;
}

bool is_sync_name(std::string_view name) { return name.find("Synchronize") != std::string_view::npos; }
bool is_memcpy_name(std::string_view name) { return name.starts_with("cudaMemcpy"); }

// An op before ordering: measured start and end, deps on other proto ops.
struct Proto {
  std::string name;
  OpKind kind = OpKind::Other;
  int lane = 0;
  double start = 0;
  double duration = 0;
  std::vector<int> deps;
};

struct GpuOp {
  size_t event = 0;
  int proto = kNone;
  int launch_proto = kNone;  // CPU segment ending with its launch
  bool nccl = false;
  bool backward = false;
  double launch_time = 0;  // start of the cuda_runtime call
  double launch_end = 0;   // its end
  double end = 0;
};

// Converts the ops of one step window. Fills everything of KinetoWorkload but the summary and
// the samples.
class Converter {
 public:
  Converter(const KinetoTrace& trace, const KinetoWorkloadOptions& options, const StepSummary& step)
      : t_(trace), opt_(options) {
    out_.step = step.name;
    out_.step_duration = step.duration;
    ws_ = step.start;
    we_ = step.start + step.duration;
  }

  KinetoWorkload run() {
    collect();
    build_cpu_lanes();
    build_gpu_ops();
    order_ops();
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { throw Error({t_.path, 0, ""}, message); }

  void collect() {
    // Threads and events of the window; the thread holding the step annotation is the main one.
    std::unordered_map<int64_t, size_t> runtime_by_correlation;
    std::unordered_map<int64_t, double> launch_all;  // every launch of the trace: correlation -> ts
    for (size_t i = 0; i < t_.events.size(); ++i) {
      const KinetoEvent& e = t_.events[i];
      if (e.ph != 'X') continue;
      if (e.cat == Category::UserAnnotation && t_.name(e) == out_.step && std::abs(e.ts - ws_) < kEps) {
        main_thread_ = {e.pid, e.tid};
        continue;
      }
      if (e.cat == Category::CudaRuntime && e.correlation >= 0) launch_all[e.correlation] = e.ts;
      if (!is_cpu(e.cat) || e.ts < ws_ || e.ts >= we_) continue;
      if (e.cat == Category::UserAnnotation && t_.name(e).starts_with("ProfilerStep#")) continue;
      threads_[{e.pid, e.tid}].push_back(i);
      if (e.cat == Category::CudaRuntime && e.correlation >= 0) runtime_by_correlation[e.correlation] = i;
    }
    for (size_t i = 0; i < t_.events.size(); ++i) {
      const KinetoEvent& e = t_.events[i];
      if (e.ph != 'X' || !is_gpu(e.cat) || e.correlation < 0) continue;
      if (auto l = launch_all.find(e.correlation); l != launch_all.end() && l->second < ws_) {
        earlier_.push_back({l->second, e.ts + e.dur});
      }
      auto it = runtime_by_correlation.find(e.correlation);
      if (it == runtime_by_correlation.end()) continue;
      GpuOp g;
      g.event = i;
      g.nccl = e.cat == Category::Kernel && is_nccl_kernel_name(t_.name(e));
      g.launch_time = t_.events[it->second].ts;
      g.launch_end = g.launch_time + t_.events[it->second].dur;
      g.end = e.ts + e.dur;
      gpu_of_runtime_[it->second].push_back(gpu_.size());
      gpu_.push_back(g);
    }
    // Launch order (for "launched before" questions).
    by_launch_.resize(gpu_.size());
    for (size_t i = 0; i < gpu_.size(); ++i) by_launch_[i] = i;
    std::stable_sort(by_launch_.begin(), by_launch_.end(),
                     [&](size_t a, size_t b) { return gpu_[a].launch_time < gpu_[b].launch_time; });
  }

  int add(std::string name, OpKind kind, int lane, double start, double end, std::vector<int> deps = {}) {
    protos_.push_back({std::move(name), kind, lane, start, std::max(0.0, end - start), std::move(deps)});
    return static_cast<int>(protos_.size()) - 1;
  }

  // The GPU op a synchronizing call [ts, end] waited for: the latest-ending op launched before
  // the call (or by it) that ended inside it; kNone when none did (nothing to wait for).
  int sync_target(const KinetoEvent& call, size_t call_index) const {
    int best = kNone;
    for (size_t g : by_launch_) {
      const GpuOp& op = gpu_[g];
      if (op.launch_time > call.ts) break;
      if (op.end <= call.ts || op.end > call.ts + call.dur + kEps) continue;
      if (best == kNone || op.end > gpu_[static_cast<size_t>(best)].end) best = static_cast<int>(g);
    }
    // Work launched before the window (the backlog of earlier steps, which the simulator has
    // already finished when a step starts) ending inside the call: the call waited for it.
    double backlog = -1;
    for (const auto& [launch, end] : earlier_) {
      if (end > call.ts && end <= call.ts + call.dur + kEps) backlog = std::max(backlog, end);
    }
    backlog_end_ = backlog;
    if (is_memcpy_name(t_.name(call)) && !is_sync_name(t_.name(call))) {
      // A copy call blocks only for its own copy (pageable device-to-host).
      auto it = gpu_of_runtime_.find(call_index);
      if (it == gpu_of_runtime_.end()) return kNone;
      for (size_t g : it->second) {
        if (gpu_[g].end <= call.ts + call.dur + kEps) return best;
      }
      return kNone;
    }
    return best;
  }

  struct Cut {
    double time = 0;
    int type = 0;  // 0 launch, 1 sync
    size_t event = 0;
  };

  void build_cpu_lanes() {
    std::vector<std::pair<int64_t, int64_t>> order;
    for (const auto& [key, events] : threads_) order.push_back(key);
    // Main thread first, then by pid/tid.
    std::stable_partition(order.begin(), order.end(), [&](const auto& k) { return k == main_thread_; });
    for (const auto& key : order) {
      auto& events = threads_[key];
      std::sort(events.begin(), events.end(), [&](size_t a, size_t b) {
        const KinetoEvent& x = t_.events[a];
        const KinetoEvent& y = t_.events[b];
        if (x.ts != y.ts) return x.ts < y.ts;
        return x.dur > y.dur;
      });
      const int lane = static_cast<int>(out_.workload.lanes.size());
      out_.workload.lanes.push_back(fmt::format("cpu {}:{}", key.first, key.second));
      std::vector<size_t> top;
      std::vector<Cut> cuts;
      double cur_end = -1e300;
      for (size_t i : events) {
        const KinetoEvent& e = t_.events[i];
        if (e.ts >= cur_end) top.push_back(i);
        cur_end = std::max(cur_end, e.ts + e.dur);
        if (e.cat != Category::CudaRuntime) continue;
        const bool launches = gpu_of_runtime_.contains(i);
        const bool syncs = is_sync_name(t_.name(e)) || is_memcpy_name(t_.name(e));
        if (launches) cuts.push_back({syncs ? e.ts : e.ts + e.dur, 0, i});
        if (syncs) cuts.push_back({e.ts, 1, i});
      }
      std::stable_sort(cuts.begin(), cuts.end(), [](const Cut& a, const Cut& b) {
        return a.time != b.time ? a.time < b.time : a.type < b.type;
      });
      emit_thread(lane, top, cuts, key == main_thread_);
    }
  }

  void emit_thread(int lane, const std::vector<size_t>& top, const std::vector<Cut>& cuts, bool main) {
    double pos = ws_;
    int last = kNone;
    size_t c = 0;
    for (size_t ti : top) {
      const KinetoEvent& ev = t_.events[ti];
      const std::string& name = t_.name(ev);
      const OpKind kind =
          name.starts_with("autograd::engine::evaluate_function") ? OpKind::Backward : OpKind::Other;
      const double ev_end = ev.ts + ev.dur;  // the last op may run past the window
      if (ev.ts > pos) last = add("cpu gap", OpKind::Other, lane, pos, ev.ts);
      pos = std::max(pos, ev.ts);
      for (; c < cuts.size() && cuts[c].time <= ev_end + kEps; ++c) {
        const Cut& cut = cuts[c];
        const KinetoEvent& call = t_.events[cut.event];
        if (cut.type == 0) {
          if (cut.time > pos || last == kNone) {
            last = add(name, kind, lane, pos, std::max(pos, cut.time));
            pos = std::max(pos, cut.time);
          }
          for (size_t g : gpu_of_runtime_[cut.event]) {
            gpu_[g].launch_proto = last;
            gpu_[g].backward = kind == OpKind::Backward;
          }
        } else {
          const int target = sync_target(call, cut.event);
          if (target == kNone && backlog_end_ > call.ts && is_sync_name(t_.name(call))) {
            // Waited only for earlier steps' GPU work: in a simulated step that work is done, so
            // drop the wait and keep what the call took after it.
            if (cut.time > pos) {
              last = add(name, kind, lane, pos, cut.time);
              pos = cut.time;
            }
            const double call_end = call.ts + call.dur;
            last = add(name + " (after sync)", kind, lane, 0,
                       std::max(0.0, call_end - std::max(pos, backlog_end_)));
            protos_.back().start = pos;
            pos = std::max(pos, call_end);
            continue;
          }
          if (target == kNone) continue;
          if (cut.time > pos) {
            last = add(name, kind, lane, pos, cut.time);
            pos = cut.time;
          }
          const double call_end = call.ts + call.dur;
          const double resumed =
              std::clamp(gpu_[static_cast<size_t>(target)].end, pos, std::max(pos, call_end));
          last = add(name + " (after sync)", kind, lane, resumed, std::max(resumed, call_end));
          sync_deps_.emplace_back(last, static_cast<size_t>(target));
          pos = std::max(pos, call_end);
        }
      }
      if (ev_end > pos) {
        last = add(name, kind, lane, pos, ev_end);
        pos = ev_end;
      }
    }
    if (main && we_ > pos) add("cpu gap", OpKind::Other, lane, pos, we_);
  }

  void build_gpu_ops() {
    std::vector<size_t> order(gpu_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return t_.events[gpu_[a].event].ts < t_.events[gpu_[b].event].ts;
    });
    std::map<std::pair<int64_t, int64_t>, int> lanes;
    const bool simulated = opt_.collectives == KinetoWorkloadOptions::Collectives::Simulated;
    for (size_t g : order) {
      GpuOp& op = gpu_[g];
      const KinetoEvent& e = t_.events[op.event];
      auto [it, inserted] =
          lanes.try_emplace({e.device, e.stream}, static_cast<int>(out_.workload.lanes.size()));
      if (inserted) out_.workload.lanes.push_back(fmt::format("gpu {} stream {}", e.device, e.stream));
      std::vector<int> deps;
      // A kernel that waited in the stream's queue long after its launch was bound by the GPU,
      // not by the CPU: typically the CPU runs a step ahead, and its launch belongs to the
      // previous step's timeline. Keeping that dep would serialize the two in one step.
      if (op.launch_proto != kNone && e.ts - op.launch_end <= opt_.queued_launch_lag)
        deps.push_back(op.launch_proto);
      const OpKind kind = op.nccl ? OpKind::Other : op.backward ? OpKind::Backward : OpKind::Forward;
      const double duration = op.nccl && simulated ? 0.0 : e.dur;
      op.proto = add(t_.name(e), kind, it->second, e.ts, e.ts + duration, std::move(deps));
    }
    // NCCL: wait for the compute op launched last before it on another stream; all-reduces
    // carry a gradient tensor.
    for (size_t g : order) {
      GpuOp& op = gpu_[g];
      if (!op.nccl) continue;
      const KinetoEvent& e = t_.events[op.event];
      int producer = kNone;
      for (size_t other : by_launch_) {
        const GpuOp& o = gpu_[other];
        if (o.launch_time > op.launch_time) break;
        if (o.nccl || t_.events[o.event].stream == e.stream) continue;
        if (o.proto != kNone &&
            protos_[static_cast<size_t>(o.proto)].start < protos_[static_cast<size_t>(op.proto)].start) {
          producer = o.proto;
        }
      }
      if (producer != kNone) protos_[static_cast<size_t>(op.proto)].deps.push_back(producer);
      const NcclArgs* args = t_.nccl_args(e);
      std::string collective = args != nullptr && !args->collective.empty()
                                   ? args->collective
                                   : collective_from_kernel_name(t_.name(e));
      std::transform(collective.begin(), collective.end(), collective.begin(),
                     [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
      if (collective.find("allreduce") == std::string::npos || args == nullptr || args->in_nelems <= 0)
        continue;
      const int size = dtype_size(args->dtype);
      if (size <= 0) continue;
      grad_.push_back(
          {fmt::format("allreduce {} ({} x {})", out_.gradient_tensors, args->in_nelems, args->dtype),
           static_cast<double>(args->in_nelems) * size, producer != kNone ? producer : op.launch_proto});
      out_.gradient_tensors++;
    }
    for (auto [cpu, g] : sync_deps_) {
      if (gpu_[g].proto != kNone) protos_[static_cast<size_t>(cpu)].deps.push_back(gpu_[g].proto);
    }
  }

  // Topological order (Kahn), earliest measured start first; lane order is kept.
  void order_ops() {
    const size_t n = protos_.size();
    std::vector<std::vector<int>> dependents(n);
    std::vector<int> unmet(n, 0);
    std::vector<int> last_on_lane(out_.workload.lanes.size(), kNone);
    for (size_t i = 0; i < n; ++i) {
      auto& deps = protos_[i].deps;
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      for (int d : deps) dependents[static_cast<size_t>(d)].push_back(static_cast<int>(i));
      unmet[i] = static_cast<int>(deps.size());
    }
    // Protos were added per lane in lane order, so the previous one on the lane precedes.
    for (size_t i = 0; i < n; ++i) {
      int& prev = last_on_lane[static_cast<size_t>(protos_[i].lane)];
      if (prev != kNone) {
        dependents[static_cast<size_t>(prev)].push_back(static_cast<int>(i));
        unmet[i]++;
      }
      prev = static_cast<int>(i);
    }
    using Item = std::pair<double, int>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
    for (size_t i = 0; i < n; ++i) {
      if (unmet[i] == 0) ready.push({protos_[i].start, static_cast<int>(i)});
    }
    std::vector<int> index(n, kNone);
    auto& ops = out_.workload.ops;
    while (!ready.empty()) {
      const int p = ready.top().second;
      ready.pop();
      index[static_cast<size_t>(p)] = static_cast<int>(ops.size());
      Proto& proto = protos_[static_cast<size_t>(p)];
      workload::Op op{std::move(proto.name), proto.kind, proto.duration, proto.lane, -1, {}};
      for (int d : proto.deps) op.deps.push_back(index[static_cast<size_t>(d)]);
      ops.push_back(std::move(op));
      for (int d : dependents[static_cast<size_t>(p)]) {
        if (--unmet[static_cast<size_t>(d)] == 0) ready.push({protos_[static_cast<size_t>(d)].start, d});
      }
    }
    if (ops.size() != n) fail(fmt::format("dependency cycle while converting {}", out_.step));
    if (ops.empty()) fail(fmt::format("{} holds no CPU or GPU events to convert", out_.step));
    out_.workload.name = fmt::format("{} {}", t_.path, out_.step);
    out_.workload.batch_per_worker = opt_.batch_per_worker;
    for (const Grad& g : grad_) {
      out_.workload.tensors.push_back(
          {g.name, g.bytes, g.producer == kNone ? -1 : index[static_cast<size_t>(g.producer)], {}});
    }
    double last_end = -1;
    for (GpuOp& g : gpu_) {
      const int i = index[static_cast<size_t>(g.proto)];
      if (g.end > last_end) {
        last_end = g.end;
        out_.last_gpu_op = i;
      }
      if (g.backward && !g.nccl) out_.backward_gpu_ops.push_back(i);
    }
    std::sort(out_.backward_gpu_ops.begin(), out_.backward_gpu_ops.end());
  }

  struct Grad {
    std::string name;
    double bytes = 0;
    int producer = kNone;  // proto
  };

  const KinetoTrace& t_;
  const KinetoWorkloadOptions& opt_;
  KinetoWorkload out_;
  double ws_ = 0, we_ = 0;
  std::pair<int64_t, int64_t> main_thread_{-2, -2};
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> threads_;
  std::vector<GpuOp> gpu_;
  std::vector<size_t> by_launch_;
  std::unordered_map<size_t, std::vector<size_t>> gpu_of_runtime_;  // runtime event -> gpu ops
  std::vector<Proto> protos_;
  std::vector<std::pair<int, size_t>> sync_deps_;  // CPU proto -> GPU op it waits for
  std::vector<Grad> grad_;
  std::vector<std::pair<double, double>> earlier_;  // GPU work launched before the window: launch, end
  mutable double backlog_end_ = -1;                 // set by sync_target
};

// The steady step whose duration is closest to the steady median; nullptr when none is steady.
const StepSummary* representative_step(const TraceSummary& summary) {
  const double median = summary.step_time.p50;
  const StepSummary* best = nullptr;
  for (const StepSummary& s : summary.steps) {
    if (!s.steady) continue;
    if (best == nullptr || std::abs(s.duration - median) < std::abs(best->duration - median)) best = &s;
  }
  return best;
}

// How the ops of another steady step line up with the representative step's.
struct Alignment {
  std::vector<int> rep_of;  // step op -> representative op, kNone when it has none
  int only_rep = 0;         // representative ops (CPU) absent from the step: sample 0
  int only_step = 0;        // step ops (CPU) absent from the representative: time folded
  int other_deps = 0;       // aligned ops whose deps (between aligned ops) differ
  double dropped = 0;       // s, CPU time of step ops with no aligned op on their lane
  std::string difference;   // why the step gives no sample; "" when it does
};

bool is_gpu_lane(const std::string& lane) { return lane.starts_with("gpu"); }

// Matches ops lane by lane (lanes by name), not by global index: the interleaving of lanes is
// a topological order that follows measured start times, which move from step to step. GPU lanes
// must hold the same ops (names, kinds) in the same order. CPU lanes are aligned on a longest
// common subsequence of (name, kind): the CPU side varies a little between identical steps (a
// gap of zero length, one more poll of a watchdog thread, a synchronization that found the GPU
// already done), and those ops are counted, not matched.
Alignment align_steps(const workload::Workload& rep, const workload::Workload& step) {
  Alignment a;
  a.rep_of.assign(step.ops.size(), kNone);
  std::map<std::string, std::vector<int>> rep_lanes;
  std::map<std::string, std::vector<int>> step_lanes;
  for (size_t i = 0; i < rep.ops.size(); ++i)
    rep_lanes[rep.lanes[static_cast<size_t>(rep.ops[i].lane)]].push_back(static_cast<int>(i));
  for (size_t i = 0; i < step.ops.size(); ++i)
    step_lanes[step.lanes[static_cast<size_t>(step.ops[i].lane)]].push_back(static_cast<int>(i));
  const auto same = [&](int r, int s) {
    return rep.ops[static_cast<size_t>(r)].name == step.ops[static_cast<size_t>(s)].name &&
           rep.ops[static_cast<size_t>(r)].kind == step.ops[static_cast<size_t>(s)].kind;
  };
  for (const auto& [lane, ops] : step_lanes) {
    if (rep_lanes.contains(lane)) continue;
    if (is_gpu_lane(lane)) {
      a.difference = fmt::format("lane '{}' ({} ops) is not in the representative step", lane, ops.size());
      return a;
    }
    a.only_step += static_cast<int>(ops.size());
    for (int s : ops) a.dropped += step.ops[static_cast<size_t>(s)].duration;
  }
  for (const auto& [lane, r] : rep_lanes) {
    static const std::vector<int> kEmpty;
    auto found = step_lanes.find(lane);
    const std::vector<int>& s = found == step_lanes.end() ? kEmpty : found->second;
    if (is_gpu_lane(lane)) {
      if (r.size() != s.size()) {
        a.difference =
            fmt::format("lane '{}' has {} ops, in the representative step {}", lane, s.size(), r.size());
        return a;
      }
      for (size_t i = 0; i < r.size(); ++i) {
        if (!same(r[i], s[i])) {
          a.difference =
              fmt::format("op {} of lane '{}' is '{}', in the representative step '{}'", i, lane,
                          step.ops[static_cast<size_t>(s[i])].name, rep.ops[static_cast<size_t>(r[i])].name);
          return a;
        }
        a.rep_of[static_cast<size_t>(s[i])] = r[i];
      }
      continue;
    }
    // Common prefix and suffix, then a longest common subsequence of the (short) rest.
    size_t head = 0;
    while (head < r.size() && head < s.size() && same(r[head], s[head])) ++head;
    size_t tail = 0;
    while (tail < r.size() - head && tail < s.size() - head &&
           same(r[r.size() - 1 - tail], s[s.size() - 1 - tail])) {
      ++tail;
    }
    for (size_t i = 0; i < head; ++i) a.rep_of[static_cast<size_t>(s[i])] = r[i];
    for (size_t i = 0; i < tail; ++i)
      a.rep_of[static_cast<size_t>(s[s.size() - 1 - i])] = r[r.size() - 1 - i];
    const size_t n = r.size() - head - tail;
    const size_t m = s.size() - head - tail;
    if (n > 0 && m > 0) {
      if (n * m > kMaxAlignCells) {
        a.difference = fmt::format("lane '{}' differs in {} ops, in the representative step {}", lane, m, n);
        return a;
      }
      std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));  // of the suffixes
      for (size_t i = n; i-- > 0;) {
        for (size_t j = m; j-- > 0;) {
          lcs[i][j] =
              same(r[head + i], s[head + j]) ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
        }
      }
      for (size_t i = 0, j = 0; i < n && j < m;) {
        if (same(r[head + i], s[head + j])) {
          a.rep_of[static_cast<size_t>(s[head + j])] = r[head + i];
          ++i;
          ++j;
        } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
          ++i;
        } else {
          ++j;
        }
      }
    }
    int aligned = 0;
    for (int x : s) aligned += a.rep_of[static_cast<size_t>(x)] != kNone ? 1 : 0;
    a.only_rep += static_cast<int>(r.size()) - aligned;
    a.only_step += static_cast<int>(s.size()) - aligned;
  }
  // Dependencies between aligned ops, in representative indices.
  std::vector<int> step_of(rep.ops.size(), kNone);
  for (size_t s = 0; s < step.ops.size(); ++s) {
    if (a.rep_of[s] != kNone) step_of[static_cast<size_t>(a.rep_of[s])] = static_cast<int>(s);
  }
  for (size_t s = 0; s < step.ops.size(); ++s) {
    const int r = a.rep_of[s];
    if (r == kNone) continue;
    std::vector<int> mine;
    for (int d : step.ops[s].deps) {
      if (a.rep_of[static_cast<size_t>(d)] != kNone) mine.push_back(a.rep_of[static_cast<size_t>(d)]);
    }
    std::vector<int> theirs;
    for (int d : rep.ops[static_cast<size_t>(r)].deps) {
      if (step_of[static_cast<size_t>(d)] != kNone) theirs.push_back(d);
    }
    std::sort(mine.begin(), mine.end());
    std::sort(theirs.begin(), theirs.end());
    if (mine != theirs) a.other_deps++;
  }
  // Gradient tensors come from the NCCL kernels (GPU lanes, matched exactly above).
  bool tensors_differ = step.tensors.size() != rep.tensors.size();
  for (size_t t = 0; !tensors_differ && t < rep.tensors.size(); ++t) {
    const int p = step.tensors[t].producer;
    const int mapped = p >= 0 ? a.rep_of[static_cast<size_t>(p)] : kNone;
    tensors_differ = step.tensors[t].bytes != rep.tensors[t].bytes || mapped != rep.tensors[t].producer;
  }
  if (tensors_differ) {
    a.difference = fmt::format("other gradient tensors ({}, in the representative step {})",
                               step.tensors.size(), rep.tensors.size());
  }
  return a;
}

// Converts every other steady step the same way and keeps, for those whose ops line up with the
// representative's (align_steps), each op's duration as a per-step sample.
void add_samples(KinetoWorkload& out, const KinetoTrace& trace, const KinetoWorkloadOptions& options) {
  const workload::Workload& rep = out.workload;
  std::vector<std::vector<double>> columns;  // per sampled step: the durations of every op
  for (const StepSummary& s : out.summary.steps) {
    if (!s.steady) continue;
    if (s.name == out.step) {
      std::vector<double> durations;
      for (const workload::Op& op : rep.ops) durations.push_back(op.duration);
      columns.push_back(std::move(durations));
      out.sampled_steps.push_back(s.name);
      continue;
    }
    KinetoWorkload other;
    try {
      other = Converter(trace, options, s).run();
    } catch (const Error& e) {
      out.unmatched_steps.push_back(fmt::format("{}: {}", s.name, e.message()));
      continue;
    }
    const workload::Workload& step = other.workload;
    const Alignment a = align_steps(rep, step);
    const int unaligned = a.only_rep + a.only_step;
    if (a.difference.empty() && static_cast<double>(unaligned) >
                                    options.max_unaligned_fraction * static_cast<double>(rep.ops.size())) {
      out.unmatched_steps.push_back(fmt::format(
          "{}: {} CPU ops differ from the representative step ({} only there, {} only in this "
          "step), more than {:g}% of its {} ops",
          s.name, unaligned, a.only_rep, a.only_step, 100 * options.max_unaligned_fraction, rep.ops.size()));
      continue;
    }
    if (!a.difference.empty()) {
      out.unmatched_steps.push_back(fmt::format("{}: {}", s.name, a.difference));
      continue;
    }
    // Each aligned op takes its duration in this step; an op of this step with no counterpart
    // adds its time to the aligned op before it on its lane (else the one after), so every
    // lane keeps its busy time; a representative op with no counterpart did not run: 0 s.
    std::vector<double> durations(rep.ops.size(), 0.0);
    std::map<int, std::vector<int>> lanes;  // step lane -> its ops in order
    for (size_t i = 0; i < step.ops.size(); ++i) lanes[step.ops[i].lane].push_back(static_cast<int>(i));
    for (const auto& [lane, ops] : lanes) {
      int previous = kNone;
      double pending = 0;  // unaligned time before the lane's first aligned op
      for (int i : ops) {
        const double d = step.ops[static_cast<size_t>(i)].duration;
        const int r = a.rep_of[static_cast<size_t>(i)];
        if (r == kNone) {
          if (previous != kNone) {
            durations[static_cast<size_t>(previous)] += d;
          } else {
            pending += d;
          }
          continue;
        }
        durations[static_cast<size_t>(r)] += d + pending;
        pending = 0;
        previous = r;
      }
    }
    columns.push_back(std::move(durations));
    out.sampled_steps.push_back(s.name);
    if (unaligned > 0 || a.other_deps > 0) {
      out.sample_notes.push_back(fmt::format(
          "{}: {} CPU ops only in the representative step (sample 0 s), {} only in this step (time "
          "added to the op before them on their lane{}), {} ops with other dependencies",
          s.name, a.only_rep, a.only_step,
          a.dropped > 0 ? fmt::format("; {:.3f} ms on lanes absent from the representative step dropped",
                                      a.dropped * 1e3)
                        : "",
          a.other_deps));
    }
  }
  for (size_t i = 0; i < out.workload.ops.size(); ++i) {
    auto& samples = out.workload.ops[i].samples;
    samples.clear();
    for (const auto& column : columns) samples.push_back(column[i]);
  }
}

}  // namespace

KinetoWorkload convert_kineto(const KinetoTrace& trace, const KinetoWorkloadOptions& options) {
  TraceSummary summary = summarize(trace, options.summary);
  const StepSummary* step = nullptr;
  if (options.step.empty()) {
    step = representative_step(summary);
    if (step == nullptr)
      throw Error({trace.path, 0, ""}, "no steady ProfilerStep to convert into a workload");
  } else {
    for (const StepSummary& s : summary.steps) {
      if (s.name == options.step) step = &s;
    }
    if (step == nullptr) throw Error({trace.path, 0, ""}, fmt::format("no step named '{}'", options.step));
  }
  KinetoWorkload out = Converter(trace, options, *step).run();
  out.summary = std::move(summary);
  if (options.step_samples) add_samples(out, trace, options);
  return out;
}

KinetoWorkload convert_kineto_file(const std::string& path, const KinetoWorkloadOptions& options) {
  return convert_kineto(read_kineto_trace(path), options);
}

workload::Workload kineto_to_workload(const KinetoTrace& trace, const KinetoWorkloadOptions& options) {
  return convert_kineto(trace, options).workload;
}

workload::Workload kineto_to_workload(const std::string& path, const KinetoWorkloadOptions& options) {
  return convert_kineto_file(path, options).workload;
}

void attach_gradients(KinetoWorkload& converted,
                      const std::vector<std::pair<std::string, double>>& parameters) {
  const auto& backward = converted.backward_gpu_ops;
  const size_t n = parameters.size();
  int fallback = converted.last_gpu_op;
  if (fallback < 0) fallback = static_cast<int>(converted.workload.ops.size()) - 1;
  for (size_t i = 0; i < n; ++i) {
    int producer = fallback;
    if (!backward.empty()) {
      const size_t b = backward.size();
      producer = backward[b - 1 - std::min(b - 1, i * b / n)];
    }
    converted.workload.tensors.push_back({parameters[i].first, parameters[i].second, producer, {}});
  }
}

}  // namespace stepcast::profile
