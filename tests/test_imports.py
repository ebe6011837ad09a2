"""No import cycles in the package, between files or between packages.

Every ``import`` of a fastdiff module counts, at module level or inside a
function (a lazy import is still a dependency); imports that only type
checkers see (under ``if TYPE_CHECKING:``) do not. Packages are the folders
under ``fastdiff/`` (``sources``, ``stages``, ...) and each top-level module.
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


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The fastdiff modules that ``path`` imports (outside TYPE_CHECKING blocks)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()

    def resolve(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
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


def _graph() -> dict[str, set[str]]:
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {_module_name(p) for p in files}
    return {_module_name(p): _imports(p, modules) for p in files}


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
