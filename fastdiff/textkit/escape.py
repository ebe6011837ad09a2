"""One escaping of names, paths and messages, for every report.

File names reach fastdiff as the OS gives them: any bytes but ``/`` and NUL,
those that are not UTF-8 held as lone surrogates (``os.fsdecode``). The text
reports show each through ``display_path`` (backslash escapes: no name can
pass for a line of a report); the JSON reports keep every string valid
UTF-8, writing a string that is not as its escaped form, with the exact
bytes in a ``<field>_bytes_hex`` field beside it (``put_text``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_SHORT_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(c: str) -> str:
    if c in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[c]
    cp = ord(c)
    if 0xDC80 <= cp <= 0xDCFF:  # an undecodable byte, as os.listdir gives it
        return f"\\x{cp - 0xDC00:02x}"
    if c.isprintable():
        return c
    import unicodedata  # only for a name that needs escaping: rare, and costly to import

    if unicodedata.category(c) == "Zs":
        return c
    if cp < 0x80:
        return f"\\x{cp:02x}"
    return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def display_path(text: str) -> str:
    """A path, name or message as one printable line, the same in every report.

    Backslash escapes, so that no name can pass for a line of a report:
    ``\\\\`` for a backslash; ``\\n`` ``\\r`` ``\\t``; ``\\xNN`` for the other
    ASCII controls and DEL (NN < 80) and for a byte that is not UTF-8 (NN >=
    80: an undecodable byte of a file name); ``\\uNNNN`` (``\\UNNNNNNNN``) for
    every other character Python does not call printable, spaces aside: C1
    controls such as U+0085, the separators U+2028 and U+2029, format
    characters (bidi overrides, zero-width ones), lone surrogates, private
    use and unassigned code points. Everything else is kept (``é`` stays
    ``é``). Each original has one escaped form, so the escaping reverses.
    """
    if "\\" not in text and text.isprintable():
        return text  # the usual case: nothing to escape
    return "".join(map(_escape_char, text))


def is_utf8(text: str) -> bool:
    """True unless ``text`` holds undecodable bytes (or other lone surrogates)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def json_text(text: str) -> str:
    """``text`` as valid UTF-8: itself, or, holding bytes that are not UTF-8,
    its escaped form (as the text report shows it)."""
    return text if is_utf8(text) else display_path(text)


def os_bytes_hex(text: str) -> str:
    """The bytes of a name or path as the OS has them, in lowercase hex."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that is no undecodable byte
        raw = text.encode("utf-8", "surrogatepass")
    return raw.hex()


def put_text(d: dict[str, Any], key: str, text: str | None) -> None:
    """``d[key] = text`` as valid UTF-8, plus ``key_bytes_hex`` where it is not."""
    if text is None or is_utf8(text):
        d[key] = text
    else:
        d[key] = display_path(text)
        d[f"{key}_bytes_hex"] = os_bytes_hex(text)


def path_record(path: str, key: str, text: str) -> dict[str, Any]:
    """A skipped or error entry for JSON: its path (with bytes where not
    UTF-8), and ``key``: why."""
    d: dict[str, Any] = {}
    put_text(d, "path", path)
    d[key] = json_text(text)
    return d
