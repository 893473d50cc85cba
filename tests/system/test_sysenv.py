"""guard.system.sysenv: the environment and file names as os gives them, without importing os."""

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = f"""
import sys
sys.path.insert(0, {str(REPO)!r})
from guard.system import sysenv
before = dict(sysenv.environ())
raw = sysenv.environb()
loaded_early = "os" in sys.modules
import os
same = (before == dict(os.environ), raw == dict(os.environb))
os.environ["GUARD_SYSENV_LATER"] = "set after os"
print(repr((loaded_early, *same, sysenv.environ().get("GUARD_SYSENV_LATER"), sysenv.fsencode(before["ODD"]),
            sysenv.fsdecode(b"caf\\xc3\\xa9\\xff") == os.fsdecode(b"caf\\xc3\\xa9\\xff"))))
"""


def test_environ_matches_os_before_and_after_os_is_imported() -> None:
    env = {k: v for k, v in os.environ.items() if k != "GUARD_SYSENV_LATER"}
    envb = {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
    envb[b"ODD"] = b"not utf-8: \xff\xfe"
    out = subprocess.run([sys.executable, "-I", "-S", "-c", PROBE], env=envb, capture_output=True, check=True)
    loaded_early, same_text, same_bytes, later, odd, decode = eval(out.stdout)  # noqa: S307 - our own repr
    assert loaded_early is False  # nothing in sysenv imports os
    assert same_text and same_bytes  # what os would have built from the same start-up copy
    assert later == "set after os"  # once os exists, its environ (and its changes) are the answer
    assert odd == b"not utf-8: \xff\xfe"  # undecodable bytes round-trip
    assert decode is True


def test_fsencode_is_os_fsencode_on_surrogates() -> None:
    from guard.system import sysenv

    for name in ("plain", "caf\u00e9", "bad \udcff byte"):
        assert sysenv.fsencode(name) == os.fsencode(name)
        assert sysenv.fsdecode(os.fsencode(name)) == name
    assert json.dumps(sysenv.fsdecode(b"\xff")) == json.dumps(os.fsdecode(b"\xff"))
