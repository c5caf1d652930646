#!/usr/bin/env bash
# Installs the Debian 12 packages stepcast needs, only those that are missing. ccache is optional
# to the build (CMakeLists.txt compiles through it when found) and keeps CI's rebuilds short;
# jemalloc too (the command's allocator when found: plan searches 1.3x faster).
set -euo pipefail
packages=(cmake ninja-build g++ make pkg-config libfmt-dev libyaml-cpp-dev libcli11-dev
          libsimdjson-dev zlib1g-dev libprotobuf-dev protobuf-compiler libgtest-dev libgmock-dev
          libbenchmark-dev libjs-chart.js time libopenmpi-dev openmpi-bin
          python3-pybind11 pybind11-dev python3-pytest python3-dev python3-pandas ccache
          libjemalloc-dev)
# The optional SimGrid cross-check (make test-simgrid) also needs SimGrid.
if [ "${STEPCAST_WITH_SIMGRID:-0}" = 1 ]; then packages+=(libsimgrid-dev); fi
# The fuzz targets (make fuzz) need clang with libFuzzer and the sanitizer runtimes (Debian 12:
# clang 14; libFuzzer is in libclang-rt-14-dev) and llvm-symbolizer (llvm-14) for stack traces.
if [ "${STEPCAST_WITH_FUZZ:-0}" = 1 ]; then packages+=(clang clang-14 libclang-rt-14-dev llvm-14); fi
# The HTML report's browser test (tests/report/html_report_test.cpp) runs headless Chromium;
# without it that test is skipped.
if [ "${STEPCAST_WITH_BROWSER:-0}" = 1 ]; then packages+=(chromium); fi
# tools/gemm_sweep.py's dry run on the CPU (the ctest gemm_sweep_cpu) needs PyTorch; without it
# that test is skipped. The GPU run itself wants a CUDA build of PyTorch on the GPU's machine.
if [ "${STEPCAST_WITH_TORCH:-0}" = 1 ]; then packages+=(python3-torch); fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
