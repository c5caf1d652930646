#include "scheme/parameter_server_exchange.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "scheme/step_paths.hpp"
#include "scheme/worker_runtime.hpp"
#include "stepcast/detail/hash.hpp"
#include "stepcast/detail/scheme/costs.hpp"
#include "stepcast/error.hpp"

namespace stepcast::scheme {
namespace {

std::vector<net::LinkUse> to_link_uses(const cluster::Path& path) {
  std::vector<net::LinkUse> uses;
  uses.reserve(path.links.size());
  for (uint32_t l : path.links) uses.push_back({l, 1});
  return uses;
}

}  // namespace

cluster::Endpoint ps_shard_endpoint(const cluster::Cluster& cluster, const PsConfig& ps, int shard) {
  const bool dedicated = ps.placement == PsPlacement::Dedicated;
  return {dedicated ? cluster.spec.num_worker_nodes() + shard : shard, cluster::kHostDevice};
}

ParameterServerExchange::ParameterServerExchange(const StepContext& context, WorkerRuntime& runtime,
                                                 int owner)
    : ctx_(context),
      owner_(owner),
      runtime_(runtime),
      sync_(context.scheme.mode == Mode::Sync),
      step_barrier_(sync_ && context.scheme.ps.barrier == PsBarrier::Step),
      shards_count_(context.scheme.ps.count),
      clients_represented_(context.representative != nullptr ? context.representative->clients : 1),
      overhead_(context.scheme.ps.message_overhead),
      cpu_per_byte_(context.workload.comm_cpu_per_byte),
      pieces_(place_parameters(context.workload, context.scheme.ps)),
      nodes_(context.scheme.ps.local_aggregation && context.representative == nullptr, context.cluster,
             context.workers(), pieces_.size()) {
  const workload::Workload& w = ctx_.workload;
  const cluster::Cluster& cluster = ctx_.cluster;
  // One client cannot stand for many on a message lane: they would queue behind each other there.
  STEPCAST_ASSERT(ctx_.representative == nullptr || (sync_ && ctx_.scheme.ps.order == PsOrder::Fifo &&
                                                     !(overhead_ > 0) && !cluster.spec.incast.enabled()));
  const int p = shards_count_;
  const int n = ctx_.workers();
  pieces_of_tensor_.resize(w.tensors.size());
  for (int i = 0; i < static_cast<int>(pieces_.size()); ++i)
    pieces_of_tensor_[pieces_[i].tensor].push_back(i);
  pieces_needed_.assign(w.ops.size(), 0);
  for (size_t t = 0; t < w.tensors.size(); ++t) {
    for (int consumer : w.tensors[t].consumers) {
      pieces_needed_[consumer] += static_cast<int>(pieces_of_tensor_[t].size());
    }
  }
  need_rank_ = need_ranks(w, pieces_, ctx_.scheme.ps.order);
  version_.assign(pieces_.size(), 0);
  aggregated_.assign(pieces_.size(), 0);
  waiting_.resize(pieces_.size());
  shards_.resize(p);
  const int clients = nodes_.clients();
  connections_.resize(static_cast<size_t>(2) * clients * p + (nodes_.enabled() ? 2 * n : 0));
  const std::optional<double>& rpc_latency = cluster.spec.rpc_latency;
  const cluster::IncastSpec& incast = cluster.spec.incast;
  if (incast.enabled()) {
    receivers_.resize(cluster.nic_down.size());
    rto_min_ = incast.tcp_rto_min;
  }
  std::vector<double> receiver_rtt(receivers_.size(), 0.0);
  auto connect = [&](int index, Kind kind, int worker, int shard, std::vector<net::LinkUse> path,
                     double latency) {
    Connection& c = connections_[index];
    c.path = std::move(path);
    // Pulls and pushes are RPCs; node-local broadcasts and gathers are not.
    const bool rpc = kind == Kind::Pull || kind == Kind::Push;
    c.latency = rpc && rpc_latency ? *rpc_latency : latency;
    c.worker = worker;
    c.shard = shard;
    c.kind = kind;
  };
  auto connect_path = [&](int index, Kind kind, int worker, int shard, cluster::Endpoint from,
                          cluster::Endpoint to) {
    const cluster::Path path = cluster.path(from, to);
    connect(index, kind, worker, shard, to_link_uses(path), path.latency);
    // Incast: an RPC across the fabric lands on the switch port of the receiving NIC; its round
    // trip is twice the wire's latency (not the RPC stack's).
    if (!receivers_.empty() && (kind == Kind::Pull || kind == Kind::Push) && from.node != to.node) {
      const int nic = cluster.nic_of(to);
      connections_[index].receiver = nic;
      receiver_rtt[nic] = std::max(receiver_rtt[nic], 2 * path.latency);
    }
  };
  if (const RepresentativeClient* rep = ctx_.representative) {
    for (int s = 0; s < p; ++s) {
      connect(pull_connection(0, s), Kind::Pull, 0, s, rep->pull_paths[s], rep->pull_latency[s]);
      connect(push_connection(0, s), Kind::Push, 0, s, rep->push_paths[s], rep->push_latency[s]);
    }
  } else {
    for (int client = 0; client < clients; ++client) {
      const int leader = nodes_.leader_of_client(client);
      const cluster::Endpoint at = cluster.worker_endpoint(leader);
      for (int s = 0; s < p; ++s) {
        const cluster::Endpoint shard = ps_shard_endpoint(cluster, ctx_.scheme.ps, s);
        connect_path(pull_connection(client, s), Kind::Pull, leader, s, shard, at);
        connect_path(push_connection(client, s), Kind::Push, leader, s, at, shard);
      }
    }
  }
  if (nodes_.enabled()) {
    for (int v = 0; v < n; ++v) {
      const cluster::Endpoint leader = cluster.worker_endpoint(nodes_.leader_of(v));
      connect_path(broadcast_connection(v), Kind::Broadcast, v, 0, leader, cluster.worker_endpoint(v));
      connect_path(gather_connection(v), Kind::Gather, v, 0, cluster.worker_endpoint(v), leader);
    }
  }
  for (size_t nic = 0; nic < receivers_.size(); ++nic) {
    // The port's rate is its NIC's; the pipe holds C x RTT of the longest round trip into it.
    const double capacity = cluster.links[cluster.nic_down[nic]].bw;
    receivers_[nic].threshold = cluster::incast_threshold(incast.switch_buffer, capacity, receiver_rtt[nic]);
  }
  if (!sync_) {
    const size_t slots = static_cast<size_t>(clients) * pieces_.size();
    pulled_version_.assign(slots, 0);
    pulled_step_.assign(slots, -1);
    pulled_counts_.assign(slots, 0);
    client_started_.assign(clients, 0);
  }
  if (ctx_.trace != nullptr) {
    // The links of each traced connection, once, for its spans' args.
    for (Connection& c : connections_) {
      if (!ctx_.layout.keeps(c.worker, ctx_.layout.first_step)) continue;
      std::string links;
      for (const net::LinkUse& use : c.path) {
        if (!links.empty()) links += " > ";
        links += cluster.links.name(use.link);
      }
      c.trace_path = ctx_.trace->add_path(std::move(links));
    }
  }
}

void ParameterServerExchange::begin(WorkerRuntime& runtime) {
  const int n = ctx_.workers();
  if (sync_) {
    for (int w = 0; w < n; ++w) runtime.start_step(w);
    return;
  }
  // Asynchronous workers have no reason to start in step: identical workers started together
  // would move in convoys (all pulling, then all pushing) that leave each NIC direction idle
  // half the time, which real asynchronous jobs do not show. By default (async_start: spread)
  // start them evenly spaced over one cycle instead; `together` and `random` are there to show
  // how much the answer owes to these phases. Offsets persist under fair sharing (a worker ahead
  // keeps its lead: the one behind gets the bandwidth it leaves, and neither catches up), though
  // in some scenarios workers are drawn into convoys anyway (docs/validation.md, "Coarse against
  // fine on asynchronous parameter servers"), so they must cover the whole cycle, transfers
  // included: within one compute time, as before, workers bound by their transfers (AlexNet, 2
  // workers, 1 Gbps, one shard) stayed in a convoy and a step took twice what the PS NIC needs,
  // and seeded random offsets left the result to the seed (5.1-7.6 s a step over five seeds).
  // The cycle is the steady one of workers out of step: a worker's compute and its two transfers
  // alone, or the busiest shard's NIC carrying every worker's share each way, whichever is
  // longer. Even spacing over a multiple of it would put workers a cycle apart in step again.
  const cluster::ClusterSpec& spec = ctx_.cluster.spec;
  const double worker_transfer =
      ctx_.workload.parameter_bytes() / (spec.nic_bw / spec.busiest_node_workers());
  const std::vector<double> held = shard_bytes(pieces_, shards_count_);
  const double shard_transfer =
      spec.workers * *std::max_element(held.begin(), held.end()) / ps_server_bw(spec, ctx_.scheme.ps);
  const double cycle = std::max(ctx_.workload.step_time_alone() + 2 * worker_transfer, shard_transfer);
  for (int w = 0; w < n; ++w) {
    double start = 0;
    switch (ctx_.scheme.ps.async_start) {
      case PsAsyncStart::Spread:
        start = cycle * w / n;
        break;
      case PsAsyncStart::Together:
        break;
      case PsAsyncStart::Random:
        start = cycle * unit_interval(mix64(ctx_.options.seed ^
                                            mix64(0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(w))));
        break;
    }
    ctx_.engine.schedule(start, StartStep{w});
  }
}

void ParameterServerExchange::step_started(int w) {
  const int client = nodes_.client_of(w);
  if (!nodes_.member_started(client)) return;
  if (!sync_ && client_started_[client] == 0) {
    client_started_[client] = 1;
    clients_started_++;
  }
  for (int piece = 0; piece < static_cast<int>(pieces_.size()); ++piece) request_pull(client, piece);
}

void ParameterServerExchange::gradient_ready(int w, int tensor) {
  for (int piece : pieces_of_tensor_[tensor]) {
    if (!nodes_.enabled()) {
      enqueue(push_connection(w, pieces_[piece].shard), piece, push_priority(piece));
    } else if (nodes_.leader_of(w) == w) {
      gradient_gathered(nodes_.client_of(w), piece);
    } else {
      enqueue(gather_connection(w), piece, push_sequence_++);
    }
  }
}

void ParameterServerExchange::handle(const Event& event) {
  if (const auto* delivered = std::get_if<Delivered>(&event)) {
    on_delivered(*delivered);
  } else if (const auto* applied = std::get_if<ApplyDone>(&event)) {
    on_apply_done(applied->shard);
  } else if (const auto* prepared = std::get_if<MessagePrepared>(&event)) {
    // A pull's preparation was its shard's lane; a push's, the worker's end.
    const Connection& c = connections_[prepared->connection];
    if (c.kind == Kind::Pull) message_lane_done(c.shard);
    transmit(prepared->connection, false);
  } else if (const auto* resent = std::get_if<Retransmitted>(&event)) {
    // The port stalled for [now - RTO_min, now] (waits end in time order, all RTO_min long).
    Receiver& port = receivers_[static_cast<size_t>(connections_[resent->connection].receiver)];
    const double now = ctx_.engine.now(), window_start = runtime_.window_start();
    if (window_start >= 0) {
      port.stalled_in_window += std::max(0.0, now - std::max({now - rto_min_, port.stalled_until, window_start}));
    }
    port.stalled_until = now;
    message_done(resent->connection, false);
    incast_leave(connections_[resent->connection]);
  } else if (const auto* handled = std::get_if<MessageHandled>(&event)) {
    const Connection& c = connections_[handled->connection];
    if (c.kind == Kind::Push) message_lane_done(c.shard);
    on_handled(handled->connection, handled->piece, handled->span);
  }
}

void ParameterServerExchange::request_pull(int client, int piece) {
  const int step = runtime_.step(nodes_.leader_of_client(client));
  // Sync: step k needs the parameters after k aggregated updates (of this piece, or with the
  // step barrier of every piece). Async: whatever is there.
  if (sync_ && (step_barrier_ ? model_version_ : version_[piece]) < step) {
    waiting_[piece].push_back(client);
    return;
  }
  if (!sync_) {
    // The shard reads the piece for this step as it is now, as TensorFlow's server runs its part
    // of a step (the variable read) when the step starts, whenever the bytes then leave.
    const size_t slot = static_cast<size_t>(client) * pieces_.size() + piece;
    pulled_version_[slot] = version_[piece];
    pulled_step_[slot] = step;
    pulled_counts_[slot] = clients_started_ == nodes_.clients() && step >= ctx_.options.warmup_steps ? 1 : 0;
  }
  uint64_t priority =
      need_rank_.empty() ? static_cast<uint64_t>(piece) : need_rank_[static_cast<size_t>(piece)];
  if (ctx_.scheme.ps.order == PsOrder::Random) {
    priority = mix64(ctx_.options.seed ^ mix64(static_cast<uint64_t>(client) * 0x100000001ULL + step) ^
                     mix64(static_cast<uint64_t>(piece) + 0x5bd1e995ULL));
  }
  enqueue(pull_connection(client, pieces_[piece].shard), piece, priority);
}

void ParameterServerExchange::gradient_gathered(int client, int piece) {
  // The leader sums the node's gradients of a piece and pushes the sum once all are in.
  if (!nodes_.gradient_gathered(client, piece)) return;
  enqueue(push_connection(client, pieces_[piece].shard), piece, push_priority(piece));
}

void ParameterServerExchange::enqueue(int connection, int piece, uint64_t priority) {
  Connection& c = connections_[connection];
  c.pending.push({priority, piece});
  if (c.in_flight != kNone) return;
  if (hold_sends_) {
    if (c.pending.size() == 1) held_connections_.push_back(connection);
    return;
  }
  send_next(connection, false);
}

void ParameterServerExchange::send_held() {
  hold_sends_ = false;
  std::vector<int> held;
  held.swap(held_connections_);
  for (int connection : held) {
    if (connections_[connection].in_flight == kNone) send_next(connection, false);
  }
}

void ParameterServerExchange::send_next(int connection, bool reuse_flow) {
  Connection& c = connections_[connection];
  if (c.pending.empty()) {
    c.in_flight = kNone;
    return;
  }
  c.in_flight = c.pending.top().second;
  c.pending.pop();
  // The sender's CPU prepares the message first: a shard on its message lane, behind the messages
  // of every client; a worker on this connection.
  const double now = ctx_.engine.now();
  double ready = now;
  switch (c.kind) {
    case Kind::Pull:
      if (overhead_ > 0) ready = book_message_lane(c.shard);
      break;
    case Kind::Push: {
      // The worker's CPU serialises the gradient, taking the time from its compute.
      const double cpu = cpu_per_byte_ * pieces_[c.in_flight].bytes;
      if (cpu > 0) runtime_.add_host_work(c.worker, cpu);
      ready = now + overhead_ + cpu;
      break;
    }
    case Kind::Broadcast:
    case Kind::Gather:
      break;
  }
  if (ready > now) {
    // The connection's flow ended and is not restarted: the network shares its links out.
    ctx_.engine.schedule(ready, MessagePrepared{connection});
    return;
  }
  transmit(connection, reuse_flow);
}

double ParameterServerExchange::book_message_lane(int s) {
  Shard& shard = shards_[s];
  const double start = std::max(ctx_.engine.now(), shard.message_lane_free);
  shard.message_lane_free = start + overhead_;
  return shard.message_lane_free;
}

void ParameterServerExchange::message_lane_done(int s) {
  // Every booking lasts o and ends now: its part after the window opened counts.
  const double window_start = runtime_.window_start();
  if (window_start < 0) return;
  const double now = ctx_.engine.now();
  shards_[s].message_busy_in_window += now - std::max(now - overhead_, window_start);
}

void ParameterServerExchange::transmit(int connection, bool reuse_flow) {
  Connection& c = connections_[connection];
  const int piece = c.in_flight;
  const double now = ctx_.engine.now();
  c.send_start = now;
  const double bytes = pieces_[piece].bytes;
  c.transmitting = true;
  incast_start(c);
  if (reuse_flow) {
    ctx_.engine.network().restart_flow(c.flow, bytes);
  } else {
    c.flow = ctx_.engine.start_flow({c.path, bytes}, owner_);
  }
  const uint32_t i = net::index(c.flow);
  if (i >= flow_owner_.size()) flow_owner_.resize(i + 1, kNone);
  flow_owner_[i] = connection;
}

void ParameterServerExchange::on_message_sent(int connection) {
  Connection& c = connections_[connection];
  const int piece = c.in_flight;
  const double now = ctx_.engine.now();
  int span = kNone;
  if (ctx_.trace != nullptr) {
    const int step = runtime_.step(c.worker);
    if (ctx_.layout.keeps(c.worker, step)) {
      const TraceLayout& layout = ctx_.layout;
      int thread = layout.broadcast;
      const char* category = "broadcast";
      switch (c.kind) {
        case Kind::Pull:
          thread = layout.first_pull + c.shard;
          category = "pull";
          break;
        case Kind::Push:
          thread = layout.first_push + c.shard;
          category = "push";
          break;
        case Kind::Broadcast:
          break;
        case Kind::Gather:
          thread = layout.local_gather;
          category = "gather";
          break;
      }
      const bool to_server = c.kind == Kind::Pull || c.kind == Kind::Push;
      // The transmission only: the next message on the connection starts as this one's last
      // byte leaves, so a span up to its delivery (latency later) would overlap it.
      span = ctx_.span({.process = c.worker,
                        .thread = thread,
                        .name = ctx_.workload.tensors[pieces_[piece].tensor].name,
                        .category = category,
                        .start = c.send_start,
                        .duration = now - c.send_start,
                        .step = step,
                        .bytes = pieces_[piece].bytes,
                        .shard = to_server ? c.shard : -1,
                        .path = c.trace_path});
    }
  }
  c.span = span;
  c.transmitting = false;
  if (c.receiver == kNone) {
    message_done(connection, true);
    return;
  }
  if (incast_end(c)) {
    // The message lost its tail in an overflowing burst: the connection waits TCP's minimum
    // retransmission timeout, its flow ended (the port idles if every sender waits), and is still
    // one of the port's senders until it resends.
    ctx_.engine.schedule(now + rto_min_, Retransmitted{connection});
    return;
  }
  message_done(connection, true);
  incast_leave(c);
}

void ParameterServerExchange::message_done(int connection, bool reuse_flow) {
  Connection& c = connections_[connection];
  ctx_.engine.schedule(ctx_.engine.now() + c.latency, Delivered{connection, c.in_flight, c.span});
  // Keep the connection's flow for the next message: its share of the links does not change.
  send_next(connection, reuse_flow);
}

// Incast (docs/models.md, "Incast"). The published measurements (Phanishayee et al., FAST 2008;
// Vasudevan et al., SIGCOMM 2009; Chen et al., WREN 2009) send one block striped over n servers
// through one switch port: each TCP flow keeps at least about two segments in flight, so past
// n* = (B + C x RTT) / w_min senders the port's buffer B overflows every round, some flow loses
// the tail of its window, has no later packets to trigger a fast retransmit, and waits TCP's
// RTO_min while the port idles: the block takes D / C + RTO_min. As a flow-level rule: a *burst*
// at a port is a time during which more than n* messages are in transmission into it; a message
// that was in transmission during a burst pays RTO_min after its last byte, once per burst and
// connection (a connection resends, then goes on within the same burst without loss, as the
// measured blocks show one timeout each). With rdma (lossless fabric, PFC) or no buffer given,
// receivers_ is empty and nothing changes.
void ParameterServerExchange::incast_start(Connection& c) {
  if (c.receiver == kNone) return;
  Receiver& r = receivers_[static_cast<size_t>(c.receiver)];
  // A connection moving on to its next message stays one sender: it neither starts nor ends a burst.
  if (!c.counted) {
    c.counted = true;
    if (++r.active > r.threshold && !r.over) {
      r.over = true;
      r.bursts++;
    }
  }
  c.bursts_at_start = r.bursts;
  c.over_at_start = r.over;
}

bool ParameterServerExchange::incast_end(Connection& c) {
  const Receiver& r = receivers_[static_cast<size_t>(c.receiver)];
  // In a burst when it started, or one began while it was being sent: the latest is r.bursts.
  const bool in_burst = c.over_at_start || r.bursts > c.bursts_at_start;
  if (!in_burst || c.paid_burst == r.bursts) return false;
  c.paid_burst = r.bursts;
  return true;
}

void ParameterServerExchange::incast_leave(Connection& c) {
  // Still sending when its next message started at once (message_done).
  if (c.receiver == kNone || c.transmitting || !c.counted) return;
  c.counted = false;
  Receiver& r = receivers_[static_cast<size_t>(c.receiver)];
  if (--r.active <= r.threshold) r.over = false;
}

void ParameterServerExchange::on_delivered(const Delivered& delivered) {
  Connection& c = connections_[delivered.connection];
  const int piece = delivered.piece;
  if (!sync_ && c.kind == Kind::Push) count_staleness(nodes_.client_of(c.worker), piece);
  // The receiving end handles the message before anything uses it: the worker one message at a
  // time per connection (its CPU deserialising it, from its compute), the shard on its message lane.
  const double now = ctx_.engine.now();
  double handled = now;
  switch (c.kind) {
    case Kind::Pull: {
      const double cpu = cpu_per_byte_ * pieces_[piece].bytes;
      if (cpu > 0) runtime_.add_host_work(c.worker, cpu);
      if (overhead_ > 0 || cpu > 0) {
        handled = std::max(now, c.handled_until) + overhead_ + cpu;
        c.handled_until = handled;
      }
      break;
    }
    case Kind::Push:
      if (overhead_ > 0) handled = book_message_lane(c.shard);
      break;
    case Kind::Broadcast:
    case Kind::Gather:
      break;
  }
  if (handled > now) {
    ctx_.engine.schedule(handled, MessageHandled{delivered.connection, piece, delivered.span});
    return;
  }
  on_handled(delivered.connection, piece, delivered.span);
}

void ParameterServerExchange::count_staleness(int client, int piece) {
  const size_t slot = static_cast<size_t>(client) * pieces_.size() + piece;
  const int step = runtime_.step(nodes_.leader_of_client(client));
  // Only a push whose pull was counted, of the same step, while every worker still runs.
  if (pulled_counts_[slot] == 0 || pulled_step_[slot] != step || runtime_.finished() > 0) return;
  const auto stale = static_cast<size_t>(version_[piece] - pulled_version_[slot]);
  if (stale >= staleness_counts_.size()) staleness_counts_.resize(stale + 1, 0);
  staleness_counts_[stale]++;
}

void ParameterServerExchange::on_handled(int connection, int piece, int span) {
  const Connection& c = connections_[connection];
  switch (c.kind) {
    case Kind::Pull:
      if (nodes_.enabled()) {
        const int node = nodes_.client_of(c.worker);
        for (int v = c.worker + 1; v < c.worker + nodes_.members(node); ++v) {
          enqueue(broadcast_connection(v), piece, push_sequence_++);
        }
      }
      [[fallthrough]];
    case Kind::Broadcast:
      runtime_.input_arrived(c.worker, pieces_[piece].tensor, span);
      break;
    case Kind::Gather:
      gradient_gathered(nodes_.client_of(c.worker), piece);
      break;
    case Kind::Push: {
      Shard& shard = shards_[c.shard];
      shard.applies.push({piece, c.worker, runtime_.step(c.worker), span});
      if (!shard.busy) start_apply(c.shard);
      // Async: the push is done once applied (below), as TensorFlow's step runs the apply ops on
      // the servers and a PS-Lite push returns after the server handled it. Done on delivery, a
      // worker never waited for the shard's apply lane: with the lane busier than 100% its queue
      // grew without bound while fine reported a rate the servers cannot apply (ResNet-152, 32
      // workers, 8 split shards, 20 us an apply: 213 ms a step against 299 ms of applies).
      // Sync: the next version's barrier already waits for every apply.
      if (!sync_) return;
      break;
    }
  }
  runtime_.item_done(c.worker);
}

void ParameterServerExchange::applied(const Apply& apply) {
  on_piece_applied(apply.piece);
  if (!sync_) runtime_.item_done(apply.worker);
}

void ParameterServerExchange::start_apply(int s) {
  Shard& shard = shards_[s];
  const PsConfig& ps = ctx_.scheme.ps;
  while (!shard.applies.empty()) {
    const Apply& apply = shard.applies.front();
    const int piece = apply.piece;
    const double bytes = pieces_[piece].bytes;
    // A representative client's gradient stands for that of every client it represents, applied
    // one after another.
    const double duration = ps_apply_time(ps, bytes) * clients_represented_;
    if (duration <= 0) {  // free updates need no event
      const Apply done = apply;
      shard.applies.pop();
      applied(done);
      continue;
    }
    const double now = ctx_.engine.now();
    shard.busy = true;
    shard.apply_start = now;
    // Every worker's gradients: the shard's lane is one resource, whichever workers are traced.
    if (ctx_.trace != nullptr && ctx_.layout.keeps_step(apply.step)) {
      const int span = ctx_.span({.process = ctx_.layout.first_ps_process + s,
                                  .thread = ctx_.layout.apply,
                                  .name = ctx_.workload.tensors[pieces_[piece].tensor].name,
                                  .category = "apply",
                                  .start = now,
                                  .duration = duration,
                                  .step = apply.step,
                                  .bytes = bytes,
                                  .shard = s,
                                  .worker = apply.worker});
      ctx_.flow(apply.push, span, "push");
    }
    ctx_.engine.schedule(now + duration, ApplyDone{s});
    return;
  }
}

void ParameterServerExchange::on_apply_done(int s) {
  Shard& shard = shards_[s];
  shard.busy = false;
  const double window_start = runtime_.window_start();
  if (window_start >= 0)
    shard.busy_time_in_window += ctx_.engine.now() - std::max(shard.apply_start, window_start);
  const Apply done = shard.applies.front();
  shard.applies.pop();
  applied(done);
  start_apply(s);
}

void ParameterServerExchange::on_piece_applied(int piece) {
  if (!sync_) {
    version_[piece]++;
    return;
  }
  if (++aggregated_[piece] < nodes_.clients()) return;
  aggregated_[piece] = 0;
  version_[piece]++;
  if (!step_barrier_) {
    release_waiting(piece);
    return;
  }
  // The model's next version exists once every piece has its own; then every waiting pull goes
  // out at once, each connection's in its order.
  if (++pieces_at_next_version_ < static_cast<int>(pieces_.size())) return;
  pieces_at_next_version_ = 0;
  model_version_++;
  hold_sends_ = true;
  for (int p = 0; p < static_cast<int>(pieces_.size()); ++p) release_waiting(p);
  send_held();
}

void ParameterServerExchange::release_waiting(int piece) {
  std::vector<int> waiting;
  waiting.swap(waiting_[piece]);
  for (int client : waiting) {
    const int leader = nodes_.leader_of_client(client);
    for (int w = leader; w < leader + nodes_.members(client); ++w) runtime_.release(w);
    request_pull(client, piece);
  }
}

void ParameterServerExchange::add_loads(SimulationResult& r, double window_start) const {
  r.staleness_counts = staleness_counts_;
  if (!receivers_.empty()) {
    // The share of the window the most stalled port had a sender waiting out RTO_min.
    double stalled = 0;
    for (const Receiver& port : receivers_) {
      stalled = std::max(stalled, r.window > 0 ? port.stalled_in_window / r.window : 0.0);
    }
    if (stalled > 0) r.loads.push_back({std::string(cluster::kIncastStall), std::min(stalled, 1.0)});
  }
  if (overhead_ > 0) {
    double messages = 0;
    for (const Shard& shard : shards_) {
      messages = std::max(messages, r.window > 0 ? shard.message_busy_in_window / r.window : 0.0);
    }
    r.loads.push_back({"PS messages", messages});
  }
  const PsConfig& ps = ctx_.scheme.ps;
  if (!(ps.apply_time > 0 || ps.apply_bw > 0)) return;
  const double now = ctx_.engine.now();
  double apply = 0;
  for (const Shard& shard : shards_) {
    double t = shard.busy_time_in_window;
    if (shard.busy) t += now - std::max(shard.apply_start, window_start);
    apply = std::max(apply, r.window > 0 ? t / r.window : 0.0);
  }
  r.loads.push_back({"PS apply", apply});
}

}  // namespace stepcast::scheme
