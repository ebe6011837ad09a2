"""Values beside the tensors (issue 25, section 2): numbers, booleans and None
are state, strings and bytes labels; ``--ignore`` leaves buffers and values
out. Checkpoints are written by torch itself; an independent oracle (torch's
own loader, plain Python) checks every value's fields in the JSON report."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import fastdiff  # noqa: E402


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fastdiff", *args], capture_output=True, text=True, timeout=300
    )


def report(a: str, b: str, *extra: str) -> tuple[int, dict]:
    r = cli("compare", a, b, "--format", "json", *extra)
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, json.loads(r.stdout)


def by_name(rep: dict) -> dict[str, dict]:
    return {b["name"]: b for b in rep["buffers"]}


STAND_IN = """
class LossScaler:
    def __init__(self, scale):
        self.cur_scale = scale
        self.cur_iter = 7
        self.dynamic = True
"""


def _stand_in(tmp_path, monkeypatch):
    """A module ``deepspeed.runtime.fp16.loss_scaler`` on sys.path at save time only."""
    root = tmp_path / "standin"
    pkg = root / "deepspeed" / "runtime" / "fp16"
    pkg.mkdir(parents=True)
    for d in (root / "deepspeed", root / "deepspeed" / "runtime", pkg):
        (d / "__init__.py").write_text("")
    (pkg / "loss_scaler.py").write_text(STAND_IN)
    monkeypatch.syspath_prepend(str(root))
    import importlib

    return importlib.import_module("deepspeed.runtime.fp16.loss_scaler")


def _checkpoint(lr: float, step: int, out: str, scale: float, mod) -> dict:
    import argparse

    rng = np.random.RandomState(0)
    return {
        "module": {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3)},
        "args": argparse.Namespace(lr=lr, save=out, fp16=True, seed=None),
        "iteration": step,
        "loss_scaler": mod.LossScaler(scale),
        "np_rng_state": rng.get_state(),
        "tag": b"run-1",
    }


@pytest.fixture
def pair(tmp_path, monkeypatch):
    mod = _stand_in(tmp_path, monkeypatch)

    def write(name: str, **kw) -> str:
        args = {"lr": 1e-3, "step": 100, "out": "/ckpt/a", "scale": 65536.0, **kw}
        path = str(tmp_path / name)
        torch.save(_checkpoint(args["lr"], args["step"], args["out"], args["scale"], mod), path)
        return path

    yield write
    for m in [m for m in sys.modules if m == "deepspeed" or m.startswith("deepspeed.")]:
        del sys.modules[m]


def test_values_that_differ_diverge_with_both_values(pair):
    a, b = pair("a.pt"), pair("b.pt", lr=2e-3, step=101)
    code, rep = report(a, b)
    assert code == 1 and rep["verdict"] == "diverged" and rep["first_divergent_step"] == 0
    got = by_name(rep)
    lr, it = got["args.lr"], got["iteration"]
    assert (lr["dtype"], lr["status"], lr["a"], lr["b"]) == ("value", "diverged", 1e-3, 2e-3)
    assert (it["dtype"], it["status"], it["a"], it["b"]) == ("value", "diverged", 100, 101)
    assert "args.lr" in next(g for g in rep["groups"] if g["key"] == "args")["diverged"]
    # the stand-in class is a record: its state compared as values
    assert got["loss_scaler.cur_scale"]["status"] == "equal"
    assert got["loss_scaler.cur_scale"]["a"] == 65536.0
    assert got["args.seed"]["a"] is None and got["args.fp16"]["a"] is True
    # numpy's RNG state: its array a buffer, its name a label
    assert got["np_rng_state.1"]["dtype"] == "u32"
    assert got["np_rng_state.0"] == {**got["np_rng_state.0"], "dtype": "label", "a": "MT19937"}
    text = cli("compare", a, b).stdout
    assert "args.lr [value]  DIVERGED: A=0.001 B=0.002" in text
    assert "iteration [value]  DIVERGED: A=100 B=101" in text


def test_a_label_that_differs_is_listed_but_identical(pair):
    a, b = pair("a.pt"), pair("b.pt", out="/ckpt/b")
    code, rep = report(a, b)
    assert code == 0 and rep["verdict"] == "identical"
    save = by_name(rep)["args.save"]
    assert (save["dtype"], save["status"], save["a"], save["b"]) == (
        "label", "label_differs", "/ckpt/a", "/ckpt/b"
    )  # fmt: skip
    assert by_name(rep)["tag"]["a"] == "run-1"  # bytes as text
    r = cli("compare", a, b)
    assert r.returncode == 0
    assert "args.save [label]  LABEL DIFFERS: A='/ckpt/a' B='/ckpt/b'" in r.stdout


def test_ignore_leaves_values_out_and_says_how_many(pair, tmp_path):
    a, b = pair("a.pt"), pair("b.pt", lr=2e-3, step=101)
    code, rep = report(a, b, "--ignore", "args.*", "--ignore", "iteration")
    assert code == 0, rep
    names = by_name(rep)
    assert not [n for n in names if n.startswith("args.") or n == "iteration"]
    assert any("5 buffers and values left out" in n for n in rep["notes"])
    schema = tmp_path / "s.toml"
    schema.write_text(textwrap.dedent('''
        name = "ds"
        ignore = ["args.lr", "iter*"]
        [[group]]
        key = "model"
        members = { "module.*" = "f32" }
    '''))  # fmt: skip
    code, rep = report(a, b, "--schema", str(schema))
    assert code == 0 and any("2 buffers and values left out" in n for n in rep["notes"])
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nignore = "args.*"\n')
    r = cli("compare", a, b, "--schema", str(bad))
    assert r.returncode == 2 and "ignore" in r.stderr and "Traceback" not in r.stderr


def test_api_values_and_ignore(pair):
    a, b = pair("a.pt"), pair("b.pt", lr=2e-3)
    rep = fastdiff.compare_runs(a, b)
    lr = next(x for x in rep.buffers if x.name == "args.lr")
    assert (lr.status, lr.a, lr.b) == ("diverged", 1e-3, 2e-3)
    rep = fastdiff.compare_runs(a, b, fastdiff.CompareOptions(ignore=("args.lr",)))
    assert rep.verdict == "identical"


def test_values_in_a_run_folder(tmp_path):
    for side, lr in (("a", 0.1), ("b", 0.1)):
        d = tmp_path / side
        d.mkdir()
        for step in (0, 1):
            torch.save({"w": torch.ones(2), "lr": lr if step == 0 or side == "a" else 0.2,
                        "name": f"host-{side}"}, d / f"step_{step}.pt")  # fmt: skip
    code, rep = report(str(tmp_path / "a"), str(tmp_path / "b"))
    assert code == 1 and rep["first_divergent_step"] == 1
    lr1 = next(b for b in rep["buffers"] if b["name"] == "lr" and b["step"] == 1)
    assert (lr1["a"], lr1["b"]) == (0.1, 0.2)


def test_hostile_pickles_stay_inert(tmp_path):
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    for side in ("a", "b"):
        torch.save({"w": torch.ones(1), "x": Evil()}, tmp_path / f"{side}.pt")
    code, rep = report(str(tmp_path / "a.pt"), str(tmp_path / "b.pt"))
    assert code == 0 and not marker.exists()
    x = by_name(rep)["x.0"]
    assert x["dtype"] == "label" and x["a"] == f"touch {marker}"
    assert any("os.system" in s["reason"] or "posix.system" in s["reason"]
               for s in rep["skipped"])  # fmt: skip
    # deep nesting and a bomb: refused with one line, nothing run
    deep: object = 1
    for _ in range(150):
        deep = [deep]
    torch.save({"deep": deep}, tmp_path / "deep.pt")
    r = cli("compare", str(tmp_path / "deep.pt"), str(tmp_path / "deep.pt"))
    assert r.returncode == 2 and "nested" in r.stderr and "Traceback" not in r.stderr
    shared: list[object] = [0.5] * 64
    for _ in range(12):
        shared = [shared] * 64
    torch.save({"bomb": shared}, tmp_path / "bomb.pt")
    r = cli("compare", str(tmp_path / "bomb.pt"), str(tmp_path / "bomb.pt"))
    assert r.returncode == 2 and "bomb" in r.stderr and "Traceback" not in r.stderr


# --- the oracle -----------------------------------------------------------------------

_keys = st.text(alphabet="abcdefgh_", min_size=1, max_size=5)
_scalars = st.one_of(
    st.integers(-(2**62), 2**62), st.floats(allow_nan=True, width=64), st.booleans(),
    st.none(), st.text(max_size=8), st.binary(max_size=8),
)  # fmt: skip
_leaves = st.one_of(_scalars, st.lists(st.floats(width=32), min_size=1, max_size=4))
_trees = st.recursive(
    st.dictionaries(_keys, _leaves, min_size=1, max_size=4),
    lambda inner: st.dictionaries(_keys, st.one_of(_leaves, inner), min_size=1, max_size=3),
    max_leaves=12,
)


def _tensors(tree: object) -> object:
    if isinstance(tree, dict):
        return {k: _tensors(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return torch.tensor(tree, dtype=torch.float32)
    return tree


def _mutate(tree: object, flip: int) -> object:
    """Each leaf changed where ``flip``'s bits say (one bit per leaf)."""
    count = [0]

    def go(t: object) -> object:
        if isinstance(t, dict):
            return {k: go(v) for k, v in t.items()}
        i = count[0]
        count[0] += 1
        if not (flip >> i) & 1:
            return t
        if isinstance(t, list):
            return [x + 1.0 for x in t]
        if isinstance(t, bool) or t is None:
            return not t
        if isinstance(t, int):
            return t + 1
        if isinstance(t, float):
            return 0.0 if t != 0.0 else 1.0
        return t + (b"x" if isinstance(t, bytes) else "x")

    return go(tree)


def _flat(obj: object, prefix: str = "") -> dict[str, object]:
    if isinstance(obj, dict):
        out: dict[str, object] = {}
        for k, v in obj.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: obj}


def _same(x: object, y: object) -> bool:
    if type(x) is not type(y):
        return False
    if isinstance(x, float):
        return (math.isnan(x) and math.isnan(y)) or (
            x == y and math.copysign(1, x) == math.copysign(1, y)
        )
    return x == y


def _as_json(v: object) -> object:
    if isinstance(v, bytes):
        return v.decode("utf-8", "backslashreplace")
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tree=_trees, flip=st.integers(0, 2**12 - 1))
def test_oracle_every_value_field(tmp_path, tree, flip):
    a_path, b_path = str(tmp_path / "a.pt"), str(tmp_path / "b.pt")
    torch.save(_tensors(tree), a_path)
    torch.save(_tensors(_mutate(tree, flip)), b_path)
    # the oracle: torch's own loader, compared in plain Python and numpy
    oa = _flat(torch.load(a_path, weights_only=False))
    ob = _flat(torch.load(b_path, weights_only=False))
    from fastdiff.render.json import report_dict

    rep = report_dict(fastdiff.compare_runs(a_path, b_path))
    got = by_name(json.loads(json.dumps(rep)))
    assert set(got) == set(oa)
    diverged = False
    for name, va in oa.items():
        vb, b = ob[name], got[name]
        if isinstance(va, torch.Tensor):
            equal = np.array_equal(va.numpy().view(np.uint32), vb.numpy().view(np.uint32))
            assert b["status"] == ("equal" if equal else "diverged")
            diverged |= not equal
            continue
        label = isinstance(va, str | bytes)
        assert b["dtype"] == ("label" if label else "value")
        assert b["a"] == _as_json(va) and b["b"] == _as_json(vb)
        assert (b["n_elements_a"], b["n_elements_b"]) == (1, 1)
        if _same(va, vb):
            assert b["status"] == "equal" and b["n_diff"] == 0
        else:
            assert b["status"] == ("label_differs" if label else "diverged")
            assert b["n_diff"] == 1 and b["first_index"] == 0
            diverged |= not label
    assert rep["verdict"] == ("diverged" if diverged else "identical")
