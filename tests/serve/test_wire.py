"""The request/reply framing: round trips, and every malformed frame is a WireError."""

from __future__ import annotations

import pytest

from guard.serve import wire


def _payload(framed: bytes) -> bytes:
    n = wire.frame_length(framed[:4])
    assert len(framed) == 4 + n
    return framed[4:]


def test_request_round_trip_keeps_bytes_and_order() -> None:
    argv = [b"-c", b"git status && echo '\xff\xfe' $HOME", b"name", b""]
    env = {b"PATH": b"/usr/bin:/bin", b"EMPTY": b"", b"EQ": b"a=b=c", b"BASH_FUNC_f%%": b"() { git push; }"}
    got = wire.decode_request(_payload(wire.encode_request(argv, b"/work dir/\xe9", env)))
    assert got == (argv, b"/work dir/\xe9", env)
    assert list(got[2]) == list(env)


def test_reply_round_trip_keeps_stderr_whole() -> None:
    said = b"Refused: git push.\n\x00binary\x00\nsecond line\n"
    for action in wire.ACTIONS:
        assert wire.decode_reply(_payload(wire.encode_reply(action, said))) == (action, said)


def test_a_nul_byte_in_a_request_field_is_refused() -> None:
    with pytest.raises(wire.WireError):
        wire.encode_request([b"-c", b"a\0b"], b"/", {})
    with pytest.raises(wire.WireError):
        wire.encode_request([b"-c", b"x"], b"/", {b"K": b"v\0w"})


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"other-magic\0/\x000",
        wire.MAGIC + b"\0/\0two\0-c",
        wire.MAGIC + b"\0/\x005\0-c\0x",  # argc larger than the argv sent
        wire.MAGIC + b"\0/\x001\0-c\0NOEQUALS",
        wire.MAGIC + b"\0/\x001\0-c\0=value",
    ],
)
def test_malformed_requests_are_wire_errors(payload: bytes) -> None:
    with pytest.raises(wire.WireError):
        wire.decode_request(payload)


@pytest.mark.parametrize("payload", [b"", wire.MAGIC, wire.MAGIC + b"\0allow\0", b"x\0run\0"])
def test_malformed_replies_are_wire_errors(payload: bytes) -> None:
    with pytest.raises(wire.WireError):
        wire.decode_reply(payload)


def test_unknown_action_cannot_be_encoded_and_oversized_frames_are_refused() -> None:
    with pytest.raises(wire.WireError):
        wire.encode_reply(b"allow", b"")
    with pytest.raises(wire.WireError):
        wire.frame_length((wire.MAX_FRAME + 1).to_bytes(4, "big"))
    with pytest.raises(wire.WireError):
        wire.frame_length(b"\0\0")
