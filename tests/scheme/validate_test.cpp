// scheme::validate and predict::predict on inputs built in C++: every rule throws stepcast::Error
// naming its key (no file, line 0) instead of aborting in a predictor, and a valid neighbour of
// each bad input passes. A rule that aborted would kill this binary, failing the test.
#include "stepcast/scheme/validate.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "expect_error.hpp"
#include "stepcast/detail/scheme/step_simulation.hpp"
#include "stepcast/error.hpp"
#include "stepcast/predict/predict.hpp"

namespace stepcast::scheme {
namespace {
namespace validate_test {  // this file's own names: test files are compiled several to a unit

using cluster::ClusterSpec;
using cluster::Topology;
using predict::Options;
using predict::Predictor;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Inputs {
  workload::Workload workload;
  ClusterSpec cluster;
  SchemeConfig scheme;
  Options options;
};

// Two layers, forward then backward, one tensor each: small enough that every predictor runs it
// in milliseconds at a few workers.
Inputs base() {
  Inputs in;
  workload::Workload& w = in.workload;
  w.name = "tiny";
  w.batch_per_worker = 8;
  w.ops = {{.name = "fwd0",
            .kind = workload::OpKind::Forward,
            .duration = 1e-3,
            .lane = 0,
            .layer = 0,
            .deps = {}},
           {.name = "fwd1",
            .kind = workload::OpKind::Forward,
            .duration = 1e-3,
            .lane = 0,
            .layer = 1,
            .deps = {0}},
           {.name = "bwd1",
            .kind = workload::OpKind::Backward,
            .duration = 2e-3,
            .lane = 0,
            .layer = 1,
            .deps = {1}},
           {.name = "bwd0",
            .kind = workload::OpKind::Backward,
            .duration = 2e-3,
            .lane = 0,
            .layer = 0,
            .deps = {2}}};
  w.tensors = {{.name = "w0", .bytes = 4e6, .producer = 3, .consumers = {0}},
               {.name = "w1", .bytes = 8e6, .producer = 2, .consumers = {1}}};
  in.cluster.workers = 4;
  in.cluster.nic_bw = 1.25e9;
  in.options.warmup_steps = 1;
  in.options.measure_steps = 2;
  return in;
}

void ps(Inputs& in, int count, PsPlacement placement) {
  in.scheme.scheme = Scheme::ParameterServer;
  in.scheme.ps.count = count;
  in.scheme.ps.placement = placement;
}

void allreduce(Inputs& in, AllReduceAlgorithm algorithm, int workers) {
  in.scheme.scheme = Scheme::AllReduce;
  in.scheme.allreduce.algorithm = algorithm;
  in.cluster.workers = workers;
}

void bigraph(Inputs& in, int switches_per_half, int hosts_per_switch) {
  in.cluster.topology = Topology::BiGraph;
  in.cluster.bigraph = {.switches_per_half = switches_per_half, .hosts_per_switch = hosts_per_switch};
}

// Two switches, a node on each; nodes 0 and 1.
void custom_two_switches(Inputs& in) {
  in.cluster.topology = Topology::Custom;
  in.cluster.workers = 2;
  in.cluster.custom.switches = {"a", "b"};
  in.cluster.custom.links = {{.a = "a", .b = "b", .bw = 1e9, .latency = 1e-6},
                             {.a = "node0", .b = "a", .bw = 1e9},
                             {.a = "node1", .b = "b", .bw = 1e9}};
}

struct Case {
  const char* name;
  std::function<void(Inputs&)> bad;
  std::function<void(Inputs&)> good;  ///< a valid input next to `bad`
  std::string key;
  std::string says;           ///< part of the message naming the rule
  bool options_only = false;  ///< checked by predict::validate, not scheme::validate
  bool predict_good = true;   ///< also predict the neighbour (false: too large to run here)
};

std::vector<Case> cases() {
  return {
      // --- rules across keys (the ones scenario files report)
      {"colocated_more_servers_than_nodes",
       [](Inputs& in) {
         in.cluster.workers_per_node = 2;  // 4 workers: 2 nodes
         ps(in, 3, PsPlacement::Colocated);
       },
       [](Inputs& in) {
         in.cluster.workers_per_node = 2;
         ps(in, 2, PsPlacement::Colocated);
       },
       "training.ps.count", "P > N colocated"},
      {"connection_cap",
       [](Inputs& in) {
         in.cluster.workers = 16384;
         ps(in, 65, PsPlacement::Dedicated);  // 65 x 2^14 > 2^20
       },
       [](Inputs& in) {
         in.cluster.workers = 16384;
         ps(in, 64, PsPlacement::Dedicated);  // exactly 2^20
       },
       "training.ps.count", "connections", false, false},
      {"topology_too_small",
       [](Inputs& in) {
         in.cluster.topology = Topology::Torus;
         in.cluster.torus.dims = {4, 4};
         in.cluster.workers = 17;
       },
       [](Inputs& in) {
         in.cluster.topology = Topology::Torus;
         in.cluster.torus.dims = {4, 4};
         in.cluster.workers = 16;
       },
       "cluster.topology", "holds 16 nodes"},
      {"topology_too_small_for_dedicated_servers",
       [](Inputs& in) {
         in.cluster.topology = Topology::Torus;
         in.cluster.torus.dims = {4, 4};
         in.cluster.workers = 16;
         ps(in, 1, PsPlacement::Dedicated);
       },
       [](Inputs& in) {
         in.cluster.topology = Topology::Torus;
         in.cluster.torus.dims = {4, 4};
         in.cluster.workers = 16;
         ps(in, 1, PsPlacement::Colocated);
       },
       "cluster.topology", "dedicated servers"},
      {"more_nics_than_workers_per_node", [](Inputs& in) { in.cluster.nics_per_node = 2; },
       [](Inputs& in) {
         in.cluster.nics_per_node = 2;
         in.cluster.workers_per_node = 2;
       },
       "cluster.nics_per_node", "NICs"},
      {"odd_fat_tree_radix",
       [](Inputs& in) {
         in.cluster.topology = Topology::FatTree;
         in.cluster.fat_tree.radix = 7;
       },
       [](Inputs& in) {
         in.cluster.topology = Topology::FatTree;
         in.cluster.fat_tree.radix = 8;
       },
       "cluster.fat_tree.radix", "even radix"},
      {"halving_doubling_needs_power_of_two",
       [](Inputs& in) { allreduce(in, AllReduceAlgorithm::HalvingDoubling, 6); },
       [](Inputs& in) { allreduce(in, AllReduceAlgorithm::HalvingDoubling, 8); },
       "training.allreduce.algorithm", "power-of-two"},
      {"hdrm_needs_power_of_two",
       [](Inputs& in) {
         bigraph(in, 3, 2);
         allreduce(in, AllReduceAlgorithm::Hdrm, 12);  // a full 3 x 2 BiGraph, but not 2^k
       },
       [](Inputs& in) {
         bigraph(in, 4, 2);
         allreduce(in, AllReduceAlgorithm::Hdrm, 16);
       },
       "training.allreduce.algorithm", "power-of-two"},
      {"hdrm_needs_bigraph", [](Inputs& in) { allreduce(in, AllReduceAlgorithm::Hdrm, 8); },
       [](Inputs& in) {
         bigraph(in, 4, 1);
         allreduce(in, AllReduceAlgorithm::Hdrm, 8);
       },
       "training.allreduce.algorithm", "full BiGraph"},
      {"hdrm_needs_full_bigraph",
       [](Inputs& in) {
         bigraph(in, 4, 4);
         allreduce(in, AllReduceAlgorithm::Hdrm, 16);  // the BiGraph holds 32
       },
       [](Inputs& in) {
         bigraph(in, 4, 4);
         allreduce(in, AllReduceAlgorithm::Hdrm, 32);
       },
       "training.allreduce.algorithm", "full BiGraph"},
      {"hdrm_needs_one_worker_per_node",
       [](Inputs& in) {
         bigraph(in, 4, 1);
         allreduce(in, AllReduceAlgorithm::Hdrm, 8);
         in.cluster.workers_per_node = 2;
       },
       [](Inputs& in) {
         bigraph(in, 4, 1);
         allreduce(in, AllReduceAlgorithm::Hdrm, 8);
       },
       "training.allreduce.algorithm", "workers_per_node = 1"},
      {"async_needs_a_parameter_server", [](Inputs& in) { in.scheme.mode = Mode::Async; },
       [](Inputs& in) {
         in.scheme.mode = Mode::Async;
         ps(in, 1, PsPlacement::Dedicated);
       },
       "training.mode", "training.scheme = ps"},
      {"step_barrier_needs_sync",
       [](Inputs& in) {
         ps(in, 1, PsPlacement::Dedicated);
         in.scheme.mode = Mode::Async;
         in.scheme.ps.barrier = PsBarrier::Step;
       },
       [](Inputs& in) {
         ps(in, 1, PsPlacement::Dedicated);
         in.scheme.ps.barrier = PsBarrier::Step;
       },
       "training.ps.barrier", "async training has none"},
      {"async_start_needs_async",
       [](Inputs& in) {
         ps(in, 1, PsPlacement::Dedicated);
         in.scheme.ps.async_start = PsAsyncStart::Together;
       },
       [](Inputs& in) {
         ps(in, 1, PsPlacement::Dedicated);
         in.scheme.mode = Mode::Async;
         in.scheme.ps.async_start = PsAsyncStart::Together;
       },
       "training.ps.async_start", "synchronous workers all start together"},
      {"custom_topology_without_switches",
       [](Inputs& in) {
         custom_two_switches(in);
         in.cluster.custom = {};
       },
       custom_two_switches, "cluster.custom", "at least one switch"},
      {"custom_topology_without_nodes",
       [](Inputs& in) {
         custom_two_switches(in);
         in.cluster.custom.links.resize(1);
       },
       custom_two_switches, "cluster.custom", "a link for every node"},
      {"custom_topology_unknown_endpoint",
       [](Inputs& in) {
         custom_two_switches(in);
         in.cluster.custom.links[0].b = "c";
       },
       custom_two_switches, "cluster.custom", "unknown endpoint"},
      {"custom_topology_disconnected",
       [](Inputs& in) {
         custom_two_switches(in);
         in.cluster.custom.links.erase(in.cluster.custom.links.begin());
       },
       custom_two_switches, "cluster.custom", "not connected"},
      {"custom_topology_node_gap",
       [](Inputs& in) {
         custom_two_switches(in);
         in.cluster.custom.links[2].a = "node2";
       },
       custom_two_switches, "cluster.custom", "node1 has no link"},
      {"custom_topology_zero_link_bandwidth",
       [](Inputs& in) {
         custom_two_switches(in);
         in.cluster.custom.links[1].bw = 0;
       },
       custom_two_switches, "cluster.custom", "bandwidth > 0"},
      {"custom_topology_too_small",
       [](Inputs& in) {
         custom_two_switches(in);
         in.cluster.workers = 3;
       },
       custom_two_switches, "cluster.topology", "holds 2 nodes"},

      // --- single values a struct builder can get wrong (scenario keys reject them too)
      {"zero_workers", [](Inputs& in) { in.cluster.workers = 0; }, [](Inputs& in) { in.cluster.workers = 1; },
       "cluster.workers", "[1, " + std::to_string(limits::kMaxWorkers) + "]"},
      {"negative_workers", [](Inputs& in) { in.cluster.workers = -3; }, [](Inputs&) {}, "cluster.workers",
       "got -3"},
      {"too_many_workers", [](Inputs& in) { in.cluster.workers = limits::kMaxWorkers + 1; },
       [](Inputs& in) { in.cluster.workers = limits::kMaxWorkers; }, "cluster.workers",
       "[1, " + std::to_string(limits::kMaxWorkers) + "]", false, false},
      {"zero_workers_per_node", [](Inputs& in) { in.cluster.workers_per_node = 0; },
       [](Inputs& in) { in.cluster.workers_per_node = 8; }, "cluster.workers_per_node", "got 0"},
      {"nan_nic_bandwidth", [](Inputs& in) { in.cluster.nic_bw = kNaN; }, [](Inputs&) {},
       "cluster.nic_bandwidth", "finite bandwidth"},
      {"infinite_nic_bandwidth", [](Inputs& in) { in.cluster.nic_bw = kInf; }, [](Inputs&) {},
       "cluster.nic_bandwidth", "finite bandwidth"},
      {"negative_nic_bandwidth", [](Inputs& in) { in.cluster.nic_bw = -1e9; }, [](Inputs&) {},
       "cluster.nic_bandwidth", "> 0"},
      {"zero_nic_bandwidth", [](Inputs& in) { in.cluster.nic_bw = 0; },
       [](Inputs& in) { in.cluster.nic_bw = 1e3; }, "cluster.nic_bandwidth", "> 0"},
      {"negative_latency", [](Inputs& in) { in.cluster.latency = -1e-6; },
       [](Inputs& in) { in.cluster.latency = 0; }, "cluster.link_latency", ">= 0"},
      {"nan_latency", [](Inputs& in) { in.cluster.latency = kNaN; }, [](Inputs&) {}, "cluster.link_latency",
       "finite duration"},
      {"zero_intra_node_bandwidth", [](Inputs& in) { in.cluster.intra_node_bw = 0; }, [](Inputs&) {},
       "cluster.intra_node.bandwidth", "> 0"},
      {"nan_intra_node_latency", [](Inputs& in) { in.cluster.intra_node_latency = kNaN; },
       [](Inputs& in) { in.cluster.intra_node_latency = 0; }, "cluster.intra_node.latency", "finite"},
      {"zero_gpus_per_pcie_switch", [](Inputs& in) { in.cluster.gpus_per_pcie_switch = 0; }, [](Inputs&) {},
       "cluster.intra_node.gpus_per_pcie_switch", "got 0"},
      {"zero_nics_per_node", [](Inputs& in) { in.cluster.nics_per_node = 0; }, [](Inputs&) {},
       "cluster.nics_per_node", "got 0"},
      {"negative_ps_nic_bandwidth", [](Inputs& in) { in.cluster.ps_nic_bw = -1; },
       [](Inputs& in) { in.cluster.ps_nic_bw = 0; }, "cluster.ps_nic_bandwidth", ">= 0"},
      {"nan_ps_nic_bandwidth", [](Inputs& in) { in.cluster.ps_nic_bw = kNaN; },
       [](Inputs& in) { in.cluster.ps_nic_bw = 5e9; }, "cluster.ps_nic_bandwidth", "finite"},
      {"negative_rpc_latency", [](Inputs& in) { in.cluster.rpc_latency = -1e-6; },
       [](Inputs& in) { in.cluster.rpc_latency = 0; }, "cluster.rpc_latency", ">= 0"},
      {"huge_rpc_latency", [](Inputs& in) { in.cluster.rpc_latency = 1e3; },
       [](Inputs& in) { in.cluster.rpc_latency = 10; }, "cluster.rpc_latency", "<= 10"},
      {"fat_tree_levels",
       [](Inputs& in) {
         in.cluster.topology = Topology::FatTree;
         in.cluster.fat_tree.levels = 4;
       },
       [](Inputs& in) {
         in.cluster.topology = Topology::FatTree;
         in.cluster.fat_tree.levels = 3;
       },
       "cluster.fat_tree.levels", "[2, 3]"},
      {"fat_tree_oversubscription_below_one",
       [](Inputs& in) {
         in.cluster.topology = Topology::FatTree;
         in.cluster.fat_tree.oversubscription = 0.5;
       },
       [](Inputs& in) {
         in.cluster.topology = Topology::FatTree;
         in.cluster.fat_tree.oversubscription = 1;
       },
       "cluster.fat_tree.oversubscription", ">= 1"},
      {"bigraph_without_switches", [](Inputs& in) { bigraph(in, 0, 4); },
       [](Inputs& in) { bigraph(in, 1, 4); }, "cluster.bigraph.switches_per_half", "got 0"},
      {"bigraph_without_hosts", [](Inputs& in) { bigraph(in, 2, 0); }, [](Inputs& in) { bigraph(in, 2, 1); },
       "cluster.bigraph.hosts_per_switch", "got 0"},
      {"torus_without_dimensions",
       [](Inputs& in) {
         in.cluster.topology = Topology::Torus;
         in.cluster.torus.dims = {};
       },
       [](Inputs& in) {
         in.cluster.topology = Topology::Torus;
         in.cluster.torus.dims = {4};
       },
       "cluster.torus.dims", "one to three"},
      {"torus_zero_dimension",
       [](Inputs& in) {
         in.cluster.topology = Topology::Torus;
         in.cluster.torus.dims = {4, 0};
       },
       [](Inputs& in) {
         in.cluster.topology = Topology::Torus;
         in.cluster.torus.dims = {4, 1};
       },
       "cluster.torus.dims", "got 0"},
      {"regime_zero_bandwidth",
       [](Inputs& in) {
         in.cluster.collective_regimes = {{0, 1e-6, 0}};
       },
       [](Inputs& in) {
         in.cluster.collective_regimes = {{0, 1e-6, 1e9}};
       },
       "cluster.collective_regimes", "regime 1"},
      {"regimes_not_ascending",
       [](Inputs& in) {
         in.cluster.collective_regimes = {{1e6, 1e-6, 1e9}, {1e6, 2e-6, 2e9}};
       },
       [](Inputs& in) {
         in.cluster.collective_regimes = {{1e6, 1e-6, 1e9}, {2e6, 2e-6, 2e9}};
       },
       "cluster.collective_regimes", "strictly ascending"},
      {"unknown_topology", [](Inputs& in) { in.cluster.topology = static_cast<Topology>(42); },
       [](Inputs&) {}, "cluster.topology", "unknown value 42"},
      {"zero_servers", [](Inputs& in) { ps(in, 0, PsPlacement::Dedicated); },
       [](Inputs& in) { ps(in, 1, PsPlacement::Dedicated); }, "training.ps.count", "got 0"},
      {"negative_servers", [](Inputs& in) { ps(in, -2, PsPlacement::Colocated); },
       [](Inputs& in) { ps(in, 2, PsPlacement::Colocated); }, "training.ps.count", "got -2"},
      {"negative_apply_time",
       [](Inputs& in) {
         ps(in, 1, PsPlacement::Dedicated);
         in.scheme.ps.apply_time = -1e-3;
       },
       [](Inputs& in) {
         ps(in, 1, PsPlacement::Dedicated);
         in.scheme.ps.apply_time = 1e-3;
       },
       "training.ps.apply_time", ">= 0"},
      {"nan_apply_bandwidth",
       [](Inputs& in) {
         ps(in, 1, PsPlacement::Dedicated);
         in.scheme.ps.apply_bw = kNaN;
       },
       [](Inputs& in) {
         ps(in, 1, PsPlacement::Dedicated);
         in.scheme.ps.apply_bw = 1e10;
       },
       "training.ps.apply_bandwidth", "finite"},
      {"negative_message_overhead",
       [](Inputs& in) {
         ps(in, 1, PsPlacement::Dedicated);
         in.scheme.ps.message_overhead = -50e-6;
       },
       [](Inputs& in) {
         ps(in, 1, PsPlacement::Dedicated);
         in.scheme.ps.message_overhead = 50e-6;
       },
       "training.ps.message_overhead", ">= 0"},
      {"nan_message_overhead",
       [](Inputs& in) {
         ps(in, 1, PsPlacement::Dedicated);
         in.scheme.ps.message_overhead = kNaN;
       },
       [](Inputs& in) {
         ps(in, 1, PsPlacement::Dedicated);
         in.scheme.ps.message_overhead = 0;
       },
       "training.ps.message_overhead", "finite"},
      {"nan_slice_size",
       [](Inputs& in) {
         ps(in, 1, PsPlacement::Dedicated);
         in.scheme.ps.slice_bytes = kNaN;
       },
       [](Inputs& in) {
         ps(in, 1, PsPlacement::Dedicated);
         in.scheme.ps.slice_bytes = 1e3;
       },
       "training.ps.slice_size", "finite"},
      {"unknown_placement_strategy",
       [](Inputs& in) {
         ps(in, 2, PsPlacement::Dedicated);
         in.scheme.ps.placement_strategy = static_cast<PsPlacementStrategy>(9);
       },
       [](Inputs& in) {
         ps(in, 2, PsPlacement::Dedicated);
         in.scheme.ps.placement_strategy = PsPlacementStrategy::RoundRobin;
       },
       "training.ps.placement_strategy", "unknown value 9"},
      {"unknown_barrier",
       [](Inputs& in) {
         ps(in, 2, PsPlacement::Dedicated);
         in.scheme.ps.barrier = static_cast<PsBarrier>(5);
       },
       [](Inputs& in) {
         ps(in, 2, PsPlacement::Dedicated);
         in.scheme.ps.barrier = PsBarrier::Step;
       },
       "training.ps.barrier", "unknown value 5"},
      {"nan_bucket_size", [](Inputs& in) { in.scheme.allreduce.bucket_bytes = kNaN; },
       [](Inputs& in) { in.scheme.allreduce.bucket_bytes = 0; }, "training.allreduce.bucket_size", "finite"},
      {"unknown_scheme", [](Inputs& in) { in.scheme.scheme = static_cast<Scheme>(7); }, [](Inputs&) {},
       "training.scheme", "unknown value 7"},
      {"workload_without_ops", [](Inputs& in) { in.workload.ops.clear(); }, [](Inputs&) {}, "workload",
       "no ops"},
      {"workload_forward_dependency", [](Inputs& in) { in.workload.ops[0].deps = {3}; },
       [](Inputs& in) {
         in.workload.ops[3].deps = {0, 2};
       },
       "workload", "later or unknown op"},
      {"workload_nan_tensor", [](Inputs& in) { in.workload.tensors[0].bytes = kNaN; },
       [](Inputs& in) { in.workload.tensors[0].bytes = 1e3; }, "workload", "bad size"},
      {"workload_zero_batch", [](Inputs& in) { in.workload.batch_per_worker = 0; }, [](Inputs&) {},
       "workload", "batch_per_worker"},

      // --- the predictors' options
      {"zero_measured_steps", [](Inputs& in) { in.options.measure_steps = 0; },
       [](Inputs& in) { in.options.measure_steps = 1; }, "steps.measure", "got 0", true},
      {"negative_warmup", [](Inputs& in) { in.options.warmup_steps = -1; },
       [](Inputs& in) { in.options.warmup_steps = 0; }, "steps.warmup", "got -1", true},
      {"nan_compute_cv", [](Inputs& in) { in.options.compute_cv = kNaN; },
       [](Inputs& in) { in.options.compute_cv = 0.1; }, "workload.compute_cv", "finite", true},
      {"negative_job_samples", [](Inputs& in) { in.options.job.samples = -1; },
       [](Inputs& in) { in.options.job.samples = 1e6; }, "job.samples", ">= 0", true},
      {"nan_startup_bytes", [](Inputs& in) { in.options.job.startup_bytes = kNaN; },
       [](Inputs& in) { in.options.job.startup_bytes = -1; }, "job.startup.bytes", "finite", true},
      {"negative_storage_bandwidth", [](Inputs& in) { in.options.job.storage_bw = -1; },
       [](Inputs& in) { in.options.job.storage_bw = 1e9; }, "job.startup.storage_bandwidth", ">= 0", true},
      {"infinite_startup_fixed", [](Inputs& in) { in.options.job.startup_fixed = kInf; },
       [](Inputs& in) { in.options.job.startup_fixed = 10; }, "job.startup.fixed", "finite", true},
  };
}

using stepcast::testing::expect_error;
void expect_names(const Error& e, const Case& c) {
  EXPECT_EQ(e.where(), (SourceLocation{"", 0, c.key})) << e.what();
  EXPECT_NE(e.message().find(c.says), std::string::npos)
      << "message should say '" << c.says << "': " << e.what();
}

TEST(Validate, EveryRuleThrowsNamingItsKey) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    Inputs in = base();
    c.bad(in);
    if (!c.options_only) {
      expect_names(expect_error([&] { validate(in.workload, in.cluster, in.scheme); }), c);
      // The workload-free overload is what scenario files use; it checks all but the workload.
      if (c.key != "workload") {
        expect_names(expect_error([&] { validate(in.cluster, in.scheme); }), c);
      } else {
        EXPECT_NO_THROW(validate(in.cluster, in.scheme));
      }
    } else {
      EXPECT_NO_THROW(validate(in.workload, in.cluster, in.scheme));
    }
    expect_names(expect_error([&] { predict::validate(in.workload, in.cluster, in.scheme, in.options); }), c);
    for (Predictor p : {Predictor::Fine, Predictor::Coarse, Predictor::Analytic}) {
      SCOPED_TRACE(predict::to_string(p));
      in.options.predictor = p;
      expect_names(
          expect_error([&] { (void)predict::predict(in.workload, in.cluster, in.scheme, in.options); }), c);
    }
  }
}

// The slice count needs the workload (the tensors' sizes), so only the overload that has it checks
// it: 1 kB slices of the tiny workload's tensors are fine, of a 40 GB one are 4e7 pieces.
TEST(Validate, SlicesBeyondTheMessageBoundThrowWithTheWorkload) {
  Inputs in = base();
  ps(in, 1, PsPlacement::Dedicated);
  in.scheme.ps.slice_bytes = 1e3;
  EXPECT_NO_THROW(validate(in.workload, in.cluster, in.scheme));
  for (workload::Tensor& t : in.workload.tensors) t.bytes = 20e9;
  const Error e = expect_error([&] { validate(in.workload, in.cluster, in.scheme); });
  EXPECT_EQ(e.where(), (SourceLocation{"", 0, "training.ps.slice_size"})) << e.what();
  EXPECT_NE(e.message().find("at most 100000 pieces"), std::string::npos) << e.what();
  EXPECT_NO_THROW(validate(in.cluster, in.scheme));
}

TEST(Validate, EveryValidNeighbourPasses) {
  {
    const Inputs in = base();
    EXPECT_NO_THROW(predict::validate(in.workload, in.cluster, in.scheme, in.options));
  }
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    Inputs in = base();
    c.good(in);
    EXPECT_NO_THROW(validate(in.workload, in.cluster, in.scheme));
    EXPECT_NO_THROW(predict::validate(in.workload, in.cluster, in.scheme, in.options));
    if (!c.predict_good) continue;
    for (Predictor p : {Predictor::Fine, Predictor::Coarse, Predictor::Analytic}) {
      SCOPED_TRACE(predict::to_string(p));
      in.options.predictor = p;
      predict::Result r;
      EXPECT_NO_THROW(r = predict::predict(in.workload, in.cluster, in.scheme, in.options));
      EXPECT_GT(r.throughput, 0);
    }
  }
}

// plan_collective is public too: a collective over a spec that breaks an algorithm's rule throws
// rather than reaching the plan's assertion.
TEST(Validate, CollectiveOverBadWorkerCountThrows) {
  ClusterSpec spec;
  spec.workers = 6;
  Error e = expect_error([&] {
    (void)simulate_collective(spec, 1e6, CollectiveOp::AllReduce, AllReduceAlgorithm::HalvingDoubling);
  });
  EXPECT_EQ(e.where().key, "training.allreduce.algorithm");
  EXPECT_NE(e.message().find("power-of-two"), std::string::npos) << e.what();
  spec.workers = 8;
  e = expect_error(
      [&] { (void)simulate_collective(spec, 1e6, CollectiveOp::AllReduce, AllReduceAlgorithm::Hdrm); });
  EXPECT_NE(e.message().find("full BiGraph"), std::string::npos) << e.what();
  EXPECT_GT(simulate_collective(spec, 1e6, CollectiveOp::AllReduce, AllReduceAlgorithm::HalvingDoubling).time,
            0);
}

// The simulator's own entry points check too: a spec that build_cluster would assert on, a
// NaN collective size and impossible step counts throw Error naming the key.
TEST(Validate, SimulatorEntryPointsThrowInsteadOfAborting) {
  ClusterSpec spec;
  spec.workers = 0;
  Error e = expect_error([&] { (void)simulate_allreduce(spec, 1e6, AllReduceAlgorithm::Ring); });
  EXPECT_EQ(e.where().key, "cluster.workers");
  spec.workers = 4;
  spec.nic_bw = -1;
  e = expect_error([&] { (void)simulate_allreduce(spec, 1e6, AllReduceAlgorithm::Ring); });
  EXPECT_EQ(e.where().key, "cluster.nic_bandwidth");
  spec.nic_bw = 1.25e9;
  e = expect_error([&] {
    (void)simulate_allreduce(spec, std::numeric_limits<double>::quiet_NaN(), AllReduceAlgorithm::Ring);
  });
  EXPECT_EQ(e.where().key, "--size");
  workload::Workload w;
  w.ops.push_back({.name = "op", .duration = 1e-3, .deps = {}});
  SchemeConfig scheme;
  e = expect_error([&] { (void)simulate_steps(w, spec, scheme, {.measure_steps = 0}); });
  EXPECT_EQ(e.where().key, "steps.measure");
  spec.workers = 0;
  e = expect_error([&] { (void)simulate_steps(w, spec, scheme, {}); });
  EXPECT_EQ(e.where().key, "cluster.workers");
  using Predictor = predict::Result (*)(const workload::Workload&, const cluster::ClusterSpec&,
                                        const SchemeConfig&, const predict::Options&);
  const Predictor fine = [](const workload::Workload& a, const cluster::ClusterSpec& b, const SchemeConfig& c,
                            const predict::Options& d) { return predict::predict_fine(a, b, c, d); };
  for (Predictor predictor : {fine, &predict::predict_coarse, &predict::predict_analytic}) {
    e = expect_error([&] { (void)predictor(w, spec, scheme, {}); });
    EXPECT_EQ(e.where().key, "cluster.workers");
  }
  spec.workers = 4;
  EXPECT_GT(simulate_steps(w, spec, scheme, {}).workers.size(), 0u);
}

}  // namespace validate_test
}  // namespace
}  // namespace stepcast::scheme
