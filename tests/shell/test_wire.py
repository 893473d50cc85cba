"""The request/reply framing: round trips, and every malformed frame is a WireError."""

from __future__ import annotations

import pytest

from guard.shell import wire


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


def test_a_request_decoded_as_text_gives_each_field_as_fsdecode_would() -> None:
    """One decode of the whole request gives the strings a decode of each field gives, for
    bytes that are not UTF-8 too: a sequence cut at a field's end, stray continuation and lead
    bytes, surrogate encodings, and fields that are nothing else."""
    import os
    import random
    import sys

    if (sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()) != ("utf-8", "surrogateescape"):
        pytest.skip("not a UTF-8 file system encoding")
    pieces = [b"a", b"=", b"\xc3", b"\xa9", b"\xe2\x82", b"\xac", b"\xf0\x9f\x98", b"\x80", b"\xff", b"\xed\xa0\x80",
              b"\xc0\xaf", b" ", b"/", "é€😀".encode()]
    rng = random.Random(17)
    for _ in range(300):
        word = lambda: b"".join(rng.choice(pieces) for _ in range(rng.randrange(0, 6)))  # noqa: E731
        argv = [word() for _ in range(rng.randrange(0, 4))]
        env = {b"K" + word().replace(b"=", b""): word() for _ in range(rng.randrange(0, 5))}
        payload = _payload(wire.encode_request(argv, word(), env))
        argv_b, cwd_b, env_b = wire.decode_request(payload)
        want = ([os.fsdecode(a) for a in argv_b], os.fsdecode(cwd_b), {os.fsdecode(k): os.fsdecode(v) for k, v in env_b.items()})
        got = wire.decode_request_text(payload)
        assert got == want and list(got[2]) == list(want[2]), payload


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
        wire.MAGIC + b"\0/\0\xd9\xa3\0-c",  # a digit, but not an ASCII one
    ],
)
def test_malformed_requests_are_wire_errors(payload: bytes) -> None:
    with pytest.raises(wire.WireError):
        wire.decode_request(payload)
    with pytest.raises(wire.WireError):
        wire.decode_request_text(payload)


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
