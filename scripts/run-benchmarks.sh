#!/usr/bin/env bash
# Runs each benchmark in its own process (so peak memory is that benchmark's) and times whole
# commands. Results go to stdout; copy them into BENCHMARKS.md with the machine description.
set -euo pipefail
cd "$(dirname "$0")/.."
bench=build/release/simulation_bench
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for filter in $($bench --benchmark_list_tests); do
  $bench --benchmark_filter="^${filter}\$" --benchmark_min_time=0.5 2>/dev/null | grep -E "^BM_"
done
echo
echo "# whole commands (wall seconds, max RSS KiB)"
for cmd in "predict examples/resnet50-ps.yaml --workers 1,2,4,8,16,32" \
           "predict examples/vgg16-allreduce.yaml --workers 1,2,4,8,16,32,64" \
           "predict examples/resnet50-ps.yaml --predictor coarse --workers 1,2,4,8,16,32,64,128,256,512" \
           "collective --size 100MiB --workers 1024"; do
  /usr/bin/time -f "%e s %M KiB  stepcast $cmd" build/release/stepcast $cmd >/dev/null
done
