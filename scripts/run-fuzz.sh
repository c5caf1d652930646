#!/usr/bin/env bash
# Runs the libFuzzer targets built by the asan preset (make fuzz; tests/fuzz/README.md): first every
# pinned reproducer of tests/data/fuzz/ once through its target (a regression fails at once), then
# each target for FUZZ_SECONDS (default 60), seeded from tests/fuzz/seeds/, examples/ and the
# reproducers. The corpus grows in build/fuzz/corpus/<target> (kept between runs, never
# committed); a crash leaves build/fuzz/artifacts/<target>/crash-<sha1> and the log in
# build/fuzz/logs/<target>.log. Exits 1 when any target crashed.
#
# FUZZ_BUILD is the build holding the targets (build/asan, the preset asan: clang, ASan, UBSan and
# the tests beside them); FUZZ_DIR holds the corpora, seeds, artifacts and logs (build/fuzz).
#
# FUZZ_SEED fixes libFuzzer's random seed (CI: 1, so a run mutates in the same order; a time
# budget still ends it after a machine-dependent number of inputs); unset, libFuzzer picks one.
# A crash's input is also printed in base64, for a log that outlives the machine (CI).
#
# FUZZ_JOBS targets run at once (default: the number of cores), each for its own FUZZ_SECONDS.
#
#   FUZZ_SECONDS=30 scripts/run-fuzz.sh
#   FUZZ_TARGETS="scenario kineto" FUZZ_SECONDS=600 scripts/run-fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
seed=${FUZZ_SEED:-0}
jobs=${FUZZ_JOBS:-$(nproc)}
bin_dir=${FUZZ_BUILD:-build/asan}
work=${FUZZ_DIR:-build/fuzz}
all="astrasim chakra collective_log custom_topology kineto layer_table scenario scenario_set scenario_predict tf_timeline"
targets=${FUZZ_TARGETS:-$all}
repros=tests/data/fuzz

# Seeds of a target: its own (tests/fuzz/seeds/<target>), the examples it reads, and the pinned
# reproducers named after its reader (README of tests/data/fuzz).
seed_files() {
  local t=$1
  ls -d tests/fuzz/seeds/"$t"/* 2>/dev/null || true
  case $t in
    astrasim) ls $repros/astrasim-* ;;
    chakra) ls $repros/chakra-* ;;
    collective_log) ls $repros/nccl-* ;;
    custom_topology) ls examples/topologies/*.yaml $repros/topology-* ;;
    kineto) ls tests/fuzz/seeds/tf_timeline/* $repros/kineto-* $repros/tf-* ;;
    layer_table) ls examples/layer-table/*.csv $repros/layer_table-* ;;
    scenario | scenario_predict) ls examples/*.yaml $repros/scenario-* ;;
    scenario_set) ls $repros/scenario_set-* ;;
    tf_timeline) ls tests/fuzz/seeds/kineto/* $repros/tf-* ;;
  esac 2>/dev/null || true
}
# Reproducers that must run clean through the target (the seeds from tests/data/fuzz).
repro_files() { seed_files "$1" | grep "^$repros/" || true; }

dict_of() {
  case $1 in
    scenario | scenario_set | scenario_predict) echo tests/fuzz/dict/scenario.dict ;;
    kineto | tf_timeline) echo tests/fuzz/dict/json.dict ;;
    custom_topology) echo tests/fuzz/dict/topology.dict ;;
    astrasim | layer_table | collective_log) echo tests/fuzz/dict/text.dict ;;
  esac
}

for t in $targets; do
  if [ ! -x "$bin_dir/${t}_fuzz" ]; then
    echo "run-fuzz: $bin_dir/${t}_fuzz is missing (cmake --preset asan && cmake --build --preset asan --target fuzz_targets)" >&2
    exit 2
  fi
done

# One target: its reproducers, then FUZZ_SECONDS of fuzzing. Returns 1 on a crash.
fuzz_one() {
  local t=$1
  local bin=$bin_dir/${t}_fuzz
  local seeds=$work/seeds/$t
  rm -rf "$seeds"
  mkdir -p "$seeds" "$work/corpus/$t" "$work/artifacts/$t" "$work/logs"
  for f in $(seed_files "$t"); do cp "$f" "$seeds/"; done
  if [ "$t" = scenario_set ]; then
    # An override line, then a scenario.
    local i=0
    for f in examples/*.yaml; do
      for set in cluster.workers=8 training.scheme=ps cluster.nic_bandwidth=100Gbps workload.compute_cv=0.1; do
        i=$((i + 1))
        { echo "$set"; cat "$f"; } >"$seeds/example-$i.txt"
      done
    done
  fi
  local log=$work/logs/$t.log
  : >"$log"
  local repro
  repro=$(repro_files "$t")
  if [ -n "$repro" ] && ! "$bin" -runs=1 $repro >>"$log" 2>&1; then
    echo "run-fuzz: $t: a pinned reproducer crashes again; see $log" >&2
    tail -n 30 "$log" >&2
    return 1
  fi
  local dict
  dict=$(dict_of "$t")
  echo "run-fuzz: $t for ${seconds}s"
  # -timeout: an input taking more than 20 s is a stall; -rss_limit_mb: one that grows past 2.5 GB
  # is reading what it should refuse.
  if "$bin" -max_total_time="$seconds" -seed="$seed" -timeout=20 -rss_limit_mb=2560 -max_len=8192 -print_final_stats=1 \
      ${dict:+-dict=$dict} -artifact_prefix="$work/artifacts/$t/" "$work/corpus/$t" "$seeds" >>"$log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$log" | tr '\n' ' ' | sed "s/^/run-fuzz: $t: /"
    echo
  else
    echo "run-fuzz: $t: CRASH; input in $work/artifacts/$t/, log $log" >&2
    grep -E "ERROR|BUG|runtime error|terminate|Assertion|assertion" "$log" | head -n 5 >&2 || true
    for a in "$work/artifacts/$t"/*; do
      [ -f "$a" ] || continue
      echo "run-fuzz: $t: $(basename "$a") (base64, first 4 kB):" >&2
      head -c 4096 "$a" | base64 >&2
    done
    return 1
  fi
}

# FUZZ_JOBS targets at a time (default: one per core), each on one core for its FUZZ_SECONDS;
# what a target prints is shown in one piece when it ends, and a crash marks it failed.
mkdir -p "$work/logs"
rm -f "$work"/logs/*.out "$work"/logs/*.failed
for t in $targets; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  { fuzz_one "$t" || : >"$work/logs/$t.failed"; } >"$work/logs/$t.out" 2>&1 &
done
wait
failed=()
for t in $targets; do
  cat "$work/logs/$t.out"
  [ ! -e "$work/logs/$t.failed" ] || failed+=("$t")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "run-fuzz: crashes in: ${failed[*]}" >&2
  exit 1
fi
echo "run-fuzz: no crash in $targets"
