#!/usr/bin/env python3
"""Regenerates (or checks) the command outputs that README.md and docs/*.md quote.

A quoted output is a fenced block right after a marker line naming the command that prints it:

    <!-- output: stepcast predict examples/resnet50-ps.yaml --workers 1,2,4,8,16 -->
    ```
    ...what the command prints...
    ```

`stepcast` is the built binary (--binary). An optional `| lines SPEC` after the command keeps
some lines only: SPEC is a comma-separated list of 1-based line numbers or ranges (`3`, `1-5`,
`9-`) and `...`, which stands for a line `...` in the block (lines left out). The commands run in
the repository's root with the environment's locale set to C.

    scripts/doc-outputs.py --binary build/release/stepcast --check    # exit 1 naming each stale block
    scripts/doc-outputs.py --binary build/release/stepcast --update   # rewrite the blocks in place
"""
import argparse
import os
import pathlib
import re
import shlex
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^<!-- output: (.+?) -->\s*$")


def select(lines, spec, where):
    """The lines kept by SPEC (see the module's doc)."""
    if spec is None:
        return lines
    kept = []
    for item in (part.strip() for part in spec.split(",")):
        if item == "...":
            kept.append("...")
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d*))?", item)
        if not m:
            raise SystemExit(f"{where}: 'lines {spec}': '{item}' is not N, N-M, N- or ...")
        first = int(m.group(1))
        last = first if m.group(2) is None else (int(m.group(2)) if m.group(2) else len(lines))
        if first < 1 or last > len(lines) or first > last:
            raise SystemExit(f"{where}: 'lines {spec}': {item} is outside the output's {len(lines)} lines")
        kept.extend(lines[first - 1 : last])
    return kept


def run(command, binary, where):
    spec = None
    if " | lines " in command:
        command, spec = command.split(" | lines ", 1)
    argv = shlex.split(command)
    if not argv or argv[0] != "stepcast":
        raise SystemExit(f"{where}: the command must start with 'stepcast': {command}")
    env = dict(os.environ, LC_ALL="C")
    done = subprocess.run([str(binary)] + argv[1:], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"{where}: '{command}' exited with {done.returncode}:\n{done.stderr}")
    return select(done.stdout.rstrip("\n").split("\n"), spec, where)


def process(path, binary, update):
    """Stale blocks of one file as (line, command); rewrites the file with --update."""
    lines = path.read_text(encoding="utf-8").split("\n")
    out, stale, i = [], [], 0
    while i < len(lines):
        out.append(lines[i])
        m = MARKER.match(lines[i])
        i += 1
        if not m:
            continue
        where = f"{path.relative_to(ROOT)}:{i}"
        if i >= len(lines) or not lines[i].startswith("```"):
            raise SystemExit(f"{where}: an output marker must be followed by a fenced block")
        end = i + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if end == len(lines):
            raise SystemExit(f"{where}: the fenced block after the marker is not closed")
        quoted = lines[i + 1 : end]
        fresh = run(m.group(1), binary, where)
        if fresh != quoted:
            stale.append((i, m.group(1)))
        out.append(lines[i])
        out.extend(fresh if update else quoted)
        out.append(lines[end])
        i = end + 1
    if update and stale:
        path.write_text("\n".join(out), encoding="utf-8")
    return stale


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True, type=pathlib.Path, help="the stepcast binary")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="exit 1 when a quoted output differs")
    mode.add_argument("--update", action="store_true", help="rewrite the quoted outputs")
    args = parser.parse_args()
    binary = args.binary.resolve()
    if not binary.is_file():
        raise SystemExit(f"--binary {args.binary}: no such file (build it first)")
    files = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
    stale = []
    for path in files:
        for line, command in process(path, binary, args.update):
            stale.append(f"{path.relative_to(ROOT)}:{line}: {command}")
    for s in stale:
        print(("updated " if args.update else "stale: ") + s)
    if stale and args.check:
        print("regenerate with: scripts/doc-outputs.py --binary build/release/stepcast --update")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
