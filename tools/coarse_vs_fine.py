#!/usr/bin/env python3
"""Coarse against fine on a seeded random set of scenarios, through the CLI (issue 11).

Each scenario is examples/resnet50-ps.yaml with the model, workers, NIC bandwidth, scheme and,
for a parameter server, the order, shards, partition, mode and barrier drawn from a fixed seed.
Prints coarse-vs-fine (throughput, coarse relative to fine) per scenario, worst last, and how
many are beyond 10%.

With --starts, each asynchronous point beyond 10% is run again in fine with its workers started
together and at five seeded random phases (training.ps.async_start), and the range of fine's step
over the six starts and the default is printed: under fair sharing the phases persist, so where
the servers' NICs are the knee fine has no answer independent of them.

With --warmup/--measure every predictor runs with those steps.warmup/steps.measure (the example
has 2 and 5). Coarse predicts the steady state; fine measures the steps it is told to, and in
synchronous random order its workers keep reorganising for about ten steps (one breaks away from
the others, then they settle into groups taking turns on the servers' NICs), so `--warmup 10
--measure 20` compares coarse with fine's settled step, as tf_cnn_benchmarks discards its first
ten steps.

  tools/coarse_vs_fine.py [--binary build/release/stepcast] [--count 40] [--seed 7] [--only TEXT]
                          [--warmup W] [--measure M] [--starts]
"""
import argparse
import json
import pathlib
import random
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def scenarios(count, seed):
    rng = random.Random(seed)
    for _ in range(count):
        model = rng.choice(['resnet50', 'resnet152', 'vgg16', 'alexnet'])
        workers = rng.choice([1, 2, 4, 8, 16, 32, 64])
        bandwidth = rng.choice(['1Gbps', '10Gbps', '25Gbps', '40Gbps', '100Gbps'])
        scheme = rng.choice(['ps', 'ps', 'ps', 'allreduce'])
        order = rng.choice(['random', 'random', 'fifo', 'tic'])
        shards = rng.choice([1, 2, 4, 8])
        partition = rng.choice(['whole', 'split'])
        mode = rng.choice(['sync', 'sync', 'async'])
        barrier = rng.choice(['per_tensor', 'per_tensor', 'step'])
        batch = rng.choice([32, 64])
        args = ['--workers', str(workers), '--set', f'workload.model={model}',
                '--set', f'cluster.nic_bandwidth={bandwidth}', '--set', f'training.scheme={scheme}',
                '--set', f'workload.batch_per_worker={batch}', '--set', 'workload.single_worker_throughput=300']
        name = f'{model} N={workers} {bandwidth} {scheme}'
        if scheme == 'ps':
            if mode == 'async':
                barrier = 'per_tensor'
            args += ['--set', f'training.ps.order={order}', '--set', f'training.ps.count={shards}',
                     '--set', f'training.ps.partition={partition}', '--set', f'training.mode={mode}',
                     '--set', f'training.ps.barrier={barrier}']
            name += f' {mode} {order} P={shards} {partition} {barrier}'
        yield name, args


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--binary', default=str(ROOT / 'build/release/stepcast'))
    parser.add_argument('--count', type=int, default=40)
    parser.add_argument('--seed', type=int, default=7)
    parser.add_argument('--only', help='only scenarios whose name contains this')
    parser.add_argument('--warmup', type=int, help='steps.warmup for every predictor (default: the example\'s)')
    parser.add_argument('--measure', type=int, help='steps.measure for every predictor (default: the example\'s)')
    parser.add_argument('--starts', action='store_true',
                        help='for async points beyond 10%%: fine over start phases')
    options = parser.parse_args()
    rows = []
    for name, args in scenarios(options.count, options.seed):
        if options.only and options.only not in name:
            continue
        if options.warmup is not None:
            args += ['--set', f'steps.warmup={options.warmup}']
        if options.measure is not None:
            args += ['--set', f'steps.measure={options.measure}']
        run = subprocess.run([options.binary, 'predict', str(ROOT / 'examples/resnet50-ps.yaml'),
                              '--predictor', 'all', '--json'] + args, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f'{name}: {run.stderr.strip()}')
        comparison = json.loads(run.stdout)['comparisons'][0]
        step = comparison['step_time_s']
        rows.append((comparison['coarse_vs_fine'], name, step['fine'], step['coarse'], args))
    rows.sort(key=lambda r: abs(r[0]))
    covered = 0
    for relative, name, fine, coarse, args in rows:
        line = f'{relative * 100:+7.1f}%  fine {fine * 1e3:9.1f} ms  coarse {coarse * 1e3:9.1f} ms  {name}'
        if options.starts and abs(relative) > 0.10 and ' async ' in name:
            steps = [fine] + [fine_step(options.binary, args, start, seed)
                              for start, seed in [('together', 1)] + [('random', s) for s in range(1, 6)]]
            low, high = min(steps), max(steps)
            inside = 0.9 * low <= coarse <= 1.1 * high
            covered += inside
            line += (f'  [fine over starts and seeds {low * 1e3:.1f}-{high * 1e3:.1f} ms, '
                     f'{"coarse within 10%" if inside else "coarse outside"}]')
        print(line)
    beyond = sum(1 for r in rows if abs(r[0]) > 0.10)
    print(f'{beyond} of {len(rows)} beyond 10%')
    if options.starts:
        print(f'{covered} of them asynchronous with coarse within 10% of the range of fine over starts and seeds')


def fine_step(binary, args, start, seed):
    run = subprocess.run([binary, 'predict', str(ROOT / 'examples/resnet50-ps.yaml'), '--predictor', 'fine',
                          '--json', '--seed', str(seed), '--set', f'training.ps.async_start={start}'] + args,
                         capture_output=True, text=True, check=True)
    return json.loads(run.stdout)['predictions'][0]['step_time_s']


if __name__ == '__main__':
    main()
