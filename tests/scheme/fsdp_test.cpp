// Sharded data parallelism (FSDP / ZeRO) on the step simulation: closed forms where the
// mechanism allows one (negligible compute: the collectives back to back; compute far above
// communication: only what nothing can hide), the HSDP traffic split between NVLink and NICs,
// properties that hold whatever the numbers (prefetch and bandwidth never hurt, bytes conserved,
// determinism), and the exact fast path against the full engine on random scenarios.
//
// Ring facts used throughout (plan_group_ring): a reduce-scatter or all-gather of a buffer of S
// bytes over a group of g workers is g - 1 stages; in each stage every member sends S / g bytes
// to the next; a stage lasts its slowest transfer plus the slowest transfer's path latency. On a
// switch with one worker per node a transfer crosses the sender's NIC up link and the receiver's
// NIC down link (latency / 2 each, so the path latency is cluster.latency), alone on both.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "layered_workload.hpp"
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/collective_plan.hpp"
#include "stepcast/detail/scheme/fsdp_units.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::scheme {
namespace {
namespace fsdp_test {  // this file's own names: test files are compiled several to a unit

constexpr double kExact = 1e-9;  // relative: event times are sums of a few hundred terms

bool close(double a, double b, double tolerance = kExact) {
  return std::fabs(a - b) <= tolerance * std::max({std::fabs(a), std::fabs(b), 1e-12});
}

/// A chain of layers: forward op l reads tensor l (bytes[l]); the backward ops run in reverse
/// layer order, backward op of layer l producing tensor l's gradient. One lane.
workload::Workload chain(const std::vector<double>& bytes, double forward, double backward) {
  workload::Workload w;
  w.name = "chain";
  const int layers = static_cast<int>(bytes.size());
  for (int l = 0; l < layers; ++l) {
    workload::Op op{.name = fmt::format("fwd{}", l), .kind = workload::OpKind::Forward, .duration = forward, .layer = l, .deps = {}};
    if (l > 0) op.deps = {l - 1};
    w.ops.push_back(op);
  }
  for (int l = layers - 1; l >= 0; --l) {
    workload::Op op{.name = fmt::format("bwd{}", l), .kind = workload::OpKind::Backward, .duration = backward, .layer = l, .deps = {}};
    op.deps = {static_cast<int>(w.ops.size()) - 1};
    w.ops.push_back(op);
  }
  for (int l = 0; l < layers; ++l) {
    w.tensors.push_back({.name = fmt::format("p{}", l), .bytes = bytes[static_cast<size_t>(l)],
                         .producer = 2 * layers - 1 - l, .consumers = {l}});
  }
  return w;
}

SchemeConfig fsdp(FsdpSharding sharding, int prefetch = 1, bool reshard = true) {
  SchemeConfig s;
  s.scheme = Scheme::Fsdp;
  s.fsdp.sharding = sharding;
  s.fsdp.prefetch = prefetch;
  s.fsdp.reshard_after_forward = reshard;
  return s;
}

/// N single-GPU nodes on one switch: every ring hop is a NIC of `bw` bytes/s, path latency `latency`.
cluster::ClusterSpec plain_switch(int workers, double bw, double latency) {
  cluster::ClusterSpec s;
  s.workers = workers;
  s.workers_per_node = 1;
  s.topology = cluster::Topology::Switch;
  s.nic_bw = bw;
  s.latency = latency;
  return s;
}

const char* name(FsdpSharding s) {
  switch (s) {
    case FsdpSharding::Full:
      return "full";
    case FsdpSharding::GradOp:
      return "grad_op";
    case FsdpSharding::Optimizer:
      return "optimizer";
    case FsdpSharding::Hybrid:
      return "hybrid";
  }
  return "?";
}

// ---- 1. Closed forms with negligible compute.

TEST(FsdpClosedForm, OneUnitIsItsCollectivesBackToBack) {
  // One tensor, one unit: nothing can overlap. Per step:
  //   full + reshard (ZeRO-3): gather before the forward, again before the backward, then the
  //     reduce-scatter of the gradient: 3 rings;
  //   full without reshard, grad_op (ZeRO-2): one gather, one reduce-scatter: 2 rings;
  //   optimizer (ZeRO-1): reduce-scatter after the backward, gather of the updated parameters
  //     after the step: 2 rings.
  // A ring over N workers of S bytes: (N - 1) (S / (N B) + a).
  constexpr double kS = 1e8, kB = 12.5e9, kA = 5e-6, kOp = 1e-12;
  const workload::Workload w = chain({kS}, kOp, kOp);
  struct Variant {
    SchemeConfig scheme;
    int rings;
  };
  const Variant variants[] = {{fsdp(FsdpSharding::Full), 3},
                              {fsdp(FsdpSharding::Full, 1, false), 2},
                              {fsdp(FsdpSharding::GradOp), 2},
                              {fsdp(FsdpSharding::Optimizer), 2}};
  for (int n : {2, 3, 4, 8}) {
    const double ring = (n - 1) * (kS / (n * kB) + kA);
    for (const Variant& v : variants) {
      for (bool fast_paths : {true, false}) {
        const SimulationResult r = simulate_steps(w, plain_switch(n, kB, kA), v.scheme,
                                                  {.warmup_steps = 1, .measure_steps = 2, .fast_paths = fast_paths});
        const std::string what = fmt::format("{} workers, {}, reshard {}, fast {}", n, name(v.scheme.fsdp.sharding),
                                             v.scheme.fsdp.reshard_after_forward, fast_paths);
        const WorkerTimes& t = r.workers.front();
        EXPECT_TRUE(close(t.cycle, v.rings * ring + 2 * kOp)) << what << ": " << t.cycle << " vs " << v.rings * ring;
        EXPECT_TRUE(close(t.compute + t.communication + t.wait, t.cycle)) << what;
        EXPECT_TRUE(close(t.communication + t.wait, v.rings * ring)) << what;
      }
    }
  }
}

TEST(FsdpClosedForm, ManyUnitsMoveTheModelAtTheNicRateWhenLatencyIsZero) {
  // GPT-2 (14 units: embeddings, 12 blocks, head) with ~1 ns of compute and zero latency.
  // Gathers and reduce-scatters of different units overlap in the backward pass (two streams),
  // but each stage of either uses every NIC up and down link at count 1, so while any stage runs
  // every NIC runs at B (alone: B; both streams: B / 2 each), and a stage is followed at once by
  // the next. The step is then the bytes one NIC up link carries over B:
  //   (N - 1) / N x S per ring, 3 rings for ZeRO-3, 2 for ZeRO-2, ZeRO-1 and full without reshard.
  constexpr double kB = 12.5e9;
  const workload::Workload w = zoo::to_workload(zoo::get_model("gpt2"), {.batch_per_worker = 1, .step_time = 1e-9});
  const double s = w.parameter_bytes();
  ASSERT_EQ(fsdp_units(w, 1).size(), 14u);
  struct Variant {
    SchemeConfig scheme;
    int rings;
  };
  for (int prefetch : {0, 1, 2}) {
    const Variant variants[] = {{fsdp(FsdpSharding::Full, prefetch), 3},
                                {fsdp(FsdpSharding::Full, prefetch, false), 2},
                                {fsdp(FsdpSharding::GradOp, prefetch), 2},
                                {fsdp(FsdpSharding::Optimizer, prefetch), 2}};
    for (int n : {2, 4, 8}) {
      for (const Variant& v : variants) {
        const SimulationResult r =
            simulate_steps(w, plain_switch(n, kB, 0.0), v.scheme, {.warmup_steps = 1, .measure_steps = 2});
        const double expected = v.rings * (n - 1.0) / n * s / kB;
        EXPECT_TRUE(close(r.workers.front().cycle, expected, 1e-6))
            << n << " workers, " << name(v.scheme.fsdp.sharding) << ", reshard " << v.scheme.fsdp.reshard_after_forward
            << ", prefetch " << prefetch << ": " << r.workers.front().cycle << " vs " << expected;
      }
    }
  }
}

TEST(FsdpClosedForm, HybridOneUnitIsRingsInsideTheNodeThenAnAllReduceAcrossNodes) {
  // R nodes of G GPUs, shard group = one node. Inside the node (NVLink, Bi, latency ai) the
  // three rings of ZeRO-3 over G: 3 (G - 1) (S / (G Bi) + ai). Then the gradient shard S / G is
  // all-reduced across the R nodes by the G rings of GPU j of every node: 2 (R - 1) stages of
  // S / (G R) per member; the G / nics GPUs sharing a NIC share its B:
  //   2 (R - 1) (S / (G R) x (G / nics) / B + a).
  constexpr double kS = 6e7, kB = 12.5e9, kA = 5e-6, kBi = 150e9, kAi = 1e-6, kOp = 1e-12;
  const workload::Workload w = chain({kS}, kOp, kOp);
  const SchemeConfig hybrid = fsdp(FsdpSharding::Hybrid);
  for (auto [nodes, g] : {std::pair{2, 4}, std::pair{4, 2}, std::pair{3, 8}}) {
    for (int nics : {1, 2, g}) {
      if (nics > g) continue;
      cluster::ClusterSpec spec = plain_switch(nodes * g, kB, kA);
      spec.workers_per_node = g;
      spec.nics_per_node = nics;
      spec.intra_node_bw = kBi;
      spec.intra_node_latency = kAi;
      const double inside = 3 * (g - 1) * (kS / (g * kBi) + kAi);
      const double across = 2 * (nodes - 1) * (kS / (g * nodes) * (static_cast<double>(g) / nics) / kB + kA);
      for (bool fast_paths : {true, false}) {
        const SimulationResult r =
            simulate_steps(w, spec, hybrid, {.warmup_steps = 1, .measure_steps = 2, .fast_paths = fast_paths});
        EXPECT_TRUE(close(r.workers.front().cycle, inside + across + 2 * kOp))
            << nodes << " x " << g << ", " << nics << " NICs, fast " << fast_paths << ": " << r.workers.front().cycle
            << " vs " << inside + across;
      }
    }
  }
}

// ---- 2. Compute far above communication: only what no compute can hide is exposed.

TEST(FsdpExposure, ComputeBoundStepExposesOnlyTheUnhideableCollectives) {
  // Four units of distinct sizes (so "first" and "last" cannot be confused), 20 ms forward and
  // 40 ms backward per layer, collectives of at most 2.4 ms alone on 4 workers. With prefetch 1:
  // - forward: unit 0's gather is issued at the step start and nothing runs before it: exposed;
  //   unit u + 1's gather runs during unit u's forward: hidden.
  // - full/hybrid with reshard_after_forward: the backward's first unit (the last layer, unit 3)
  //   is gathered again, issued when the forward ends (fsdp_exchange.cpp), and its backward op
  //   waits for it: exposed. Later backward gathers run during the previous unit's backward.
  // - reduce-scatters (and HSDP's all-reduces) of unit u run during the next unit's backward,
  //   except that of the unit whose backward runs last, unit 0: exposed.
  // - ZeRO-1: the updated parameters of every unit are gathered after the last reduce-scatter,
  //   with no compute left: all exposed.
  // Every exposed collective runs alone, so it takes its plan's closed form (collective_cost).
  const std::vector<double> bytes{40e6, 10e6, 20e6, 30e6};
  constexpr double kForward = 20e-3, kBackward = 40e-3;
  const workload::Workload w = chain(bytes, kForward, kBackward);
  const double compute = 4 * (kForward + kBackward);
  cluster::ClusterSpec flat = plain_switch(4, 12.5e9, 5e-6);
  cluster::ClusterSpec nodes = flat;  // hybrid: 2 nodes of 2 GPUs
  nodes.workers_per_node = 2;
  for (FsdpSharding sharding : {FsdpSharding::Full, FsdpSharding::GradOp, FsdpSharding::Optimizer, FsdpSharding::Hybrid}) {
    for (bool reshard : {true, false}) {
      const SchemeConfig scheme = fsdp(sharding, 1, reshard);
      const cluster::ClusterSpec& spec = sharding == FsdpSharding::Hybrid ? nodes : flat;
      const cluster::Cluster c = cluster::build_cluster(spec);
      const FsdpPlans plans = make_fsdp_plans(c, scheme.fsdp);
      auto gather = [&](int u) { return collective_cost(c, plans.gather).time(bytes[u]); };
      auto reduce = [&](int u) {
        double t = collective_cost(c, plans.reduce).time(bytes[u]);
        if (!plans.replicate.stages.empty()) t += collective_cost(c, plans.replicate).time(bytes[u] / plans.shard_degree);
        return t;
      };
      double exposed = 0;
      switch (sharding) {
        case FsdpSharding::Full:
        case FsdpSharding::Hybrid:
          exposed = gather(0) + (reshard ? gather(3) : 0.0) + reduce(0);
          break;
        case FsdpSharding::GradOp:
          exposed = gather(0) + reduce(0);
          break;
        case FsdpSharding::Optimizer:
          exposed = reduce(0) + gather(0) + gather(1) + gather(2) + gather(3);
          break;
      }
      for (bool fast_paths : {true, false}) {
        const SimulationResult r =
            simulate_steps(w, spec, scheme, {.warmup_steps = 1, .measure_steps = 2, .fast_paths = fast_paths});
        const WorkerTimes& t = r.workers.front();
        const std::string what = fmt::format("{}, reshard {}, fast {}", name(sharding), reshard, fast_paths);
        EXPECT_TRUE(close(t.cycle - compute, exposed, 1e-6)) << what << ": " << t.cycle - compute << " vs " << exposed;
        EXPECT_TRUE(close(t.compute, compute)) << what;
        EXPECT_TRUE(close(t.communication + t.wait, exposed, 1e-6)) << what;
      }
    }
  }
}

// ---- Breakdown: identical workers never wait for each other.

/// Wait per step of identical workers (no stragglers): every collective's barrier is released
/// the instant the worker itself issued it, so all idle time is communication.
void expect_no_wait(FsdpSharding sharding, bool reshard) {
  const cluster::ClusterSpec spec = plain_switch(4, 12.5e9, 5e-6);
  const workload::Workload one_unit = chain({8e7}, 1e-9, 1e-9);
  const workload::Workload compute_bound = chain({40e6, 10e6, 20e6, 30e6}, 20e-3, 40e-3);
  for (const workload::Workload* w : {&one_unit, &compute_bound}) {
    for (bool fast_paths : {true, false}) {
      const SimulationResult r = simulate_steps(*w, spec, fsdp(sharding, 1, reshard),
                                                {.warmup_steps = 1, .measure_steps = 2, .fast_paths = fast_paths});
      const WorkerTimes& t = r.workers.front();
      const std::string what =
          fmt::format("{}, reshard {}, {} units, fast {}", name(sharding), reshard, w->tensors.size(), fast_paths);
      EXPECT_NEAR(t.wait, 0, 1e-12) << what << ": communication " << t.communication << ", wait " << t.wait;
      EXPECT_TRUE(close(t.communication, t.cycle - t.compute)) << what;
    }
  }
}

TEST(FsdpBreakdown, IdenticalWorkersNeverWaitForEachOther) {
  for (FsdpSharding sharding : {FsdpSharding::Full, FsdpSharding::GradOp, FsdpSharding::Hybrid}) {
    for (bool reshard : {true, false}) expect_no_wait(sharding, reshard);
  }
}

TEST(FsdpBreakdown, Zero1IdenticalWorkersNeverWaitForEachOther) {
  // Regression: the gathers ZeRO-1 issues after the step's last reduce-scatter released every
  // worker as if it had waited for the others, so the reduce-scatters counted as wait.
  expect_no_wait(FsdpSharding::Optimizer, true);
}

// ---- 3. Properties on random scenarios.

/// A random chain (1..10 layers), the zoo's GPT-2, or a small random decoder.
workload::Workload random_workload(std::mt19937_64& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  switch (pick(0, 3)) {
    case 0:
      return zoo::to_workload(zoo::get_model("gpt2"), {.batch_per_worker = 4, .step_time = uniform(0.01, 0.5)});
    case 1: {
      zoo::TransformerShape shape{.layers = pick(1, 4), .hidden = 64 * pick(1, 4), .ffn_hidden = 0, .heads = 4,
                                  .kv_heads = std::array{1, 2, 4}[static_cast<size_t>(pick(0, 2))],
                                  .vocab = pick(500, 8000), .seq_len = 128};
      shape.ffn_hidden = 4 * shape.hidden;
      shape.tied_embeddings = pick(0, 1) == 1;
      if (pick(0, 3) == 0) {
        shape.experts = 4;
        shape.top_k = 2;
      }
      const zoo::ModelSpec model = zoo::make_transformer("tiny", "random decoder", shape);
      const workload::Precision precisions[] = {workload::Precision::FP32, workload::Precision::BF16};
      return zoo::to_workload(model, {.batch_per_worker = pick(1, 4), .step_time = uniform(1e-3, 0.05),
                                      .precision = precisions[pick(0, 1)]});
    }
    default: {
      std::vector<double> bytes(static_cast<size_t>(pick(1, 10)));
      for (double& b : bytes) b = uniform(1e4, 4e7);
      workload::Workload w = chain(bytes, 1.0, 1.0);
      for (workload::Op& op : w.ops) op.duration = uniform(1e-5, 5e-3);
      return w;
    }
  }
}

struct Case {
  workload::Workload workload;
  cluster::ClusterSpec cluster;
  SchemeConfig scheme;
  SimulationOptions options;
  std::string description;
};

Case random_case(uint64_t seed) {
  std::mt19937_64 rng(seed * 6151 + 17);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  Case c;
  c.workload = random_workload(rng);
  const FsdpSharding shardings[] = {FsdpSharding::Full, FsdpSharding::GradOp, FsdpSharding::Optimizer,
                                    FsdpSharding::Hybrid};
  // One pick a statement: compilers evaluate a call's arguments in different orders.
  const FsdpSharding sharding = shardings[pick(0, 3)];
  const int prefetch = pick(0, 2);
  const bool reshard = pick(0, 2) != 0;
  c.scheme = fsdp(sharding, prefetch, reshard);
  c.scheme.fsdp.unit_blocks = pick(1, 3);
  cluster::ClusterSpec& s = c.cluster;
  s.workers_per_node = std::array{1, 2, 4, 8}[static_cast<size_t>(pick(0, 3))];
  const int nodes = pick(1, std::max(1, 32 / s.workers_per_node));
  s.workers = nodes * s.workers_per_node;
  if (c.scheme.fsdp.sharding == FsdpSharding::Hybrid) {
    // The node (shard_group 0) or another divisor of the workers.
    std::vector<int> divisors;
    for (int d = 1; d <= s.workers; ++d) {
      if (s.workers % d == 0) divisors.push_back(d);
    }
    c.scheme.fsdp.shard_group = pick(0, 1) == 0 ? 0 : divisors[static_cast<size_t>(pick(0, static_cast<int>(divisors.size()) - 1))];
  } else if (pick(0, 3) == 0) {
    s.workers = std::max(1, s.workers - pick(0, s.workers_per_node - 1));  // a partly filled last node
  }
  s.nics_per_node = pick(1, s.workers_per_node);
  s.nic_bw = uniform(1, 200) * 1e9 / 8;
  s.latency = uniform(0, 2e-5);
  s.intra_node_bw = uniform(10e9, 300e9);
  s.intra_node_latency = uniform(0, 2e-6);
  if (s.workers_per_node > 1 && pick(0, 3) == 0) s.intra_node_link = cluster::IntraNodeLink::Pcie;
  if (pick(0, 1) == 1) {
    s.topology = cluster::Topology::FatTree;
    s.fat_tree = {.levels = 2, .radix = 2 * pick(1, 4), .oversubscription = uniform(1, 4)};
  }
  s.routing_seed = seed;
  if (pick(0, 2) == 0) {
    s.collective_regimes = {{.from_bytes = 0, .step_latency = uniform(5e-6, 5e-5), .bw = uniform(1e9, 2e10)},
                            {.from_bytes = 4e6, .step_latency = uniform(1e-5, 1e-4), .bw = uniform(1e9, 5e10)}};
  }
  c.options.warmup_steps = pick(0, 2);
  c.options.measure_steps = pick(1, 3);
  c.options.seed = seed;
  c.options.network = pick(0, 3) == 0 ? NetworkKind::NoContention : NetworkKind::MaxMin;
  if (pick(0, 9) == 0) c.options.compute_cv = uniform(0.01, 0.3);  // off the fast path's domain
  // An uneven placement in a quarter of the cases with several nodes of several GPUs: the same
  // nodes, GPUs moved between them at random (each keeps 1 to workers_per_node).
  if (pick(0, 3) == 0 && s.workers_per_node > 1 && s.num_worker_nodes() > 1 && !(c.scheme.fsdp.sharding == FsdpSharding::Hybrid && c.scheme.fsdp.shard_group == 0)) {
    s.placement = test_workloads::moved_placement(s, pick);
  }
  // The optimizer step (cluster.gpu_memory_bw) in a third of the cases: 5% to 100% of the compute.
  if (pick(0, 2) == 0) {
    const double parameters = c.workload.parameter_bytes() / workload::bytes_per_element(c.workload.precision);
    const double compute = std::max(c.workload.step_time_alone(), 1e-9);
    s.gpu_memory_bw = std::clamp(parameters * 28 / (uniform(0.05, 1) * compute), 1e9, 1e14);
  }
  c.description = fmt::format(
      "seed {}: {} ({} units), {} workers ({} per node, {} NICs, {}), topology {}, {} shard_group {} prefetch {} "
      "unit {} reshard {}, {} regimes, network {}, cv {:.3f}, warmup {}, measure {}, memory {:.3g} B/s, placement [{}]",
      seed, c.workload.name, fsdp_units(c.workload, c.scheme.fsdp.unit_blocks).size(), s.workers,
      s.workers_per_node, s.nics_per_node, s.intra_node_link == cluster::IntraNodeLink::Pcie ? "pcie" : "nvlink",
      static_cast<int>(s.topology), name(c.scheme.fsdp.sharding), c.scheme.fsdp.shard_group, c.scheme.fsdp.prefetch,
      c.scheme.fsdp.unit_blocks, c.scheme.fsdp.reshard_after_forward, s.collective_regimes.size(),
      c.options.network == NetworkKind::MaxMin ? "maxmin" : "none", c.options.compute_cv, c.options.warmup_steps,
      c.options.measure_steps, s.gpu_memory_bw, fmt::join(s.placement, " "));
  return c;
}

TEST(FsdpProperties, PrefetchNeverSlowsAStep) {
  // Prefetch 1 issues every gather no later than prefetch 0 (at the start of the previous unit's
  // compute instead of its end), on the same stream in the same order.
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Case c = random_case(seed);
    c.options.compute_cv = 0;
    c.scheme.fsdp.prefetch = 0;
    const double none = simulate_steps(c.workload, c.cluster, c.scheme, c.options).workers.front().cycle;
    c.scheme.fsdp.prefetch = 1;
    const double one = simulate_steps(c.workload, c.cluster, c.scheme, c.options).workers.front().cycle;
    EXPECT_GE(none, one * (1 - kExact)) << c.description << " (cv set to 0)";
  }
}

TEST(FsdpProperties, MoreNicBandwidthNeverSlowsAStep) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Case c = random_case(seed);
    c.options.compute_cv = 0;
    const double slow = simulate_steps(c.workload, c.cluster, c.scheme, c.options).workers.front().cycle;
    c.cluster.nic_bw *= 2;
    const double fast = simulate_steps(c.workload, c.cluster, c.scheme, c.options).workers.front().cycle;
    EXPECT_LE(fast, slow * (1 + kExact)) << c.description << " (cv set to 0)";
  }
}

TEST(FsdpProperties, BytesSentEqualBytesReceivedAndRunsRepeat) {
  // Every transfer leaves one device (an up link) and reaches one (a down link). A run depends on
  // its inputs and seed only.
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const Case c = random_case(seed);
    for (bool fast_paths : {true, false}) {
      SimulationOptions options = c.options;
      options.fast_paths = fast_paths;
      const SimulationResult a = simulate_steps(c.workload, c.cluster, c.scheme, options);
      const SimulationResult b = simulate_steps(c.workload, c.cluster, c.scheme, options);
      EXPECT_GT(a.bytes_sent, 0) << c.description;
      EXPECT_TRUE(close(a.bytes_sent, a.bytes_received)) << c.description << ": " << a.bytes_sent << " vs " << a.bytes_received;
      ASSERT_EQ(a.workers.size(), b.workers.size());
      for (size_t w = 0; w < a.workers.size(); ++w) {
        EXPECT_EQ(a.workers[w].cycle, b.workers[w].cycle) << c.description;
        EXPECT_EQ(a.workers[w].communication, b.workers[w].communication) << c.description;
      }
      EXPECT_EQ(a.bytes_sent, b.bytes_sent) << c.description;
      EXPECT_EQ(a.events, b.events) << c.description;
      ASSERT_EQ(a.links.size(), b.links.size());
      for (size_t l = 0; l < a.links.size(); ++l) {
        EXPECT_EQ(a.links[l].name, b.links[l].name);
        EXPECT_EQ(a.links[l].bytes, b.links[l].bytes);
      }
    }
  }
}

// ---- 4. HSDP: what crosses the NICs.

double nic_up_bytes(const SimulationResult& r, int nodes) {
  double bytes = 0;
  int found = 0;
  for (const LinkLoad& l : r.links) {
    if (l.name.ends_with(".nic.up")) {
      bytes += l.bytes;
      found++;
    }
  }
  EXPECT_EQ(found, nodes) << "every NIC up link among the busiest links";
  return bytes;
}

TEST(FsdpHybrid, OnlyTheAllReduceOfTheShardsCrossesTheNics) {
  // 2 nodes x 8 GPUs, shard group = a node (G = 8), R = 2 replicas. The gathers and
  // reduce-scatters stay on NVLink; across nodes each GPU all-reduces its S_u / G shard of every
  // unit with the GPU of the same index on the other node: a ring of R ranks sends
  // 2 (R - 1) / R x S_u / G per member. Over the step, the 16 GPUs push through the NIC up links
  //   16 x 2 (R - 1) / R x S / G   (= 2 S here),
  // and through their own NVLink up links the three rings of ZeRO-3 inside the node:
  //   16 x 3 x (G - 1) / G x S.
  const workload::Workload w = zoo::to_workload(zoo::get_model("gpt2"), {.batch_per_worker = 4, .step_time = 0.05});
  const double s = w.parameter_bytes();
  cluster::ClusterSpec spec;
  spec.workers = 16;
  spec.workers_per_node = 8;
  spec.nic_bw = 12.5e9;
  spec.intra_node_bw = 300e9;
  const SchemeConfig hybrid = fsdp(FsdpSharding::Hybrid);
  ASSERT_EQ(fsdp_shard_degree(hybrid.fsdp, 16, 8), 8);
  constexpr int kMeasure = 3, kG = 8, kR = 2, kN = 16;
  for (bool fast_paths : {true, false}) {
    const SimulationResult r =
        simulate_steps(w, spec, hybrid, {.warmup_steps = 1, .measure_steps = kMeasure, .fast_paths = fast_paths});
    const double nic = kN * 2.0 * (kR - 1) / kR * s / kG;
    const double nvlink = kN * 3.0 * (kG - 1) / kG * s;
    EXPECT_TRUE(close(nic_up_bytes(r, 2) / kMeasure, nic)) << fast_paths << ": " << nic_up_bytes(r, 2) / kMeasure << " vs " << nic;
    EXPECT_TRUE(close(r.bytes_sent / kMeasure, nic + nvlink)) << fast_paths;
    EXPECT_TRUE(close(r.bytes_received, r.bytes_sent)) << fast_paths;
  }
}

TEST(FsdpHybrid, BeatsFullShardingWhenTheNicIsTheBottleneck) {
  // 10 Gb/s NICs, 300 GB/s NVLink. Per step a NIC up link carries, full sharding (a ring of 16
  // over 2 nodes crosses each NIC once per stage): 3 x 15 x S / 16; hybrid: 8 GPUs x S / 8 = S.
  // Each step takes at least its NIC bytes over B, and hybrid is the faster.
  const workload::Workload w = zoo::to_workload(zoo::get_model("gpt2"), {.batch_per_worker = 4, .step_time = 0.05});
  const double s = w.parameter_bytes();
  cluster::ClusterSpec spec;
  spec.workers = 16;
  spec.workers_per_node = 8;
  spec.nic_bw = 1.25e9;
  spec.intra_node_bw = 300e9;
  const SimulationOptions options{.warmup_steps = 1, .measure_steps = 2};
  const double full = simulate_steps(w, spec, fsdp(FsdpSharding::Full), options).workers.front().cycle;
  const double hybrid = simulate_steps(w, spec, fsdp(FsdpSharding::Hybrid), options).workers.front().cycle;
  EXPECT_GE(full, 3.0 * 15 / 16 * s / spec.nic_bw);
  EXPECT_GE(hybrid, s / spec.nic_bw);
  EXPECT_LT(hybrid, full);
}

// ---- 5. The exact fast path against the full engine.

void expect_same(const SimulationResult& fast, const SimulationResult& full, const std::string& what) {
  ASSERT_EQ(fast.workers.size(), full.workers.size()) << what;
  for (size_t w = 0; w < full.workers.size(); ++w) {
    EXPECT_TRUE(close(fast.workers[w].cycle, full.workers[w].cycle))
        << what << " worker " << w << " cycle " << fast.workers[w].cycle << " vs " << full.workers[w].cycle;
    EXPECT_TRUE(close(fast.workers[w].compute, full.workers[w].compute)) << what << " worker " << w << " compute";
    EXPECT_TRUE(close(fast.workers[w].communication, full.workers[w].communication))
        << what << " worker " << w << " communication " << fast.workers[w].communication << " vs "
        << full.workers[w].communication;
    EXPECT_TRUE(close(fast.workers[w].wait, full.workers[w].wait))
        << what << " worker " << w << " wait " << fast.workers[w].wait << " vs " << full.workers[w].wait;
  }
  EXPECT_TRUE(close(fast.window, full.window)) << what << " window";
  EXPECT_TRUE(close(fast.bytes_sent, full.bytes_sent)) << what << " bytes sent " << fast.bytes_sent << " vs " << full.bytes_sent;
  EXPECT_TRUE(close(fast.bytes_received, full.bytes_received)) << what << " bytes received";
  EXPECT_EQ(fast.max_link_flows, full.max_link_flows) << what;
  ASSERT_EQ(fast.loads.size(), full.loads.size()) << what;
  for (const ResourceLoad& load : full.loads) {
    auto it = std::find_if(fast.loads.begin(), fast.loads.end(),
                           [&](const ResourceLoad& l) { return l.resource == load.resource; });
    ASSERT_NE(it, fast.loads.end()) << what << " " << load.resource;
    EXPECT_TRUE(close(it->busy, load.busy)) << what << " " << load.resource << " " << it->busy << " vs " << load.busy;
  }
  ASSERT_EQ(fast.links.size(), full.links.size()) << what;
  for (size_t l = 0; l < full.links.size(); ++l) {
    // Equal busy fractions may sort either way by a last-bit difference; compare the values.
    EXPECT_TRUE(close(fast.links[l].busy, full.links[l].busy)) << what << " link " << l;
    EXPECT_TRUE(close(fast.links[l].bytes, full.links[l].bytes)) << what << " link " << l;
  }
}

TEST(FsdpFastPath, EqualsTheFullEngineOnRandomScenarios) {
  constexpr int kCases = 100;
  int fast_runs = 0;
  for (uint64_t seed = 1; seed <= kCases; ++seed) {
    const Case c = random_case(seed);
    SimulationOptions full_options = c.options;
    full_options.fast_paths = false;
    const SimulationResult full = simulate_steps(c.workload, c.cluster, c.scheme, full_options);
    const SimulationResult fast = simulate_steps(c.workload, c.cluster, c.scheme, c.options);
    ASSERT_EQ(full.engine, SimulationEngine::Full);
    fast_runs += fast.engine == SimulationEngine::Fast ? 1 : 0;
    expect_same(fast, full, c.description);
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_EQ(fast_runs, kCases) << "every FSDP case takes the fast path";
}

TEST(FsdpFastPath, EqualsTheFullEngineWithStragglers) {
  // With straggler noise every worker runs its own ops on the fast path too; only the network is
  // reduced. Each worker's cycle, compute, communication and wait must match the full engine's.
  constexpr int kCases = 40;
  for (uint64_t seed = 1; seed <= kCases; ++seed) {
    Case c = random_case(seed);
    c.options.compute_cv = std::array{0.02, 0.05, 0.2}[seed % 3];
    SimulationOptions full_options = c.options;
    full_options.fast_paths = false;
    const SimulationResult full = simulate_steps(c.workload, c.cluster, c.scheme, full_options);
    const SimulationResult fast = simulate_steps(c.workload, c.cluster, c.scheme, c.options);
    ASSERT_EQ(full.engine, SimulationEngine::Full);
    EXPECT_EQ(fast.engine, SimulationEngine::Fast) << c.description;
    expect_same(fast, full, fmt::format("{} (cv {})", c.description, c.options.compute_cv));
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(FsdpFastPath, StragglersMakeTheWorkersDiffer) {
  // A check that the case above tests something: with noise the workers' waits are not all equal.
  uint64_t seed = 1;
  while (random_case(seed).cluster.workers < 4) ++seed;
  Case c = random_case(seed);
  c.options.compute_cv = 0.2;
  const SimulationResult r = simulate_steps(c.workload, c.cluster, c.scheme, c.options);
  ASSERT_GT(r.workers.size(), 1U) << c.description;
  double lo = r.workers.front().wait, hi = lo;
  for (const WorkerTimes& w : r.workers) {
    lo = std::min(lo, w.wait);
    hi = std::max(hi, w.wait);
  }
  EXPECT_GT(hi, lo) << c.description;
}

}  // namespace fsdp_test
}  // namespace
}  // namespace stepcast::scheme
