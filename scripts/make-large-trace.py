#!/usr/bin/env python3
"""Builds a large uncompressed Kineto trace for the trace-reading benchmark (issue 3).

Repeats the events of a real trace (default: the shared resnet50_ddp_2xA100 trace) with
timestamps shifted by the trace's span each time, renumbering ProfilerStep#N and offsetting
correlation / External ids / flow ids so that the copies stay distinct, until the output reaches
the requested size. The result is a realistic trace of hundreds of MB with many steps.

    scripts/make-large-trace.py /tmp/big.json                 # ~300 MB
    scripts/make-large-trace.py /tmp/big.json --size-mb 1000 --source other.json.gz

Write it outside the repository and delete it afterwards.
"""
import argparse
import gzip
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SOURCE = os.path.join(HERE, "..", "..", "shared", "data", "traces",
                              "resnet50_ddp_2xA100_rank0_nccl_data.json.gz")
STEP = re.compile(r"^ProfilerStep#(\d+)$")


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("output", help="path of the .json to write (not in the repository)")
    ap.add_argument("--size-mb", type=float, default=300, help="target size in MB (default 300)")
    ap.add_argument("--source", default=DEFAULT_SOURCE, help="Kineto trace to repeat (.json or .json.gz)")
    args = ap.parse_args()

    trace = load(args.source)
    events = trace["traceEvents"]
    timed = [e for e in events if isinstance(e.get("ts"), (int, float)) and e["ts"] > 0]
    t0 = min(e["ts"] for e in timed)
    t1 = max(e["ts"] + e.get("dur", 0) for e in timed)
    span = (t1 - t0) * 1.01 + 1000  # us; a gap keeps copies apart
    steps = [int(m.group(1)) for e in events if (m := STEP.match(str(e.get("name", ""))))]
    step_stride = (max(steps) - min(steps) + 1) if steps else 0
    id_stride = 1 + max([int(e.get("id", 0)) for e in events if isinstance(e.get("id"), int)] +
                        [int(e.get("args", {}).get(k, 0)) for e in events
                         for k in ("correlation", "External id") if isinstance(e.get("args", {}).get(k), int)] + [0])
    header = {k: v for k, v in trace.items() if k != "traceEvents"}
    target = int(args.size_mb * 1e6)

    written = 0
    copies = 0
    with open(args.output, "w") as out:
        head = json.dumps(header)[:-1]  # the metadata object without its closing brace
        out.write(head + (", " if header else "") + '"traceEvents": [\n')
        written += len(head) + 20
        first = True
        while written < target:
            shift = copies * span
            for e in events:
                e2 = dict(e)
                if isinstance(e2.get("ts"), (int, float)) and e2["ts"] > 0:
                    e2["ts"] = round(e2["ts"] + shift, 3)
                m = STEP.match(str(e2.get("name", "")))
                if m:
                    e2["name"] = "ProfilerStep#%d" % (int(m.group(1)) + copies * step_stride)
                if isinstance(e2.get("id"), int):
                    e2["id"] += copies * id_stride
                a = e2.get("args")
                if isinstance(a, dict):
                    a2 = dict(a)
                    for k in ("correlation", "External id"):
                        if isinstance(a2.get(k), int):
                            a2[k] += copies * id_stride
                    e2["args"] = a2
                line = ("" if first else ",\n") + "  " + json.dumps(e2)
                first = False
                out.write(line)
                written += len(line)
            copies += 1
        out.write("\n]}\n")
    size = os.path.getsize(args.output)
    print("wrote %s: %.1f MB, %d copies of %d events (%d steps each)" %
          (args.output, size / 1e6, copies, len(events), len(set(steps))), file=sys.stderr)


if __name__ == "__main__":
    main()
