// The coarse and analytic predictors of a composed layout (tensor, context and pipeline
// parallelism with micro-batches), from scheme/composed_costs.hpp's per-stage closed forms.
//
// Coarse: with S_s = F_s + B_s (+ W_s) the time of one micro-batch's passes on stage s (exposed
// tensor and context collectives included) and delta one pipeline message alone, the
// pipeline's part of the step is the longest path through the schedule's passes (pipeline_ends),
// which with free messages is the schedule's length in micro-batches (Narayanan et al. 2019,
// 2021; Qi et al. 2023) for stages that need not be equal:
//   gpipe, 1f1b:   sum_s S_s + (m - 1) max_s S_s
//   interleaved:   m max_s S_s + (sum_s S_s - max_s S_s) / v
// (equal stages: (m + p - 1) S, (m + (p - 1)/v) S, ZB-H1 m S + (p - 1)(F + B - W)); with messages,
// GPipe adds 2 (p - 1) delta, and 1F1B and interleaving more, as their steady state waits on them
// too. Each stage's last pass ends where the path says; then its gradient reduction (each
// collective once its gradients are in and the one before it ended, what runs past the
// backward), its optimizer step and the distributed optimizer's gathers. The step is the latest
// stage's end.
//
// Analytic: the busiest resource: a stage's compute over the step, or the link that carries the
// most bytes for its bandwidth (every collective and message of the step on the links); the
// utilization names each class of link by its busiest, as the fine predictor does.
#include "predict/composed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <queue>
#include <tuple>

#include "predict/summary.hpp"
#include "scheme/stage_programs.hpp"
#include "stepcast/detail/scheme/composed_costs.hpp"
#include "stepcast/detail/scheme/costs.hpp"
#include "stepcast/error.hpp"
#include "stepcast/scheme/rank_layout.hpp"

namespace stepcast::predict {

namespace {

/// When each stage's last pass of the step ends, its passes run in the schedule's order
/// (scheme::schedule_order, and ZB-H1's W passes where the stage programs place them), each
/// after the one before it on its stage and after the message it receives: F of model chunk k
/// after F of chunk k - 1, B of chunk k after B of chunk k + 1, each message sent once the other
/// stage's pass ended (none between chunks of one stage). Passes of chunk c last forward / v (and
/// backward / v) of their stage. With free messages this is the longest path of that graph, the
/// closed forms' lengths (equal stages: (m + p - 1) S for GPipe and 1F1B). With messages, the
/// steady state waits on them as well as the fill: under 1F1B stages s and s + 1 exchange one
/// micro-batch's activation and gradient within p - s micro-batches of each stage's own work.
/// And messages in flight at once share what they cross, as on the flow network: a stage's
/// activation to the next stage and gradient to the previous one leave through its own links
/// (its NIC across nodes), and the two it receives come in through them, so each message is a
/// flow on its sender's way out and its receiver's way in, each direction's one after another,
/// and the flows on a way share it equally (each at 1 / the messages on its busier way of the
/// speed it has alone, a message alone lasting its StageCost time; pipeline_ends_shared). One
/// way out and one way in per stage whichever neighbour: where one neighbour is in the node and
/// the other across it, the two messages share nothing on the real links, and this slows the
/// longer by at most the shorter's time.
struct PipelineEnds {
  std::vector<double> stage;  ///< s: when each stage's last pass ends
  /// s: [stage][chunk]: when the last micro-batch's backward (under ZB-H1 its W) on the chunk ends
  std::vector<std::vector<double>> last_micro_batch;
};

/// Each stage's passes in its schedule's order, ZB-H1's W passes where the stage programs place
/// them.
std::vector<std::vector<scheme::PipelinePass>> stage_orders(const scheme::SchemeConfig& scheme, int p,
                                                            int m) {
  using Pass = scheme::PipelinePass::Kind;
  const int v = scheme.parallel.virtual_stages;
  const bool zero_bubble = scheme.pipeline.schedule == scheme::PipelineSchedule::ZeroBubble;
  const int group = scheme::interleaved_group(scheme.pipeline.microbatch_group, p, m);
  std::vector<std::vector<scheme::PipelinePass>> out(static_cast<size_t>(p));
  for (int s = 0; s < p; ++s) {
    const std::vector<scheme::PipelinePass> order =
        scheme::schedule_order(scheme.pipeline.schedule, p, v, m, s, group);
    std::vector<scheme::PipelinePass>& placed = out[static_cast<size_t>(s)];
    placed.reserve(order.size() * (zero_bubble ? 3 : 2) / 2);
    for (const scheme::PipelinePass& pass : order) {
      placed.push_back(pass);
      // ZB-H1: micro-batch k's W after the B of micro-batch k + s; the last s at the end.
      if (zero_bubble && pass.kind == Pass::Backward && pass.micro_batch >= s)
        placed.push_back({Pass::Weight, 0, pass.micro_batch - s});
    }
    if (zero_bubble) {
      for (int mb = std::max(0, m - s); mb < m; ++mb) placed.push_back({Pass::Weight, 0, mb});
    }
  }
  return out;
}

/// A pass's time on stage s: chunk c's forward / v (and backward / v), the stage's W, scaled to
/// the stage's micro-batch `passes[s]` (longer where its sharded data parallelism holds it up).
double pass_time(const scheme::StageCost& c, double micro_batch, int v, scheme::PipelinePass::Kind kind) {
  const double scale = micro_batch / std::max(c.forward + c.backward + c.weight, 1e-300);
  switch (kind) {
    case scheme::PipelinePass::Kind::Forward:
      return c.forward / v * scale;
    case scheme::PipelinePass::Kind::Backward:
      return c.backward / v * scale;
    case scheme::PipelinePass::Kind::Weight:
      return c.weight * scale;
  }
  return 0;
}

/// The longest path with every message at its time alone, a stage's messages to each neighbour
/// one after another: exact where no two messages are ever in flight on one way (a stage's way
/// out, or in), which `*shared` says is not so.
PipelineEnds pipeline_ends_in_turn(const std::vector<scheme::StageCost>& stages,
                                   const std::vector<double>& passes,
                                   const std::vector<std::vector<scheme::PipelinePass>>& orders,
                                   const scheme::SchemeConfig& scheme, int m, bool messages, bool* shared) {
  using Pass = scheme::PipelinePass::Kind;
  const int p = static_cast<int>(stages.size()), v = scheme.parallel.virtual_stages;
  const int chunks = p * v;
  struct StageRun {
    size_t next = 0;
    double free = 0;      // s: when its last pass ended
    double sending[2]{};  // s: when its last message to the next (previous) stage has arrived
  };
  std::vector<StageRun> runs(static_cast<size_t>(p));
  std::vector<double> forward_in(static_cast<size_t>(m) * chunks, -1), backward_in(forward_in);
  auto slot = [chunks](int mb, int k) { return static_cast<size_t>(mb) * chunks + static_cast<size_t>(k); };
  // Each lane's messages as (leaves, arrives), in time order (a lane sends one after another):
  // stage s's to the next stage at 2 s, to the previous one at 2 s + 1.
  std::vector<std::vector<std::pair<double, double>>> lanes(messages ? 2 * static_cast<size_t>(p) : 0);
  auto send = [&](StageRun& r, int from, int to, int way, double message) {
    if (!messages || message <= 0 || from == to) return r.free;
    const double leaves = std::max(r.sending[way], r.free);
    r.sending[way] = leaves + message;
    lanes[2 * static_cast<size_t>(from) + static_cast<size_t>(way)].emplace_back(leaves, r.sending[way]);
    return r.sending[way];
  };
  auto arrived = [](double in, double ready) { return in < 0 ? -1.0 : std::max(ready, in); };
  PipelineEnds ends;
  ends.last_micro_batch.assign(static_cast<size_t>(p), std::vector<double>(static_cast<size_t>(v), 0.0));
  size_t left = 0;
  for (const auto& order : orders) left += order.size();
  while (left > 0) {
    bool moved = false;
    for (int s = 0; s < p; ++s) {
      StageRun& r = runs[static_cast<size_t>(s)];
      const scheme::StageCost& c = stages[static_cast<size_t>(s)];
      const std::vector<scheme::PipelinePass>& order = orders[static_cast<size_t>(s)];
      while (r.next < order.size()) {
        const scheme::PipelinePass& pass = order[r.next];
        const int k = pass.chunk * p + s;
        double ready = r.free;
        if (pass.kind == Pass::Forward && k > 0)
          ready = arrived(forward_in[slot(pass.micro_batch, k - 1)], ready);
        if (pass.kind == Pass::Backward && k < chunks - 1)
          ready = arrived(backward_in[slot(pass.micro_batch, k + 1)], ready);
        if (ready < 0) break;  // its message has not been sent yet
        r.free = ready + pass_time(c, passes[static_cast<size_t>(s)], v, pass.kind);
        const size_t at = slot(pass.micro_batch, k);
        if (pass.kind == Pass::Forward && k < chunks - 1)
          forward_in[at] = send(r, s, (k + 1) % p, 0, c.message_next);
        if (pass.kind == Pass::Backward && k > 0)
          backward_in[at] = send(r, s, (k - 1) % p, 1, c.message_previous);
        if (pass.kind != Pass::Forward && pass.micro_batch == m - 1)
          ends.last_micro_batch[static_cast<size_t>(s)][static_cast<size_t>(pass.chunk)] = r.free;
        ++r.next;
        --left;
        moved = true;
      }
    }
    STEPCAST_ASSERT(moved);  // every schedule's order runs to its end
  }
  for (const StageRun& r : runs) ends.stage.push_back(r.free);
  // Two lanes meet on a way when a message of one is in flight while one of the other is: a
  // stage's two lanes on its way out, the previous stage's next-bound and the next stage's
  // previous-bound lanes on its way in.
  auto meet = [](const std::vector<std::pair<double, double>>& a,
                 const std::vector<std::pair<double, double>>& b) {
    for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
      const double slack = 1e-12 * std::max(a[i].second, b[j].second);
      if (a[i].first < b[j].second - slack && b[j].first < a[i].second - slack) return true;
      (a[i].second < b[j].second ? i : j)++;
    }
    return false;
  };
  *shared = false;
  for (int s = 0; messages && s < p && !*shared; ++s) {
    const auto lane = [&](int stage, int way) -> const auto& {
      return lanes[2 * static_cast<size_t>((stage + p) % p) + static_cast<size_t>(way)];
    };
    *shared = meet(lane(s, 0), lane(s, 1)) || (p > 1 && meet(lane(s - 1, 0), lane(s + 1, 1)));
  }
  return ends;
}

/// The same schedule run as events, the messages in flight sharing the ways they cross (see
/// pipeline_ends).
PipelineEnds pipeline_ends_shared(const std::vector<scheme::StageCost>& stages,
                                  const std::vector<double>& passes,
                                  const std::vector<std::vector<scheme::PipelinePass>>& orders,
                                  const scheme::SchemeConfig& scheme, int m) {
  using Pass = scheme::PipelinePass::Kind;
  const int p = static_cast<int>(stages.size()), v = scheme.parallel.virtual_stages;
  const int chunks = p * v;
  constexpr double kNever = std::numeric_limits<double>::infinity();
  struct StageRun {
    size_t next = 0;
    double busy_until = 0;  // s: when its running pass ends (or the last one ended)
    bool running = false;
  };
  std::vector<StageRun> runs(static_cast<size_t>(p));
  // [mb * chunks + k]: when the activation F of micro-batch mb on model chunk k sends (the
  // gradient B sends) has reached the stage of chunk k + 1 (k - 1); kNever: not yet.
  std::vector<double> forward_in(static_cast<size_t>(m) * chunks, kNever), backward_in(forward_in);
  auto slot = [chunks](int mb, int k) { return static_cast<size_t>(mb) * chunks + static_cast<size_t>(k); };
  // Messages on the wire: the seconds of their time alone still to go at `since`, and their rate
  // (1: as fast as alone). A message's ways: out of its sender (way `from`) and into its receiver
  // (way p + `to`), each of capacity 1.
  struct Message {
    double left = 0, rate = 0, since = 0;
    int from = 0, to = 0;
    double* arrival = nullptr;
    int lane = 0;     // 2 from + (0: to the next stage, 1: to the previous one)
    int version = 0;  // of its entry in `arriving`
  };
  std::vector<Message> wire;  // by id; an arrived message's id is reused (its version goes on)
  std::vector<int> free_ids;
  std::vector<std::vector<int>> on_way(2 * static_cast<size_t>(p));  // the ids on each way now
  // A stage's messages to one neighbour go one after another (one stream each way, as its program
  // sends them); those not yet on the wire, by lane.
  std::vector<std::deque<Message>> queued(2 * static_cast<size_t>(p));
  std::vector<char> lane_busy(queued.size(), 0);
  // (when it arrives at its rate, id, version): the next arrival on top, stale entries skipped.
  using Arrival = std::tuple<double, int, int>;
  std::priority_queue<Arrival, std::vector<Arrival>, std::greater<>> arriving;
  double now = 0;
  // Each message at an equal share of the busier of its two ways: 1 / (messages on it). That is
  // max-min fairness where every message on a way is held to the same share by some way (here,
  // at most two messages on a way: a stage's next- and previous-bound streams, or the two
  // neighbours sending into it); where a message's other way holds it lower, the share it leaves
  // is not handed on, so a message may run a little slower than the flow network's. A change of
  // the messages on a way moves the rates of those on it alone.
  auto reshare = [&](std::initializer_list<int> ways) {
    for (int w : ways) {
      for (int id : on_way[static_cast<size_t>(w)]) {
        Message& f = wire[static_cast<size_t>(id)];
        const double rate = 1.0 / static_cast<double>(std::max(on_way[static_cast<size_t>(f.from)].size(),
                                                               on_way[static_cast<size_t>(p + f.to)].size()));
        if (rate == f.rate) continue;  // its arrival in `arriving` still holds
        f.left -= f.rate * (now - f.since);
        f.since = now;
        f.rate = rate;
        arriving.emplace(now + f.left / f.rate, id, ++f.version);
      }
    }
  };
  auto put_on_wire = [&](Message message) {
    message.since = now;
    int id = static_cast<int>(wire.size());
    if (free_ids.empty()) {
      wire.push_back(message);
    } else {
      id = free_ids.back();
      free_ids.pop_back();
      message.version = wire[static_cast<size_t>(id)].version;
      wire[static_cast<size_t>(id)] = message;
    }
    on_way[static_cast<size_t>(message.from)].push_back(id);
    on_way[static_cast<size_t>(p + message.to)].push_back(id);
    reshare({message.from, p + message.to});
  };
  // Stages that may start their next pass now: those that ended one, those a message reached.
  std::vector<int> woken;
  auto send = [&](int from, int to, int way, double alone, double* arrival) {
    if (alone <= 0 || from == to) {
      *arrival = now;
      woken.push_back(to);
      return;
    }
    Message message;
    message.left = alone;  // seconds alone to go, at rate 1
    message.from = from;
    message.to = to;
    message.arrival = arrival;
    message.lane = 2 * from + way;
    if (lane_busy[static_cast<size_t>(message.lane)]) {
      queued[static_cast<size_t>(message.lane)].push_back(message);
      return;
    }
    lane_busy[static_cast<size_t>(message.lane)] = 1;
    put_on_wire(message);
  };
  auto arrive = [&](int id) {
    Message& f = wire[static_cast<size_t>(id)];
    *f.arrival = now;
    woken.push_back(f.to);
    for (int w : {f.from, p + f.to}) {
      std::vector<int>& ids = on_way[static_cast<size_t>(w)];
      ids.erase(std::find(ids.begin(), ids.end(), id));
    }
    const int from = f.from, to = f.to, lane = f.lane;  // f may move: put_on_wire grows `wire`
    free_ids.push_back(id);
    std::deque<Message>& waiting = queued[static_cast<size_t>(lane)];
    if (waiting.empty()) {
      lane_busy[static_cast<size_t>(lane)] = 0;
      reshare({from, p + to});
    } else {
      const Message next = waiting.front();
      waiting.pop_front();
      put_on_wire(next);  // the same ways (one neighbour a lane): reshares what the arrival freed
    }
  };
  PipelineEnds ends;
  ends.last_micro_batch.assign(static_cast<size_t>(p), std::vector<double>(static_cast<size_t>(v), 0.0));
  // Running passes by their end (the next to end on top).
  std::priority_queue<std::pair<double, int>, std::vector<std::pair<double, int>>, std::greater<>> ending;
  auto chunk_of = [p](const scheme::PipelinePass& pass, int s) { return pass.chunk * p + s; };
  for (int s = 0; s < p; ++s) woken.push_back(s);
  for (;;) {
    // Start each woken idle stage's next pass if its message is in.
    for (size_t i = 0; i < woken.size(); ++i) {
      const int s = woken[i];
      StageRun& r = runs[static_cast<size_t>(s)];
      if (r.running || r.next >= orders[static_cast<size_t>(s)].size()) continue;
      const scheme::PipelinePass& pass = orders[static_cast<size_t>(s)][r.next];
      const int k = chunk_of(pass, s);
      double in = 0;
      if (pass.kind == Pass::Forward && k > 0) in = forward_in[slot(pass.micro_batch, k - 1)];
      if (pass.kind == Pass::Backward && k < chunks - 1) in = backward_in[slot(pass.micro_batch, k + 1)];
      if (in > now) continue;  // its message is not in yet: its arrival wakes it
      r.running = true;
      r.busy_until =
          now + pass_time(stages[static_cast<size_t>(s)], passes[static_cast<size_t>(s)], v, pass.kind);
      ending.emplace(r.busy_until, s);
    }
    woken.clear();
    // The next event: a message arrives or a pass ends (an arrival first at the same time).
    while (!arriving.empty() &&
           std::get<2>(arriving.top()) != wire[static_cast<size_t>(std::get<1>(arriving.top()))].version)
      arriving.pop();
    const double next_arrival = arriving.empty() ? kNever : std::get<0>(arriving.top());
    const double next_end = ending.empty() ? kNever : ending.top().first;
    if (next_arrival == kNever && next_end == kNever) break;
    if (next_arrival <= next_end) {
      now = std::max(now, next_arrival);
      const int id = std::get<1>(arriving.top());
      arriving.pop();
      ++wire[static_cast<size_t>(id)].version;  // no longer on the wire
      arrive(id);
      continue;
    }
    now = next_end;
    while (!ending.empty() && ending.top().first <= now) {
      const int s = ending.top().second;
      ending.pop();
      StageRun& r = runs[static_cast<size_t>(s)];
      r.running = false;
      const scheme::StageCost& c = stages[static_cast<size_t>(s)];
      const scheme::PipelinePass& pass = orders[static_cast<size_t>(s)][r.next];
      const int k = chunk_of(pass, s);
      const size_t at = slot(pass.micro_batch, k);
      if (pass.kind == Pass::Forward && k < chunks - 1)
        send(s, (k + 1) % p, 0, c.message_next, &forward_in[at]);
      if (pass.kind == Pass::Backward && k > 0) send(s, (k - 1) % p, 1, c.message_previous, &backward_in[at]);
      if (pass.kind != Pass::Forward && pass.micro_batch == m - 1)
        ends.last_micro_batch[static_cast<size_t>(s)][static_cast<size_t>(pass.chunk)] = now;
      ++r.next;
      woken.push_back(s);
    }
  }
  for (int s = 0; s < p; ++s)
    STEPCAST_ASSERT(runs[static_cast<size_t>(s)].next == orders[static_cast<size_t>(s)].size());  // all ran
  for (const StageRun& r : runs) ends.stage.push_back(r.busy_until);
  return ends;
}

PipelineEnds pipeline_ends(const std::vector<scheme::StageCost>& stages, const std::vector<double>& passes,
                           const scheme::SchemeConfig& scheme, int m, bool messages) {
  const std::vector<std::vector<scheme::PipelinePass>> orders =
      stage_orders(scheme, static_cast<int>(stages.size()), m);
  bool shared = false;
  PipelineEnds ends = pipeline_ends_in_turn(stages, passes, orders, scheme, m, messages, &shared);
  if (shared) ends = pipeline_ends_shared(stages, passes, orders, scheme, m);
  return ends;
}

double samples_per_step(const workload::Workload& w, const cluster::ClusterSpec& spec,
                        const scheme::SchemeConfig& scheme) {
  return scheme::samples_per_worker_step(scheme.parallel, spec.workers, w.batch_per_worker) * spec.workers;
}

}  // namespace

Result coarse_composed(const workload::Workload& w, const cluster::ClusterSpec& spec,
                       const scheme::SchemeConfig& scheme, const Options& options) {
  const scheme::ComposedCosts costs = scheme::composed_costs(w, spec, scheme, false, options.link_loads);
  const int p = scheme.parallel.pipeline, m = costs.micro_batches;
  double message = 0;
  std::vector<double> passes;
  passes.reserve(costs.stages.size());
  for (const scheme::StageCost& s : costs.stages) {
    // A micro-batch takes its passes, or the sharded-data-parallel collectives it needs when
    // they take longer (they run beside the other micro-batches' passes).
    passes.push_back(std::max(s.forward + s.backward + s.weight, s.data_per_micro_batch));
    message = std::max({message, s.message_next, s.message_previous});
  }
  const PipelineEnds ends = pipeline_ends(costs.stages, passes, scheme, m, true);
  const double pipeline = *std::max_element(ends.stage.begin(), ends.stage.end());
  // What the messages add: the same schedule with free messages is the bubble's alone.
  double messages = 0;
  if (message > 0 && p > 1) {
    const std::vector<double> free = pipeline_ends(costs.stages, passes, scheme, m, false).stage;
    messages = std::max(0.0, pipeline - *std::max_element(free.begin(), free.end()));
  }
  // Each stage's end: its last pass, then what of its reduction the backward did not hide.
  double step = pipeline, data = 0;
  for (size_t s = 0; s < costs.stages.size(); ++s) {
    const scheme::StageCost& c = costs.stages[s];
    // The reductions one after another on their stream, each once its gradients are in: its
    // chunk's last backward (from the path above) less how long before it they were. The
    // experts' run on a stream of their own over the same NICs: the two streams share the links,
    // taken here as one stream in the order their gradients come in.
    std::vector<double> ready(c.reductions.size());
    for (size_t k = 0; k < ready.size(); ++k)
      ready[k] = ends.last_micro_batch[s][static_cast<size_t>(c.ready_chunk[k])] - c.ready_before_end[k];
    std::vector<size_t> order(c.reductions.size());
    std::iota(order.begin(), order.end(), size_t{0});
    if (std::find(c.reduction_streams.begin(), c.reduction_streams.end(), 1) != c.reduction_streams.end()) {
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ready[a] < ready[b]; });
    }
    double end = -std::numeric_limits<double>::infinity();
    for (size_t k : order) end = std::max(end, ready[k]) + c.reductions[k];
    const double tail =
        std::max(0.0, end - ends.stage[s]) + std::accumulate(c.gathers.begin(), c.gathers.end(), 0.0);
    step = std::max(step, ends.stage[s] + tail + c.optimizer);
    data = std::max(data, tail);
  }
  // Every rank's step waits for the slowest at the gradient reduction and the pipeline's
  // messages: the expected slowest of the workers' factors, on the compute.
  double compute = 0, tensor = 0, context = 0, expert = 0, data_in_passes = 0, optimizer = 0;
  for (const scheme::StageCost& c : costs.stages) {
    compute += m * c.compute;
    tensor += m * c.tensor_exposed;
    context += m * c.context_exposed;
    expert += m * c.expert_exposed;
    // A micro-batch held up by its sharded-data-parallel collectives (above) waits on them: that
    // time is theirs, not a bubble.
    data_in_passes +=
        m * (c.data_exposed + std::max(0.0, c.data_per_micro_batch - (c.forward + c.backward + c.weight)));
    optimizer += c.optimizer;
  }
  const double n = static_cast<double>(costs.stages.size());
  compute = compute / n + optimizer / n;
  tensor /= n;
  context /= n;
  expert /= n;
  const double straggle = compute * (expected_slowest_factor(spec.workers, options.compute_cv) - 1);
  step += straggle;

  Result r;
  r.step_time = step;
  r.breakdown.compute = compute;
  r.breakdown.tensor = tensor;
  r.breakdown.context = context;
  r.breakdown.expert = expert;
  r.breakdown.pipeline = messages;
  // A difference of two sums of the same parts leaves rounding residue (1e-16 s on a 1 s step) where
  // nothing is exposed; below this share of the step it is nothing, not a tiny time to print.
  auto residue_to_zero = [step](double part) { return std::fabs(part) <= 1e-12 * step ? 0.0 : part; };
  r.breakdown.data =
      residue_to_zero(data_in_passes / n + std::max(0.0, step - straggle - pipeline - optimizer / n));
  r.breakdown.communication_exposed =
      r.breakdown.tensor + r.breakdown.context + r.breakdown.pipeline + r.breakdown.data + r.breakdown.expert;
  r.breakdown.wait =
      residue_to_zero(std::max(0.0, step - r.breakdown.compute - r.breakdown.communication_exposed));
  if (r.breakdown.wait == 0) {
    // The parts overlap more than their sum allows: scale the exposed parts to fit the step.
    const double room = std::max(0.0, step - r.breakdown.compute);
    const double scale = r.breakdown.communication_exposed > 0 ? room / r.breakdown.communication_exposed : 0;
    for (double* part : {&r.breakdown.tensor, &r.breakdown.context, &r.breakdown.pipeline, &r.breakdown.data,
                         &r.breakdown.expert, &r.breakdown.communication_exposed}) {
      *part *= std::min(1.0, scale);
    }
  }
  // Without a pipeline nothing waits on a schedule: what is left is not a bubble.
  r.bubble_fraction = step > 0 && p > 1 ? std::max(0.0, r.breakdown.wait - straggle) / step : 0;
  r.layout = scheme::RankLayout::describe(
      scheme.parallel, spec.workers, scheme::hybrid_shard_ranks(scheme, spec.workers, spec.workers_per_node));
  r.workers = spec.workers;
  r.predictor = Predictor::Coarse;
  r.throughput = samples_per_step(w, spec, scheme) / step;
  r.bytes_sent = r.bytes_received = costs.bytes_sent * options.measure_steps;
  r.utilization.push_back({"worker compute (mean)", std::min(1.0, compute / step)});
  if (!costs.link_bytes.empty())
    add_link_loads(r, *costs.cluster, scheme, costs.link_bytes, options.measure_steps);
  finish_result(r, w);
  return r;
}

Result analytic_composed(const workload::Workload& w, const cluster::ClusterSpec& spec,
                         const scheme::SchemeConfig& scheme, const Options& options) {
  const scheme::ComposedCosts costs = scheme::composed_costs(w, spec, scheme);
  const int m = costs.micro_batches;
  double compute = 0;
  for (const scheme::StageCost& c : costs.stages) compute = std::max(compute, m * c.compute + c.optimizer);
  // The busiest link: bytes of the step over its bandwidth.
  const double link_time =
      costs.link_bytes.empty() ? 0.0 : scheme::busiest_link_time(*costs.cluster, costs.link_bytes);
  Result r;
  r.step_time = std::max(compute, link_time);
  r.breakdown.compute = compute;
  r.breakdown.communication_exposed = std::max(0.0, r.step_time - compute);
  r.layout = scheme::RankLayout::describe(
      scheme.parallel, spec.workers, scheme::hybrid_shard_ranks(scheme, spec.workers, spec.workers_per_node));
  r.workers = spec.workers;
  r.predictor = Predictor::Analytic;
  r.throughput = samples_per_step(w, spec, scheme) / r.step_time;
  r.utilization.push_back({"worker compute (busiest stage)", compute / r.step_time});
  // Each class's busiest link, not one link by name: the uplinks of an oversubscribed fabric, or
  // the NICs, whichever the busiest link is.
  add_link_loads(r, *costs.cluster, scheme, costs.link_bytes, options.measure_steps);
  r.bytes_sent = r.bytes_received = costs.bytes_sent * options.measure_steps;
  finish_result(r, w);
  return r;
}

}  // namespace stepcast::predict
