// The coarse-grained predictor (DESIGN.md 3.2): a step is a few phases with closed-form times,
// plus switchable heuristics. Each heuristic says which error of the plain phase model it removes.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "predict/composed.hpp"
#include "predict/summary.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/detail/scheme/costs.hpp"
#include "stepcast/detail/scheme/fsdp_units.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/predict/predict.hpp"

namespace stepcast::predict {
namespace {

using scheme::Mode;

Result allreduce_step(const workload::Workload& w, const cluster::ClusterSpec& spec,
                      const scheme::SchemeConfig& scheme, const Options& options) {
  Result r;
  // The optimizer step follows the exchange, in series with it (scheme/costs.hpp).
  const double compute = w.step_time_alone() + scheme::optimizer_step_time(w, spec, scheme);
  const auto buckets =
      workload::make_buckets(w, scheme.allreduce.bucket_bytes, scheme::reduced_share(w, scheme));
  const cluster::Cluster c = cluster::build_cluster(spec);
  // Each step of the algorithm at its narrowest link: t(S) = latency + S x seconds_per_byte
  // (for the ring on a switch, exactly 2(N-1)(a + S/(N B))), in the regime of the bucket's size.
  // With algorithm or protocol auto, each bucket's own choice.
  const scheme::AllReducePlanner planner(c, scheme.allreduce.algorithm, scheme.allreduce.protocol);
  double comm = 0;
  double last = 0;
  double sent = 0;                                        // bytes, all workers, one step
  std::vector<double> wire(planner.plans().size(), 0.0);  // per plan, the step's buffers on the wire
  for (const workload::Bucket& b : buckets) {
    const scheme::AllReducePlanner::Choice choice = planner.choose(b.bytes);
    const scheme::CollectivePlan& plan = planner.plan(choice);
    const scheme::CollectiveCost cost = scheme::collective_cost(c, plan, choice.terms);
    last = cost.time(b.bytes);
    comm += last;
    sent += scheme::collective_bytes_sent(plan, b.bytes * scheme::wire_factor(choice.terms));
    wire[static_cast<size_t>(choice.plan)] += b.bytes * scheme::wire_factor(choice.terms);
  }
  // Overlap heuristic: buckets are reduced while the backward pass goes on, so all but the last
  // bucket can hide behind backward compute. Without it the phase model over-predicts the step
  // time of multi-bucket models by up to the backward time.
  double hidden = 0;
  if (options.overlap_heuristic) {
    hidden = std::min(comm - last, w.compute_time(workload::OpKind::Backward));
  }
  // Stragglers: the step waits for the slowest worker's compute; the others wait for it.
  const double straggle = compute * (expected_slowest_factor(spec.workers, options.compute_cv) - 1);
  r.step_time = compute + straggle + comm - hidden;
  r.breakdown.compute = compute;
  r.breakdown.communication_exposed = comm - hidden;
  r.breakdown.wait = straggle;
  r.utilization.push_back({"worker compute (mean)", compute / r.step_time});
  // Each link's bytes of the step over its bandwidth: the NICs, and each class of fabric link,
  // which an oversubscribed fabric makes busier than the NICs.
  std::vector<double> link_bytes(c.links.size(), 0.0);
  for (size_t p = 0; p < wire.size(); ++p) scheme::add_link_bytes(planner.plans()[p], wire[p], link_bytes);
  add_link_loads(r, c, scheme, link_bytes, options.measure_steps);
  r.bytes_sent = r.bytes_received = sent * options.measure_steps;
  return r;
}

// Random send orders the coarse timeline averages the forward's end over: on
// tools/coarse_vs_fine.py's synchronous random-order points (seeds 7-12) 32 draws are within 1.1%
// of 512 (0.13% on average) at about 1 ms a configuration.
constexpr int kRandomOrders = 32;

/// A synchronous step's transfers as a timeline from the start of the backward pass, with
/// `clients` workers in step (scheme::push_streams, forward_end_after_pulls): the pushes, the
/// shards' applies, and the end of the next forward pass, whose pulls go once the worker's pushes
/// are in and each piece once its own applies are done (`pipelined`, the per-tensor barrier) or
/// once every piece's are (the step barrier).
struct InStepTimeline {
  scheme::PushStreams streams;
  double pushed = 0;       ///< s, the last push in, plus a latency
  double applied = 0;      ///< s, the last apply done (not before `pushed`)
  double forward_end = 0;  ///< s
  double apart = 0;        ///< s, how far two workers' random orders put them apart in one step
};

InStepTimeline in_step_timeline(const workload::Workload& w, const scheme::PsConfig& ps, int clients,
                                const scheme::ShardStreams& streams_of_worker, double latency, bool pipelined,
                                uint64_t seed) {
  InStepTimeline t;
  // The worker's step starts once its last push is in (one latency); its pull requests take another.
  t.streams = scheme::push_streams(w, ps, clients, streams_of_worker);
  t.pushed = t.streams.pushed + latency;
  t.applied = std::max(t.streams.applied, t.pushed);
  std::vector<double> ready = t.streams.piece_applied;
  if (!pipelined) std::fill(ready.begin(), ready.end(), t.applied);
  const std::vector<double> stream_start(static_cast<size_t>(std::max(1, ps.count)), t.pushed + latency);
  t.forward_end = scheme::forward_end_after_pulls(w, ps, stream_start, streams_of_worker, ready, seed,
                                                  kRandomOrders, &t.apart);
  return t;
}

Result ps_step(const workload::Workload& w, const cluster::ClusterSpec& spec,
               const scheme::SchemeConfig& scheme, const Options& options) {
  Result r;
  const int n = spec.workers;
  // Per shard and client step: the bytes it holds, and its apply work (one apply per piece).
  const scheme::ShardLoads shards = scheme::shard_loads(w, scheme.ps);
  const double largest_shard = shards.largest_bytes();
  const double apply_per_step = shards.largest_apply();
  const double model = w.parameter_bytes();
  const double server_bw = scheme::ps_server_bw(spec, scheme.ps);
  // A worker's NIC is shared by the workers of its node.
  const double worker_bw = spec.nic_bw / spec.busiest_node_workers();
  // Pulls and pushes are RPCs: cluster.rpc_latency where set.
  const double latency = spec.rpc_latency.value_or(spec.latency);
  // The host CPU the transfers take from the compute (workload.comm_cpu_per_byte): in series
  // with it, and on the critical path of every pull and push.
  const double compute = w.step_time_alone() + scheme::comm_cpu_time(w, scheme);
  // Per-message cost o (training.ps.message_overhead): the busiest shard's message lane handles
  // its m pieces of every client one at a time, m o per client and direction (pulls and pushes
  // share the lane); a worker's own end adds one o to a phase (it prepares or handles its
  // messages as the lane serves them, so only the last one is exposed).
  const double overhead = scheme.ps.message_overhead;
  const double lane_per_client = shards.largest_messages() * overhead;  // s per client step and direction
  // The fabric's links (none on one switch): the pulls and pushes cross them on the paths fine's
  // exchange takes (scheme::ps_fabric_bytes_by_direction, as the analytic bound counts them).
  // With every worker in step, a phase lasts at least as long as its busiest link needs for the
  // phase's bytes (fine's max-min sharing holds each flow to its share of the most loaded link on
  // its path); where pulls and pushes overlap, a link carrying both needs their sum. On a 2:1
  // leaf-spine the shards' leaves carry every worker's pulls up and pushes down their one uplink,
  // 1.75x what the busiest shard's NIC needs (ResNet-50, 16 workers, 4 shards, radix 4), and
  // without it coarse named the NIC and was 42% short of fine.
  const cluster::Cluster c = scheme::ps_cluster(spec, scheme.ps);
  const scheme::PsFabricBytes fabric_bytes = scheme::ps_fabric_bytes_by_direction(c, w, scheme.ps);
  const std::vector<double> fabric_step_bytes = fabric_bytes.both();
  const double fabric_phase = std::max(scheme::busiest_link_time(c, fabric_bytes.pulls),
                                       scheme::busiest_link_time(c, fabric_bytes.pushes));
  const double fabric_step = scheme::busiest_link_time(c, fabric_step_bytes);  // both directions
  // One transfer phase (all pulls, or all pushes) when only this worker talks to the servers.
  const double alone = model / worker_bw + latency + lane_per_client + overhead;
  // Duplex heuristic (ps_duplex_heuristic; synchronous, random send order, per-tensor barrier,
  // more than two workers): the next step's pull of a piece may start once every worker's push of
  // it was applied, and pulls (the servers' NIC out) and pushes (NIC in) take the two directions
  // of the links. In a random order the pieces become ready all through the push phase, so the
  // servers' next pulls overlap all of it but the pieces that are ready last: with N workers each
  // pushing in its own order, a piece is ready once the last of them pushed it, which is late for
  // a large piece, so the share left is that of a piece drawn by bytes (size-biased), 1 / m_eff
  // with m_eff = (sum b)^2 / sum b^2 over the busiest shard's pieces (m for m equal pieces; near
  // 1 when one piece holds most of the bytes, as VGG-16's fc6 with `partition: whole`, where
  // counting pieces made coarse 70% fast at 8 workers). The servers' side of a step then exposes
  // (1 + 1/m_eff) phases instead of 2. A worker's own link does not overlap: it requests its next
  // step's pulls once that step starts, after its own pushes, so one worker alone, or one whose
  // own link bounds the phase, exposes both (fine: 2.00 phases with one worker; coarse took
  // 1 + 1/m for the whole phase and was 30% short on VGG-16 with one worker, and 37% fast on
  // ResNet-152 with 2 workers on 8 shards, whose own links bound the phase).
  // The overlap needs the workers out of step, and only from three workers on do they drift
  // apart: a worker that starts a phase d ahead of the other N - 1 has the shard's NIC to itself
  // for d, and under fair sharing ends (N - 1) d ahead (the NIC moves the same bytes in the same
  // time either way), so the lead grows threefold a phase at 4 workers (fine's trace: ResNet-152,
  // 4 workers, 10 Gbps, one shard: a 15 ms lead at the first push, 136 ms one step later) and
  // stays d at 2, where a piece's pull also waits for the other's push of it. Two workers stay
  // in step (AlexNet, 25 Gbps, one shard: 10-30 ms apart over six steps of 300 ms), and coarse
  // with the duplex was 13-20% fast on them (examples/resnet50-ps.yaml, one shard: 20%).
  // In fifo, tic, tac and priority orders the pulls start with the first layers, whose gradients
  // come last, so both phases stay exposed (the closed forms of
  // tests/predict/fine_vs_coarse_test.cpp), and so they do under the step barrier
  // (training.ps.barrier: step), where no pull starts before the last push is applied.
  const int m = std::max(1, shards.largest_messages());
  const double m_eff = std::max(1.0, shards.largest_effective_pieces());
  const bool duplex = options.ps_duplex_heuristic && scheme.mode == Mode::Sync &&
                      scheme.ps.order == scheme::PsOrder::Random &&
                      scheme.ps.barrier == scheme::PsBarrier::PerTensor && n > 2;
  const bool random_order = scheme.ps.order == scheme::PsOrder::Random;
  const double fwd = w.compute_time(workload::OpKind::Forward);
  const double bwd = w.compute_time(workload::OpKind::Backward);
  const double rest = std::max(0.0, compute - fwd - bwd);
  if (scheme.mode == Mode::Sync) {
    // Contention heuristic: every worker moves its share of each shard through that shard's NIC
    // at once, so the busiest shard's side of a phase lasts at least N S_s / B (the PS bandwidth
    // bound of DESIGN.md 3.2). Message heuristic: the busiest shard's lane is serial, N m o a
    // phase; it runs while the NIC transfers other clients' messages (and while a worker's own
    // end works on another message), so the phase is the longest of the terms. Without it the
    // phase model misses that a PS bound by per-message costs stops scaling (docs/validation.md).
    // Fabric heuristic: the busiest link's share of the phase (fabric_phase) bounds it as the
    // NIC's does; the two run at once, so the longer counts.
    const double lanes = n * lane_per_client + latency;
    const double nic_phase = n * largest_shard / server_bw;
    const double server = std::max({nic_phase + latency, fabric_phase + latency, lanes});
    const double phase = std::max(alone, server);
    const double server_apply = n * apply_per_step;
    // The plain phase model: compute, the exposed phases, the busiest shard's applies. The duplex
    // overlaps the two directions of the NICs, not the message lane, which handles the pulls and
    // the pushes of every client one at a time.
    const double exposed_phases = duplex ? 1.0 + 1.0 / m_eff : 2.0;
    // What the two directions of a step need of a resource that serves both one after the other:
    // the message lane, and a fabric link carrying pulls and pushes.
    const double both_ways = std::max(2 * n * lane_per_client, fabric_step) + latency;
    const double plain =
        compute + std::max({exposed_phases * server, 2 * (duplex ? alone : phase), both_ways}) + server_apply;
    // Compute-overlap heuristic (ps_compute_overlap_heuristic), the step as a timeline from the
    // start of the backward pass, piece by piece (scheme::push_streams, forward_end_after_pulls).
    // Each shard's connection streams its pieces one at a time, at most at the shard NIC's share
    // (N workers in step), and those sending share the worker's link max-min fairly. A gradient
    // piece leaves once the backward produced it and the connection is free (first the one ready
    // first, or in need order under tic, tac and priority); the shard's lane applies the workers'
    // copies as they come in. The next step's pulls are requested once the worker's own pushes
    // are out, and a piece leaves once it is applied (per-tensor barrier: its own applies, so
    // the pulls run while the lane applies the rest; step barrier: every piece's), in the pull
    // order; each forward op starts once what it reads is in (in random order the mean over 32
    // seeded orders). With the duplex heuristic the pulls may instead end as the phase model
    // above says, out of step, whichever is sooner. With message overheads the lanes, not the
    // bytes, set the pace, and the phase form stays: pushes end max(bwd + phase/m, phase +
    // bwd/m) after the backward starts, the lane a piece's applies later, the pulls a phase after
    // that (random: then the forward; need order: max(phase + fwd/m, fwd + phase/m)).
    // Errors this removes (tools/coarse_vs_fine.py, fine's trace): the phase form left the whole
    // forward after the pulls (35% slow on AlexNet in random order, 4 workers, 100 Gbps), the
    // shards' applies after the pushes (15% slow on ResNet-152 at 100 Gbps under the step barrier
    // and 21.6% under tic, 32 workers, 8 split shards, 20 us an apply, where fine pulls a piece
    // while the lane applies the next), and the lane's backlog of small pieces pushed last (12%
    // fast on ResNet-50 in fifo order under the step barrier, 16 and 64 workers); a classifier's
    // large gradient leaves early in the backward and its weights are read last in the forward
    // (AlexNet in tic order, 8 workers, 100 Gbps: 10% slow).
    // With the workers out of step (the duplex heuristic), the pulls end a phase of the worker's
    // own link after its pushes, the size-biased share of a servers' phase after the last apply,
    // and `phases` servers' phases after the pushes began, whichever is last.
    auto out_of_step_pulled = [&](double pushed, double applied, double phases) {
      return std::max(
          {pushed + alone, applied + server / m_eff, bwd / m + std::max(phases * server, both_ways)});
    };
    double core = plain;
    if (options.ps_compute_overlap_heuristic) {
      // Each shard's connection at its NIC's share with N workers in step; the worker's link
      // (its share of its node's NIC) shared among the connections sending. Where the fabric's
      // busiest link needs longer for a phase than the busiest shard's NIC, it paces every
      // connection: the busiest shard's bytes in fabric_phase.
      const bool fabric_paced = fabric_phase > nic_phase;
      const double seconds_per_shard_byte = fabric_paced ? fabric_phase / largest_shard : n / server_bw;
      const scheme::ShardStreams streams_of_worker{
          fabric_paced ? largest_shard / fabric_phase : server_bw / n, worker_bw};
      double pushed = std::max(bwd + phase / m, phase + bwd / m);
      double applied = std::max(pushed + server_apply / m, bwd / m + server_apply);
      const bool pipelined = scheme.ps.barrier == scheme::PsBarrier::PerTensor;
      double timeline;
      if (!(overhead > 0)) {
        const InStepTimeline in_step =
            in_step_timeline(w, scheme.ps, n, streams_of_worker, latency, pipelined, options.seed);
        const scheme::PushStreams& streams = in_step.streams;
        pushed = in_step.pushed;
        applied = in_step.applied;
        timeline = in_step.forward_end;
        const double apart = in_step.apart;
        const bool pair = options.ps_duplex_heuristic && random_order && pipelined && n == 2;
        if (duplex || pair) {
          // The pieces applied last go out after their applies: from each piece's apply on, its
          // shard's NIC still sends every worker's copy of it and of the pieces applied later
          // (streams.drained, on the in-step pushes' clock). Where a piece that holds most of a
          // shard's bytes is applied late, every worker waits for it and fair sharing hands it to
          // all at once, in step, so the out-of-step overlap does not reach it (fine's trace,
          // AlexNet, 8 workers, 10 Gbps, one shard: all eight pull fc6, 151 MB, in the same 966
          // ms). Without it coarse was 10-12% fast on AlexNet and VGG-16 at 8-32 workers, and
          // 4.7-12.5% on examples/resnet50-ps.yaml with 1-4 shards at 16-64 workers. It costs the
          // example on 8 unbalanced shards at 16-64 workers, whose workers stay out of step:
          // 0-3.4% fast before, 4.7-10.6% slow now (3.8-7.9% after ten warm-up steps).
          const double pulled =
              std::max(out_of_step_pulled(pushed, applied, 1.0 + 1.0 / m_eff), streams.drained + latency);
          std::vector<double> stream_start(shards.bytes.size());
          for (size_t s = 0; s < shards.bytes.size(); ++s)
            stream_start[s] = pulled - shards.bytes[s] * std::max(seconds_per_shard_byte, 1 / worker_bw);
          const double out_of_step = scheme::forward_end_after_pulls(
              w, scheme.ps, stream_start, streams_of_worker, {}, options.seed, kRandomOrders);
          // Two workers stay near in step: each step's random orders put them `apart`, and that
          // much of one's pulls overlaps the other's pushes (AlexNet, 25 Gbps, one split shard:
          // fine 298-303 ms a step, in step 340, out of step 261, with the overlap 328).
          timeline = duplex ? std::min(timeline, out_of_step)
                            : timeline - std::clamp(timeline - out_of_step, 0.0, apart);
        }
      } else {
        const double pulls_from = pipelined ? pushed : applied;
        const double pulls_tail = pipelined ? applied + phase / m : applied;
        if (random_order) {
          const double pulled = duplex ? out_of_step_pulled(pushed, applied, exposed_phases)
                                       : std::max(pulls_from + phase, pulls_tail);
          timeline = pulled + fwd;
        } else {
          timeline = std::max(pulls_from + std::max(phase + fwd / m, fwd + phase / m), pulls_tail + fwd / m);
        }
      }
      core = std::min(plain, timeline + rest);
    }
    // Stragglers: the barrier of each step waits for the slowest worker's compute.
    const double straggle = compute * (expected_slowest_factor(n, options.compute_cv) - 1);
    r.step_time = core + straggle;
    // What is left beyond compute and the shard's applies is the transfers, seen by a worker in
    // the share its own link takes of a phase; the rest waits on the servers or the others.
    const double exposed = std::max(0.0, core - compute - server_apply);
    r.breakdown.compute = compute;
    r.breakdown.communication_exposed = phase > 0 ? exposed * alone / phase : 0.0;
    r.breakdown.wait = r.step_time - compute - r.breakdown.communication_exposed;
    r.utilization.push_back({"PS NIC out", n * largest_shard / server_bw / r.step_time});
    r.utilization.push_back({"PS NIC in", n * largest_shard / server_bw / r.step_time});
    if (server_apply > 0) r.utilization.push_back({"PS apply", server_apply / r.step_time});
    if (overhead > 0) r.utilization.push_back({"PS messages", 2 * n * lane_per_client / r.step_time});
  } else {
    // Async: each worker cycles on its own; the servers cap the total rate at the busiest shard's
    // NIC (S_s bytes per worker step each way), its apply lane, or its message lane (2 m o per
    // worker step: its pulls and its pushes).
    // A worker's own cycle: its pulls, then its compute, then its pushes, on its own link (it
    // requests its next pulls once its pushes are out); with the compute-overlap heuristic the
    // pushes leave during the backward pass, as for sync.
    const double plain = compute + 2 * alone;
    double cycle = plain;
    if (options.ps_compute_overlap_heuristic) {
      if (!(overhead > 0)) {
        // One worker's step alone, as the synchronous timeline of one client: the shards' NICs to
        // itself, its own link shared among its connections, its pulls once its pushes are
        // applied (an asynchronous push completes once applied). The phase form below kept a
        // whole phase of the busiest shard before the forward, and was 12% slow on AlexNet in
        // tic order on 8 shards, whose fc6 streams from its shard while the first layers compute.
        const scheme::ShardStreams alone_at_the_shards{server_bw, worker_bw};
        const InStepTimeline own =
            in_step_timeline(w, scheme.ps, 1, alone_at_the_shards, latency, false, options.seed);
        cycle = std::min(plain, own.forward_end + rest);
      } else {
        const double pulled = random_order ? alone + fwd : std::max(alone + fwd / m, fwd + alone / m);
        const double pushed = std::max(bwd + alone / m, alone + bwd / m);
        cycle = std::min(plain, pulled + pushed + rest);
      }
    }
    double cap = largest_shard > 0 ? server_bw / largest_shard : 1e300;
    if (apply_per_step > 0) cap = std::min(cap, 1.0 / apply_per_step);
    if (lane_per_client > 0) cap = std::min(cap, 1.0 / (2 * lane_per_client));
    // The fabric's busiest link carries fabric_step bytes' worth for N worker steps, pulls and
    // pushes of different workers at once.
    if (fabric_step > 0) cap = std::min(cap, n / fabric_step);
    const double steps_per_second = std::min(n / cycle, cap);
    r.step_time = n / steps_per_second;
    r.breakdown.compute = compute;
    r.breakdown.communication_exposed = cycle - compute;
    r.breakdown.wait = r.step_time - cycle;
    r.utilization.push_back({"PS NIC out", steps_per_second * largest_shard / server_bw});
    r.utilization.push_back({"PS NIC in", steps_per_second * largest_shard / server_bw});
    if (apply_per_step > 0) r.utilization.push_back({"PS apply", steps_per_second * apply_per_step});
    if (overhead > 0) r.utilization.push_back({"PS messages", steps_per_second * 2 * lane_per_client});
    // The same workers in a convoy run the synchronous step under the step barrier (AsyncPhases),
    // each at its own pace: no straggler waits for another.
    scheme::SchemeConfig convoy = scheme;
    convoy.mode = Mode::Sync;
    convoy.ps.barrier = scheme::PsBarrier::Step;
    Options in_convoy = options;
    in_convoy.compute_cv = 0;
    r.async_phases = {r.step_time, std::max(r.step_time, ps_step(w, spec, convoy, in_convoy).step_time)};
  }
  r.utilization.push_back({"worker compute (mean)", compute / r.step_time});
  r.utilization.push_back({"worker NIC in", model / worker_bw / r.step_time});
  r.utilization.push_back({"worker NIC out", model / worker_bw / r.step_time});
  add_fabric_loads(r, c, fabric_step_bytes);
  r.bytes_sent = r.bytes_received = 2 * model * n * options.measure_steps;
  return r;
}

/// Compute of each FSDP unit's forward (forward order) and backward (backward order): the
/// durations of the ops from the unit's first op of that pass to the next unit's, so that ops of
/// layers without parameters count in the window of the unit before them. Ops before the first
/// unit's (and ops of kind Other) are returned in `other`.
struct UnitWindows {
  std::vector<double> forward, backward;  // backward[j]: unit j-th in backward order
  double other = 0;
};

UnitWindows unit_windows(const workload::Workload& w, const std::vector<scheme::FsdpUnit>& units,
                         const std::vector<int>& backward_order) {
  UnitWindows r;
  r.forward.assign(units.size(), 0.0);
  r.backward.assign(units.size(), 0.0);
  std::vector<int> forward_start(w.ops.size(), -1), backward_start(w.ops.size(), -1);
  for (size_t u = 0; u < units.size(); ++u) forward_start[units[u].forward_ops.front()] = static_cast<int>(u);
  for (size_t j = 0; j < backward_order.size(); ++j) {
    backward_start[units[backward_order[j]].backward_ops.front()] = static_cast<int>(j);
  }
  int forward_unit = -1, backward_rank = -1;
  for (size_t op = 0; op < w.ops.size(); ++op) {
    const double d = w.ops[op].duration;
    switch (w.ops[op].kind) {
      case workload::OpKind::Forward:
        if (forward_start[op] >= 0) forward_unit = forward_start[op];
        (forward_unit >= 0 ? r.forward[forward_unit] : r.other) += d;
        break;
      case workload::OpKind::Backward:
        if (backward_start[op] >= 0) backward_rank = backward_start[op];
        (backward_rank >= 0 ? r.backward[backward_rank] : r.other) += d;
        break;
      case workload::OpKind::Other:
        r.other += d;
        break;
    }
  }
  return r;
}

/// Sharded data parallelism as phases (DESIGN.md 4.2): the first gather is exposed; while unit u
/// computes its forward, the next unit's gather runs (exposure max(0, gather - forward)); in
/// backward the next unit's gather and the previous unit's reduce-scatter share the network
/// while the current unit computes (exposure max(0, gather + reduce-scatter - backward)); the
/// last reduce-scatter is exposed, and ZeRO-1's gathers of the updated parameters all are. Each
/// collective takes its closed form alone (collective_cost); two at once share bandwidth but not
/// latency. Prefetch 0: no gather overlaps.
Result fsdp_step(const workload::Workload& w, const cluster::ClusterSpec& spec,
                 const scheme::SchemeConfig& scheme, const Options& options) {
  Result r;
  const cluster::Cluster c = cluster::build_cluster(spec);
  const std::vector<scheme::FsdpUnit> units = scheme::fsdp_units(w, scheme.fsdp.unit_blocks);
  const std::vector<int> order = scheme::fsdp_backward_order(units);
  const scheme::FsdpPlans plans = scheme::make_fsdp_plans(c, scheme.fsdp);
  const UnitWindows windows = unit_windows(w, units, order);
  const size_t n_units = units.size();

  const bool sharded = !plans.gather.stages.empty();
  bool gather_forward = false, gather_backward = false, gather_after = false;
  switch (scheme.fsdp.sharding) {
    case scheme::FsdpSharding::Full:
    case scheme::FsdpSharding::Hybrid:
      gather_forward = sharded;
      gather_backward = sharded && scheme.fsdp.reshard_after_forward;
      break;
    case scheme::FsdpSharding::GradOp:
      gather_forward = sharded;
      break;
    case scheme::FsdpSharding::Optimizer:
      gather_after = sharded;
      break;
  }
  // A collective's closed form alone, split into its transfers and its steps' latencies: two
  // collectives on the two streams at once share the links' bandwidth, while their latencies
  // pass side by side, so together they take max(each alone, both transfers back to back).
  struct Timed {
    double latency = 0, transfer = 0;
    [[nodiscard]] double total() const { return latency + transfer; }
    Timed& operator+=(const Timed& o) {
      latency += o.latency;
      transfer += o.transfer;
      return *this;
    }
  };
  auto together = [](const Timed& a, const Timed& b) {
    return std::max({a.total(), b.total(), a.transfer + b.transfer});
  };
  double sent = 0;  // bytes, all workers, one step
  std::map<const scheme::CollectivePlan*, double> wire;  // per plan, the step's buffers
  auto timed = [&](const scheme::CollectivePlan& plan, double bytes) {
    if (plan.stages.empty()) return Timed{};
    sent += scheme::collective_bytes_sent(plan, bytes);
    wire[&plan] += bytes;
    const scheme::CollectiveCost cost = scheme::collective_cost(c, plan, {.regime = spec.regime_for(bytes)});
    return Timed{cost.latency, bytes * cost.seconds_per_byte};
  };
  std::vector<Timed> gather(n_units), gather_again(n_units), reduce(n_units), after(n_units);
  const double gathered = scheme::gathered_share(w, scheme.fsdp);  // fp8 all-gathers: 1/2
  const double reduced = scheme::reduced_share(w, scheme);         // fp32 reductions: 2
  for (size_t u = 0; u < n_units; ++u) {
    const double bytes = units[u].bytes;
    if (gather_forward) gather[u] = timed(plans.gather, bytes * gathered);
    if (gather_after) after[u] = timed(plans.gather, bytes * gathered);
    reduce[u] = timed(plans.reduce, bytes * reduced);
    reduce[u] += timed(plans.replicate, bytes * reduced / plans.shard_degree);
  }
  for (size_t j = 0; j < n_units; ++j) {
    if (gather_backward) gather_again[j] = timed(plans.gather, units[order[j]].bytes * gathered);
  }
  const bool prefetch = scheme.fsdp.prefetch >= 1;
  double exposed = 0;
  for (size_t u = 0; u < n_units; ++u) {
    if (u == 0 || !prefetch) {
      exposed += gather[u].total();
    } else {
      exposed += std::max(0.0, gather[u].total() - windows.forward[u - 1]);
    }
  }
  // Backward: the first unit's gather (issued when the forward ends) is exposed; during unit j's
  // backward the network carries unit j+1's gather (prefetched) and unit j-1's reduce-scatter.
  if (n_units > 0) exposed += gather_again[0].total();
  for (size_t j = 0; j < n_units; ++j) {
    const Timed next_gather = j + 1 < n_units ? gather_again[j + 1] : Timed{};
    const Timed reducing = j >= 1 ? reduce[order[j - 1]] : Timed{};
    if (prefetch) {
      exposed += std::max(0.0, together(next_gather, reducing) - windows.backward[j]);
    } else {
      exposed += next_gather.total() + std::max(0.0, reducing.total() - windows.backward[j]);
    }
  }
  if (n_units > 0) exposed += reduce[order[n_units - 1]].total();
  for (const Timed& t : after) exposed += t.total();

  const double compute = w.step_time_alone() + scheme::optimizer_step_time(w, spec, scheme);
  const double straggle = compute * (expected_slowest_factor(spec.workers, options.compute_cv) - 1);
  r.step_time = compute + straggle + exposed;
  r.breakdown.compute = compute;
  r.breakdown.communication_exposed = exposed;
  r.breakdown.wait = straggle;
  r.utilization.push_back({"worker compute (mean)", compute / r.step_time});
  std::vector<double> link_bytes(c.links.size(), 0.0);
  for (const auto& [plan, bytes] : wire) scheme::add_link_bytes(*plan, bytes, link_bytes);
  add_link_loads(r, c, scheme, link_bytes, options.measure_steps);
  r.bytes_sent = r.bytes_received = sent * options.measure_steps;
  return r;
}

}  // namespace

Result predict_coarse(const workload::Workload& workload, const cluster::ClusterSpec& cluster,
                      const scheme::SchemeConfig& scheme, const Options& options) {
  validate(workload, cluster, scheme, options);  // public: bad structs throw Error
  if (workload.num_samples() > 0) {
    return predict_over_samples(workload, false, [&](const workload::Workload& step, bool) {
      return predict_coarse(step, cluster, scheme, options);
    });
  }
  if (scheme.parallel.composed()) return coarse_composed(workload, cluster, scheme, options);
  Result r;
  switch (scheme.scheme) {
    case scheme::Scheme::AllReduce:
      r = allreduce_step(workload, cluster, scheme, options);
      break;
    case scheme::Scheme::ParameterServer:
      r = ps_step(workload, cluster, scheme, options);
      break;
    case scheme::Scheme::Fsdp:
      r = fsdp_step(workload, cluster, scheme, options);
      break;
  }
  r.workers = cluster.workers;
  r.predictor = Predictor::Coarse;
  r.throughput = cluster.workers * workload.batch_per_worker / r.step_time;
  finish_result(r, workload);
  return r;
}

}  // namespace stepcast::predict
