"""No import cycles in the package, between files or between packages, and
the layering of the packages.

Every ``import`` of a fastdiff module counts, at module level or inside a
function (a lazy import is still a dependency); imports that only type
checkers see (under ``if TYPE_CHECKING:``) do not for the cycles, but do for
the renderers' layering (``render`` names only the model's types). Packages
are the folders under ``fastdiff/`` (``sources``, ``stages``, ...) and each
top-level module.

The layers (``LAYERS``): the result model imports nothing of fastdiff; the
kernels only the model (and ``dtypes``, see there); the sources no stage,
engine, renderer or command; the renderers only the model and the text
helpers.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "fastdiff"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def _imports(path: Path, modules: set[str], type_checking: bool = False) -> set[str]:
    """The fastdiff modules that ``path`` imports (outside TYPE_CHECKING blocks;
    ``type_checking``: inside them too)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()

    def resolve(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child) and not type_checking:
                for sub in child.orelse:
                    visit(sub)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.startswith("fastdiff"):
                        found = resolve(alias.name)
                        if found:
                            out.add(found)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[: len(base) - (child.level - 1)]
                    source = ".".join(base + ([child.module] if child.module else []))
                else:
                    source = child.module or ""
                if not source.startswith("fastdiff"):
                    continue
                for alias in child.names:
                    full = f"{source}.{alias.name}"
                    found = full if full in modules else resolve(source)
                    if found:
                        out.add(found)
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    out.discard(name)
    return out


def _graph(type_checking: bool = False) -> dict[str, set[str]]:
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {_module_name(p) for p in files}
    return {_module_name(p): _imports(p, modules, type_checking) for p in files}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def _package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


def test_no_import_cycles_between_files() -> None:
    assert _cycles(_graph()) == []


def test_no_import_cycles_between_packages() -> None:
    packages: dict[str, set[str]] = {}
    for module, deps in _graph().items():
        mine = _package_of(module)
        packages.setdefault(mine, set()).update(
            p for p in map(_package_of, deps) if p != mine and p != "fastdiff"
        )
    assert _cycles(packages) == []


def test_the_checker_finds_a_cycle() -> None:
    """The checker itself: a cycle of three is found, a chain is not."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": {"c"}}) == []


# --- the layering ---------------------------------------------------------------------------

#: Per package: (what it may import, or None for anything but ``refused``;
#: what it may never import; whether imports only type checkers see count).
#: A module of a package may always import its own package.
LAYERS: dict[str, tuple[frozenset[str] | None, frozenset[str], bool]] = {
    # The result model is a leaf: every layer reads its values.
    "fastdiff.model": (frozenset(), frozenset(), True),
    # The kernels compute facts (model.facts) under a tolerance
    # (model.tolerance). They also need fastdiff.dtypes: how an element's bits
    # are read (float_format, fp8_values, the struct and numpy codes) is the
    # dtype table's, which is no result (the sources read file headers with
    # it too), so it stays out of the model; dtypes itself imports only the
    # model and textkit.values.
    "fastdiff.kernels": (frozenset({"fastdiff.model", "fastdiff.dtypes"}), frozenset(), False),
    # The sources say where the bytes are; deciding, driving, wording and the
    # command line are above them.
    "fastdiff.sources": (
        None,
        frozenset({"fastdiff.stages", "fastdiff.engine", "fastdiff.render", "fastdiff.cli"}),
        False,
    ),
    # The renderers are pure functions of the model's values, with the
    # neutral text helpers; the types they name count too.
    "fastdiff.render": (frozenset({"fastdiff.model", "fastdiff.textkit"}), frozenset(), True),
}


def _violations(
    graph: dict[str, set[str]], layer: str, allowed: frozenset[str] | None, refused: frozenset[str]
) -> list[tuple[str, str]]:
    """(module, what it imports) for each import of ``layer`` that breaks its rule."""
    out = []
    for module, deps in graph.items():
        if module != layer and not module.startswith(layer + "."):
            continue
        for dep in sorted(deps):
            top = _package_of(dep)
            if top == layer:
                continue
            if (allowed is not None and top not in allowed) or top in refused:
                out.append((module, dep))
    return out


def test_the_layers() -> None:
    graphs = {flag: _graph(flag) for flag in (False, True)}
    found = {
        layer: _violations(graphs[counts_types], layer, allowed, refused)
        for layer, (allowed, refused, counts_types) in LAYERS.items()
    }
    assert found == {layer: [] for layer in LAYERS}


def test_the_layering_check_finds_a_violation() -> None:
    """The check itself: an import of the engine by a renderer (a type
    checker's only), of a stage by a source, of dtypes by the model, are
    each found; the kernels' dtypes is allowed."""
    graph = {
        "fastdiff.render.x": {"fastdiff.model.results", "fastdiff.engine.scheduler"},
        "fastdiff.sources.y": {"fastdiff.model.results", "fastdiff.stages.verdict"},
        "fastdiff.model.z": {"fastdiff.model.value", "fastdiff.dtypes"},
        "fastdiff.kernels.w": {"fastdiff.dtypes", "fastdiff.model.facts"},
    }
    found = {
        layer: _violations(graph, layer, allowed, refused)
        for layer, (allowed, refused, _) in LAYERS.items()
    }
    assert found == {
        "fastdiff.model": [("fastdiff.model.z", "fastdiff.dtypes")],
        "fastdiff.kernels": [],
        "fastdiff.sources": [("fastdiff.sources.y", "fastdiff.stages.verdict")],
        "fastdiff.render": [("fastdiff.render.x", "fastdiff.engine.scheduler")],
    }
    # A type checker's import counts where asked: render/html.py names the
    # rerun's result only for type checkers.
    typed, run = _graph(type_checking=True), _graph()
    assert "fastdiff.model.rerun" in typed["fastdiff.render.html"]
    assert "fastdiff.model.rerun" not in run["fastdiff.render.html"]
