// Sweeps over any scenario keys: a grid of configurations (`--sweep KEY=V1,V2`, ranges
// `KEY=1..32`), each at one or more worker counts, predicted in parallel threads with the same
// output whatever the number of threads. Every prediction carries its configuration (the swept
// keys' values as given), for the table, JSON and CSV (report::Sweep::configs).
//
//   sweep::Request r{.scenario = "examples/resnet50-ps.yaml", .workers = {16}};
//   r.axes = {sweep::parse_axis("training.ps.count=1,2,4,8"), sweep::parse_axis("cluster.nic_bandwidth=10Gbps,25Gbps")};
//   report::Sweep s = sweep::run(r);   // 8 predictions, first axis outermost
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "stepcast/predict/predict.hpp"
#include "stepcast/report/report.hpp"
#include "stepcast/scenario/scenario.hpp"

namespace stepcast::sweep {

/// One swept key and its values as given.
struct Axis {
  std::string key;
  std::vector<std::string> values;
  bool operator==(const Axis&) const = default;
};

/// "KEY=V1,V2,..." or "KEY=A..B" (integers A <= B: A, 2A, 4A, ... up to B, and B itself when the
/// doubling does not land on it). Throws Error (key "--sweep") for a missing '=', an empty value,
/// a value given twice, or a bad range; the values themselves are checked by the scenario, with
/// the key's own rules, when the grid runs.
[[nodiscard]] Axis parse_axis(std::string_view text);

/// "8,16,32": worker counts, each an integer in [1, limits::kMaxWorkers], none twice. Throws
/// Error naming `option` (the command's "--workers", Python's "workers") otherwise.
[[nodiscard]] std::vector<int> parse_worker_list(std::string_view text, std::string_view option);

/// Every combination of the axes' values, first axis outermost (the last varies fastest). One
/// empty configuration without axes. Throws Error (key "--sweep") when a key is swept twice or
/// the grid exceeds max_points.
[[nodiscard]] std::vector<report::Config> grid(const std::vector<Axis>& axes, std::size_t max_points = 1000000);

/// The processes a sweep is split over: this one's rank among `size` (MPI_COMM_WORLD when the
/// program runs under mpirun and was built with MPI; else one process).
struct Ranks {
  int rank = 0;
  int size = 1;
};
[[nodiscard]] Ranks process_ranks();

/// Starts MPI for the life of the object when the program was launched by mpirun (and built with
/// MPI); otherwise does nothing, so the same binary runs serially. One per program (main).
class MpiSession {
 public:
  MpiSession(int& argc, char**& argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

 private:
  [[maybe_unused]] bool started_ = false;  // used only when built with MPI
};

struct Request {
  std::string scenario;                ///< scenario file; with scenario_text, only its name in messages
  /// The scenario as YAML text (scenario::parse_scenario) instead of reading `scenario`; "" reads
  /// the file. Relative paths in it resolve against the directory part of `scenario`.
  std::string scenario_text;
  std::vector<std::string> overrides;  ///< --set KEY=VALUE, applied before every configuration
  std::vector<Axis> axes;
  /// Configurations to run instead of the grid of `axes`, in this order, each a list of settings
  /// applied after `overrides` (an empty one is the scenario as given); empty: the grid.
  std::vector<report::Config> configs;
  std::vector<int> workers;            ///< worker counts per configuration; empty: cluster.workers
  /// Predictors to run at every (configuration, worker count), in this order, each its own
  /// prediction (`predict --predictor all`); empty: the scenario's `predictor` alone.
  std::vector<predict::Predictor> predictors;
  int jobs = 0;                        ///< threads; 0: all cores (std::thread::hardware_concurrency)
  bool record_trace = false;           ///< the last prediction keeps its trace (fine only)
  sim::TraceSelection trace_selection;  ///< what that trace keeps (its workers and steps)
  std::size_t links_kept = 10;          ///< predict::Options::links_kept (0: every link, --all-links)
  predict::WarningSink warn;           ///< called from worker threads, one at a time
  /// Called from worker threads, one at a time, after each prediction: (done, total).
  std::function<void(std::size_t, std::size_t)> progress;
  /// Split the configurations over the MPI ranks (process_ranks()): rank 0 returns the whole
  /// sweep, identical to a serial run; the other ranks return an empty one. false: every rank
  /// runs every configuration.
  bool distribute = false;
};

/// The request with its scenario file read into scenario_text (unchanged when the text is given),
/// so that a request that loads its scenario several times reads the file once: a pipe or
/// `<(...)` can be read only once. Throws Error naming the file when it cannot be read.
[[nodiscard]] Request with_scenario_text(Request request);

/// The request's scenario with `overrides` (not request.overrides): parse_scenario of
/// scenario_text when given, else load_scenario of the file. Throws what they throw.
[[nodiscard]] scenario::Scenario load_scenario(const Request& request, const std::vector<std::string>& overrides,
                                               scenario::Needs needs = scenario::Needs::Workload,
                                               const std::vector<int>& worker_sweep = {});

/// The scenario before the sweep's changes (request.overrides applied), which need not be valid
/// alone: `--set training.pipeline.schedule=interleaved --sweep
/// training.parallel.virtual_stages=2,4` is valid at every point and not before. Then the scenario
/// at request.workers (when `worker_sweep` is empty: a --set valid at the --workers counts and not
/// at the file's), then the first configuration of the grid (or of request.configs) stands for
/// it, and its error, if it has one, is thrown. `worker_sweep` as load_scenario's.
[[nodiscard]] scenario::Scenario base_scenario(const Request& request, scenario::Needs needs,
                                               const std::vector<int>& worker_sweep);

/// Predicts every (configuration, worker count), configurations in grid order (or the order of
/// request.configs) and worker counts
/// in the given order within each, and at each count every request.predictors in its order. The result's inputs are the base scenario's (overrides, no
/// axes) and its name the base scenario's; configs[i] is prediction i's configuration (empty
/// without axes). Deterministic: the same for any `jobs` and any number of MPI ranks. Throws the
/// Error of the first failing configuration in grid order (its message names the configuration);
/// when distributed, only rank 0 throws.
[[nodiscard]] report::Sweep run(const Request& request);

/// What `stepcast predict` and Python's predict() say beside run()'s predictions, in one place:
/// the fabric at the largest of `counts` in words (sweep.topology, when the scenario's own cluster
/// holds that count), where the compute time came from (sweep.compute_source), and through `warn`
/// the keys that cannot change this fabric or this scheme.
void describe_run(report::Sweep& sweep, const scenario::Scenario& scenario, const Request& request,
                  const std::vector<int>& counts, const std::function<void(const std::string&)>& warn);

/// How many threads run(): `jobs`, or all cores when 0, never more than `tasks`, at least 1.
[[nodiscard]] int threads_for(int jobs, std::size_t tasks);

}  // namespace stepcast::sweep
