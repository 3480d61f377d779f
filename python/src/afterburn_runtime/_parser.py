"""The strict, sans-IO request parser of PROTOCOL.md §4.3.

Theory of operation. The parser never touches a descriptor: the caller feeds it bytes
(``feed``), tells it when the stream ended (``feed_eof``) and asks for events
(``next_event``), one request after another on one stream (§4.1):

    RequestHead   the request line and fields, checked, once per request
    bytes         a piece of the de-chunked body (never empty)
    EndOfMessage  the body ended; carries the trailer fields of a chunked body
    NEED_DATA     nothing more can be said until more bytes (or the EOF) arrive
    END_OF_STREAM the stream ended cleanly between two requests (§9.4)

A request that breaks a rule raises ProtocolError, and keeps raising it: after a framing
error the stream cannot be trusted and must never be resynchronised (§8.8). Every limit
is checked against the bytes held so far, so an over-long head or body is refused as soon
as it crosses the limit, never after buffering it (§4.3, last paragraph).

The standard library's parser cannot be used: it accepts "+5" as a length, NUL in values
and duplicate Content-Length (RESEARCH.md §3).
"""

from __future__ import annotations

from ._errors import BODY_TOO_LARGE, HEADERS_TOO_LARGE, NOT_IMPLEMENTED, ProtocolError, bad_request

# PROTOCOL.md §7.3: without AFTERBURN_MAX_HEADER_BYTES a library accepts heads of up to
# 65536 bytes; with it, the value plus 1024 bytes of slack for the watchdog's own fields.
DEFAULT_MAX_HEAD = 65536
HEAD_SLACK = 1024

_MAX_INT63 = (1 << 63) - 1

# The checks below use bytes.translate rather than regular expressions: the re module is
# not loaded at start-up and costs milliseconds of cold start (issue 3).
_TCHAR = b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_HEXDIG = b"0123456789ABCDEFabcdef"
_CTL_AND_SPACE = bytes(range(0x21)) + b"\x7f"


def is_token(s: str) -> bool:
    """RFC 9110 §5.6.2: one or more tchar."""
    return bool(s) and s.isascii() and not s.encode("ascii").translate(None, _TCHAR)


def _has_ctl(s: str) -> bool:
    b = s.encode("latin-1")
    return len(b.translate(None, _CTL_AND_SPACE)) != len(b)


def _chunk_size(line: bytes) -> int | None:
    """Rule 9: 1-16 hex digits, then optional extensions, which are ignored
    (RFC 9112 §7.1.1: chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] ))."""
    semi = line.find(b";")
    digits = line if semi < 0 else line[:semi].rstrip(b" \t")
    if not 1 <= len(digits) <= 16 or digits.translate(None, _HEXDIG):
        return None
    return int(digits, 16)


class RequestHead:
    """A checked request head.

    ``fields`` holds every field line as ``(lower-case name, value)`` in order, except
    the reserved ``AfterBurn-*`` fields, whose meaning is in ``request_id``,
    ``timeout_ms``, ``handshake`` and ``exchange`` instead (PROTOCOL.md §5.3).
    ``exchange`` is the request's exchange token (§4.6), which the response echoes and
    no handler sees.
    """

    __slots__ = ("method", "target", "path", "query", "http_version", "fields",
                 "content_length", "chunked", "request_id", "timeout_ms", "handshake", "exchange", "has_body")

    def __init__(self, method: str, target: str, path: str, query: str, http_version: str,
                 fields: list[tuple[str, str]], content_length: int | None = None, chunked: bool = False,
                 request_id: str | None = None, timeout_ms: int | None = None,
                 handshake: str | None = None, exchange: str | None = None) -> None:
        self.method = method
        self.target = target
        self.path = path
        self.query = query
        self.http_version = http_version
        self.fields = fields
        self.content_length = content_length
        self.chunked = chunked
        self.request_id = request_id
        self.timeout_ms = timeout_ms
        self.handshake = handshake
        self.exchange = exchange
        # Whether a body follows the head (an attribute, not a property: read per exchange).
        self.has_body = chunked or bool(content_length)


class EndOfMessage:
    """The end of a request's body, with the trailer fields of a chunked body."""

    __slots__ = ("trailers",)

    def __init__(self, trailers: list[tuple[str, str]]) -> None:
        self.trailers = trailers


class _Sentinel:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


NEED_DATA = _Sentinel("NEED_DATA")
END_OF_STREAM = _Sentinel("END_OF_STREAM")

_NO_TRAILERS = EndOfMessage([])

# Parser states.
_HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_CRLF, _TRAILERS, _END = range(7)

# Field names the parser interprets itself, matched case-insensitively (RFC 9110 §5.1).
_HOST, _CONTENT_LENGTH, _TRANSFER_ENCODING, _REQUEST_ID, _TIMEOUT, _HANDSHAKE, _EXCHANGE = range(7)
_SPECIAL = {
    "host": _HOST,
    "content-length": _CONTENT_LENGTH,
    "transfer-encoding": _TRANSFER_ENCODING,
    "afterburn-request-id": _REQUEST_ID,  # §5.1, never shown to handlers (§5.3)
    "afterburn-timeout-ms": _TIMEOUT,  # §5.2, never shown to handlers (§5.3)
    "afterburn-handshake": _HANDSHAKE,  # §3.1
    "afterburn-exchange": _EXCHANGE,  # §4.6, never shown to handlers (§5.3)
}

# PROTOCOL.md §4.6: the longest exchange token.
_MAX_TOKEN = 64


def is_exchange_token(value: str) -> bool:
    """Rule 14: 1-64 characters from 0-9 a-z A-Z (for ASCII text, isalnum() is exactly
    that, and runs in C)."""
    return 0 < len(value) <= _MAX_TOKEN and value.isascii() and value.isalnum()


class RequestParser:
    """Turns the bytes of the request pipe into events (see the module documentation).

    ``max_head`` bounds a head (request line and field lines with their CRLFs, rule 11)
    and a trailer section (rule 9); ``max_body`` bounds a de-chunked body, 0 meaning
    unlimited (rule 12).
    """

    def __init__(self, max_head: int = DEFAULT_MAX_HEAD, max_body: int = 0) -> None:
        self.max_head = max_head
        self.max_body = max_body
        self._buf = bytearray()
        self._pos = 0  # first unconsumed byte of _buf
        self._eof = False
        self._error: ProtocolError | None = None
        self._state = _HEAD
        self._scanned = 0  # head: bytes after _pos already searched for the end of the head
        self._checked = 0  # head: bytes after _pos whose line ends are known to be CRLF
        self._remain = 0  # Content-Length bytes, or bytes of the current chunk, still to come
        self._total = 0  # de-chunked bytes so far
        self._trailers: list[tuple[str, str]] = []
        self._trailer_bytes = 0

    # -- input ------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Adds bytes read from the request pipe."""
        if self._pos:
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += data

    def feed_eof(self) -> None:
        """Says the request pipe reached its end."""
        self._eof = True

    def body_held(self) -> bool:
        """Whether the next event of a Content-Length body is already held: some of its
        bytes, or its end (no read of the pipe needed to give it)."""
        state = self._state
        return state == _END or state == _LENGTH and len(self._buf) > self._pos

    # -- events -----------------------------------------------------------------------

    def next_event(self) -> RequestHead | bytes | EndOfMessage | _Sentinel:
        """Returns the next event, or raises ProtocolError (for good) on a framing error."""
        if self._error is not None:
            raise self._error
        try:
            state = self._state
            if state == _HEAD:
                return self._head()
            if state == _LENGTH or state == _CHUNK_DATA:
                return self._data()
            if state == _END:
                self._state = _HEAD
                return _NO_TRAILERS
            return self._chunked()
        except ProtocolError as e:
            self._error = e
            raise

    def _truncated(self, where: str) -> ProtocolError:
        # PROTOCOL.md §9.4: EOF inside a request is a framing error.
        return bad_request(f"the request pipe ended inside {where}")

    def _data(self):
        avail = len(self._buf) - self._pos
        if avail == 0:
            if self._eof:
                raise self._truncated("the request body")
            return NEED_DATA
        n = self._remain if self._remain < avail else avail
        pos = self._pos
        data = bytes(self._buf[pos : pos + n])
        self._pos = pos + n
        self._remain -= n
        if self._remain == 0:
            self._state = _END if self._state == _LENGTH else _CHUNK_CRLF
        return data

    # -- the head ---------------------------------------------------------------------

    def _head(self):
        buf, start = self._buf, self._pos
        size = len(buf) - start
        if size == 0:
            return END_OF_STREAM if self._eof else NEED_DATA
        scanned = self._scanned  # resume the search where the last one stopped
        idx = buf.find(b"\r\n\r\n", start + scanned - 3 if scanned > 3 else start)
        # Rule 11 and §7.3: the head is the request line and the field lines with their
        # CRLFs (idx + 2 - start bytes); the empty line that ends it is not counted.
        if idx < 0 or idx + 2 - start > self.max_head:
            # Not yet ended, the end can begin at the earliest 3 bytes from the end
            # ("\r\n\r" held), so the head is at least size - 1 bytes: refuse it now if
            # that is too many. Rule 1 is checked first, but only on the bytes up to the
            # one that breaks rule 11 (byte max_head + 1): a bare LF past it comes later in
            # byte order, and would be seen or not depending on how the bytes were split
            # into reads (§4.3).
            self._check_line_ends(start, min(len(buf), start + self.max_head + 2))
            if size - 1 > self.max_head:
                raise ProtocolError(HEADERS_TOO_LARGE, f"the request head exceeds {self.max_head} bytes")
            if self._eof:
                raise self._truncated("the request head")
            self._scanned = size
            return NEED_DATA
        # The whole head is held: rule 1 is checked on its text in one go (a split and
        # two counts in C) rather than on the bytes; the bytes checked on earlier calls were line ends
        # that are fine, so checking them again gives the same answer. The four bytes that
        # end the head are CRLF CRLF and need no check.
        text = buf[start:idx].decode("latin-1")
        lines = text.split("\r\n")
        crlf = len(lines) - 1  # split() finds the CRLFs that text.count("\r\n") would
        if text.count("\n") != crlf:
            raise bad_request("a line of the request head ends in a bare LF")
        if text.count("\r") != crlf:
            raise bad_request("the request head holds a bare CR")
        self._pos = idx + 4
        self._scanned = self._checked = 0
        try:
            head = _parse_head(text, lines)
        except ProtocolError as e:
            # §4.6 SHOULD: a rejection written after the head was read carries the head's
            # token. Only here, where the whole head is held and rules 1 and 11 passed: a
            # fault those rules find may be found before the head is complete, and the
            # answer must not depend on how the bytes were split into reads (§4.3).
            e.exchange = _token_of(lines)
            raise
        if head.chunked:
            self._state = _CHUNK_SIZE
            self._total = 0
            self._trailers = []
            self._trailer_bytes = 0
        elif head.content_length:
            n = head.content_length
            if self.max_body and n > self.max_body:
                e = ProtocolError(BODY_TOO_LARGE, f"Content-Length {n} exceeds the limit of {self.max_body} bytes")
                e.request_id = head.request_id
                e.exchange = head.exchange
                raise e  # rule 12, before any body byte
            self._state = _LENGTH
            self._remain = n
        else:
            # §4.2: a request with neither Content-Length nor chunked has an empty body.
            self._state = _END
        return head

    def _check_line_ends(self, start: int, end: int) -> None:
        """Rule 1 (and the CR of rule 5) on a head not yet complete: in buf[start:end],
        every LF follows a CR and every CR precedes an LF. A CR that ends the bytes held so
        far is decided later. Checked as bytes arrive, so a bare LF is refused before the
        head ends (§4.3: the first fault in byte order)."""
        lo = start + self._checked
        seg = self._buf[lo:end]
        crlf = seg.count(b"\r\n")
        if seg.count(b"\n") != crlf:
            raise bad_request("a line of the request head ends in a bare LF")
        pending = seg.endswith(b"\r")
        if seg.count(b"\r") - pending != crlf:
            raise bad_request("the request head holds a bare CR")
        self._checked = end - start - pending

    # -- chunked bodies (rule 9) ------------------------------------------------------

    def _line(self, limit: int, where: str) -> bytes | None:
        """Takes one CRLF-ended line of at most ``limit`` bytes, CRLF included, and returns
        it without its CRLF, or None when it has not fully arrived."""
        buf, pos = self._buf, self._pos
        i = buf.find(b"\n", pos)
        if i < 0:
            held = len(buf) - pos
            if held >= limit:
                raise bad_request(f"{where} is longer than {limit} bytes")
            cr = buf.find(b"\r", pos)
            if 0 <= cr < len(buf) - 1:
                raise bad_request(f"{where} holds a bare CR")  # rule 1
            if self._eof:
                raise self._truncated("a chunked body")
            return None
        if i + 1 - pos > limit:
            raise bad_request(f"{where} is longer than {limit} bytes")
        if i == pos or buf[i - 1] != 13:
            raise bad_request(f"{where} ends in a bare LF")  # rule 1
        line = bytes(buf[pos : i - 1])
        if b"\r" in line:
            raise bad_request(f"{where} holds a bare CR")  # rule 1
        self._pos = i + 1
        return line

    def _chunked(self):
        while True:
            state = self._state
            if state == _CHUNK_SIZE:
                line = self._line(self.max_head, "a chunk line")
                if line is None:
                    return NEED_DATA
                n = _chunk_size(line)
                if n is None:
                    raise bad_request(f"bad chunk size line {line[:64]!r}")
                if self.max_body and self._total + n > self.max_body:
                    raise ProtocolError(BODY_TOO_LARGE, f"the chunked body exceeds {self.max_body} bytes")  # rule 12
                if self._total + n > _MAX_INT63:
                    raise bad_request("the chunked body is longer than 2^63-1 bytes")
                self._total += n
                if n == 0:
                    self._state = _TRAILERS
                else:
                    self._state = _CHUNK_DATA
                    self._remain = n
                    return self._data()
            elif state == _CHUNK_DATA:
                return self._data()
            elif state == _CHUNK_CRLF:
                # Chunk data must be followed by CRLF; a wrong byte is refused at once.
                buf, pos = self._buf, self._pos
                held = len(buf) - pos
                if held >= 1 and buf[pos] != 13 or held >= 2 and buf[pos + 1] != 10:
                    raise bad_request("chunk data is not followed by CRLF")
                if held < 2:
                    if self._eof:
                        raise self._truncated("a chunked body")
                    return NEED_DATA
                self._pos = pos + 2
                self._state = _CHUNK_SIZE
            else:  # _TRAILERS
                room = self.max_head - self._trailer_bytes
                line = self._line(max(room, 2), "the trailer section")
                if line is None:
                    return NEED_DATA
                if not line:
                    self._state = _HEAD
                    return EndOfMessage(self._trailers)
                self._trailer_bytes += len(line) + 2
                if self._trailer_bytes > self.max_head:
                    raise bad_request(f"the trailer section exceeds {self.max_head} bytes")
                self._trailers.append(_parse_field(line.decode("latin-1")))


# -- head parsing ---------------------------------------------------------------------


def _parse_field(line: str) -> tuple[str, str]:
    """Rules 3, 4 and 5 on one field line; returns (lower-case name, trimmed value)."""
    name, colon, value = line.partition(":")
    entry = _NAMES.get(name)
    if entry is None or not colon:
        entry = _check_name(line, name, colon)
    lname = entry[0]
    value = value.strip(" \t")
    if "\x00" in value:
        raise bad_request(f"the value of {name!r} holds a NUL byte")  # rule 5 (CR, LF: rule 1)
    return lname, value


# Field names seen before, as typed on the wire -> (lower-case name, kind), so that steady
# traffic checks and folds each name once. Bounded: a client cannot grow it without end.
_NAMES: dict[str, tuple[str, int | None]] = {}
_NAMES_MAX = 512


def _check_name(line: str, name: str, colon: str) -> tuple[str, int | None]:
    if line[0] in " \t":
        raise bad_request(f"a field line starts with whitespace (obs-fold): {line[:64]!r}")  # rule 4
    if not colon:
        raise bad_request(f"a field line has no colon: {line[:64]!r}")  # rule 3
    if not is_token(name):
        raise bad_request(f"a field name is not a token: {name[:64]!r}")  # rule 3
    lname = name.lower()
    entry = (lname, _SPECIAL.get(lname))
    if len(_NAMES) < _NAMES_MAX:
        _NAMES[name] = entry
    return entry


def _parse_head(text: str, lines: list[str]) -> RequestHead:
    """Rules 2-8, 10, 13 and 14 on a whole head, ``text``, split at its CRLFs into ``lines``,
    CRLFs already checked (rule 1). The checks run
    in byte order, so a head that breaks several rules is answered for the first (§4.3).

    This runs once per request: the work is kept in local variables and C-level string
    methods, and field names are looked up in _NAMES so that a name seen before is
    checked and lower-cased once."""
    if "\x00" in text:
        raise bad_request("the request head holds a NUL byte")  # rules 2 and 5
    request_line = lines[0]
    parsed = _REQUEST_LINES.get(request_line)
    if parsed is None:
        parsed = _parse_request_line(request_line)
        if len(request_line) <= _REQUEST_LINE_CACHE_MAX_LEN:
            if len(_REQUEST_LINES) >= _REQUEST_LINES_MAX:
                _REQUEST_LINES.clear()
            _REQUEST_LINES[request_line] = parsed
    method, target, path, query, version = parsed
    fields = []
    append = fields.append
    content_length: int | None = None
    chunked = False
    request_id: str | None = None
    timeout_ms: int | None = None
    handshake: str | None = None
    exchange: str | None = None
    hosts = 0
    known_lines = _FIELD_LINES
    try:
        for line in lines[1:]:
            known = known_lines.get(line)
            if known is not None:
                # A line that passed every check before (see _FIELD_LINES): only the checks
                # that depend on the other lines of this head remain.
                pair, kind, number = known
            else:
                name, colon, value = line.partition(":")
                entry = _NAMES.get(name)
                if entry is None or not colon:
                    entry = _check_name(line, name, colon)  # rules 3 and 4
                lname, kind = entry
                pair = (lname, value.strip(" \t"))
                number = None
            if kind is None:
                append(pair)
            elif kind == _HOST:
                hosts += 1
                if hosts > 1:
                    raise bad_request("more than one Host field")  # rule 10
                append(pair)
            elif kind == _CONTENT_LENGTH:
                if content_length is not None:
                    raise bad_request("more than one Content-Length field")  # rule 6
                if chunked:
                    raise bad_request("both Content-Length and Transfer-Encoding")  # rule 7
                content_length = number = _content_length(pair[1]) if number is None else number
                append(pair)
            elif kind == _TRANSFER_ENCODING:
                if content_length is not None:
                    raise bad_request("both Content-Length and Transfer-Encoding")  # rule 7
                if chunked or pair[1].lower() != "chunked":
                    # A second line would make the coding list "chunked, ...".
                    raise ProtocolError(NOT_IMPLEMENTED, f"Transfer-Encoding {pair[1][:64]!r}")  # rule 8
                chunked = True
                append(pair)
            elif kind == _TIMEOUT:
                if number is None:
                    value = pair[1]
                    if not (value.isdigit() and value.isascii()):
                        raise bad_request(f"AfterBurn-Timeout-Ms {value[:64]!r}")  # rule 13
                    number = _timeout_ms(value)
                if timeout_ms is None:
                    timeout_ms = number
            elif kind == _REQUEST_ID:
                if request_id is None:
                    request_id = pair[1]
                continue  # unique to each request: not worth keeping (see _FIELD_LINES)
            elif kind == _HANDSHAKE:
                if handshake is None:
                    handshake = pair[1]
                continue  # once per worker: not worth keeping
            else:  # _EXCHANGE
                if exchange is not None:
                    raise bad_request("more than one AfterBurn-Exchange field")  # rule 14
                exchange = pair[1]
                if not is_exchange_token(exchange):
                    raise bad_request(f"AfterBurn-Exchange {exchange[:64]!r} is not 1-64 of 0-9 a-z A-Z")  # rule 14
                continue  # unique to each request: not worth keeping
            if known is None and len(line) <= _FIELD_LINE_CACHE_MAX_LEN:
                # Every check on this line alone has passed: keep it for the next head.
                if len(known_lines) >= _FIELD_LINES_MAX:
                    known_lines.clear()
                known_lines[line] = (pair, kind, number)
        if hosts == 0:
            raise bad_request("no Host field")  # rule 10
    except ProtocolError as e:
        e.request_id = request_id  # §8.1: the error body names the id when known
        raise
    return RequestHead(method, target, path, query, version, fields, content_length, chunked,
                       request_id, timeout_ms, handshake, exchange)


def _token_of(lines: list[str]) -> str | None:
    """The exchange token of a head that failed a check, for its rejection (§4.6): the
    value of its one AfterBurn-Exchange line when that is a well-formed token, else None
    (a rejection must not echo a value rule 14 refuses)."""
    token = None
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if colon and name.lower() == "afterburn-exchange":
            if token is not None:
                return None
            token = value.strip(" \t")
    return token if token is not None and is_exchange_token(token) else None


def _digits_value(digits: str) -> int | None:
    """The value of a string of ASCII digits, or None when it has more than 19 significant
    ones (past 2^63). Leading zeros are allowed, so only a long string needs them stripped;
    int() also refuses strings of more than 4300 digits."""
    if len(digits) > 19:
        digits = digits.lstrip("0") or "0"
        if len(digits) > 19:
            return None
    return int(digits)


def _content_length(value: str) -> int:
    """Rule 6: one or more ASCII digits (str.isdigit alone would accept "²"), at most
    2^63-1."""
    if not (value.isdigit() and value.isascii()):
        raise bad_request(f"Content-Length {value[:64]!r}")
    n = _digits_value(value)
    if n is None or n > _MAX_INT63:
        raise bad_request(f"Content-Length {value[:64]!r}")
    return n


# §5.2: the most milliseconds a deadline can be: 2^63-1 nanoseconds, as in every library.
_MAX_TIMEOUT_MS = _MAX_INT63 // 1_000_000


def _timeout_ms(digits: str) -> int:
    """AfterBurn-Timeout-Ms, checked to be ASCII digits (rule 13), of any length: a value
    past _MAX_TIMEOUT_MS is taken as it (§5.2)."""
    n = _digits_value(digits)
    return _MAX_TIMEOUT_MS if n is None else min(n, _MAX_TIMEOUT_MS)


# Whole field lines seen before, as typed on the wire -> ((lower-case name, trimmed value),
# kind, the parsed number of a Content-Length or AfterBurn-Timeout-Ms line or None). Steady
# traffic repeats most lines of a head exactly ("Host: 127.0.0.1:8080", "Content-Type: ...",
# "AfterBurn-Timeout-Ms: 30000"), and what rules 3-6, 8 and 13 say about a line is a function
# of its text alone, so each is checked once. Only lines that passed every check are kept
# (rules 1, 2 and 5 are checked on the whole head before any line is looked up); the checks
# that depend on the other lines (rules 6, 7, 8 and 10 on repeats) run on every head.
# AfterBurn-Request-Id and AfterBurn-Exchange lines differ in every request and are never
# kept. Bounded in entries and in line length, and emptied when full, so varied values
# cannot grow it.
_FIELD_LINES: dict[str, tuple[tuple[str, str], int | None, int | None]] = {}
_FIELD_LINES_MAX = 512
_FIELD_LINE_CACHE_MAX_LEN = 1024


# Request lines seen before -> their parts. Steady traffic repeats a few request lines
# ("GET /health HTTP/1.1"), and the parts are a function of the line's text alone, so each is
# checked once; only lines that passed every check are kept. Bounded in entries and in line
# length, and emptied when full, so varied targets cannot grow it.
_REQUEST_LINES: dict[str, tuple[str, str, str, str, str]] = {}
_REQUEST_LINES_MAX = 256
_REQUEST_LINE_CACHE_MAX_LEN = 1024

_METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"))


def _parse_request_line(line: str) -> tuple[str, str, str, str, str]:
    """Rule 2: token SP request-target SP HTTP/1.1, single spaces (HTTP/1.0 accepted).
    Returns (method, target, path, query, version)."""
    parts = line.split(" ")
    if len(parts) != 3:
        raise bad_request(f"request line {line[:64]!r} is not three parts separated by single spaces")
    method, target, version = parts
    if method not in _METHODS and not is_token(method):
        raise bad_request(f"a method that is not a token in {line[:64]!r}")
    if version != "HTTP/1.1" and version != "HTTP/1.0":
        raise bad_request(f"a version other than HTTP/1.1 in {line[:64]!r}")
    # The target holds no space (split above), so for ASCII text isprintable() is exactly
    # "no CTL" (0x00-0x1F, 0x7F) and runs in C; other text takes the byte check.
    if not target or not (target.isascii() and target.isprintable()) and _has_ctl(target):
        raise bad_request(f"a bad request-target in {line[:64]!r}")
    if target[0] == "/":
        path_and_query = target
    elif target == "*":
        if method != "OPTIONS":  # §3.1: the handshake's asterisk-form
            raise bad_request("an asterisk-form target outside OPTIONS")
        path_and_query = "*"
    elif "://" in target:
        # The absolute-form is accepted as RFC 9112 §3.2.2 asks of every server.
        slash = target.find("/", target.index("://") + 3)
        path_and_query = target[slash:] if slash >= 0 else "/"
    else:
        raise bad_request(f"a request-target that is not in origin-form in {line[:64]!r}")
    path, _, query = path_and_query.partition("?")
    return method, target, path, query, version
