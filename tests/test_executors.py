"""The same sweep through every executor, a real Dask cluster included, gives
the same results."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from fastdiff import render_json
from fastdiff.bench.synth import write_rl_run
from fastdiff.model.results import Report
from fastdiff.options import CompareOptions
from fastdiff.sweep import all_pairs, sweep

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str]]:
    root = tmp_path_factory.mktemp("exec")
    runs = []
    for name, diverge in [
        ("base", None),
        ("same", None),
        ("divF", [(2, "rewards", 3), (2, "advantages", 60)]),
        ("divE", [(0, "isv_full", 756)]),
    ]:
        write_rl_run(root / name, batch=300, steps=3, seed=5, diverge=diverge)
        runs.append(str(root / name))
    return all_pairs(runs)


@pytest.fixture
def port_8787_taken() -> object:
    """Hold Dask's default dashboard port, as another program on the machine
    may: no test may depend on a fixed port being free."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("", 8787))
        except OSError:
            yield None  # someone else holds it already: the same situation
            return
        s.listen()
        yield s


def payload(reports: list[Report]) -> list[str]:
    return [render_json(r.replace(work=type(r.work)())) for r in reports]


# A small chunk size: files have several chunks, and differing ones are scanned.
OPTS = CompareOptions(chunk_size=256)


def test_every_executor_gives_identical_results(
    pairs: list[tuple[str, str]], port_8787_taken: object
) -> None:
    distributed = pytest.importorskip("distributed")
    serial, s0 = sweep(pairs, OPTS.replace(executor="serial"))
    assert (s0.identical, s0.diverged, s0.error) == (1, 5, 0)
    expected = payload(serial)
    for kind in ("thread", "process"):
        got, _ = sweep(pairs, OPTS.replace(executor=kind, jobs=2))
        assert payload(got) == expected, (kind, [r.errors[:1] for r in got])
    with (
        # dashboard_address=None still binds 8787; ":0" lets the OS pick a free port.
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        got, _ = sweep(pairs, OPTS, executor=client.get_executor(pure=False))
        assert payload(got) == expected, "dask"
        assert {r.work.executor for r in got} == {"external"}
        # The CLI, through the scheduler's address.
        flat = sorted({p for pair in pairs for p in pair})
        cmd = [sys.executable, "-m", "fastdiff", "sweep", "--all", *flat, "--no-cache"]
        cmd += ["--executor", "dask", "--scheduler", cluster.scheduler_address]
        cmd += ["--chunk-size", "256"]
        r = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=300,
            env=dict(os.environ),
            check=False,
        )
        assert r.returncode == 1, r.stderr
        records = [json.loads(line) for line in r.stdout.splitlines()]
        assert records[-1]["pairs"] == 6 and records[-1]["diverged"] == 5


def test_dask_executor_needs_a_scheduler() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "fastdiff", "sweep", "--all", "a", "b", "--executor", "dask"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert r.returncode == 2
    assert r.stderr == "fastdiff: error: --executor dask needs --scheduler tcp://HOST:PORT\n"
