# The Python module (python/stepcast_module.cpp): every function against the command's --json
# for the same inputs, closed forms and counts derived here, and errors that name their key.
# Run with the module and the command of one build: make test-python, or ctest --preset release -L python.
import json
import math
import os
import pathlib
import subprocess
import sys
import threading
import time

import pytest

import stepcast

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "resnet50-ps.yaml"
BINARY = os.environ.get("STEPCAST_BINARY", str(ROOT / "build" / "python" / "stepcast"))
# Fewer simulated steps: the same model, faster tests.
QUICK = {"steps.warmup": 1, "steps.measure": 2}
QUICK_SETS = ["--set", "steps.warmup=1", "--set", "steps.measure=2"]


def cli_json(*args):
    """Runs the stepcast command of this build and parses what --json prints."""
    done = subprocess.run([BINARY, *map(str, args), "--json"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# The example as a dict: the file's keys nested as in it.
EXAMPLE_DICT = {
    "name": "resnet50-ps-sync",
    "workload": {"model": "resnet50", "batch_per_worker": 64, "single_worker_throughput": 367, "precision": "fp32"},
    "cluster": {"workers": 8, "nic_bandwidth": "10Gbps", "link_latency": "20us"},
    "training": {
        "scheme": "ps",
        "mode": "sync",
        "ps": {"count": 2, "partition": "whole", "placement": "dedicated", "order": "random", "apply_time": "20us"},
    },
    "predictor": "fine",
    "steps": {"warmup": 2, "measure": 5},
    "seed": 1,
}


# ---- predict --------------------------------------------------------------------------------


def test_predict_a_file_at_each_worker_count():
    p = stepcast.predict(EXAMPLE, workers=[1, 4, 8], set=QUICK)
    assert len(p) == 3 and [r.workers for r in p] == [1, 4, 8]
    assert p.name == "resnet50-ps-sync (steps.warmup=1, steps.measure=2)"
    for r in p.results:
        assert r.predictor == "fine"
        assert r.step_time_s > 0
        # The speed-up is over one worker without communication: 367 samples/s, the file's own.
        assert r.speedup == pytest.approx(r.throughput_samples_per_s / 367, rel=1e-9)
        assert r.efficiency == pytest.approx(r.speedup / r.workers, rel=1e-9)
        parts = r.breakdown_s
        assert parts["compute"] + parts["communication_exposed"] + parts["wait"] == pytest.approx(r.step_time_s)
        assert r.config == {}
    # Every key of the JSON is an attribute.
    for key, value in p.results[0].to_dict().items():
        assert getattr(p.results[0], key) == value
    assert p.results[1].throughput_samples_per_s > p.results[0].throughput_samples_per_s
    assert p.to_dict()["predictions"] == [r.to_dict() for r in p]
    assert "resnet50-ps-sync" in p.table()


def test_predict_default_workers_and_path_types():
    by_str = stepcast.predict(str(EXAMPLE), set=QUICK, predictor="coarse")
    by_path = stepcast.predict(EXAMPLE, set=QUICK, predictor="coarse")
    assert [r.workers for r in by_str] == [8]  # cluster.workers of the file
    assert by_str.to_dict() == by_path.to_dict()
    assert stepcast.predict(EXAMPLE, workers=4, set=QUICK, predictor="coarse").results[0].workers == 4


def test_set_predictor_and_seed_are_overrides():
    one = stepcast.predict(EXAMPLE, workers=[8], set={**QUICK, "training.ps.count": 1}, predictor="analytic")
    four = stepcast.predict(EXAMPLE, workers=[8], set={**QUICK, "training.ps.count": 4}, predictor="analytic")
    assert one.scenario["training"]["ps"]["count"] == 1
    assert four.scenario["training"]["ps"]["count"] == 4
    assert one.results[0].predictor == "analytic"
    # Four servers share the gradients' traffic that one server carries alone.
    assert four.results[0].throughput_samples_per_s > one.results[0].throughput_samples_per_s
    as_list = stepcast.predict(EXAMPLE, workers=[8], set=["steps.warmup=1", "steps.measure=2", "training.ps.count=4"],
                               predictor="analytic")
    assert as_list.to_dict() == four.to_dict()
    seeded = stepcast.predict(EXAMPLE, workers=[8], set=QUICK, seed=7)
    assert seeded.scenario["seed"] == 7


def test_a_dict_scenario_predicts_like_the_file():
    from_file = stepcast.predict(EXAMPLE, workers=[2, 8], set=QUICK)
    from_dict = stepcast.predict(EXAMPLE_DICT, workers=[2, 8], set=QUICK)
    assert from_dict.to_dict() == from_file.to_dict()
    # Dotted keys work as well as nesting, and a dict without `name` is called <dict>.
    flat = {"workload": EXAMPLE_DICT["workload"], "cluster.nic_bandwidth": "10Gbps", "cluster.link_latency": "20us",
            "training.scheme": "ps", "training.mode": "sync",
            "training.ps": EXAMPLE_DICT["training"]["ps"], "predictor": "fine", "seed": 1}
    p = stepcast.predict(flat, workers=[8], set=QUICK)
    assert p.name.startswith("<dict>")
    assert p.results[0].to_dict() == from_file.results[1].to_dict()


def test_a_set_is_checked_at_the_workers_given_and_may_need_the_swept_values():
    # As `stepcast predict`: a global batch of 1,344 is valid at 1,344 GPUs (42 replicas), though
    # not at the file's 10,752; and interleaving set with its chunks swept is valid at every point.
    gpt3 = ROOT / "examples" / "gpt3-175b-3d.yaml"
    p = stepcast.predict(gpt3, workers=[1344], set={"workload.global_batch": 1344}, predictor="analytic",
                         sweep={"training.parallel.virtual_stages": [4, 12]})
    assert [r.to_dict()["layout"] for r in p] == ["tp4 cp1 pp8 vp4 dp42", "tp4 cp1 pp8 vp12 dp42"]
    plan = ROOT / "examples" / "llama3-70b-plan.yaml"
    q = stepcast.predict(plan, set={"training.pipeline.schedule": "interleaved"}, predictor="analytic",
                         sweep={"training.parallel.virtual_stages": [2, 4]})
    assert len(q) == 2


def test_sweep_puts_each_configuration_in_its_results_and_rows():
    p = stepcast.predict(EXAMPLE, workers=[2, 4], set=QUICK, predictor="coarse",
                         sweep={"training.ps.count": "1..4", "cluster.nic_bandwidth": ["10Gbps", "25Gbps"]})
    assert len(p) == 3 * 2 * 2
    configs = [(r.config["training.ps.count"], r.config["cluster.nic_bandwidth"], r.workers) for r in p]
    assert configs == [(c, b, n) for c in (1, 2, 4) for b in ("10Gbps", "25Gbps") for n in (2, 4)]
    rows = p.rows()
    assert [(row["training.ps.count"], row["cluster.nic_bandwidth"], row["workers"]) for row in rows] == configs
    for row, r in zip(rows, p):
        assert row["step_time_s"] == r.step_time_s
        assert row["throughput_samples_per_s"] == r.throughput_samples_per_s
        assert row["compute_s"] == r.breakdown_s["compute"]
    # Each configuration equals the prediction with that setting given alone.
    alone = stepcast.predict(EXAMPLE, workers=[2, 4], set={**QUICK, "training.ps.count": 2,
                                                            "cluster.nic_bandwidth": "25Gbps"}, predictor="coarse")
    assert [r.step_time_s for r in p.results[6:8]] == [r.step_time_s for r in alone]
    # Threads do not change the answer.
    one_thread = stepcast.predict(EXAMPLE, workers=[2, 4], set=QUICK, predictor="coarse", jobs=1,
                                  sweep={"training.ps.count": "1..4", "cluster.nic_bandwidth": ["10Gbps", "25Gbps"]})
    assert one_thread.to_dict() == p.to_dict()


@pytest.mark.parametrize("python_args, cli_args", [
    (dict(workers=[1, 4, 8], set=QUICK), ["--workers", "1,4,8", *QUICK_SETS]),
    (dict(workers=[8], set={**QUICK, "training.ps.count": 4}, predictor="coarse"),
     ["--workers", "8", *QUICK_SETS, "--set", "training.ps.count=4", "--predictor", "coarse"]),
    (dict(workers=[2, 8], set=QUICK, sweep={"training.ps.count": [1, 4], "cluster.nic_bandwidth": "10Gbps,25Gbps"},
          jobs=2),
     ["--workers", "2,8", *QUICK_SETS, "--sweep", "training.ps.count=1,4", "--sweep",
      "cluster.nic_bandwidth=10Gbps,25Gbps", "--jobs", "2"]),
    (dict(set=QUICK, seed=3), [*QUICK_SETS, "--seed", "3"]),
])
def test_predictions_equal_the_commands_json(python_args, cli_args):
    assert stepcast.predict(EXAMPLE, **python_args).to_dict() == cli_json("predict", EXAMPLE, *cli_args)


def test_a_decoder_has_tokens_and_memory():
    llama = ROOT / "examples" / "llama3-8b-fsdp.yaml"
    p = stepcast.predict(llama, predictor="coarse")
    assert p.to_dict() == cli_json("predict", llama, "--predictor", "coarse")
    r = p.results[0]
    assert r.tokens_per_s > 0 and 0 < r.mfu < 1
    assert r.memory_per_worker_bytes["total"] > 0
    m = r.memory_per_worker_bytes
    # The defaults: a pool of which 10% holds no tensor, and 1.1 GB outside it, once per GPU (in
    # whole bytes: the JSON rounds them).
    assert m["allocated"] == m["total"]
    assert m["reserved"] == pytest.approx(m["allocated"] / 0.9 + 1.1e9, abs=0.5)
    assert p.compute_source != ""


def test_result_attributes_are_the_keys_of_the_json():
    # Result's attributes are listed by hand (kPredictionKeys): every key write_json gives a
    # prediction must be one, and every attribute a key of some prediction.
    keys = set()
    for scenario, kwargs in (("resnet50-ps.yaml", {"set": QUICK}),
                             ("resnet50-ps-async.yaml", {"set": QUICK}),
                             ("llama3-8b-fsdp.yaml", {"predictor": "coarse",
                                                      "set": {"cluster.cost.gpu_hour": 2, "workload.tokens": 1e9}}),
                             ("gpt3-175b-3d.yaml", {"predictor": "coarse"}),
                             ("mixtral-8x7b-ep.yaml", {"predictor": "coarse"})):
        for r in stepcast.predict(ROOT / "examples" / scenario, **kwargs):
            d = r.to_dict()
            keys |= set(d)
            for key in d:
                assert hasattr(r, key), (scenario, key)
    attributes = {name for name, value in vars(stepcast.Result).items()
                  if isinstance(value, property) and name != "config"}
    assert attributes <= keys, attributes - keys


def test_to_pandas_has_a_row_per_configuration_and_worker_count(tmp_path):
    pandas = pytest.importorskip("pandas")
    p = stepcast.predict(EXAMPLE, workers=[2, 8], set=QUICK, predictor="coarse", sweep={"training.ps.count": "1..4"})
    df = p.to_pandas()
    assert len(df) == 3 * 2
    for column in ("workers", "predictor", "step_time_s", "throughput_samples_per_s", "speedup", "efficiency",
                   "compute_s", "communication_exposed_s", "wait_s", "bytes_sent", "bottleneck",
                   "memory_per_worker_bytes", "memory_reserved_bytes", "training.ps.count"):
        assert column in df.columns
    assert df["training.ps.count"].tolist() == [1, 1, 2, 2, 4, 4]
    assert df["workers"].tolist() == [2, 8, 2, 8, 2, 8]
    assert df["throughput_samples_per_s"].tolist() == [r.throughput_samples_per_s for r in p]
    # The columns and numbers of `stepcast predict --csv`.
    csv = tmp_path / "p.csv"
    cli_json("predict", EXAMPLE, "--workers", "2,8", *QUICK_SETS, "--predictor", "coarse", "--sweep",
             "training.ps.count=1..4", "--csv", csv)
    from_cli = pandas.read_csv(csv, float_precision="round_trip")
    assert list(df.columns) == list(from_cli.columns)
    assert csv.read_text() == p.to_csv()
    for column in ("step_time_s", "throughput_samples_per_s", "efficiency", "bytes_sent", "memory_per_worker_bytes"):
        assert df[column].tolist() == from_cli[column].tolist()


def test_to_pandas_without_pandas_says_so(monkeypatch):
    p = stepcast.predict(EXAMPLE, workers=[2], set=QUICK, predictor="analytic")
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` now raises ImportError
    with pytest.raises(ImportError, match="needs pandas"):
        p.to_pandas()
    assert p.rows()[0]["workers"] == 2


def test_the_gil_is_released_while_predicting():
    done = []
    worker = threading.Thread(target=lambda: done.append(
        stepcast.predict(EXAMPLE, workers=[16, 32], sweep={"training.ps.count": [1, 2, 4, 8]}, jobs=1)))
    ticks = 0
    start = time.monotonic()
    worker.start()
    while worker.is_alive():
        ticks += 1
        time.sleep(0.001)
    elapsed = time.monotonic() - start
    assert done and len(done[0]) == 8
    # About 0.4 s of predictions: held, the GIL would stop this loop for all of it.
    assert elapsed > 0.05 and ticks > 20, (ticks, elapsed)


# ---- collective ------------------------------------------------------------------------------


def test_ring_allreduce_on_a_switch_is_the_closed_form():
    for n in (2, 8, 64):
        c = stepcast.collective(size=100e6, workers=n, nic_bandwidth="10Gbps", latency="5us")
        a, b, s = 5e-6, 10e9 / 8, 100e6  # s, bytes/s each way, bytes per worker
        expected = 2 * (n - 1) * (a + s / (n * b))
        assert c["time_s"] == pytest.approx(expected, rel=1e-9)
        assert c["op"] == "allreduce" and c["algorithm"] == "ring" and c["topology"] == "switch"
        assert c["workers"] == n and c["size_bytes"] == s
        assert c["algbw_GBps"] == pytest.approx(s / c["time_s"] / 1e9, rel=1e-9)
        assert c["busbw_GBps"] == pytest.approx(c["algbw_GBps"] * 2 * (n - 1) / n, rel=1e-9)


def test_collective_equals_the_commands_json():
    assert stepcast.collective() == cli_json("collective")
    assert stepcast.collective(op="allgather", size="64MiB", workers=16) == cli_json(
        "collective", "--op", "allgather", "--size", "64MiB", "--workers", "16")
    assert stepcast.collective(algorithm="tree", size=1 << 20, workers=32, workers_per_node=8) == cli_json(
        "collective", "--algorithm", "tree", "--size", "1048576B", "--workers", "32", "--workers-per-node", "8")
    # The cluster of a scenario, a file or a dict.
    from_file = stepcast.collective(scenario=EXAMPLE, size="25MB")
    assert from_file == cli_json("collective", "--scenario", EXAMPLE, "--size", "25MB")
    assert stepcast.collective(scenario=EXAMPLE_DICT, size="25MB") == from_file
    assert from_file["workers"] == 8
    assert stepcast.collective(scenario=EXAMPLE, set={"cluster.workers": 4}, size="25MB")["workers"] == 4
    # NCCL's protocol model, chosen or given: the module once ran `auto` on the bare links (2.56 ms)
    # where the command ran NCCL's Simple (2.63 ms); both now call sweep::run_collective.
    for extra, args in (({"algorithm": "auto"}, ["--algorithm", "auto"]),
                        ({"algorithm": "tree", "protocol": "ll128"}, ["--algorithm", "tree", "--protocol", "ll128"]),
                        ({"protocol": "simple", "workers": 64, "workers_per_node": 8},
                         ["--protocol", "simple", "--workers", "64", "--workers-per-node", "8"])):
        python = stepcast.collective(size="32MB", **extra)
        assert python == cli_json("collective", "--size", "32MB", *args), extra
    auto = stepcast.collective(size="32MB", algorithm="auto")
    links = stepcast.collective(size="32MB", algorithm="auto", protocol="links")
    assert auto["time_s"] != links["time_s"]  # auto is NCCL's model, not the bare links


def test_collective_errors_name_the_option_of_each_front_end():
    for python_kwargs, cli_args, python_key, cli_key in (
            ({"workers_per_node": 0}, ["--workers-per-node", "0"], "workers_per_node", "--workers-per-node"),
            ({"protocol": "fast"}, ["--protocol", "fast"], "protocol", "--protocol"),
            ({"nic_bandwidth": "10"}, ["--nic-bandwidth", "10"], "nic_bandwidth", "--nic-bandwidth")):
        with pytest.raises(stepcast.Error) as caught:
            stepcast.collective(**python_kwargs)
        assert caught.value.key == python_key, caught.value
        done = subprocess.run([BINARY, "collective", *cli_args], capture_output=True, text=True, check=False)
        assert done.returncode == 2 and cli_key in done.stderr, done.stderr


# ---- advise ----------------------------------------------------------------------------------


def test_advise_answers_the_cheapest_point_that_meets_the_target():
    vary = {"training.ps.count": "1..8", "cluster.nic_bandwidth": ["10Gbps", "25Gbps", "100Gbps"]}
    a = stepcast.advise(EXAMPLE, vary=vary, target_efficiency=0.8, workers=8, set=QUICK)
    d = a.to_dict()
    assert d == cli_json("advise", EXAMPLE, "--vary", "training.ps.count=1..8", "--vary",
                         "cluster.nic_bandwidth=10Gbps,25Gbps,100Gbps", "--target-efficiency", "0.8",
                         "--workers", "8", *QUICK_SETS)
    assert a.feasible and a.target == {"efficiency": 0.8, "throughput_samples_per_s": None}
    answer = a.cheapest[0]
    assert answer["meets"] and answer["prediction"]["efficiency"] >= 0.8
    assert len(a.grid) == 4 * 3
    for point in a.grid:
        # Cost: the values' positions in their lists.
        position = [1, 2, 4, 8].index(point["config"]["training.ps.count"]) + \
            ["10Gbps", "25Gbps", "100Gbps"].index(point["config"]["cluster.nic_bandwidth"])
        assert point["cost"] == position
        assert point["meets"] == (point["prediction"]["efficiency"] >= 0.8)
        if point["cost"] < answer["cost"]:
            assert not point["meets"], point["config"]
    assert "cheapest that meets" in a.text()


def test_advise_by_throughput_and_from_a_dict():
    a = stepcast.advise(EXAMPLE_DICT, vary={"training.ps.count": [1, 2, 4]}, target_throughput=1e9, set=QUICK)
    assert not a.feasible and a.cheapest == []
    assert a.best_point["config"]["training.ps.count"] in (1, 2, 4)
    b = stepcast.advise(EXAMPLE, vary={"training.ps.count": [1, 2, 4]}, target_throughput=1e9, set=QUICK)
    assert a.to_dict()["grid"] == b.to_dict()["grid"]


# ---- plan ------------------------------------------------------------------------------------

# A toy decoder on toy 1 GB GPUs: some layouts fit, some do not, the search takes a second.
PLAN_DICT = {
    "name": "tiny",
    "workload": {
        "transformer": {"layers": 4, "hidden": 512, "ffn_hidden": 2048, "heads": 8, "kv_heads": 4, "vocab": 32000},
        "seq_len": 1024, "precision": "bf16", "compute_efficiency": 0.4, "global_batch": 32,
    },
    "cluster": {
        "workers": 16, "workers_per_node": 8, "nics_per_node": 8, "nic_bandwidth": "200Gbps",
        "intra_node": {"bandwidth": "300GB/s", "latency": "2us"}, "gpu_memory": "1GB",
        "gpu": {"peak_flops": "312TFLOPS", "memory_bandwidth": "2TB/s", "memory_reserved": "100MB"},
    },
    "training": {"scheme": "allreduce"},
    "steps": {"warmup": 1, "measure": 1},
}


def test_plan_equals_the_commands_json(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(json.dumps(PLAN_DICT))  # JSON is YAML
    p = stepcast.plan(PLAN_DICT, gpus=[8, 16], top=3)
    assert p.to_dict() == cli_json("plan", path, "--gpus", "8,16", "--top", "3")
    # Every ranked layout fits: its reserved memory is within the GPU's.
    for count in p.to_dict()["counts"]:
        assert count["ranked"], count
        for row in count["ranked"]:
            fine = row["prediction"]
            assert fine["fits"] is True, row["label"]
            assert fine["memory_per_worker_bytes"]["reserved"] <= fine["gpu_memory_bytes"], row["label"]
    assert p.text().startswith("scenario: tiny\n")


def test_reports_are_the_commands_pages_byte_for_byte(tmp_path):
    # predict, advise and plan: report(path) writes what the command's --report writes.
    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(json.dumps(PLAN_DICT))  # JSON is YAML
    cases = [
        (stepcast.predict(EXAMPLE, workers=[1, 2, 4], set=QUICK),
         ["predict", EXAMPLE, "--workers", "1,2,4", *QUICK_SETS]),
        (stepcast.advise(EXAMPLE, vary={"training.ps.count": [1, 2]}, target_efficiency=0.5, workers=4, set=QUICK),
         ["advise", EXAMPLE, "--vary", "training.ps.count=1,2", "--target-efficiency", "0.5", "--workers", "4",
          *QUICK_SETS]),
        (stepcast.plan(PLAN_DICT, gpus=[8], top=2), ["plan", tiny, "--gpus", "8", "--top", "2"]),
    ]
    for i, (answer, cli_args) in enumerate(cases):
        ours, theirs = tmp_path / f"python-{i}.html", tmp_path / f"cli-{i}.html"
        answer.report(ours)
        done = subprocess.run([BINARY, *map(str, cli_args), "--report", str(theirs)], capture_output=True, text=True,
                              check=False)
        assert done.returncode == 0, done.stderr
        page = ours.read_bytes()
        assert page.startswith(b"<!DOCTYPE html>"), cli_args[0]
        assert page == theirs.read_bytes(), cli_args[0]
    with pytest.raises(stepcast.Error, match="path"):
        cases[0][0].report(tmp_path / "no-such-folder" / "page.html")
    with pytest.raises(TypeError, match="path"):
        cases[0][0].report(42)


def test_plan_errors_name_the_argument_of_each_front_end(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(json.dumps(PLAN_DICT))
    for python_kwargs, cli_args, python_key, cli_key in (
            ({"gpus": [0]}, ["--gpus", "0"], "gpus", "--gpus"),
            ({"rank_by": "speed"}, ["--rank-by", "speed"], "rank_by", "--rank-by"),
            ({"rank_by": "time"}, ["--rank-by", "time"], "rank_by", "--rank-by")):  # no job to time
        e = expect_error(python_key, stepcast.plan, PLAN_DICT, **python_kwargs)
        done = subprocess.run([BINARY, "plan", str(path), *cli_args], capture_output=True, text=True, check=False)
        assert done.returncode == 2 and cli_key in done.stderr, done.stderr
        if python_key == "rank_by":  # the library's message, word for word (gpus: Python's types first)
            assert e.args[0].split(": ", 1)[-1] in done.stderr, (str(e), done.stderr)


# ---- inspect ---------------------------------------------------------------------------------


def test_inspect_equals_the_commands_json():
    for trace in (ROOT / "examples" / "traces" / "small-cnn-ddp-rank0.pt.trace.json",
                  ROOT / "tests" / "fuzz" / "seeds" / "kineto" / "three-steps-ddp.json",
                  ROOT / "tests" / "fuzz" / "seeds" / "tf_timeline" / "worker-gpu.json"):
        i = stepcast.inspect(trace)
        assert i.to_dict() == cli_json("inspect", trace), trace
        done = subprocess.run([BINARY, "inspect", str(trace)], capture_output=True, text=True, check=True)
        assert i.text() == done.stdout
    bad = ROOT / "tests" / "fuzz" / "seeds" / "kineto" / "nowhere.json"
    with pytest.raises(stepcast.Error) as caught:
        stepcast.inspect(bad)
    assert "nowhere.json" in str(caught.value)
    with pytest.raises(TypeError):
        stepcast.inspect(3)


# ---- calibrate -----------------------------------------------------------------------------

SEEDS = ROOT / "tests" / "fuzz" / "seeds"
# A 4-rank sweep from the closed form a = 5 us per ring step, B = 10 GB/s (tests/calibrate/
# calibrate_cli_test.cpp): t = 2 (N - 1) a + 2 (N - 1) / N S / B = 30 us + 1.5 S / 1e10 s.
RING_LOG = "".join(
    f"{size:>12} {size // 4:>12}  float  sum  -1 {30 + 1.5 * size / 1e4:>12.4f}  0.0  0.0  0 "
    f"{30 + 1.5 * size / 1e4:>12.4f}  0.0  0.0  0\n"
    for size in (8, 1 << 20, 1 << 24, 1 << 30))


def cli_run(*args):
    done = subprocess.run([BINARY, *map(str, args)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_calibrate_nccl_tests_equals_the_commands_json(tmp_path):
    log = tmp_path / "ar.log"
    log.write_text(RING_LOG)
    c = stepcast.calibrate_nccl_tests(log, workers=4, workers_per_node=2)
    assert c.to_dict() == cli_json("calibrate", "nccl-tests", log, "--workers", 4, "--workers-per-node", 2)
    assert c.text() == cli_run("calibrate", "nccl-tests", log, "--workers", 4, "--workers-per-node", 2)
    # The closed form's a and B come back.
    assert c.to_dict()["step_latency_s"] == pytest.approx(5e-6, rel=1e-6)
    assert c.to_dict()["bandwidth_Bps"] == pytest.approx(10e9, rel=1e-6)
    for kwargs, args in (
            ({"fit": "least-squares", "min_size": "1KiB"}, ["--fit", "least-squares", "--min-size", "1KiB"]),
            ({"fit": "regimes", "max_regimes": 2}, ["--fit", "regimes", "--max-regimes", 2]),
            ({"in_place": True, "max_size": 1 << 24}, ["--in-place", "--max-size", "16777216B"])):
        python = stepcast.calibrate_nccl_tests(SEEDS / "collective_log" / "nccl-tests.log", workers=8, **kwargs)
        assert python.to_dict() == cli_json("calibrate", "nccl-tests", SEEDS / "collective_log" / "nccl-tests.log",
                                            "--workers", 8, *args), kwargs
    xla = SEEDS / "collective_log" / "xla-table.csv"
    assert stepcast.calibrate_nccl_tests(xla, workers=8, format="xla").to_dict() == cli_json(
        "calibrate", "nccl-tests", xla, "--workers", 8, "--format", "xla")


def test_calibrate_nccl_tests_fits_several_node_counts_as_the_command():
    # Lists of logs and rank counts: the same nodes at several node counts, fitted together.
    log = SEEDS / "collective_log" / "nccl-tests.log"
    python = stepcast.calibrate_nccl_tests([log, log], workers=[8, 16], workers_per_node=2, nics_per_node=2)
    assert python.to_dict() == cli_json("calibrate", "nccl-tests", log, log, "--workers", "8,16",
                                        "--workers-per-node", 2, "--nics-per-node", 2)
    nccl = python.to_dict()["nccl"]
    assert nccl["net_latency_scale"] is not None
    assert [n["nodes"] for n in nccl["node_counts"]] == [4, 8]
    # The NICs' line rate given: B is that, not fitted, as with --nic-bandwidth.
    given = stepcast.calibrate_nccl_tests([log, log], workers=[8, 16], workers_per_node=2, nics_per_node=2,
                                          nic_bandwidth="100Gbps")
    assert given.to_dict() == cli_json("calibrate", "nccl-tests", log, log, "--workers", "8,16",
                                       "--workers-per-node", 2, "--nics-per-node", 2, "--nic-bandwidth", "100Gbps")
    assert given.to_dict()["nccl"]["nic_bandwidth_Bps"] == 12.5e9


def test_calibrate_nccl_tests_writes_the_same_keys(tmp_path):
    log = tmp_path / "ar.log"
    log.write_text(RING_LOG)
    c = stepcast.calibrate_nccl_tests(str(log), workers=4, workers_per_node=2, output=tmp_path / "py" / "c.yaml")
    assert c.to_dict()["output"] == str(tmp_path / "py" / "c.yaml")
    cli_run("calibrate", "nccl-tests", log, "--workers", 4, "--workers-per-node", 2, "-o", tmp_path / "cli.yaml")
    assert (tmp_path / "py" / "c.yaml").read_bytes() == (tmp_path / "cli.yaml").read_bytes()


def test_calibrate_nccl_tests_errors_name_the_argument_of_each_front_end(tmp_path):
    log = tmp_path / "ar.log"
    log.write_text(RING_LOG)
    for python_kwargs, cli_args, python_key, cli_key in (
            ({"workers": 1}, ["--workers", "1"], "workers", "--workers"),
            ({"workers": 4, "workers_per_node": 8}, ["--workers", "4", "--workers-per-node", "8"],
             "workers_per_node", "--workers-per-node"),
            ({"workers": 4, "fit": "regimes", "max_regimes": 0}, ["--workers", "4", "--fit", "regimes",
                                                                   "--max-regimes", "0"],
             "max_regimes", "--max-regimes"),
            ({"workers": 4, "min_size": "lots"}, ["--workers", "4", "--min-size", "lots"], "min_size", "--min-size")):
        e = expect_error(python_key, stepcast.calibrate_nccl_tests, log, **python_kwargs)
        done = subprocess.run([BINARY, "calibrate", "nccl-tests", str(log), *cli_args], capture_output=True,
                              text=True, check=False)
        assert done.returncode == 2 and cli_key in done.stderr, done.stderr
        # The library's message, word for word, but for the options' names.
        assert e.message.replace("[1, workers", "[1, --workers") in done.stderr, (str(e), done.stderr)
    xla = SEEDS / "collective_log" / "xla-table.csv"
    e = expect_error("in_place", stepcast.calibrate_nccl_tests, xla, workers=8, in_place=True)
    assert e.file == str(xla)
    expect_error("fit", stepcast.calibrate_nccl_tests, log, workers=4, fit="best")
    expect_error("format", stepcast.calibrate_nccl_tests, log, workers=4, format="csv")
    with pytest.raises(stepcast.Error) as caught:
        stepcast.calibrate_nccl_tests(tmp_path / "missing.log", workers=4)
    assert "missing.log" in str(caught.value)
    with pytest.raises(TypeError):
        stepcast.calibrate_nccl_tests(3, workers=4)


def gemm_grid_csv(rate=500e12):
    """A bf16 grid 1024..8192 in each dimension at one FLOP rate, with gemm_sweep.py's comments."""
    lines = ["# gpu: NVIDIA H100 80GB HBM3", "# attention_flops: 450.0TFLOPS (causal SDPA)", "m,n,k,dtype,time_us"]
    dims = (1024, 2048, 4096, 8192)
    lines += [f"{m},{n},{k},bf16,{2 * m * n * k / rate * 1e6:.9g}" for m in dims for n in dims for k in dims]
    return "\n".join(lines) + "\n"


def test_calibrate_gemm_equals_the_commands_json(tmp_path):
    rate = 500e12
    table = tmp_path / "h100-gemm.csv"
    table.write_text(gemm_grid_csv(rate))
    # Beside the table, found without `check`: one shape at the table's rate (error 0), one 25%
    # slower than it (predicted 1 / 1.25 - 1 = -20%).
    (tmp_path / "h100-gemm-check.csv").write_text(
        "m,n,k,dtype,time_us\n"
        f"3000,5000,1500,bf16,{2 * 3000 * 5000 * 1500 / rate * 1e6:.9g}\n"
        f"6000,2000,7000,bf16,{1.25 * 2 * 6000 * 2000 * 7000 / rate * 1e6:.9g}\n")
    c = stepcast.calibrate_gemm(table, output=tmp_path / "py.yaml")
    d = c.to_dict()
    assert d == {**cli_json("calibrate", "gemm", table, "-o", tmp_path / "cli.yaml"),
                 "output": str(tmp_path / "py.yaml")}
    # The times are written to 9 significant digits: errors within 1e-8 of the closed form's.
    assert [h["error"] for h in d["held_back"]] == [pytest.approx(0, abs=1e-8), pytest.approx(-0.2, abs=1e-8)]
    assert d["summary"]["max_error"] == pytest.approx(0.2, rel=1e-9)
    assert d["table"]["grids"] == [{"dtype": "bf16", "rows": 64, "m": {"min": 1024, "max": 8192, "count": 4},
                                    "n": {"min": 1024, "max": 8192, "count": 4},
                                    "k": {"min": 1024, "max": 8192, "count": 4}}]
    assert d["attention_flops_per_s"] == 450e12 and d["memory_bandwidth_Bps"] is None
    assert (tmp_path / "py.yaml").read_bytes() == (tmp_path / "cli.yaml").read_bytes()
    assert stepcast.calibrate_gemm(table).text() == cli_run("calibrate", "gemm", table)
    alone = tmp_path / "alone.csv"
    alone.write_text(gemm_grid_csv(rate))
    assert stepcast.calibrate_gemm(alone).to_dict() == cli_json("calibrate", "gemm", alone)
    assert stepcast.calibrate_gemm(alone).to_dict()["summary"] is None
    bad = tmp_path / "bad-check.csv"
    bad.write_text("m,n,k,dtype,time_us\n1024,1024,1024,bf16,-1\n")
    with pytest.raises(stepcast.Error) as caught:
        stepcast.calibrate_gemm(table, check=bad)
    assert caught.value.file == str(bad) and caught.value.line == 2, caught.value


# ---- export ----------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario, args", [
    ("resnet50-ps.yaml", {"workers": 4}),
    ("vgg16-allreduce.yaml", {"workers": 4, "network_dims": 2, "set": {"training.allreduce.bucket_size": "10MB"}}),
])
def test_export_writes_the_commands_files(tmp_path, scenario, args):
    path = ROOT / "examples" / scenario
    e = stepcast.export(path, chakra=tmp_path / "py" / "job", **args)
    cli_args = ["--workers", args["workers"], "--network-dims", args.get("network_dims", 1)]
    for key, value in args.get("set", {}).items():
        cli_args += ["--set", f"{key}={value}"]
    text = cli_run("export", "--chakra", tmp_path / "cli" / "job", path, *cli_args)
    assert e.text() == text.replace(str(tmp_path / "cli"), str(tmp_path / "py"))
    cli_files = sorted((tmp_path / "cli").iterdir())
    assert [f["path"] for f in e.files] == [str(tmp_path / "py" / f.name) for f in cli_files]
    for f in cli_files:
        assert (tmp_path / "py" / f.name).read_bytes() == f.read_bytes(), f.name
    d = e.to_dict()
    assert d["workers"] == 4 and d["prefix"] == str(tmp_path / "py" / "job")
    assert [f["rank"] for f in d["files"]] == list(range(len(cli_files)))
    assert {f["role"] for f in d["files"]} == ({"worker", "ps"} if "ps" in scenario else {"worker"})


def test_export_errors_name_the_argument(tmp_path):
    expect_error("network_dims", stepcast.export, EXAMPLE, chakra=tmp_path / "x", network_dims=9)
    expect_error("chakra", stepcast.export, EXAMPLE, chakra="")
    expect_error("workers", stepcast.export, EXAMPLE, chakra=tmp_path / "x", workers=0)
    e = expect_error("training.scheme", stepcast.export, EXAMPLE_DICT, chakra=tmp_path / "x",
                     set={"training.scheme": "fsdp"})
    assert "fsdp" in str(e)
    expect_error("cluster.workers", stepcast.export, EXAMPLE, chakra=tmp_path / "x", set={"cluster.workers": -1})


# ---- zoo -------------------------------------------------------------------------------------


def test_zoo_is_the_commands_json():
    listed = subprocess.run([BINARY, "zoo", "list", "--json"], capture_output=True, text=True, check=True)
    assert stepcast.zoo() == json.loads(listed.stdout)
    for name in ("resnet50", "llama2-7b", "deepseek-v3"):
        shown = subprocess.run([BINARY, "zoo", "show", name, "--json"], capture_output=True, text=True, check=True)
        assert stepcast.zoo_model(name) == json.loads(shown.stdout), name


def test_zoo_counts():
    models = {m["name"]: m for m in stepcast.zoo()}
    assert models["resnet50"]["parameters"] == 25_557_032
    assert models["llama2-7b"]["parameters"] == 6_738_415_616
    for m in models.values():
        assert set(m) == {"name", "parameters", "tensors", "forward_flops", "description"}
        assert m["tensors"] > 0 and m["forward_flops"] > 0
    resnet = stepcast.zoo_model("resnet50")
    assert sum(layer["parameters"] for layer in resnet["layers"]) == 25_557_032
    assert sum(layer["tensors"] for layer in resnet["layers"]) == resnet["tensors"]
    assert sum(layer["forward_flops"] for layer in resnet["layers"]) == pytest.approx(resnet["forward_flops"])
    llama = stepcast.zoo_model("llama2-7b")
    assert llama["seq_len"] > 0 and llama["flops_per_token_6n"] == 6 * llama["active_parameters"]


# ---- errors ----------------------------------------------------------------------------------


def expect_error(key, call, *args, **kwargs):
    with pytest.raises(stepcast.Error) as caught:
        call(*args, **kwargs)
    e = caught.value
    assert isinstance(e, ValueError)
    assert e.key == key, str(e)
    assert key in str(e)
    return e


def test_errors_name_their_key():
    e = expect_error("cluster.wrkers", stepcast.predict, EXAMPLE, set={"cluster.wrkers": 4})
    assert "unknown key" in str(e)
    e = expect_error("cluster.workers", stepcast.predict, EXAMPLE, set={"cluster.workers": 0})
    assert e.file == "set" and e.line is None
    assert str(e) == f"set: cluster.workers: {e.message}"
    expect_error("cluster.nic_bandwidth", stepcast.predict, EXAMPLE, set={"cluster.nic_bandwidth": "fast"})
    expect_error("predictor", stepcast.predict, EXAMPLE, predictor="exact")
    expect_error("seed", stepcast.predict, EXAMPLE, seed=-1)
    expect_error("jobs", stepcast.predict, EXAMPLE, jobs=-1)
    expect_error("workers", stepcast.predict, EXAMPLE, workers=[0])
    expect_error("workers", stepcast.predict, EXAMPLE, workers=[2, 2])
    expect_error("sweep", stepcast.predict, EXAMPLE, sweep={"training.ps.count": "4..2"})
    e = expect_error("training.ps.count", stepcast.predict, EXAMPLE, set=QUICK, sweep={"training.ps.count": [2, 0]})
    assert "(at training.ps.count=0)" in str(e)
    # A rule broken at one of the counts given names the argument, not the command's --workers.
    e = expect_error("training.parallel.tensor", stepcast.predict, ROOT / "examples" / "llama3-70b-fsdp-tp.yaml",
                     workers=[12], predictor="analytic")
    assert "(at workers 12)" in str(e) and "--workers" not in str(e)
    expect_error("op", stepcast.collective, op="alltoall")
    expect_error("size", stepcast.collective, size="5XB")
    expect_error("size", stepcast.collective, size=0)
    e = expect_error("workers", stepcast.collective, workers=0)
    assert e.file is None
    expect_error("algorithm", stepcast.collective, algorithm="butterfly")
    expect_error("target_efficiency", stepcast.advise, EXAMPLE, vary={"training.ps.count": [1, 2]})
    expect_error("workers", stepcast.advise, EXAMPLE, vary={"training.ps.count": [1, 2]}, target_efficiency=0.5,
                 workers=[2, 4])
    expect_error("name", stepcast.zoo_model, "resnet51")


def test_errors_name_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("workload:\n  model: resnet50\n  step_time: 1s\ncluster:\n  workers: 0\n")
    e = expect_error("cluster.workers", stepcast.predict, bad)
    assert (e.file, e.line) == (str(bad), 5)
    assert str(e).startswith(f"{bad}:5: cluster.workers: ")
    d = {"workload": {"model": "resnet50", "step_time": "1s"}, "cluster": {"workers": 0}}
    e = expect_error("cluster.workers", stepcast.predict, d)
    assert e.file == "<dict>" and e.line == 5
    expect_error("workload.model", stepcast.predict, {"workload": {"model": "resnet51", "step_time": "1s"}})


def test_wrong_python_types_are_type_errors():
    with pytest.raises(TypeError):
        stepcast.predict(42)
    with pytest.raises(TypeError):
        stepcast.predict({1: "x"})
    with pytest.raises(TypeError):
        stepcast.collective(size=[1])
