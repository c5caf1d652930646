// The exact fast paths against the event-by-event engine (SimulationOptions::fast_paths): on
// seeded random small scenarios (workloads with one or two lanes, every all-reduce algorithm,
// every topology that takes it, size regimes, stragglers, both network models) the two must
// agree on everything a prediction reports, to 1e-9 relative; only the event count differs. The
// seed is printed on failure.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>

#include "layered_workload.hpp"
#include "stepcast/cluster/cluster.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/zoo/model_zoo.hpp"

namespace stepcast::scheme {
namespace {
namespace fast_path_test {  // this file's own names: test files are compiled several to a unit

constexpr double kTolerance = 1e-9;

bool close(double a, double b) {
  return std::fabs(a - b) <= kTolerance * std::max({std::fabs(a), std::fabs(b), 1e-12});
}

/// A random op graph: a forward chain on lane 0, a backward chain producing each tensor's
/// gradient, and with two lanes some backward ops moved to a second stream with a dependency on
/// the chain (so lanes overlap), all durations positive.
workload::Workload random_workload(std::mt19937_64& rng) {
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  const int layers = std::uniform_int_distribution<int>(1, 12)(rng);
  const bool two_lanes = std::bernoulli_distribution(0.4)(rng);
  workload::Workload w;
  w.name = "random";
  w.batch_per_worker = 32;
  if (two_lanes) w.lanes = {"gpu", "side"};
  for (int l = 0; l < layers; ++l) {
    workload::Op op;
    op.name = fmt::format("fwd{}", l);
    op.kind = workload::OpKind::Forward;
    op.duration = uniform(1e-4, 5e-3);
    if (l > 0) op.deps = {l - 1};
    w.ops.push_back(op);
  }
  for (int l = layers - 1; l >= 0; --l) {
    workload::Op op;
    op.name = fmt::format("bwd{}", l);
    op.kind = workload::OpKind::Backward;
    op.duration = uniform(1e-4, 8e-3);
    const int previous = static_cast<int>(w.ops.size()) - 1;
    op.deps = {previous};
    if (two_lanes && std::bernoulli_distribution(0.3)(rng)) op.lane = 1;
    w.ops.push_back(op);
    w.tensors.push_back({.name = fmt::format("p{}", l),
                         .bytes = uniform(1e4, 4e7),
                         .producer = static_cast<int>(w.ops.size()) - 1,
                         .consumers = {l}});
  }
  std::reverse(w.tensors.begin(), w.tensors.end());  // layer order
  return w;
}

/// One time in four a zoo CNN, else a random op graph.
workload::Workload zoo_or_random_workload(std::mt19937_64& rng) {
  if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) {
    const char* models[] = {"alexnet", "resnet50", "vgg16"};
    const char* model = models[std::uniform_int_distribution<int>(0, 2)(rng)];
    return zoo::to_workload(zoo::get_model(model), {.batch_per_worker = 32, .step_time = 0.1});
  }
  return random_workload(rng);
}

/// A switch, a two-level fat-tree of `radix` (random oversubscription) or a ring torus of `nodes`.
void random_topology(std::mt19937_64& rng, cluster::ClusterSpec& s, int radix, int nodes) {
  switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
    case 0:
      s.topology = cluster::Topology::Switch;
      break;
    case 1:
      s.topology = cluster::Topology::FatTree;
      s.fat_tree = {
          .levels = 2, .radix = radix, .oversubscription = std::uniform_real_distribution<double>(1, 4)(rng)};
      break;
    case 2:
      s.topology = cluster::Topology::Torus;
      s.torus.dims = {nodes};
      break;
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
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  Case c;
  c.workload = zoo_or_random_workload(rng);
  c.scheme.scheme = Scheme::AllReduce;
  const AllReduceAlgorithm algorithms[] = {
      AllReduceAlgorithm::Ring,         AllReduceAlgorithm::HalvingDoubling,
      AllReduceAlgorithm::Hierarchical, AllReduceAlgorithm::Hdrm,
      AllReduceAlgorithm::Tree,         AllReduceAlgorithm::Auto};
  c.scheme.allreduce.algorithm = algorithms[pick(0, 5)];
  const AllReduceAlgorithm a = c.scheme.allreduce.algorithm;
  const bool nccl_model =
      a == AllReduceAlgorithm::Ring || a == AllReduceAlgorithm::Tree || a == AllReduceAlgorithm::Auto;
  const CollectiveProtocol protocols[] = {CollectiveProtocol::Links, CollectiveProtocol::Auto,
                                          CollectiveProtocol::LL, CollectiveProtocol::LL128,
                                          CollectiveProtocol::Simple};
  c.scheme.allreduce.protocol = nccl_model ? protocols[pick(0, 4)] : CollectiveProtocol::Links;
  c.scheme.allreduce.bucket_bytes = pick(0, 3) == 0 ? 0.0 : uniform(1e6, 5e7);
  cluster::ClusterSpec& s = c.cluster;
  s.nic_bw = uniform(1, 100) * 1e9 / 8;
  s.latency = uniform(1e-6, 2e-5);
  s.routing_seed = seed;
  const bool power_of_two = needs_power_of_two(c.scheme.allreduce.algorithm);
  if (c.scheme.allreduce.algorithm == AllReduceAlgorithm::Hdrm) {
    s.topology = cluster::Topology::BiGraph;
    // Hosts per switch at most, equal to and above switches per half (then in rounds).
    s.bigraph = {.switches_per_half = 1 << pick(0, 2), .hosts_per_switch = 1 << pick(0, 2)};
    s.workers = 2 * s.bigraph.switches_per_half * s.bigraph.hosts_per_switch;
  } else {
    s.workers_per_node = pick(1, 4);
    s.workers = power_of_two ? 1 << pick(0, 4) : pick(1, 16);
    if (power_of_two && s.workers % s.workers_per_node != 0) s.workers_per_node = 1;
    random_topology(rng, s, 4, s.num_worker_nodes());
    if (s.workers_per_node > 1 && pick(0, 1) == 1) s.intra_node_link = cluster::IntraNodeLink::Pcie;
    s.nics_per_node = pick(1, s.workers_per_node);
  }
  if (c.scheme.allreduce.protocol == CollectiveProtocol::Links && pick(0, 2) == 0) {
    s.collective_regimes = {
        {.from_bytes = 0, .step_latency = uniform(5e-6, 5e-5), .bw = uniform(1e9, 2e10)},
        {.from_bytes = 4e6, .step_latency = uniform(1e-5, 1e-4), .bw = uniform(1e9, 5e10)}};
  }
  c.options.warmup_steps = pick(0, 2);
  c.options.measure_steps = pick(1, 3);
  c.options.seed = seed;
  c.options.compute_cv = pick(0, 1) == 1 ? uniform(0.01, 0.3) : 0.0;
  c.options.network = pick(0, 4) == 0 ? NetworkKind::NoContention : NetworkKind::MaxMin;
  // An uneven placement in a quarter of the cases with several nodes of several GPUs: the same
  // nodes, GPUs moved between them at random (each keeps 1 to workers_per_node).
  if (pick(0, 3) == 0 && s.workers_per_node > 1 && s.num_worker_nodes() > 1) {
    s.placement = test_workloads::moved_placement(s, pick);
  }
  // The optimizer step (cluster.gpu_memory_bw) in a third of the cases: 5% to 100% of the compute.
  if (pick(0, 2) == 0) {
    const double parameters =
        c.workload.parameter_bytes() / workload::bytes_per_element(c.workload.precision);
    const double compute = std::max(c.workload.step_time_alone(), 1e-9);
    s.gpu_memory_bw = std::clamp(parameters * 28 / (uniform(0.05, 1) * compute), 1e9, 1e14);
  }
  c.description = fmt::format(
      "seed {}: {} workers ({} per node, {} NICs), topology {}, {}/{}, {} B buckets, "
      "cv {:.3f}, {} regimes, warmup {}, measure {}, memory {:.3g} B/s, placement [{}]",
      seed, s.workers, s.workers_per_node, s.nics_per_node, static_cast<int>(s.topology),
      to_string(c.scheme.allreduce.algorithm), to_string(c.scheme.allreduce.protocol),
      c.scheme.allreduce.bucket_bytes, c.options.compute_cv, s.collective_regimes.size(),
      c.options.warmup_steps, c.options.measure_steps, s.gpu_memory_bw, fmt::join(s.placement, " "));
  return c;
}

void expect_same(const SimulationResult& fast, const SimulationResult& full, const std::string& what) {
  ASSERT_EQ(fast.workers.size(), full.workers.size()) << what;
  for (size_t w = 0; w < full.workers.size(); ++w) {
    EXPECT_TRUE(close(fast.workers[w].cycle, full.workers[w].cycle))
        << what << " worker " << w << " cycle " << fast.workers[w].cycle << " vs " << full.workers[w].cycle;
    EXPECT_TRUE(close(fast.workers[w].compute, full.workers[w].compute))
        << what << " worker " << w << " compute";
    EXPECT_TRUE(close(fast.workers[w].communication, full.workers[w].communication))
        << what << " worker " << w << " communication " << fast.workers[w].communication << " vs "
        << full.workers[w].communication;
    EXPECT_TRUE(close(fast.workers[w].wait, full.workers[w].wait))
        << what << " worker " << w << " wait " << fast.workers[w].wait << " vs " << full.workers[w].wait;
  }
  EXPECT_TRUE(close(fast.window, full.window)) << what << " window";
  EXPECT_TRUE(close(fast.bytes_sent, full.bytes_sent))
      << what << " bytes sent " << fast.bytes_sent << " vs " << full.bytes_sent;
  EXPECT_TRUE(close(fast.bytes_received, full.bytes_received)) << what << " bytes received";
  EXPECT_EQ(fast.max_link_flows, full.max_link_flows) << what;
  ASSERT_EQ(fast.loads.size(), full.loads.size()) << what;
  for (const ResourceLoad& load : full.loads) {
    auto it = std::find_if(fast.loads.begin(), fast.loads.end(),
                           [&](const ResourceLoad& l) { return l.resource == load.resource; });
    ASSERT_NE(it, fast.loads.end()) << what << " " << load.resource;
    EXPECT_TRUE(close(it->busy, load.busy))
        << what << " " << load.resource << " " << it->busy << " vs " << load.busy;
  }
  ASSERT_EQ(fast.links.size(), full.links.size()) << what;
  for (size_t l = 0; l < full.links.size(); ++l) {
    // Equal busy fractions may sort either way by a last-bit difference; compare the values.
    EXPECT_TRUE(close(fast.links[l].busy, full.links[l].busy)) << what << " link " << l;
  }
}

TEST(FastPath, SynchronousAllReduceEqualsTheFullEngineOnRandomScenarios) {
  int fast_runs = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
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
  EXPECT_EQ(fast_runs, 300) << "every synchronous all-reduce case takes the fast path";
}

/// A parameter-server case: mostly the fast path's domain (sync, fifo, no stragglers), on every
/// topology and placement, with shards, partitions, apply costs, server NICs, GPUs per node
/// (with and without node-local aggregation), RPC latencies and placement strategies; one case
/// in five leaves the domain (random order, stragglers or async), and one in ten has a message
/// overhead, to check that it falls back.
Case random_ps_case(uint64_t seed) {
  std::mt19937_64 rng(seed * 104729);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  Case c;
  c.workload = zoo_or_random_workload(rng);
  c.scheme.scheme = Scheme::ParameterServer;
  PsConfig& ps = c.scheme.ps;
  ps.order = PsOrder::Fifo;
  ps.count = pick(1, 4);
  const PsPartition partitions[] = {PsPartition::Whole, PsPartition::Split};
  ps.partition = partitions[pick(0, 1)];
  ps.apply_time = pick(0, 1) == 1 ? uniform(1e-6, 1e-3) : 0.0;
  ps.apply_bw = pick(0, 2) == 0 ? uniform(1e9, 2e10) : 0.0;
  cluster::ClusterSpec& s = c.cluster;
  s.nic_bw = uniform(1, 100) * 1e9 / 8;
  s.latency = uniform(1e-6, 2e-5);
  s.routing_seed = seed;
  s.workers_per_node = pick(1, 4);
  s.workers = pick(1, 16);
  ps.local_aggregation = s.workers_per_node > 1 && pick(0, 2) == 0;
  if (s.workers_per_node > 1 && pick(0, 1) == 1) s.intra_node_link = cluster::IntraNodeLink::Pcie;
  if (pick(0, 2) == 0) s.ps_nic_bw = uniform(1, 100) * 1e9 / 8;
  const int nodes = s.num_worker_nodes();
  ps.placement = pick(0, 3) == 0 && ps.count <= nodes ? PsPlacement::Colocated : PsPlacement::Dedicated;
  const int all_nodes = nodes + (ps.placement == PsPlacement::Dedicated ? ps.count : 0);
  random_topology(rng, s, 8, all_nodes);
  c.options.warmup_steps = pick(0, 2);
  c.options.measure_steps = pick(1, 3);
  c.options.seed = seed;
  c.options.network = pick(0, 4) == 0 ? NetworkKind::NoContention : NetworkKind::MaxMin;
  switch (pick(0, 14)) {
    case 0:
      ps.order = PsOrder::Random;
      break;
    case 1:
      c.options.compute_cv = uniform(0.01, 0.3);
      break;
    case 2:
      c.scheme.mode = Mode::Async;
      break;
    default:
      break;
  }
  // The later keys draw from a generator of their own, so the cases above stay as they were: an
  // RPC latency the fast path takes (every client's alike), placement strategies, and in one case
  // in ten a message overhead, which it must decline.
  std::mt19937_64 more(seed * 7919 + 17);
  if (std::uniform_int_distribution<int>(0, 3)(more) == 0) {
    s.rpc_latency = std::uniform_real_distribution<double>(0, 5e-5)(more);
  }
  const PsPlacementStrategy strategies[] = {
      PsPlacementStrategy::LeastLoaded, PsPlacementStrategy::GreedySorted, PsPlacementStrategy::RoundRobin};
  ps.placement_strategy = strategies[std::uniform_int_distribution<int>(0, 2)(more)];
  if (std::uniform_int_distribution<int>(0, 9)(more) == 0) {
    ps.message_overhead = std::uniform_real_distribution<double>(1e-6, 1e-4)(more);
  }
  // A worker's host CPU per byte in a quarter of the cases (each worker's own: the fast path takes
  // it): 0.1-3 ns per byte, a core serialising at 0.3-10 GB/s.
  if (std::uniform_int_distribution<int>(0, 3)(more) == 0) {
    c.workload.comm_cpu_per_byte = std::uniform_real_distribution<double>(1e-10, 3e-9)(more);
  }
  // TensorFlow's step barrier in a third of the synchronous cases (the fast path takes it).
  if (c.scheme.mode == Mode::Sync && std::uniform_int_distribution<int>(0, 2)(more) == 0) {
    ps.barrier = PsBarrier::Step;
  }
  c.description = fmt::format(
      "ps seed {}: {} workers ({} per node{}), {} shards {}, partition {} strategy {}, topology {}, "
      "apply {} s + bw {}, order {}, mode {}, cv {:.3f}, rpc latency {}, message overhead {}, "
      "cpu per byte {}, barrier {}, warmup {}, measure {}",
      seed, s.workers, s.workers_per_node, ps.local_aggregation ? ", aggregated" : "", ps.count,
      ps.placement == PsPlacement::Dedicated ? "dedicated" : "colocated", static_cast<int>(ps.partition),
      static_cast<int>(ps.placement_strategy), static_cast<int>(s.topology), ps.apply_time, ps.apply_bw,
      static_cast<int>(ps.order), static_cast<int>(c.scheme.mode), c.options.compute_cv,
      s.rpc_latency ? fmt::format("{}", *s.rpc_latency) : "unset", ps.message_overhead,
      c.workload.comm_cpu_per_byte, static_cast<int>(ps.barrier), c.options.warmup_steps,
      c.options.measure_steps);
  return c;
}

TEST(FastPath, InterchangeableParameterServerClientsEqualTheFullEngineOnRandomScenarios) {
  int fast_runs = 0, fast_on_switch = 0, dedicated_on_switch = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    const Case c = random_ps_case(seed);
    SimulationOptions full_options = c.options;
    full_options.fast_paths = false;
    const SimulationResult full = simulate_steps(c.workload, c.cluster, c.scheme, full_options);
    const SimulationResult fast = simulate_steps(c.workload, c.cluster, c.scheme, c.options);
    ASSERT_EQ(full.engine, SimulationEngine::Full);
    const bool in_domain = c.scheme.mode == Mode::Sync && c.scheme.ps.order == PsOrder::Fifo &&
                           c.options.compute_cv == 0 && c.options.network == NetworkKind::MaxMin &&
                           !(c.scheme.ps.local_aggregation && c.cluster.workers_per_node > 1) &&
                           c.scheme.ps.message_overhead == 0;
    if (!in_domain) {
      EXPECT_EQ(fast.engine, SimulationEngine::Full) << c.description;
    }
    fast_runs += fast.engine == SimulationEngine::Fast ? 1 : 0;
    // On one switch with dedicated servers, full nodes and GPUs filling their PCIe switches,
    // every client sees the same fabric: always fast. (A partly filled node's NIC carries fewer
    // clients than the others: no copy, so the full engine.)
    const cluster::ClusterSpec& s = c.cluster;
    const bool full_nodes = s.workers % s.workers_per_node == 0 &&
                            (s.intra_node_link == cluster::IntraNodeLink::NvLink ||
                             s.workers_per_node % s.gpus_per_pcie_switch == 0 || s.workers_per_node == 1);
    if (in_domain && s.topology == cluster::Topology::Switch &&
        c.scheme.ps.placement == PsPlacement::Dedicated && full_nodes) {
      dedicated_on_switch++;
      fast_on_switch += fast.engine == SimulationEngine::Fast ? 1 : 0;
    }
    expect_same(fast, full, c.description);
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_EQ(fast_on_switch, dedicated_on_switch);
  EXPECT_GT(dedicated_on_switch, 15);
  EXPECT_GT(fast_runs, 40);
}

TEST(FastPath, AGradientNoOpProducesIsReadyWhenComputeEnds) {
  // producer -1 (a reader found no backward op for it) means "ready at the end of the step's
  // compute": the same step as naming the last op, in both engines and both schemes, and last in
  // the bucket order.
  std::mt19937_64 rng(7);
  workload::Workload orphan = random_workload(rng);
  const int last_op = static_cast<int>(orphan.ops.size()) - 1;  // one lane: the last op ends last
  orphan.lanes = {"gpu"};
  for (workload::Op& op : orphan.ops) op.lane = 0;
  workload::Workload named = orphan;
  orphan.tensors.front().producer = -1;
  named.tensors.front().producer = last_op;
  const std::vector<workload::Bucket> buckets = workload::make_buckets(orphan, 0);
  ASSERT_FALSE(buckets.empty());
  EXPECT_EQ(buckets.back().tensors, std::vector<int>{0}) << "no producer: last";

  cluster::ClusterSpec spec;
  spec.workers = 4;
  spec.nic_bw = 1.25e9;
  for (Scheme kind : {Scheme::AllReduce, Scheme::ParameterServer}) {
    SchemeConfig scheme;
    scheme.scheme = kind;
    scheme.ps.order = PsOrder::Fifo;
    scheme.ps.count = 2;
    for (bool fast_paths : {false, true}) {
      const SimulationOptions options{.warmup_steps = 1, .measure_steps = 2, .fast_paths = fast_paths};
      const SimulationResult with_orphan = simulate_steps(orphan, spec, scheme, options);
      const SimulationResult with_name = simulate_steps(named, spec, scheme, options);
      expect_same(with_orphan, with_name,
                  fmt::format("scheme {}, fast paths {}", static_cast<int>(kind), fast_paths));
    }
  }
}

TEST(FastPath, CollectiveAloneEqualsStageByStageSimulation) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const Case c = random_case(seed);
    std::mt19937_64 rng(seed * 7919);
    const CollectiveOp ops[] = {CollectiveOp::AllReduce, CollectiveOp::AllGather, CollectiveOp::ReduceScatter,
                                CollectiveOp::Broadcast};
    const CollectiveOp op = ops[std::uniform_int_distribution<int>(0, 3)(rng)];
    const double bytes = std::uniform_real_distribution<double>(1e3, 2e8)(rng);
    const CollectiveResult full = simulate_collective(c.cluster, bytes, op, c.scheme.allreduce.algorithm,
                                                      c.options.network, false, c.scheme.allreduce.protocol);
    const CollectiveResult fast = simulate_collective(c.cluster, bytes, op, c.scheme.allreduce.algorithm,
                                                      c.options.network, true, c.scheme.allreduce.protocol);
    const std::string what = fmt::format("{}, {} of {} bytes", c.description, to_string(op), bytes);
    EXPECT_TRUE(close(fast.time, full.time)) << what << ": " << fast.time << " vs " << full.time;
    EXPECT_EQ(fast.stages, full.stages) << what;
    EXPECT_EQ(fast.max_link_flows, full.max_link_flows) << what;
    ASSERT_EQ(fast.links.size(), full.links.size()) << what;
    double fast_bytes = 0, full_bytes = 0;
    for (size_t l = 0; l < full.links.size(); ++l) {
      EXPECT_TRUE(close(fast.links[l].busy, full.links[l].busy)) << what << " link " << l;
      fast_bytes += fast.links[l].bytes;
      full_bytes += full.links[l].bytes;
    }
    EXPECT_TRUE(close(fast_bytes, full_bytes)) << what;
    if (::testing::Test::HasFailure()) return;
  }
}

// A result keeps only the busiest links (predict and collective keep 10 unless --all-links): they
// must be the first of the whole ordered list, ties by name included, with the others counted.
TEST(FastPath, KeepingTheBusiestLinksGivesTheFirstOfTheWholeListAndCountsTheRest) {
  int trimmed = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const Case c = random_case(seed);
    const double bytes = 1e3 * static_cast<double>(seed * seed);
    const CollectiveResult all =
        simulate_collective(c.cluster, bytes, CollectiveOp::AllReduce, c.scheme.allreduce.algorithm,
                            c.options.network, true, c.scheme.allreduce.protocol, 0);
    SimulationOptions every_link = c.options;
    every_link.links_kept = 0;
    const SimulationResult step_all = simulate_steps(c.workload, c.cluster, c.scheme, every_link);
    EXPECT_EQ(all.links_left_out, 0u) << c.description;
    EXPECT_EQ(step_all.links_left_out, 0u) << c.description;
    for (const size_t kept : {size_t{1}, size_t{3}, size_t{10}}) {
      const CollectiveResult some =
          simulate_collective(c.cluster, bytes, CollectiveOp::AllReduce, c.scheme.allreduce.algorithm,
                              c.options.network, true, c.scheme.allreduce.protocol, kept);
      SimulationOptions few = c.options;
      few.links_kept = kept;
      const SimulationResult step_some = simulate_steps(c.workload, c.cluster, c.scheme, few);
      for (const auto& [whole, part, left_out] :
           {std::tuple{&all.links, &some.links, some.links_left_out},
            std::tuple{&step_all.links, &step_some.links, step_some.links_left_out}}) {
        const size_t expected = std::min(kept, whole->size());
        ASSERT_EQ(part->size(), expected) << c.description << ", kept " << kept;
        EXPECT_EQ(left_out, whole->size() - expected) << c.description << ", kept " << kept;
        for (size_t i = 0; i < expected; ++i)
          EXPECT_EQ((*part)[i], (*whole)[i]) << c.description << ", link " << i;
        trimmed += whole->size() > kept ? 1 : 0;
      }
      EXPECT_EQ(some.time, all.time) << c.description;
      EXPECT_EQ(step_some.window, step_all.window) << c.description;
    }
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(trimmed, 100) << "most cases have more links than are kept";
}

TEST(FastPath, ATraceOrFastPathsOffRunsTheFullEngine) {
  const workload::Workload w =
      zoo::to_workload(zoo::get_model("resnet50"), {.batch_per_worker = 32, .step_time = 0.1});
  cluster::ClusterSpec spec;
  spec.workers = 4;
  SchemeConfig scheme;
  scheme.scheme = Scheme::AllReduce;
  EXPECT_EQ(simulate_steps(w, spec, scheme, {}).engine, SimulationEngine::Fast);
  EXPECT_EQ(simulate_steps(w, spec, scheme, {.record_trace = true}).engine, SimulationEngine::Full);
  EXPECT_EQ(simulate_steps(w, spec, scheme, {.fast_paths = false}).engine, SimulationEngine::Full);
  SchemeConfig ps;
  ps.scheme = Scheme::ParameterServer;
  ps.ps.order = PsOrder::Random;  // each client its own order: no two alike
  EXPECT_EQ(simulate_steps(w, spec, ps, {}).engine, SimulationEngine::Full);
  ps.ps.order = PsOrder::Fifo;
  EXPECT_EQ(simulate_steps(w, spec, ps, {}).engine, SimulationEngine::Fast);
  EXPECT_EQ(simulate_steps(w, spec, ps, {.compute_cv = 0.1}).engine, SimulationEngine::Full);
}

TEST(FastPath, CostGrowsWithWorkersTimesBucketsNotTheirSquare) {
  // The fast path's own work (its event count) is linear in the worker count for a fixed model;
  // the full engine's grows faster (every stage of every collective touches every worker's links).
  const workload::Workload w =
      zoo::to_workload(zoo::get_model("resnet50"), {.batch_per_worker = 32, .step_time = 0.1});
  SchemeConfig scheme;
  scheme.scheme = Scheme::AllReduce;
  cluster::ClusterSpec spec;
  spec.workers = 64;
  const SimulationResult at64 = simulate_steps(w, spec, scheme, {});
  spec.workers = 256;
  const SimulationResult at256 = simulate_steps(w, spec, scheme, {});
  ASSERT_EQ(at64.engine, SimulationEngine::Fast);
  const double ratio = static_cast<double>(at256.events) / static_cast<double>(at64.events);
  EXPECT_GT(ratio, 3.0);
  EXPECT_LT(ratio, 5.0);
}

}  // namespace fast_path_test
}  // namespace
}  // namespace stepcast::scheme
