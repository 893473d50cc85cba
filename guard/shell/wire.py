"""Request and reply framing between guard-shell and the analysis server.

Every field of a request is a string that cannot hold a NUL byte (argv words, a path,
``NAME=value`` environment entries), so a request is its fields joined by NUL behind a 4-byte
length. A reply ends with the stderr bytes the analysis wrote, which may hold anything, so they
come last and are not split.

The worker first sends ``READY`` (one byte) when it takes the connection; only then does the
client send its request. Request: ``MAGIC, cwd, argc, argv…, env…``. Reply: ``MAGIC, action, stderr``, where action is
``run`` (run under the relay), ``plain`` (exec the real shell directly) or ``refuse``.
"""


MAGIC = b"guard-serve/1"
READY = b"R"  # the worker's first byte: it has the connection and waits for the request
ACTIONS = (b"run", b"plain", b"refuse")
MAX_FRAME = 64 << 20  # a 64 MiB request is refused; guard-shell then analyses in-process


class WireError(ValueError):
    """A frame that is not a well-formed request or reply."""


def frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


def frame_length(header: bytes) -> int:
    n = int.from_bytes(header, "big")
    if len(header) != 4 or n > MAX_FRAME:
        raise WireError("bad frame length")
    return n


def recv_exact(sock: object, n: int) -> bytes:
    """Exactly ``n`` bytes from a socket; WireError when it closes first."""
    chunks = []
    while n:
        b = sock.recv(min(n, 1 << 20))  # type: ignore[attr-defined]
        if not b:
            raise WireError("connection closed early")
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def encode_request(argv: list[bytes], cwd: bytes, env: dict[bytes, bytes]) -> bytes:
    fields = [MAGIC, cwd, str(len(argv)).encode(), *argv, *(k + b"=" + v for k, v in env.items())]
    if any(b"\0" in f for f in fields):
        raise WireError("a field holds a NUL byte")
    return frame(b"\0".join(fields))


def decode_request(payload: bytes) -> tuple[list[bytes], bytes, dict[bytes, bytes]]:
    fields = payload.split(b"\0")
    if len(fields) < 3 or fields[0] != MAGIC or not fields[2].isdigit():
        raise WireError("not a guard request")
    argc = int(fields[2])
    if 3 + argc > len(fields):
        raise WireError("truncated argv")
    argv = fields[3 : 3 + argc]
    env: dict[bytes, bytes] = {}
    for item in fields[3 + argc :]:
        k, sep, v = item.partition(b"=")
        if not sep or not k:
            raise WireError("bad environment entry")
        env.setdefault(k, v)
    return argv, fields[1], env


def decode_request_text(payload: bytes) -> tuple[list[str], str, dict[str, str]]:
    """``decode_request`` with each field as ``os.fsdecode`` gives it on a UTF-8 file system
    (``surrogateescape``), from one decode of the whole payload rather than one per field (an
    agent's environment is a hundred of them). The same strings: NUL is never part of a UTF-8
    sequence, so a sequence cut short at a field's end is escaped byte by byte either way."""
    fields = payload.decode("utf-8", "surrogateescape").split("\0")
    if len(fields) < 3 or fields[0] != _MAGIC_TEXT or not (fields[2].isascii() and fields[2].isdigit()):
        raise WireError("not a guard request")
    argc = int(fields[2])
    if 3 + argc > len(fields):
        raise WireError("truncated argv")
    env: dict[str, str] = {}
    for item in fields[3 + argc :]:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise WireError("bad environment entry")
        env.setdefault(k, v)
    return fields[3 : 3 + argc], fields[1], env


_MAGIC_TEXT = MAGIC.decode()


def encode_reply(action: bytes, stderr: bytes) -> bytes:
    if action not in ACTIONS:
        raise WireError("unknown action")
    return frame(MAGIC + b"\0" + action + b"\0" + stderr)


def decode_reply(payload: bytes) -> tuple[bytes, bytes]:
    parts = payload.split(b"\0", 2)
    if len(parts) != 3 or parts[0] != MAGIC or parts[1] not in ACTIONS:
        raise WireError("not a guard reply")
    return parts[1], parts[2]
