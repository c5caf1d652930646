#!/usr/bin/env python3
"""Measure one GPU's GEMM times for `workload.compute: shapes` (cluster.gpu.gemm).

    python3 tools/gemm_sweep.py --out h100-gemm.csv            # on one GPU with PyTorch
    stepcast predict job.yaml --set cluster.gpu.gemm=h100-gemm.csv --set workload.compute=shapes

What it measures:
- The GEMMs of the zoo's decoders (GPT-2, Llama 2 and 3, Mixtral; src/zoo/model_zoo.cpp) at tensor
  degrees 1, 2, 4, 8 (where the heads divide) and micro-batches 1, 2, 4, 8: every forward GEMM and
  its two backward GEMMs, with Megatron's split (zoo/decoder_kernels.hpp). stepcast reads a table
  whose rows form a grid, so the script measures the power-of-two grid that brackets those shapes
  in each of m, n and k (`--out`: usable as cluster.gpu.gemm as it is), and the zoo's own shapes,
  which lie between the grid points, as held-back rows (`--check-out`) to see how well the grid
  interpolates them.
- bf16 always, fp8 (torch._scaled_mm) where the GPU and PyTorch have it, fp16/fp32 on request.
- Each GEMM: `--warmup` runs, then the median of `--repeats` runs timed with CUDA events. The
  grid's GEMMs sum to about 1.8e16 FLOPs (the largest 65536 x 131072 x 131072, 68 GB of operands
  in bf16), so with the defaults (1 + 3 runs) an H100 should take 2-3 minutes for bf16 and fp8
  together: an estimate from the FLOPs, not a measurement. `--max-dim` caps the grid (shapes
  beyond it are then clamped, with a warning, when predicted).
- The flash-attention rate (scaled_dot_product_attention, causal, head size 128, forward and
  backward, in stepcast's accounting of 4 b s^2 h forward FLOPs and twice that backward) and the
  memory bandwidth of a large device copy, written as comments and printed as scenario keys
  (cluster.gpu.attention_flops, cluster.gpu.memory_bandwidth).
- The CSV's first lines say the GPU, driver, PyTorch, CUDA and cuBLAS versions.

NOT RUN ON A GPU IN THIS REPOSITORY: it was written on a machine without one. The shape
generator (`zoo_gemm_shapes`, `grid_axes`) runs without PyTorch (`--list`), and `--device cpu`
runs the whole measurement on the host CPU with Debian's python3-torch (times of the CPU, not of a
GPU: a dry run of the script, which the ctest `gemm_sweep_cpu` does on a small grid and feeds to
`stepcast calibrate gemm`). Its output is the format stepcast's table reader takes
(src/cluster/gemm_table.cpp). `--held-back midpoints` measures the grid cells' centres instead of
the zoo's shapes: where log-space interpolation is furthest from its grid points.
"""

import argparse
import math
import platform
import subprocess
import sys
import time

# The zoo's decoders (src/zoo/model_zoo.cpp): layers do not matter here, only the widths.
# name: (hidden, ffn_hidden, heads, kv_heads, vocab, seq_len, swiglu, experts, top_k)
ZOO = {
    "gpt2": (768, 3072, 12, 12, 50257, 1024, False, 1, 1),
    "gpt2-xl": (1600, 6400, 25, 25, 50257, 1024, False, 1, 1),
    "llama2-7b": (4096, 11008, 32, 32, 32000, 4096, True, 1, 1),
    "llama2-13b": (5120, 13824, 40, 40, 32000, 4096, True, 1, 1),
    "llama2-70b": (8192, 28672, 64, 8, 32000, 4096, True, 1, 1),
    "llama3-8b": (4096, 14336, 32, 8, 128256, 8192, True, 1, 1),
    "llama3-70b": (8192, 28672, 64, 8, 128256, 8192, True, 1, 1),
    "llama3-405b": (16384, 53248, 128, 8, 128256, 8192, True, 1, 1),
    "mixtral-8x7b": (4096, 14336, 32, 8, 32000, 4096, True, 8, 2),
}
TENSOR_DEGREES = (1, 2, 4, 8)
MICRO_BATCHES = (1, 2, 4, 8)


def divide_up(value, by):
    return (value + by - 1) // by


def forward_gemms(model, t, b):
    """The forward GEMMs (m, n, k) of one block and the head on one rank, as decoder_kernels.cpp."""
    h, f, heads, kv_heads, vocab, seq, swiglu, experts, top_k = ZOO[model]
    tokens = b * seq
    kv_width = kv_heads * (h // heads)
    ffn = divide_up(f, t)
    gemms = [
        (tokens, divide_up(h + 2 * kv_width, t), h),  # Q, K, V fused, column-parallel
        (tokens, h, divide_up(h, t)),  # output projection, row-parallel
        (tokens, divide_up(vocab, t), h),  # LM head, vocabulary-parallel
    ]
    if experts == 1:
        gemms += [(tokens, (2 if swiglu else 1) * ffn, h), (tokens, h, ffn)]
    else:
        expert_tokens = divide_up(tokens * top_k, experts)
        gemms += [(tokens, experts, h), (expert_tokens, (2 if swiglu else 1) * ffn, h), (expert_tokens, h, ffn)]
    return gemms


def zoo_gemm_shapes():
    """Every distinct GEMM (forward, input gradient, weight gradient) of the zoo at every degree."""
    shapes = set()
    for model, spec in ZOO.items():
        heads = spec[2]
        for t in TENSOR_DEGREES:
            if heads % t != 0:
                continue
            for b in MICRO_BATCHES:
                for m, n, k in forward_gemms(model, t, b):
                    shapes.update({(m, n, k), (m, k, n), (k, n, m)})
    return sorted(shapes)


def grid_axes(shapes, max_dim=None):
    """Powers of two bracketing the shapes in each dimension (capped at max_dim if given, with at
    least two values an axis)."""
    axes = []
    for d in range(3):
        lo = min(s[d] for s in shapes)
        hi = max(s[d] for s in shapes)
        if max_dim:
            hi = min(hi, max_dim)
        last = 2 ** int(math.ceil(math.log2(hi)))
        first = min(2 ** int(math.floor(math.log2(lo))), last // 2)
        axis = []
        value = first
        while value <= last:
            axis.append(value)
            value *= 2
        axes.append(axis)
    return axes


def grid_midpoints(axes, count):
    """`count` cell centres of the grid (the geometric mean of neighbouring values in each
    dimension), evenly spread over the cells."""
    centres = [[int(round(math.sqrt(a * b))) for a, b in zip(axis, axis[1:])] for axis in axes]
    cells = [(m, n, k) for m in centres[0] for n in centres[1] for k in centres[2]]
    return cells[:: max(1, len(cells) // count)][:count] if count > 0 else []


def version_lines(torch, device):
    if device == "cpu":
        return [f"cpu: {platform.processor() or platform.machine()} (a dry run: the host CPU, not a GPU)",
                f"torch: {torch.__version__}"]
    lines = [f"gpu: {torch.cuda.get_device_name(0)}"]
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, check=True).stdout.strip().splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        driver = "unknown"
    lines.append(f"driver: {driver}")
    lines.append(f"torch: {torch.__version__}")
    lines.append(f"cuda: {torch.version.cuda}")
    lines.append(f"cublas: {getattr(torch.backends.cuda, 'preferred_blas_library', lambda: 'default')()}")
    return lines


def timed(torch, device, run, repeats):
    """Seconds of each of `repeats` calls of run(): CUDA events on the GPU, the wall clock on the
    CPU (where a call returns when its work is done)."""
    times = []
    for _ in range(repeats):
        if device == "cpu":
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
            continue
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return times


def time_gemm(torch, device, m, n, k, dtype, warmup, repeats):
    """Median seconds of one GEMM (m x k) @ (k x n) in `dtype` ('bf16', 'fp16', 'fp32', 'fp8')."""
    if dtype == "fp8":
        a = torch.randn(m, k, device=device).to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device=device).to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm wants
        one = torch.tensor(1.0, device=device)

        def run():
            return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    else:
        torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype]
        a = torch.randn(m, k, device=device, dtype=torch_dtype)
        b = torch.randn(k, n, device=device, dtype=torch_dtype)

        def run():
            return a @ b
    for _ in range(warmup):
        run()
    times = timed(torch, device, run, repeats)
    return sorted(times)[len(times) // 2]


def attention_rate(torch, device, warmup, repeats, seq):
    """FLOP/s of causal flash attention forward + backward, counted as stepcast counts it; None
    where this PyTorch has no scaled_dot_product_attention (before 2.0)."""
    import torch.nn.functional as F
    if not hasattr(F, "scaled_dot_product_attention"):
        return None
    b, heads, s, d = 1, 32, seq, 128
    q, k, v = (torch.randn(b, heads, s, d, device=device, dtype=torch.bfloat16, requires_grad=True)
               for _ in range(3))

    def run():
        F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    for _ in range(warmup):
        run()
    seconds = sum(timed(torch, device, run, repeats)) / repeats
    flops = 3 * 4 * b * s * s * heads * d  # forward 4 b s^2 h, backward twice that
    return flops / seconds


def memory_bandwidth(torch, device, repeats, size):
    """bytes/s of a device-to-device copy of `size` bytes (read and write counted)."""
    src = torch.empty(size // 2, dtype=torch.int16, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)
    seconds = sum(timed(torch, device, lambda: dst.copy_(src), repeats))
    return 2 * src.numel() * 2 * repeats / seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="gpu-gemm.csv", help="the grid table (cluster.gpu.gemm)")
    parser.add_argument("--check-out", default=None, help="the zoo's own shapes, held back (default: <out>-check.csv)")
    parser.add_argument("--dtypes", default="bf16,fp8", help="comma-separated: bf16, fp16, fp32, fp8")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-dim", type=int, default=131072, help="largest grid value in any dimension")
    parser.add_argument("--checks", type=int, default=200, help="held-back shapes measured (evenly spread)")
    parser.add_argument("--held-back", choices=("zoo", "midpoints"), default="zoo",
                        help="held-back shapes: the zoo's own (default) or the grid cells' centres")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: a dry run on the host CPU (its times are not a GPU's), to test the script")
    parser.add_argument("--list", action="store_true", help="print the grid and the shapes, measure nothing")
    args = parser.parse_args()

    shapes = zoo_gemm_shapes()
    axes = grid_axes(shapes, args.max_dim)
    grid = [(m, n, k) for m in axes[0] for n in axes[1] for k in axes[2]]
    if args.held_back == "midpoints":
        checks = grid_midpoints(axes, args.checks)
    else:
        checks = shapes[:: max(1, len(shapes) // args.checks)] if args.checks > 0 else []
    if args.list:
        print(f"grid: m {axes[0]}\n      n {axes[1]}\n      k {axes[2]}\n{len(grid)} grid GEMMs, "
              f"{len(shapes)} zoo shapes, {len(checks)} held back")
        return 0

    import torch  # only to measure: --list runs without it
    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        print("gemm_sweep: no CUDA GPU (--device cpu runs a dry run on the host)", file=sys.stderr)
        return 1
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    if "fp8" in dtypes and not hasattr(torch, "float8_e4m3fn"):
        print("gemm_sweep: this PyTorch has no fp8; leaving fp8 out", file=sys.stderr)
        dtypes.remove("fp8")
    header = ["# " + line for line in version_lines(torch, device)]
    # A GPU's: s 8192 and a 4 GiB copy; the CPU's dry run: small enough for seconds.
    seq, copy = (8192, 1 << 32) if device == "cuda" else (256, 1 << 26)
    attention = attention_rate(torch, device, args.warmup, args.repeats, seq)
    bandwidth = memory_bandwidth(torch, device, args.repeats, copy)
    if attention is None:
        # Not as `attention_flops:`, which stepcast's reader takes as the rate.
        header.append(f"# attention: not measured (PyTorch {torch.__version__} has no scaled_dot_product_attention)")
    else:
        header.append(f"# attention_flops: {attention / 1e12:.3g}TFLOPS (causal SDPA, b 1, 32 heads of 128, s {seq})")
    header.append(f"# memory_bandwidth: {bandwidth / 1e9:.3g}GB/s ({copy >> 20} MiB device copy)")
    check_out = args.check_out or args.out.rsplit(".", 1)[0] + "-check.csv"
    for path, rows in ((args.out, grid), (check_out, checks)):
        with open(path, "w") as out:
            out.write("\n".join(header) + "\nm,n,k,dtype,time_us\n")
            for dtype in dtypes:
                for m, n, k in rows:
                    try:
                        seconds = time_gemm(torch, device, m, n, k, dtype, args.warmup, args.repeats)
                    except (RuntimeError, torch.cuda.OutOfMemoryError) as error:
                        # A dtype that cannot run this shape (fp8 wants multiples of 16) is left
                        # out: the table's grid check then names what is missing.
                        print(f"gemm_sweep: {dtype} {m}x{n}x{k}: {error}", file=sys.stderr)
                        if device == "cuda":
                            torch.cuda.empty_cache()
                        continue
                    out.write(f"{m},{n},{k},{dtype},{seconds * 1e6:.3f}\n")
    print(f"wrote {args.out} ({len(grid)} GEMMs per dtype) and {check_out} ({len(checks)} held back)")
    print("scenario keys:")
    print(f"  cluster.gpu.gemm: {args.out}")
    if attention is not None:
        print(f"  cluster.gpu.attention_flops: {attention / 1e12:.3g}TFLOPS")
    print(f"  cluster.gpu.memory_bandwidth: {bandwidth / 1e9:.3g}GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
