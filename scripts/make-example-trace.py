#!/usr/bin/env python3
"""Writes the small synthetic PyTorch profiler (Kineto) trace behind examples/small-cnn-profile.yaml.

A made-up CNN of eight layers (11.2 M fp32 parameters) trained with DistributedDataParallel on
two GPUs, rank 0, five profiled steps: per step a data-loading gap on the main thread, the
forward kernels launched from it, the backward kernels launched from the autograd thread, two
gradient buckets all-reduced by NCCL on their own stream while backward runs (DDP's 25 MB
buckets, last layers first), and the optimizer's kernels after the last all-reduce. Event shapes
follow what torch.profiler writes (categories, pid/tid of the GPU stream, correlation ids from
each cudaLaunchKernel to its kernel, NCCL's "Collective name", "In msg nelems", "Group size" and
"dtype" args). The durations are invented but physical: kernels in proportion to their layer's
work, all-reduces at 10 GB/s. It exists so that docs/guide.md and examples/ need nothing outside the
repository; it is not measured data and validates nothing.

    scripts/make-example-trace.py                      # rewrites examples/traces/small-cnn-ddp-rank0.pt.trace.json
    scripts/make-example-trace.py /tmp/other.json --steps 8 --seed 3

Deterministic: the same arguments write the same bytes.
"""
import argparse
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "examples", "traces", "small-cnn-ddp-rank0.pt.trace.json")

# (name, parameters, forward kernel time in us at batch 64): backward takes twice its forward.
LAYERS = [
    ("conv1", 9_408, 900), ("conv2", 147_456, 1_300), ("conv3", 294_912, 1_100), ("conv4", 589_824, 1_000),
    ("conv5", 1_179_648, 950), ("conv6", 2_359_296, 900), ("conv7", 4_718_592, 850), ("fc", 1_812_000, 120),
]
BUCKET_BYTES = 25 * 1024 * 1024  # DDP's default bucket_cap_mb
ALLREDUCE_BW = 10e9              # bytes/s of the two-GPU all-reduce (bus bandwidth)
PID, MAIN_TID, AUTOGRAD_TID = 4242, 4242, 4243
COMPUTE_STREAM, NCCL_STREAM = 7, 20


class Trace:
    def __init__(self, seed):
        self.events = []
        self.correlation = 1000
        self.external = 1
        self.rng = random.Random(seed)

    def jitter(self, us):
        return round(us * self.rng.uniform(0.98, 1.02), 3)

    def cpu(self, cat, name, ts, dur, tid, args=None):
        event = {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid, "ts": round(ts, 3), "dur": round(dur, 3)}
        if args is not None:
            event["args"] = args
        self.events.append(event)

    def launch(self, ts, tid, kernel, start, dur, stream, extra=None):
        """A cudaLaunchKernel at ts on tid and its kernel on the stream; returns the kernel's end."""
        self.correlation += 1
        self.external += 1
        self.cpu("cuda_runtime", "cudaLaunchKernel", ts, 6.0, tid,
                 {"External id": self.external, "cbid": 211, "correlation": self.correlation})
        args = {"External id": self.external, "queued": 0, "device": 0, "context": 1, "stream": stream,
                "correlation": self.correlation}
        args.update(extra or {})
        self.events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": stream,
                            "ts": round(start, 3), "dur": round(dur, 3), "args": args})
        return start + dur


def buckets():
    """Gradient buckets in the order DDP fills them (last layer first), as element counts."""
    out, size = [], 0
    for _, params, _ in reversed(LAYERS):
        size += params
        if size * 4 >= BUCKET_BYTES:
            out.append(size)
            size = 0
    if size:
        out.append(size)
    return out


def write(path, steps, seed):
    t = Trace(seed)
    ts = 1_000_000.0  # us
    gpu_free = ts
    bucket_sizes = buckets()
    for step in range(steps):
        step_start = ts
        loader = t.jitter(3_000)
        t.cpu("cpu_op", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ts, loader, MAIN_TID)
        ts += loader
        # Forward: one op per layer on the main thread, each launching its kernel.
        for name, _, fwd in LAYERS:
            t.cpu("cpu_op", f"aten::{'linear' if name == 'fc' else 'conv2d'}", ts, 40.0, MAIN_TID,
                  {"External id": t.external + 1})
            gpu_free = t.launch(ts + 10, MAIN_TID, f"void forward_kernel_{name}<float>(float const*, float*)",
                                max(ts + 16, gpu_free), t.jitter(fwd), COMPUTE_STREAM)
            ts += 45
        # Backward on the autograd thread, last layer first; a bucket's all-reduce is launched when
        # its last gradient is ready and runs on the NCCL stream.
        bts = ts + 20
        nccl_free = 0.0
        filled, bucket = 0, 0
        for name, params, fwd in reversed(LAYERS):
            op = "AddmmBackward0" if name == "fc" else "ConvolutionBackward0"
            t.cpu("cpu_op", f"autograd::engine::evaluate_function: {op}", bts, 50.0, AUTOGRAD_TID)
            gpu_free = t.launch(bts + 12, AUTOGRAD_TID, f"void backward_kernel_{name}<float>(float const*, float*)",
                                max(bts + 18, gpu_free), t.jitter(2 * fwd), COMPUTE_STREAM)
            bts += 55
            filled += params
            if bucket < len(bucket_sizes) and filled >= bucket_sizes[bucket]:
                nelems = bucket_sizes[bucket]
                t.cpu("user_annotation", "nccl:all_reduce", bts, 30.0, AUTOGRAD_TID)
                start = max(bts + 8, gpu_free, nccl_free)  # waits for the gradients it reduces
                dur = t.jitter(nelems * 4 / ALLREDUCE_BW * 1e6)
                nccl_free = t.launch(bts + 2, AUTOGRAD_TID,
                                     "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
                                     start, dur, NCCL_STREAM,
                                     {"Collective name": "allreduce", "In msg nelems": nelems, "Out msg nelems": nelems,
                                      "Group size": 2, "dtype": "Float", "Process Group Name": "0",
                                      "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1]"})
                bts += 35
                filled = 0
                bucket += 1
        # The optimizer after every gradient is reduced.
        ots = max(bts, nccl_free) + 30
        t.cpu("cpu_op", "Optimizer.step#SGD.step", ots, 300.0, MAIN_TID)
        gpu_free = max(gpu_free, nccl_free)
        for name, _, _ in LAYERS:
            gpu_free = t.launch(ots + 5, MAIN_TID, "void sgd_update_kernel<float>(float*, float const*, float)",
                                max(ots + 11, gpu_free), t.jitter(25), COMPUTE_STREAM)
            ots += 30
        t.cpu("cuda_runtime", "cudaDeviceSynchronize", ots, max(0.0, gpu_free - ots) + 5, MAIN_TID,
              {"External id": t.external, "cbid": 165, "correlation": t.correlation + 1})
        t.correlation += 1
        ts = max(ots, gpu_free) + 20
        t.events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step + 2}", "pid": PID,
                         "tid": MAIN_TID, "ts": round(step_start, 3), "dur": round(ts - step_start, 3)})
    trace = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "Example GPU (synthetic)", "totalGlobalMem": 42_297_524_224}],
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2},
        "traceEvents": sorted(t.events, key=lambda e: (e["ts"], e["pid"], e["tid"])),
    }
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(trace, f, indent=None, separators=(",", ":"))
        f.write("\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", default=DEFAULT_OUT)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    write(args.out, args.steps, args.seed)


if __name__ == "__main__":
    main()
