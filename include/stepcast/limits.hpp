// The job sizes stepcast takes, in one place: every reader of a worker count (the scenario keys,
// `stepcast predict --workers`, calibrate, advise, export, the Python module) and every check of
// one (scheme::validate) uses these constants. The physical ranges of single quantities
// (bandwidths, latencies, sizes) are in units.hpp.
//
// kMaxWorkers is what the fast paths reach: a prediction whose collectives, DDP, FSDP or
// composed layout runs on a network reduced to link classes costs memory by link classes, not by
// ranks. Paths that are per rank by nature (the full engine of every worker and transfer,
// stragglers, traces of every worker, parameter servers, Chakra files per rank) keep their own,
// lower limits below, each checked with an error naming the key, the limit and the reason.
#pragma once

#include <cstdint>

namespace stepcast::limits {

/// The most workers (GPUs) of a job: cluster.workers, --workers, the group degrees of a parallel
/// layout. 2^20: a collective, a DDP, FSDP or composed step on the fast paths answers there in
/// seconds (BENCHMARKS.md); the paths that simulate every worker stop at kMaxSimulatedWorkers.
inline constexpr int kMaxWorkers = 1 << 20;

/// The most workers a prediction simulates rank by rank on the full engine (every op and transfer
/// of every worker: stragglers, parameter servers, traces, simulation.fast_paths false, a layout
/// whose groups cross links unevenly): memory and time grow with the workers (about 10 kB and a
/// few ms of simulation per worker and step), so past this it takes minutes and gigabytes.
/// scheme::require_simulable_workers throws past it, saying which of those forced the full engine.
inline constexpr int kMaxSimulatedWorkers = 1 << 14;

/// The most sequences a worker takes a step (workload.batch_per_worker) or a micro-batch holds
/// (workload.micro_batch).
inline constexpr int kMaxBatch = 1 << 24;

/// The most micro-batches of one step (global batch / (data-parallel degree x micro-batch)), and
/// so of an interleaved schedule's micro-batch group: the stage programs hold every one.
inline constexpr int kMaxMicroBatches = 1 << 16;

}  // namespace stepcast::limits
