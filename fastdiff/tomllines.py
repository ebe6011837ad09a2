"""Where each key and table of a TOML text is defined: the line a schema
error names. Imported only when there is an error to report (``schema``).

The reading is rough on purpose (multi-line strings are skipped, keys
inside inline tables take their table's line): it only finds lines, the
TOML itself is read by ``tomllib``.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_MULTILINE_QUOTES = ('"' * 3, "'" * 3)


def _bare(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c in "_-")


def _parse_key(s: str) -> tuple[list[str], str] | None:
    """A dotted TOML key at the start of ``s`` (after spaces): (its parts, the
    rest of ``s``), or None. Escapes in quoted keys are read loosely: this
    only finds lines."""
    parts: list[str] = []
    i, n = 0, len(s)
    while True:
        while i < n and s[i] in " \t":
            i += 1
        if i < n and s[i] in "\"'":
            quote, j, chars = s[i], i + 1, []
            while j < n and s[j] != quote:
                if quote == '"' and s[j] == "\\" and j + 1 < n:
                    j += 1
                chars.append(s[j])
                j += 1
            if j >= n:
                return None
            parts.append("".join(chars))
            i = j + 1
        else:
            j = i
            while j < n and _bare(s[j]):
                j += 1
            if j == i:
                return None
            parts.append(s[i:j])
            i = j
        while i < n and s[i] in " \t":
            i += 1
        if i < n and s[i] == ".":
            i += 1
            continue
        return parts, s[i:]


class TomlLines:
    """Where each key and table of a TOML text is first defined: a line number
    by path (keys, and the index within an array of tables: ``("group", 1,
    "members", "x")``), and the table headers in order. Read only to name the
    line of a problem, so a rough reading is enough (multi-line strings are
    skipped; keys inside inline tables take their table's line)."""

    def __init__(self, text: str) -> None:
        self.lines: dict[tuple[Any, ...], int] = {}
        #: (line, the header as written, its keys, an array of tables?)
        self.headers: list[tuple[int, str, tuple[str, ...], bool]] = []
        self._header_of: dict[tuple[Any, ...], str] = {}
        arrays: dict[tuple[str, ...], int] = {}
        table: tuple[Any, ...] = ()
        in_string: str | None = None
        for lineno, line in enumerate(text.splitlines(), 1):
            if in_string is not None:
                if line.count(in_string) % 2:
                    in_string = None
                continue
            stripped = line.strip()
            if stripped.startswith("["):
                array = stripped.startswith("[[")
                parsed = _parse_key(stripped[2 if array else 1 :])
                if parsed is None:
                    continue
                keys, rest = parsed
                close = rest.find("]]" if array else "]")
                raw = stripped[: len(stripped) - len(rest) + max(close, 0) + (2 if array else 1)]
                path: list[Any] = []
                for k, key in enumerate(keys):
                    path.append(key)
                    prefix = tuple(keys[: k + 1])
                    if array and k == len(keys) - 1:
                        self.lines.setdefault(tuple(path), lineno)
                        self._header_of.setdefault(tuple(path), raw)
                        arrays[prefix] = arrays.get(prefix, -1) + 1
                        path.append(arrays[prefix])
                    elif prefix in arrays:
                        path.append(arrays[prefix])
                table = tuple(path)
                self.lines.setdefault(table, lineno)
                self._header_of.setdefault(table, raw)
                self.headers.append((lineno, raw, tuple(keys), array))
                continue
            parsed = _parse_key(stripped)
            if parsed is None or not parsed[1].startswith("="):
                continue
            keys, rest = parsed
            for k in range(1, len(keys) + 1):
                self.lines.setdefault(table + tuple(keys[:k]), lineno)
            for quotes in _MULTILINE_QUOTES:
                if rest.count(quotes) % 2:
                    in_string = quotes

    def line_of(self, path: tuple[Any, ...]) -> int:
        """The line that defines ``path``, else its nearest parent that is, else 1."""
        for k in range(len(path), 0, -1):
            line = self.lines.get(path[:k])
            if line is not None:
                return line
        return 1

    def header_of(self, path: tuple[Any, ...]) -> str | None:
        """The table header that defines ``path``, as written, if one does."""
        return self._header_of.get(path)
