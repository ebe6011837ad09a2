"""The preset schemas (``--schema NAME``), and the resolution of a
``--schema`` argument: a preset's name or a schema file's path
(``resolve_schema``).

A preset other than ``raw`` (no groups) is a packaged schema file:
``rl-state.toml``, the default.

A preset is a TOML schema file like any user's, read by the schema parser
(``schemafile.parse_schema``). So that a comparison under the default
preset imports no TOML parser (``tomllib`` and what it imports cost about
8 ms, a third of a small comparison), fastdiff reads the parsed form of
each file, ``DOCS`` in ``parsed.py``: the very document ``tomllib`` gives,
written as a Python literal by ``python -m fastdiff.presets``
(``write_parsed``); a test (``tests/test_schema.py``) checks it is current.
"""

from __future__ import annotations

import os

from ..dtypes import dtype_name
from ..errors import SchemaError
from ..schema import RAW, Schema

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The preset names: the default first.
PRESET_NAMES = ("rl-state", "raw")
DEFAULT_PRESET = "rl-state"
#: Each preset with a file: its name -> the file beside this module.
FILES = {"rl-state": "rl-state.toml"}

_LOADED: dict[str, Schema] = {}


def preset(name: str) -> Schema:
    """The preset ``name`` (one of ``PRESET_NAMES``; ``KeyError`` if none)."""
    return RAW if name == RAW.name else load(name)


def __getattr__(name: str) -> Any:
    """``RL_STATE`` (the default preset) and ``PRESETS`` (name -> schema),
    read on first use."""
    if name == "RL_STATE":
        return load("rl-state")
    if name == "PRESETS":
        return {n: preset(n) for n in PRESET_NAMES}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def resolve_schema(
    spec: str | None,
    default_dtype: str | None = None,
    what: str = "--schema",
    warnings: list[str] | None = None,
) -> Schema:
    """A preset name or a path to a TOML file; ``None`` means the default preset.
    ``what``: the argument ``spec`` came from, as errors name it; ``warnings``:
    as for ``parse_schema``."""
    spec = spec or DEFAULT_PRESET
    if spec in PRESET_NAMES:
        schema = preset(spec)
    elif spec.endswith(".toml") or os.path.exists(spec):
        from ..schemafile import load_schema

        schema = load_schema(spec, warnings)
    else:
        raise SchemaError(
            f"{what} {spec!r}: no such preset or file "
            f"(presets: {', '.join(PRESET_NAMES)}; or a path to a .toml file)"
        )
    if default_dtype is not None:
        try:
            schema = schema.with_default_dtype(dtype_name(default_dtype))
        except ValueError as exc:
            raise SchemaError(f"--default-dtype: {exc}") from None
    return schema


def path_of(name: str) -> str:
    """The packaged schema file of preset ``name``."""
    return os.path.join(os.path.dirname(__file__), FILES[name])


def load(name: str) -> Schema:
    """The preset ``name`` (one of ``FILES``), parsed once per process from
    its parsed form, by the schema parser."""
    schema = _LOADED.get(name)
    if schema is None:
        from ..schemafile import parse_schema
        from .parsed import DOCS

        schema = _LOADED[name] = parse_schema(DOCS[name], origin=path_of(name))
    return schema


def parsed_source() -> str:
    """``parsed.py`` as ``write_parsed`` writes it: every preset file read
    with ``tomllib``, as a Python literal."""
    import pprint
    import tomllib

    docs = {}
    for name in FILES:
        with open(path_of(name), "rb") as fh:
            docs[name] = tomllib.load(fh)
    body = pprint.pformat(docs, width=96, sort_dicts=False)
    return (
        '"""The preset files, as ``tomllib`` parses them: written by ``python -m\n'
        "fastdiff.presets`` from the ``.toml`` files beside it. Do not edit: edit\n"
        "the ``.toml`` file and run that command (tests/test_schema.py checks it\n"
        'is current)."""\n\n'
        "from __future__ import annotations\n\n"
        "TYPE_CHECKING = False\n"
        "if TYPE_CHECKING:\n"
        "    from typing import Any\n\n"
        f"DOCS: dict[str, Any] = {body}\n"
    )


def write_parsed() -> str:
    """Write ``parsed.py`` from the preset files; its path."""
    path = os.path.join(os.path.dirname(__file__), "parsed.py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(parsed_source())
    return path
