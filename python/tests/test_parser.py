"""The sans-IO parser beyond the shared vectors: incremental input, limits as bytes
arrive, sticky errors, the metadata fields (PROTOCOL.md §4.3, §5, §8.8, §9.4)."""

from __future__ import annotations

import pytest

from afterburn_runtime import ProtocolError
from afterburn_runtime._parser import END_OF_STREAM, NEED_DATA, EndOfMessage, RequestHead, RequestParser


def events(parser: RequestParser) -> list:
    out = []
    while True:
        ev = parser.next_event()
        if ev is NEED_DATA or ev is END_OF_STREAM:
            return out + [ev]
        out.append(ev)


def test_clean_eof_between_requests_is_end_of_stream() -> None:
    p = RequestParser()
    p.feed(b"GET / HTTP/1.1\r\nHost: fn\r\n\r\n")
    head, end, need = events(p)
    assert isinstance(head, RequestHead) and isinstance(end, EndOfMessage) and need is NEED_DATA
    p.feed_eof()
    assert p.next_event() is END_OF_STREAM


def test_eof_inside_a_head_is_bad_request() -> None:
    p = RequestParser()
    p.feed(b"GET / HTTP/1.1\r\nHo")
    assert p.next_event() is NEED_DATA
    p.feed_eof()
    with pytest.raises(ProtocolError) as e:
        p.next_event()
    assert (e.value.status, e.value.type) == (400, "bad_request")


def test_errors_are_sticky() -> None:
    # §8.8: never resynchronise; the next request's bytes are never parsed.
    p = RequestParser()
    p.feed(b"GET / HTTP/1.1\nHost: fn\r\n\r\nGET / HTTP/1.1\r\nHost: fn\r\n\r\n")
    for _ in range(2):
        with pytest.raises(ProtocolError):
            p.next_event()


def test_bare_cr_split_across_reads_is_refused_when_the_next_byte_comes() -> None:
    p = RequestParser()
    p.feed(b"GET / HTTP/1.1\r\nHost: fn\r")
    assert p.next_event() is NEED_DATA  # the CR may still be followed by LF
    p.feed(b"X")
    with pytest.raises(ProtocolError):
        p.next_event()


def test_crlf_split_across_reads_is_one_line_end() -> None:
    p = RequestParser()
    for piece in (b"GET / HTTP/1.1\r", b"\nHost: fn\r", b"\n\r", b"\n"):
        p.feed(piece)
        evs = events(p)
    assert isinstance(evs[0], RequestHead)


def test_head_limit_as_bytes_arrive() -> None:
    p = RequestParser(max_head=100)
    p.feed(b"GET / HTTP/1.1\r\nHost: fn\r\nX: " + b"x" * 90)
    with pytest.raises(ProtocolError) as e:
        p.next_event()
    assert (e.value.status, e.value.type) == (431, "headers_too_large")


def test_head_at_the_limit_is_accepted() -> None:
    head = b"GET / HTTP/1.1\r\nHost: fn\r\nX: " + b"x" * 10 + b"\r\n"
    p = RequestParser(max_head=len(head))
    p.feed(head + b"\r\n")
    assert isinstance(p.next_event(), RequestHead)


def test_chunked_body_limit_before_the_data_arrives() -> None:
    p = RequestParser(max_body=10)
    p.feed(b"POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n01234567\r\n8\r\n")
    assert isinstance(p.next_event(), RequestHead)
    assert p.next_event() == b"01234567"
    with pytest.raises(ProtocolError) as e:
        p.next_event()
    assert (e.value.status, e.value.type) == (413, "body_too_large")


def test_body_pieces_come_as_they_arrive() -> None:
    p = RequestParser()
    p.feed(b"POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 6\r\n\r\nabc")
    assert isinstance(p.next_event(), RequestHead)
    assert p.next_event() == b"abc"
    assert p.next_event() is NEED_DATA
    p.feed(b"defGET")
    assert p.next_event() == b"def"
    assert isinstance(p.next_event(), EndOfMessage)
    assert p.next_event() is NEED_DATA  # "GET" is the next request's start


def test_metadata_fields_are_taken_out_of_the_fields() -> None:
    p = RequestParser()
    p.feed(b"GET /a?b=c HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: r1\r\n"
           b"AfterBurn-Timeout-Ms: 250\r\nX-A: 1\r\n\r\n")
    head = p.next_event()
    assert (head.path, head.query, head.request_id, head.timeout_ms) == ("/a", "b=c", "r1", 250)
    assert head.fields == [("host", "fn"), ("x-a", "1")]


@pytest.mark.parametrize(("value", "ms"), [
    ("9223372036854", 9223372036854),
    ("9223372036855", 9223372036854),
    ("0" * 30 + "1500", 1500),
    ("9" * 5000, 9223372036854),  # int() refuses more than 4300 digits
])
def test_timeout_of_any_length_is_capped(value: str, ms: int) -> None:
    # PROTOCOL.md §5.2: any number of digits, capped at 2^63-1 nanoseconds in milliseconds.
    p = RequestParser(max_head=16384)
    p.feed(f"GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Timeout-Ms: {value}\r\n\r\n".encode())
    assert p.next_event().timeout_ms == ms


def test_parse_error_carries_the_request_id_when_known() -> None:
    p = RequestParser()
    p.feed(b"GET / HTTP/1.1\r\nAfterBurn-Request-Id: r9\r\nHost: a\r\nHost: b\r\n\r\n")
    with pytest.raises(ProtocolError) as e:
        p.next_event()
    assert e.value.request_id == "r9"


def test_http_1_0_and_absolute_form_are_accepted() -> None:
    p = RequestParser()
    p.feed(b"GET http://fn/x?y=1 HTTP/1.0\r\nHost: fn\r\n\r\n")
    head = p.next_event()
    assert (head.http_version, head.target, head.path, head.query) == ("HTTP/1.0", "http://fn/x?y=1", "/x", "y=1")


def test_asterisk_form_only_for_options() -> None:
    p = RequestParser()
    p.feed(b"GET * HTTP/1.1\r\nHost: fn\r\n\r\n")
    with pytest.raises(ProtocolError):
        p.next_event()


def test_unlimited_body_takes_the_largest_content_length() -> None:
    p = RequestParser(max_body=0)
    p.feed(b"POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 9223372036854775807\r\n\r\n")
    assert p.next_event().content_length == 2**63 - 1


def test_control_character_in_target_is_refused() -> None:
    p = RequestParser()
    p.feed(b"GET /a\x01b HTTP/1.1\r\nHost: fn\r\n\r\n")
    with pytest.raises(ProtocolError):
        p.next_event()


def test_a_cached_field_name_still_needs_its_colon() -> None:
    p = RequestParser()
    p.feed(b"GET / HTTP/1.1\r\nHost: fn\r\nX-Seen: 1\r\n\r\n")
    events(p)
    p.feed(b"GET / HTTP/1.1\r\nHost: fn\r\nX-Seen\r\n\r\n")
    with pytest.raises(ProtocolError):
        p.next_event()


# -- the fast paths of the head parser must not loosen any rule (§4.3) ---------------------


def head_of(data: bytes) -> RequestHead:
    p = RequestParser()
    p.feed(data)
    ev = p.next_event()
    assert isinstance(ev, RequestHead)
    return ev


def refused(data: bytes) -> ProtocolError:
    p = RequestParser()
    p.feed(data)
    with pytest.raises(ProtocolError) as e:
        p.next_event()
    return e.value


@pytest.mark.parametrize("head", [
    b"GET / HTTP/1.1\r\nHost: fn\nX: 1\r\n\r\n",  # bare LF, whole head in one read
    b"GET / HTTP/1.1\r\nHost: fn\r\nX: a\rb\r\n\r\n",  # bare CR inside a value
    b"GET / HTTP/1.1\r\nHost: fn\r\nX: 1\r\r\n\r\n",  # CR CR LF
    b"GET / HTTP/1.1\r\nHost: fn\r\nX: a\x00b\r\n\r\n",  # rule 5: NUL in a value
])
def test_line_end_and_nul_faults_in_a_complete_head(head: bytes) -> None:
    assert refused(head).type == "bad_request"


def test_a_cached_request_line_does_not_let_a_similar_bad_one_through() -> None:
    # The request-line cache is keyed by the exact text: each of these differs from an
    # accepted line by one fault and must still be refused after the good one was seen.
    head_of(b"GET /a?b HTTP/1.1\r\nHost: fn\r\n\r\n")
    for line in (b"GET  /a?b HTTP/1.1", b"GET /a?b  HTTP/1.1", b"GET /a?b HTTP/1.2",
                 b"GET /a\x7f?b HTTP/1.1", b"GET /a\x01?b HTTP/1.1", b"G(T /a?b HTTP/1.1",
                 b"GET a?b HTTP/1.1", b"GET * HTTP/1.1", b"GET /a?b HTTP/1.1 "):
        assert refused(line + b"\r\nHost: fn\r\n\r\n").type == "bad_request", line
    again = head_of(b"GET /a?b HTTP/1.1\r\nHost: fn\r\n\r\n")
    assert (again.method, again.path, again.query) == ("GET", "/a", "b")


def test_targets_outside_ascii_are_checked_by_byte() -> None:
    # Bytes from 0x80 are allowed in a target (only CTLs are refused), DEL and C0 are not.
    assert head_of(b"GET /caf\xe9\x85 HTTP/1.1\r\nHost: fn\r\n\r\n").path == "/caf\xe9\x85"
    assert refused(b"GET /caf\xe9\x7f HTTP/1.1\r\nHost: fn\r\n\r\n").type == "bad_request"
    assert refused(b"GET /caf\xe9\x1b HTTP/1.1\r\nHost: fn\r\n\r\n").type == "bad_request"


@pytest.mark.parametrize(("value", "length"), [
    (b"0", 0), (b"007", 7), (b"0" * 30 + b"5", 5), (b"9223372036854775807", 2**63 - 1),
    (b"0" * 5000 + b"1", 1),  # more zeros than int() takes in one string
])
def test_content_length_digits_accepted(value: bytes, length: int) -> None:
    assert head_of(b"POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: " + value + b"\r\n\r\n").content_length == length


@pytest.mark.parametrize("value", [
    b"", b"+5", b"-1", b"5 5", b"0x10", b"\xb2", b"1_0", b"9223372036854775808",
    b"10000000000000000000", b"0" * 30 + b"9223372036854775808",
])
def test_content_length_faults(value: bytes) -> None:
    e = refused(b"POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: " + value + b"\r\n\r\n")
    assert e.type == "bad_request"


def test_faults_are_answered_in_byte_order_across_fields() -> None:
    # Rule 8 (501) on an earlier line wins over rule 6 (400) on a later one, and the other way.
    te_first = refused(b"POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: gzip\r\nContent-Length: x\r\n\r\n")
    assert te_first.type == "not_implemented"
    cl_first = refused(b"POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: x\r\nTransfer-Encoding: gzip\r\n\r\n")
    assert cl_first.type == "bad_request"


# -- the field-line cache (_FIELD_LINES) keeps only lines that passed every check ----------


def test_a_cached_field_line_does_not_let_a_similar_bad_one_through() -> None:
    # Keyed by the exact text: each line differs from an accepted one by one fault and must
    # still be refused once the good lines were seen (and cached).
    good = b"POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 2\r\nAfterBurn-Timeout-Ms: 50\r\nX-Seen: 1\r\n\r\nab"
    head_of(good)
    head_of(good)
    for line in (b"Host : fn", b" Host: fn", b"Content-Length: 2 2", b"Content-Length: +2",
                 b"Content-Length: \xb2", b"AfterBurn-Timeout-Ms: 5x", b"AfterBurn-Timeout-Ms: -50",
                 b"X-Seen 1", b"X(Seen: 1", b"\tX-Seen: 1", b"X-Seen: 1\x00"):
        assert refused(b"POST / HTTP/1.1\r\nHost: fn\r\n" + line + b"\r\n\r\n").type == "bad_request", line


def test_cached_field_lines_still_meet_the_rules_across_lines() -> None:
    # Rules 6, 7, 8 and 10 depend on the other lines of the head: a line accepted (and
    # cached) alone must still be refused when repeated or combined.
    head_of(b"POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 2\r\n\r\nab")
    head_of(b"POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n")
    assert refused(b"GET / HTTP/1.1\r\nHost: fn\r\nHost: fn\r\n\r\n").type == "bad_request"
    assert refused(b"POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n").type == "bad_request"
    assert refused(b"POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n").type == "bad_request"
    assert refused(b"POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n").type == "bad_request"
    assert refused(b"POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n").type == "not_implemented"
    assert refused(b"GET / HTTP/1.1\r\nX: 1\r\n\r\n").type == "bad_request"  # rule 10: no Host


def test_cached_field_lines_give_the_same_head() -> None:
    data = (b"POST /p HTTP/1.1\r\nHost: fn\r\nContent-Length: 3\r\nAfterBurn-Timeout-Ms: 250\r\n"
            b"AfterBurn-Request-Id: r1\r\nX-A:  v \r\n\r\nabc")
    first = head_of(data)
    second = head_of(data.replace(b"r1", b"r2"))
    assert first.fields == second.fields == [("host", "fn"), ("content-length", "3"), ("x-a", "v")]
    assert (second.content_length, second.timeout_ms, second.request_id) == (3, 250, "r2")
    assert first.request_id == "r1"
    # The first timeout line wins, also when both lines are cached (§5.2).
    twice = head_of(b"GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Timeout-Ms: 7\r\nAfterBurn-Timeout-Ms: 250\r\n\r\n")
    assert twice.timeout_ms == 7


def test_request_id_lines_are_not_cached() -> None:
    from afterburn_runtime import _parser

    for i in range(3):
        head_of(b"GET / HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: id%d\r\n\r\n" % i)
    assert not any(line.lower().startswith("afterburn-request-id") for line in _parser._FIELD_LINES)


def test_the_field_line_cache_is_bounded() -> None:
    from afterburn_runtime import _parser

    for i in range(_parser._FIELD_LINES_MAX * 2 + 5):
        assert head_of(b"GET / HTTP/1.1\r\nHost: fn\r\nX-N: %d\r\n\r\n" % i).fields[1] == ("x-n", str(i))
    assert len(_parser._FIELD_LINES) <= _parser._FIELD_LINES_MAX
    long_value = b"v" * (_parser._FIELD_LINE_CACHE_MAX_LEN + 1)
    head_of(b"GET / HTTP/1.1\r\nHost: fn\r\nX-Long: " + long_value + b"\r\n\r\n")
    assert "X-Long: " + long_value.decode() not in _parser._FIELD_LINES
