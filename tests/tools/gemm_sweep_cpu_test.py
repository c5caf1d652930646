#!/usr/bin/env python3
"""ctest gemm_sweep_cpu: tools/gemm_sweep.py measured on the host CPU (--device cpu, a dry run of
the script that a GPU runs), then its table through `stepcast calibrate gemm` and a prediction
with workload.compute: shapes. Checks the script's whole path but the GPU's timers and kernels:
the grid it writes is a grid the reader takes, the held-back rows are the grid cells' centres,
the header's rates reach the calibration, and a scenario runs on the table.

    gemm_sweep_cpu_test.py STEPCAST_BINARY SOURCE_DIR

Skipped (exit 77) without a Python that has PyTorch (Debian: python3-torch).
"""
import json
import math
import os
import subprocess
import sys
import tempfile


def python_with_torch():
    for candidate in (sys.executable, "/usr/bin/python3"):
        if candidate and os.path.exists(candidate):
            if subprocess.run([candidate, "-c", "import torch"], capture_output=True).returncode == 0:
                return candidate
    return None


def main():
    binary, source = sys.argv[1], sys.argv[2]
    python = python_with_torch()
    if python is None:
        print("skipped: no Python with PyTorch (Debian: python3-torch)")
        return 77
    with tempfile.TemporaryDirectory() as work:
        table = os.path.join(work, "cpu-gemm.csv")
        sweep = subprocess.run(
            [python, os.path.join(source, "tools", "gemm_sweep.py"), "--device", "cpu", "--dtypes", "fp32,bf16",
             "--max-dim", "128", "--held-back", "midpoints", "--checks", "4", "--warmup", "0", "--repeats", "1",
             "--out", table], capture_output=True, text=True)
        assert sweep.returncode == 0, sweep.stderr
        listed = subprocess.run([python, os.path.join(source, "tools", "gemm_sweep.py"), "--list", "--max-dim", "128"],
                                capture_output=True, text=True, check=True).stdout
        grid_size = int(listed.split(" grid GEMMs")[0].split()[-1])
        with open(table) as f:
            lines = f.read().splitlines()
        assert lines[0].startswith("# cpu: "), lines[0]
        rows = [line for line in lines if line and not line.startswith("#")]
        assert rows[0] == "m,n,k,dtype,time_us", rows[0]
        assert len(rows) - 1 == 2 * grid_size, (len(rows), grid_size)  # every grid GEMM in both dtypes

        calibrated = subprocess.run([binary, "calibrate", "gemm", table, "--json", "-o",
                                     os.path.join(work, "keys.yaml")], capture_output=True, text=True)
        assert calibrated.returncode == 0, calibrated.stderr
        report = json.loads(calibrated.stdout)
        grids = {g["dtype"]: g for g in report["table"]["grids"]}
        assert set(grids) == {"fp32", "bf16"}, grids
        for g in grids.values():
            assert g["rows"] == grid_size and all(g[d]["count"] >= 2 for d in "mnk"), g
            assert max(g[d]["max"] for d in "mnk") <= 128, g
        # The header's copy rate is the calibration's memory bandwidth.
        copy = next(line for line in lines if line.startswith("# memory_bandwidth: "))
        assert math.isclose(report["memory_bandwidth_Bps"],
                            float(copy.split()[2].removesuffix("GB/s")) * 1e9, rel_tol=1e-9), copy
        # Held back: 4 cell centres a dtype, each strictly inside the grid (interpolated, not clamped).
        held = report["held_back"]
        assert len(held) == 8, held
        for row in held:
            g = grids[row["dtype"]]
            assert all(g[d]["min"] < row[d] < g[d]["max"] for d in "mnk"), row
            assert not row["clamped"] and row["measured_s"] > 0 and row["predicted_s"] > 0, row

        scenario = os.path.join(work, "tiny.yaml")
        with open(scenario, "w") as f:
            f.write("name: tiny\n"
                    "workload:\n"
                    "  transformer: {layers: 2, hidden: 128, ffn_hidden: 256, heads: 4, kv_heads: 4, vocab: 1024}\n"
                    "  seq_len: 64\n  precision: bf16\n  compute: shapes\n"
                    f"cluster:\n  workers: 2\n  gpu: {{peak_flops: 1TFLOPS, memory_bandwidth: 10GB/s, gemm: {table}}}\n"
                    "training: {scheme: allreduce}\n")
        predicted = subprocess.run([binary, "predict", scenario, "--json"], capture_output=True, text=True)
        assert predicted.returncode == 0, predicted.stderr
        step = json.loads(predicted.stdout)["predictions"][0]["step_time_s"]
        assert step > 0, predicted.stdout
    print("gemm_sweep on the CPU: table, calibration and a prediction on it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
