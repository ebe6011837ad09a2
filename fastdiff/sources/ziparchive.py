"""Zip archives (``.npz``, ``torch.save``), read by their central directory.

Only what locating members needs is read: the end-of-central-directory
record (and its zip64 twin), the central directory, and each member's
local header. Nothing is extracted here; a member is a byte range of the
archive (stored) or a deflate stream in it (``buffers.Deflate``).

A hostile archive is refused (``ZipError``, one line saying what is wrong)
rather than trusted: a central directory or member that lies outside the
file, members whose records overlap (the same bytes read as two members),
a local header that disagrees with the central directory, a name twice,
encrypted members, compression other than stored or deflate, a declared
size that deflate cannot reach from the bytes stored (a zip bomb: deflate
expands at most about 1032 to 1), more than ``MAX_MEMBERS`` members (or the
caller's own cap: ``.npz`` and ``torch.save`` archives have lower ones),
counted from the end record before the directory is read, or a central
directory over ``MAX_DIRECTORY`` bytes.
"""

from __future__ import annotations

import itertools
import os
import struct

#: At most this many members, and this many bytes of central directory.
MAX_MEMBERS = 1_000_000
MAX_DIRECTORY = 256 << 20
#: Deflate cannot expand data by more than about 1032:1; a member that
#: claims more is refused (with room for the stream's own overhead).
MAX_RATIO = 1100
_EOCD = b"PK\x05\x06"
_EOCD64 = b"PK\x06\x06"
_LOCATOR64 = b"PK\x06\x07"
_CENTRAL = b"PK\x01\x02"
_LOCAL = b"PK\x03\x04"
#: The end record is 22 bytes plus a comment of at most 65,535.
_TAIL = 22 + 65535


class ZipError(ValueError):
    """An archive that cannot be read safely: the message says why."""


class ZipMember:
    """One member: its name, compression (0 stored, 8 deflate), CRC-32, the
    bytes stored and their size once decompressed, and where its data
    starts in the archive."""

    __slots__ = ("crc", "data_offset", "header_offset", "method", "name", "size", "stored")

    def __init__(
        self, name: str, method: int, crc: int, stored: int, size: int, header_offset: int,
        data_offset: int,
    ) -> None:  # fmt: skip
        self.name = name
        self.method = method
        self.crc = crc
        self.stored = stored
        self.size = size
        self.header_offset = header_offset
        self.data_offset = data_offset

    def __repr__(self) -> str:
        return f"ZipMember({self.name!r}, method={self.method}, size={self.size})"


def _pread(fd: int, n: int, offset: int) -> bytes:
    data = os.pread(fd, n, offset)
    if len(data) != n:
        raise ZipError("the archive ended early (truncated, or it changed while read)")
    return data


def _end_record(fd: int, size: int, max_members: int, base: int = 0) -> tuple[int, int, int]:
    """(number of members, central directory size, its offset) of the
    archive of ``size`` bytes at ``base`` in the file (offsets from there)."""
    start = max(0, size - _TAIL)
    tail = _pread(fd, size - start, base + start)
    at = tail.rfind(_EOCD)
    while at >= 0 and len(tail) - at < 22:
        at = tail.rfind(_EOCD, 0, at)
    if at < 0:
        raise ZipError("no end-of-central-directory record: not a zip archive, or truncated")
    (_, disk, cd_disk, _, count, cd_size, cd_offset, comment) = struct.unpack(
        "<4sHHHHIIH", tail[at : at + 22]
    )
    if at + 22 + comment != len(tail):
        raise ZipError("the end-of-central-directory record's comment does not end the file")
    if disk != 0 or cd_disk != 0:
        raise ZipError("a multi-disk (split) archive")
    end_at = start + at
    if 0xFFFF in (count,) or 0xFFFFFFFF in (cd_size, cd_offset):
        # zip64: a locator right before the end record points at its twin.
        if end_at < 20:
            raise ZipError("a zip64 archive without its zip64 locator")
        loc = _pread(fd, 20, base + end_at - 20)
        if loc[:4] != _LOCATOR64:
            raise ZipError("a zip64 archive without its zip64 locator")
        (rec_offset,) = struct.unpack("<Q", loc[8:16])
        if rec_offset + 56 > end_at - 20:
            raise ZipError("the zip64 end record lies outside the archive")
        rec = _pread(fd, 56, base + rec_offset)
        if rec[:4] != _EOCD64:
            raise ZipError("the zip64 end record is missing where its locator points")
        count, _, cd_size, cd_offset = struct.unpack("<QQQQ", rec[24:56])
        end_at = rec_offset
    if count > max_members:
        raise ZipError(f"{count:,} members, more than fastdiff reads ({max_members:,})")
    if cd_size > MAX_DIRECTORY:
        raise ZipError(f"a central directory of {cd_size:,} bytes, over {MAX_DIRECTORY:,}")
    if cd_offset + cd_size > end_at:
        raise ZipError("the central directory lies outside the archive")
    return count, cd_size, cd_offset


def _zip64_extra(extra: bytes, stored: int, size: int, offset: int) -> tuple[int, int, int]:
    """Sizes and offset from a zip64 extra field, where the central record
    says 0xFFFFFFFF."""
    pos = 0
    while pos + 4 <= len(extra):
        tag, n = struct.unpack("<HH", extra[pos : pos + 4])
        body = extra[pos + 4 : pos + 4 + n]
        if len(body) != n:
            raise ZipError("a damaged extra field in the central directory")
        if tag == 1:
            values = list(struct.unpack(f"<{n // 8}Q", body[: n // 8 * 8]))
            if size == 0xFFFFFFFF:
                if not values:
                    raise ZipError("a zip64 size is missing from its extra field")
                size = values.pop(0)
            if stored == 0xFFFFFFFF:
                if not values:
                    raise ZipError("a zip64 size is missing from its extra field")
                stored = values.pop(0)
            if offset == 0xFFFFFFFF:
                if not values:
                    raise ZipError("a zip64 offset is missing from its extra field")
                offset = values.pop(0)
            return stored, size, offset
        pos += 4 + n
    if 0xFFFFFFFF in (stored, size, offset):
        raise ZipError("a zip64 member without its zip64 extra field")
    return stored, size, offset


def read_members(
    fd: int, size: int, max_members: int = MAX_MEMBERS, local: bool = True, base: int = 0
) -> list[ZipMember]:
    """The members of an open archive of ``size`` bytes, in archive order,
    each checked (module docstring), at most ``max_members`` of them;
    raises ZipError. ``local=False``: from the central directory alone,
    their local headers neither read nor checked (their ``data_offset`` is
    -1): enough to tell what the archive holds by its names. ``base``: where
    the archive starts in the file (an archive inside another file, as a
    distributed checkpoint's chunks are); the members' offsets are the
    file's."""
    count, cd_size, cd_offset = _end_record(fd, size, min(max_members, MAX_MEMBERS), base)
    directory = _pread(fd, cd_size, base + cd_offset)
    members: list[ZipMember] = []
    names: set[str] = set()
    pos = 0
    for _ in range(count):
        if directory[pos : pos + 4] != _CENTRAL or pos + 46 > len(directory):
            raise ZipError("the central directory is damaged (a record is not where it should be)")
        (
            flags, method, crc, stored, usize, n_name, n_extra, n_comment, disk, offset,
        ) = struct.unpack("<8xHH4xIIIHHHH6xI", directory[pos : pos + 46])  # fmt: skip
        raw_name = directory[pos + 46 : pos + 46 + n_name]
        extra = directory[pos + 46 + n_name : pos + 46 + n_name + n_extra]
        pos += 46 + n_name + n_extra + n_comment
        if pos > len(directory):
            raise ZipError("the central directory is damaged (a record runs past its end)")
        name = raw_name.decode("utf-8" if flags & 0x800 else "cp437", "replace")
        if flags & 0x1:
            raise ZipError(f"member {name!r} is encrypted")
        if method not in (0, 8):
            raise ZipError(f"member {name!r} uses compression method {method} (fastdiff reads "
                           "stored and deflate members)")  # fmt: skip
        if disk not in (0, 0xFFFF):
            raise ZipError("a multi-disk (split) archive")
        stored, usize, offset = _zip64_extra(extra, stored, usize, offset)
        if name in names:
            raise ZipError(f"member {name!r} is in the archive twice")
        names.add(name)
        if method == 0 and stored != usize:
            raise ZipError(f"member {name!r} is stored, yet its two sizes differ")
        if method == 8 and usize > MAX_RATIO * max(stored, 1):
            raise ZipError(
                f"member {name!r} claims {usize:,} bytes from {stored:,} compressed: more than "
                "deflate can expand (a zip bomb?)"
            )
        if offset + 30 > cd_offset:
            raise ZipError(f"member {name!r}'s local header lies outside the members' area")
        if not local:
            members.append(ZipMember(name, method, crc, stored, usize, base + offset, -1))
            continue
        header = _pread(fd, 30, base + offset)
        if header[:4] != _LOCAL:
            raise ZipError(f"member {name!r}: no local header where the directory points")
        (local_method,) = struct.unpack("<H", header[8:10])
        ln_name, ln_extra = struct.unpack("<HH", header[26:30])
        if local_method != method or _pread(fd, ln_name, base + offset + 30) != raw_name:
            raise ZipError(f"member {name!r}: its local header disagrees with the directory")
        data = offset + 30 + ln_name + ln_extra
        if data + stored > cd_offset:
            raise ZipError(f"member {name!r}'s data runs past the members' area")
        members.append(ZipMember(name, method, crc, stored, usize, base + offset, base + data))
    if pos != len(directory):
        raise ZipError("the central directory holds more than its records")
    if not local:
        return members
    spans = sorted((m.header_offset, m.data_offset + m.stored, m.name) for m in members)
    for (_, end, first), (start, _, second) in itertools.pairwise(spans):
        if start < end:
            raise ZipError(f"members {first!r} and {second!r} overlap (the same bytes twice)")
    return members
