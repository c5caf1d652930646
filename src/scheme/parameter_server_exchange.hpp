// Private to scheme/: the parameter-server exchange (DESIGN.md 3.1). At the start of a step a
// client requests every parameter piece from its shard; each (shard, client) connection sends
// one piece at a time, in the order the policy gives (random per step, or layer order); a
// forward op starts once its parameters arrived; a backward op's gradients are pushed on the
// (client, shard) connection; the shard applies each gradient on its own lane. Sync: a piece's
// next version exists once every client's gradient of the step was applied, and a pull waits
// for it. Async: no barrier, and workers start at seeded offsets. Clients are workers, or nodes
// with node-local aggregation (node_aggregation.hpp).
//
// Per-message costs (PsConfig::message_overhead, o): a shard's CPU handles one message at a
// time on its message lane, FCFS, for pulls (before it transmits the piece) and pushes (after
// the piece arrived, before its apply), so k messages cost it at least k o; a worker spends o
// on the connection before it transmits a push and after a pull arrived (one message at a time
// per connection). Pulls and pushes pay ClusterSpec::rpc_latency instead of their path's latency
// when it is set. Host CPU per byte (Workload::comm_cpu_per_byte, c): a worker serialises a push
// of b bytes before it transmits it and deserialises a pull after it arrived, c b each on the
// connection, and its compute lane pays the same c b (WorkerRuntime::add_host_work). Node-local broadcasts
// and gathers are no RPCs and pay neither.
//
// Staleness (async): when a client requests a piece at the start of its step, the shard reads
// it and notes its version (updates applied so far); when that client's push of the piece
// arrives, the versions in between are its staleness. Counted for pushes of measured steps
// whose pull came after every client had started and that arrive before any worker stopped,
// so the count sees all workers running.
#pragma once

#include <cstdint>
#include <queue>
#include <utility>
#include <vector>

#include "scheme/exchange.hpp"
#include "scheme/node_aggregation.hpp"
#include "stepcast/detail/scheme/placement.hpp"

namespace stepcast::scheme {

/// Where shard `shard` runs: its own server node (dedicated) or the host of worker node `shard`.
[[nodiscard]] cluster::Endpoint ps_shard_endpoint(const cluster::Cluster& cluster, const PsConfig& ps,
                                                  int shard);

/// With a StepContext::representative, one client (worker 0) stands for all of them: its flows
/// carry every client's members and each gradient it pushes is applied once per client.
class ParameterServerExchange final : public Exchange {
 public:
  ParameterServerExchange(const StepContext& context, WorkerRuntime& runtime, int owner);

  [[nodiscard]] int inputs_needed(int op) const override { return pieces_needed_[op]; }
  [[nodiscard]] int items_per_step() const override {
    // Every piece received (pulled, or broadcast by the node leader) and every gradient sent
    // (pushed, or gathered by the leader).
    return 2 * static_cast<int>(pieces_.size());
  }
  void begin(WorkerRuntime& runtime) override;
  void step_started(int w) override;
  void gradient_ready(int w, int tensor) override;
  void flow_done(net::FlowId flow) override { on_message_sent(flow_owner_[net::index(flow)]); }
  void handle(const Event& event) override;
  /// The PS apply and message lanes' loads, and with async training the pushes' staleness.
  void add_loads(SimulationResult& result, double window_start) const override;

 private:
  // Pull: shard -> client; Push: client -> shard; with local aggregation, Broadcast: node leader
  // -> another GPU of the node, Gather: a GPU -> its node leader.
  enum class Kind : uint8_t { Pull, Push, Broadcast, Gather };
  struct Connection {
    std::vector<net::LinkUse> path;
    double latency = 0;
    int worker = 0;  ///< the worker end: the client's leader (pull, push) or the GPU (broadcast, gather)
    int shard = 0;
    Kind kind = Kind::Pull;
    std::priority_queue<std::pair<uint64_t, int>, std::vector<std::pair<uint64_t, int>>, std::greater<>>
        pending;
    int in_flight = kNone;  // piece being prepared or sent
    double send_start = 0;
    double handled_until = 0;  ///< pull: when the worker is done handling the pieces delivered so far
    net::FlowId flow{};
    int trace_path = kNone;  ///< index into the trace's paths
    /// Incast: the node receiving this RPC across the fabric, or kNone (rule off, or one node).
    int receiver = kNone;
    uint64_t bursts_at_start = 0;  ///< the receiver's bursts when this message started
    bool over_at_start = false;    ///< the receiver was past its threshold then
    uint64_t paid_burst = 0;       ///< the last burst whose timeout this connection paid
    int span = kNone;              ///< the trace span of the message just sent
    bool transmitting = false;     ///< a message's bytes are on the network
    bool counted = false;          ///< one of its receiver's senders (Receiver::active)
  };
  /// Incast (docs/models.md, "Incast"): the senders transmitting into one NIC's switch port.
  struct Receiver {
    int active = 0;       ///< RPC messages being transmitted into the node now
    int threshold = 0;    ///< n*: more than this many overflow the port's buffer
    uint64_t bursts = 0;  ///< times active rose past the threshold (numbered from 1)
    bool over = false;    ///< active > threshold now
    /// The port's stall: in the window, the time some sender into it waited out RTO_min (a union
    /// of intervals, counted as each wait ends), and where the union counted so far ends.
    double stalled_in_window = 0;
    double stalled_until = 0;
  };
  struct Apply {
    int piece;
    int worker;  ///< the client leader whose gradient it is
    int step;    ///< of that worker
    int push;    ///< the push's trace span, or kNone
  };
  struct Shard {
    std::queue<Apply> applies;
    bool busy = false;
    double busy_time_in_window = 0;
    double apply_start = 0;
    double message_lane_free = 0;  ///< when the message lane is done with the messages given it
    double message_busy_in_window = 0;
  };

  [[nodiscard]] int pull_connection(int client, int shard) const { return client * shards_count_ + shard; }
  [[nodiscard]] int push_connection(int client, int shard) const {
    return (nodes_.clients() + client) * shards_count_ + shard;
  }
  [[nodiscard]] int broadcast_connection(int w) const { return 2 * nodes_.clients() * shards_count_ + w; }
  [[nodiscard]] int gather_connection(int w) const {
    return 2 * nodes_.clients() * shards_count_ + ctx_.workers() + w;
  }

  void request_pull(int client, int piece);
  /// The pulls waiting for a piece's next version, now that it exists.
  void release_waiting(int piece);
  /// The first pending message of every idle connection that requests left unsent (sending
  /// held), so that a batch of requests goes out in the order's priority, not request order.
  void send_held();
  void gradient_gathered(int client, int piece);
  void enqueue(int connection, int piece, uint64_t priority);
  void send_next(int connection, bool reuse_flow);
  void transmit(int connection, bool reuse_flow);
  /// Books o on shard s's message lane from now (FCFS); returns when it ends.
  double book_message_lane(int shard);
  /// A message handling on shard s's lane ended now: its time in the measured window.
  void message_lane_done(int shard);
  void on_message_sent(int connection);
  /// The message's delivery (its latency from now) and the connection's next message.
  void message_done(int connection, bool reuse_flow);
  /// Incast: a message into c's receiver starts or ends transmitting.
  void incast_start(Connection& c);
  /// Whether the message ending now lost its tail to an overflow it has not yet paid for.
  [[nodiscard]] bool incast_end(Connection& c);
  /// The connection stops sending into its receiver, unless its next message started at once.
  void incast_leave(Connection& c);
  void on_delivered(const Delivered& delivered);
  void on_handled(int connection, int piece, int span);
  void count_staleness(int client, int piece);
  void start_apply(int shard);
  void applied(const Apply& apply);  ///< an apply ended: the piece's version, and async, its push is done
  void on_apply_done(int shard);
  void on_piece_applied(int piece);

  const StepContext& ctx_;
  const int owner_;  // its flows on the engine (StepEngine::start_flow)
  WorkerRuntime& runtime_;
  const bool sync_;
  const bool step_barrier_;  ///< sync with PsBarrier::Step: pulls wait for the whole model
  const int shards_count_;
  const int clients_represented_;  ///< clients each simulated client stands for
  const double overhead_;          ///< s per message at each end (PsConfig::message_overhead)
  const double cpu_per_byte_;      ///< s of the worker's first lane per byte (Workload::comm_cpu_per_byte)
  std::vector<Piece> pieces_;
  /// tic / tac: each piece's place in the order its parameters are first needed (pulls and
  /// pushes go out in it); empty for random and fifo.
  std::vector<uint64_t> need_rank_;
  std::vector<std::vector<int>> pieces_of_tensor_;
  std::vector<int> pieces_needed_;  // op -> pieces it waits for
  NodeAggregation nodes_;
  std::vector<Connection> connections_;
  std::vector<int> flow_owner_;  // flow index -> connection sending on it
  uint64_t push_sequence_ = 0;
  /// A push's place in its connection's queue: the need order under tic / tac, else production order.
  [[nodiscard]] uint64_t push_priority(int piece) {
    return need_rank_.empty() ? push_sequence_++ : need_rank_[static_cast<size_t>(piece)];
  }
  std::vector<int> version_;        // piece -> updates completed (sync: steps aggregated)
  std::vector<int> aggregated_;     // piece -> gradients applied towards the next version
  int model_version_ = 0;           ///< step barrier: steps for which every piece is updated
  int pieces_at_next_version_ = 0;  ///< step barrier: pieces already past model_version_
  bool hold_sends_ = false;         ///< requests are queued, not sent (send_held() sends them)
  std::vector<int> held_connections_;
  std::vector<std::vector<int>> waiting_;  // piece -> clients waiting for its next version
  std::vector<Shard> shards_;
  std::vector<Receiver> receivers_;  ///< by NIC (Cluster::nic_down); empty when the incast rule is off
  double rto_min_ = 0;               ///< s a message that lost its tail waits (ClusterSpec::incast)
  // Async staleness. Index client * pieces + piece: the piece's version when the client requested
  // it, the client's step then, and whether that pull may be counted.
  std::vector<int> pulled_version_, pulled_step_;
  std::vector<uint8_t> pulled_counts_;
  int clients_started_ = 0;
  std::vector<uint8_t> client_started_;
  std::vector<uint64_t> staleness_counts_;  ///< pushes by staleness
};

}  // namespace stepcast::scheme
