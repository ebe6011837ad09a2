"""The preset schemas, as packaged schema files: ``rl-state.toml``.

A preset is a TOML schema file like any user's, read by the schema parser
(``schemafile.parse_schema``). So that a comparison under the default
preset imports no TOML parser (``tomllib`` and what it imports cost about
8 ms, a third of a small comparison), fastdiff reads the parsed form of
each file, ``DOCS`` in ``parsed.py``: the very document ``tomllib`` gives,
written as a Python literal by ``python -m fastdiff.presets``
(``write_parsed``); a test (``tests/test_schema.py``) checks it is current.
The preset ``raw`` (no groups) needs no file.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..schema import Schema

#: Each preset with a file: its name -> the file beside this module.
FILES = {"rl-state": "rl-state.toml"}

_LOADED: dict[str, Schema] = {}


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
