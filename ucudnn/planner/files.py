"""The files ucudnn reads and writes: where a bad value sits, and writes that are all or nothing.

Readers report every error as a ValueError that starts with where it is: the file (or source),
the line, and the column ("t.csv, line 3, column 'batch': ..."). `located_error` builds that
text in one place; `FieldError` carries the column up from the code that parses one value.
Text is UTF-8 (a byte-order mark is dropped), and bytes that are not UTF-8 are reported at
their line and column. A file that is gzip is read decompressed. Readers take at most
`MAX_READ_BYTES` (decompressed) and only from regular files and pipes. Writers go through
`atomic_write`, so a file is either its old self or complete, never half written, and a pipe
or device at the path is written to, never replaced.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import gzip
import io
import itertools
import os
import stat
import zlib
from collections.abc import Iterator, Sequence
from typing import IO, Any, cast

from ucudnn.core.checks import shown
from ucudnn.planner.units import format_size

# A path, or a file open as text or bytes (a GzipFile is a BufferedIOBase, not an IO[bytes]).
Source = str | os.PathLike[str] | IO[str] | IO[bytes] | io.BufferedIOBase

# The most a reader takes from one file or stream. The timings that ship with ucudnn are a few
# MB; a network of thousands of layers under the policy `all` stays far below this, while an
# endless stream (/dev/zero) or a huge file is refused before it fills the memory.
MAX_READ_BYTES = 256 << 20
GZIP_MAGIC = b"\x1f\x8b"

_KINDS = {
    stat.S_IFREG: "a regular file",
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def _what(kind: int) -> str:
    """`kind`, the type bits of a mode (`stat.S_IFMT`), in words."""
    return _KINDS.get(kind, "a file of an unknown kind")


class FieldError(ValueError):
    """A bad value and where it is within its record: `place` is "column 'batch'" or
    "kernel conv1/forward, field 'offset'". Readers add the file and line in front."""

    def __init__(self, place: str, message: str) -> None:
        super().__init__(f"{place}: {message}" if place else message)
        self.place = place
        self.message = message

    def within(self, place: str) -> FieldError:
        """The same error, its place inside `place`."""
        return FieldError(", ".join(p for p in (place, self.place) if p), self.message)


@contextlib.contextmanager
def field_errors(place: str) -> Iterator[None]:
    """TypeErrors and ValueErrors raised in the block become FieldErrors at `place`."""
    try:
        yield
    except FieldError as exc:
        raise exc.within(place) from None
    except (TypeError, ValueError) as exc:
        raise FieldError(place, str(exc)) from None


def located_error(exc: Exception, source: str, *places: str) -> ValueError:
    """`exc` as a ValueError whose message starts with where it happened: the source, then
    `places` ("line 3"), then the place a FieldError names."""
    if isinstance(exc, FieldError):
        places, message = (*places, exc.place), exc.message
    else:
        message = str(exc)
    return ValueError(f"{', '.join(p for p in (source, *places) if p)}: {message}")


def position(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of `text[index]`."""
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


# -- reading --------------------------------------------------------------------------------
def source_name(source: Source, default: str) -> str:
    if isinstance(source, str | os.PathLike):
        return os.fspath(source)
    return str(getattr(source, "name", default))


def read_text(source: Source, default_name: str) -> str:
    """The text of a path or an open file, decoded as UTF-8 without a byte-order mark, and
    decompressed first when it is gzip (but for a text stream). A path must be a regular file
    or a FIFO; at most `MAX_READ_BYTES` are read (characters, from a text stream; decompressed
    bytes, from gzip)."""
    name = source_name(source, default_name)
    if isinstance(source, str | os.PathLike):
        # Checked before opening: opening a device may block or act (a tape rewinds).
        kind = stat.S_IFMT(os.stat(source).st_mode)
        if kind not in (stat.S_IFREG, stat.S_IFIFO):
            raise ValueError(
                f"{name}: cannot read {_what(kind)}; expected a regular file or a FIFO"
            )
        with open(source, "rb") as f:
            data: str | bytes = _read_file(f, name)
    else:
        try:
            data = _read_bounded(source, name)
        except UnicodeDecodeError as exc:
            # The stream decodes itself, so the position in the file is unknown here.
            raise ValueError(f"{name}: {exc}") from None
        if isinstance(data, bytes) and data.startswith(GZIP_MAGIC):
            data = _read_file(io.BufferedReader(io.BytesIO(data)), name)
    text = decode(data, name) if isinstance(data, bytes) else data
    return text.removeprefix("\ufeff")


def _read_file(f: io.BufferedReader, name: str) -> bytes:
    """The bytes of an open file, decompressed when it is gzip (a recorded table is stored
    as .csv.gz); ValueError for a gzip file that is cut short or corrupt."""
    if f.peek(len(GZIP_MAGIC))[: len(GZIP_MAGIC)] != GZIP_MAGIC:
        return cast(bytes, _read_bounded(f, name))
    try:
        with gzip.GzipFile(fileobj=f) as unpacked:
            return cast(bytes, _read_bounded(unpacked, name))
    except (OSError, EOFError, zlib.error) as exc:
        raise ValueError(f"{name}: not a readable gzip file ({exc})") from None


def _read_bounded(f: IO[Any] | io.BufferedIOBase, name: str) -> str | bytes:
    """All of `f`, or ValueError past `MAX_READ_BYTES`. Buffered and text streams read to
    their end or to the size asked for; one more than the bound tells a stream that is too
    long."""
    data: str | bytes = f.read(MAX_READ_BYTES + 1)
    if len(data) > MAX_READ_BYTES:
        raise ValueError(
            f"{name}: larger than {format_size(MAX_READ_BYTES)}, the most ucudnn reads from a file"
        )
    return data


def decode(data: bytes, name: str) -> str:
    """`data` as UTF-8 text; ValueError at the line and column of the first bad byte."""
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        good = data[: exc.start].decode("utf-8")
        line, column = position(good, len(good))
        bad = data[exc.start : exc.end].hex(" ")
        raise ValueError(
            f"{name}, line {line}, column {column}: not UTF-8 text ({exc.reason}: bytes {bad})"
        ) from None


class CsvRecords:
    """The header and records of a CSV file. Columns are named once; every record has as many
    fields as the header. Records come one by one, each a {column: text} with its first line
    (iteration), or all at once, column by column (`columns`), which large files read faster.

    The text is split at once, up to its first broken record (one of the wrong length, or a
    quote the csv module refuses): iteration yields the records before it, then raises its
    error, so that errors come in the order of the file. A blank line is no record."""

    def __init__(self, source: Source, default_name: str, *, comments: bool = False) -> None:
        """With `comments`, lines that start with '#' before the header are comments, kept
        with their line numbers in `comments`; the header is the line after them."""
        self.name = source_name(source, default_name)
        text = read_text(source, default_name)
        self.comments: list[tuple[int, str]] = []
        if comments:
            self.comments, text = _leading_comments(text)
        self._error: ValueError | None = None  # the first broken record's
        self._lines: Sequence[int] = []  # each record's line number
        lines = _plain_lines(text)
        if lines is None:
            self._read_quoted(text)
        else:
            self._read_plain(lines)

    def _read_quoted(self, text: str) -> None:
        """Records as the csv module reads them: quoted cells may hold commas and lines."""
        reader = csv.reader(io.StringIO(text, newline=""))

        def next_fields() -> list[str] | None:
            try:
                return next(reader, None)
            except csv.Error as exc:
                raise located_error(exc, self.name, f"line {reader.line_num}") from None

        for _ in self.comments:
            next_fields()  # blank now
        header = next_fields()
        if header is None:
            raise ValueError(self._empty())
        self.header = self._check_header(header)
        last, self._lines, rows = reader.line_num, [], []  # last: the last line read so far
        try:
            while (fields := next_fields()) is not None:
                line, last = last + 1, reader.line_num
                if fields:
                    self._check_length(line, len(fields))
                    self._lines.append(line)
                    rows.append(fields)
        except ValueError as exc:
            self._error = exc
        self._columns = [list(cells) for cells in zip(*rows, strict=True)]

    def _read_plain(self, lines: list[str]) -> None:
        """Records that are lines split at each comma (see `_plain_lines`), cut into columns in
        bulk: string methods, not a loop over the cells."""
        first = len(self.comments)  # the header's index
        if len(lines) <= first:
            raise ValueError(self._empty())
        self.header = self._check_header(lines[first].split(",") if lines[first] else [])
        body = lines[first + 1 :]
        numbers: Sequence[int] = range(first + 2, len(lines) + 1)
        if "" in body:
            numbers = [n for n, line in zip(numbers, body, strict=True) if line]
            body = [line for line in body if line]
        width = len(self.header)
        cells = _marked_cells(body, width)
        if cells is None:  # a line of another width
            commas = list(map(str.count, body, itertools.repeat(",")))
            broken = next(k for k, count in enumerate(commas) if count != width - 1)
            try:
                self._check_length(numbers[broken], commas[broken] + 1)
            except ValueError as exc:
                self._error = exc
            body, numbers = body[:broken], numbers[:broken]
            cells = _marked_cells(body, width)
            assert cells is not None  # the lines before the first of another width
        self._lines = numbers
        self._columns = [cells[column :: width + 1] for column in range(width)]

    def _empty(self) -> str:
        return f"{self.name}, line {self.header_line}: empty file, expected a header line"

    @property
    def header_line(self) -> int:
        return len(self.comments) + 1

    def _check_header(self, fields: list[str]) -> list[str]:
        header = [column.strip() for column in fields]
        repeated = next((c for n, c in enumerate(header) if c in header[:n]), None)
        if repeated is not None:
            raise ValueError(
                f"{self.name}, line {self.header_line}, column {shown(repeated)}: "
                "the column is repeated"
            )
        return header

    def _check_length(self, line: int, count: int) -> None:
        if count != len(self.header):
            raise ValueError(
                f"{self.name}, line {line}: has {count} fields "
                f"but the header has {len(self.header)}"
            )

    def __len__(self) -> int:
        """How many whole records come before the first broken one."""
        return len(self._lines)

    def columns(self) -> dict[str, list[str]] | None:
        """Each column's cells, record by record; None when a record is broken (iterate to
        reach its error in the order of the file)."""
        if self._error is not None:
            return None
        cells = self._columns if self._lines else [[] for _ in self.header]
        return dict(zip(self.header, cells, strict=True))

    def line(self, index: int) -> int:
        """The first line of the record at `index` (0 for the first after the header)."""
        return self._lines[index]

    def __iter__(self) -> Iterator[tuple[int, dict[str, str]]]:
        for index, line in enumerate(self._lines):
            cells = (column[index] for column in self._columns)
            yield line, dict(zip(self.header, cells, strict=True))
        if self._error is not None:
            raise self._error


def _leading_comments(text: str) -> tuple[list[tuple[int, str]], str]:
    """The lines at the start of `text` that begin with '#', each with its number, and
    `text` with them blank, so that the lines after them keep their numbers."""
    comments: list[tuple[int, str]] = []
    start = 0
    while text.startswith("#", start):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        comments.append((len(comments) + 1, text[start:end].rstrip("\r")))
        start = end + 1
    return comments, "\n" * len(comments) + text[start:]


def _marked_cells(lines: list[str], width: int) -> list[str] | None:
    """The cells of `lines` split at once, with a mark ("\n", in no cell) between one line's
    and the next's; None unless every line has `width` cells. Then the marks fall every
    width + 1 cells, and a column's cells are a slice: [column::width + 1]."""
    if not lines:
        return []
    cells = ",\n,".join(lines).split(",")
    stride = width + 1
    marks = cells[width::stride]
    if len(cells) + 1 != stride * len(lines) or marks.count("\n") != len(marks):
        return None
    return cells


def _plain_lines(text: str) -> list[str] | None:
    """The lines of `text` when its records are its lines split at each comma, as the csv
    module would read them: no quote, no carriage return, no line longer than the csv module
    takes a field. None otherwise: the csv module reads the text."""
    if '"' in text or "\r" in text:
        return None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # what follows the last line's end (or an empty text): no line
    if lines and max(map(len, lines)) > csv.field_size_limit():
        return None
    return lines


# -- writing --------------------------------------------------------------------------------
@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike[str], mode: str = "w", *, newline: str | None = None
) -> Iterator[IO[Any]]:
    """Open a temporary file beside `path` (text in UTF-8, or bytes with mode "wb") and, if
    the block ends without an error, rename it to `path`; otherwise remove it. Readers see
    the old file or the whole new one.

    Only a regular file (or nothing) is replaced so. A FIFO or a character device at `path`
    (/dev/null, /dev/stdout, a pipe) is written to directly: renaming over it would put a
    regular file in its place. Anything else (a directory, a socket, a block device) is
    refused with a ValueError."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write writes whole files: mode must be 'w' or 'wb', got {mode!r}")
    if not os.fspath(path):
        raise ValueError("the path to write is empty")
    encoding = "utf-8" if mode == "w" else None
    try:
        kind = stat.S_IFMT(os.stat(path).st_mode)
    except FileNotFoundError:
        kind = stat.S_IFREG  # created as one
    if kind in (stat.S_IFIFO, stat.S_IFCHR):
        with open(path, mode, encoding=encoding, newline=newline) as f:
            yield f
        return
    if kind != stat.S_IFREG:
        raise ValueError(
            f"{os.fspath(path)}: cannot write over {_what(kind)}; "
            "expected a regular file, a FIFO or a character device"
        )
    # Write where a symlink points, as open() would, so the rename stays on one file system.
    target = os.path.realpath(path)
    fd, temporary = _create_beside(target)
    try:
        with open(fd, mode, encoding=encoding, newline=newline) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _create_beside(target: str) -> tuple[int, str]:
    """A new, empty file in the directory of `target`, with the permissions `open(target, "w")`
    would give: the existing file's, or 0o666 less the umask."""
    folder, name = os.path.split(target)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    for _ in range(10):  # a clash of 32 random bits is already unlikely
        temporary = os.path.join(folder, f".{name}.{os.urandom(4).hex()}.tmp")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        except OSError as exc:
            raise type(exc)(exc.errno, exc.strerror, target) from None
        if mode is not None:
            os.fchmod(fd, mode)
        return fd, temporary
    raise FileExistsError(f"could not create a temporary file beside {target}")
