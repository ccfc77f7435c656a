"""Fixtures of the Python package's tests: the models (stories260K from the
shared material, SmolLM2 from the setup cache), the installed `stet` command,
and one LLM per model for the whole session. Missing material skips a test
outside CI and fails it in CI (CI=true), like STET_REQUIRE_FILE."""
import os
import shutil
import struct
import subprocess
import sys
import sysconfig

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
# Where the models lie is the server tests' knowledge (tests/server/stet_server.py), shared.
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
import stet_server  # noqa: E402


def require(ok, what):
    if ok:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"required test material missing: {what}")
    pytest.skip(f"test material not present: {what}")


def stories_path():
    p = stet_server.stories_file()
    require(os.path.exists(p), p)
    return p


def smollm2_path():
    p = stet_server.smollm2_file()
    require(os.path.exists(p), p)
    return p


def installed_cli():
    """The `stet` command the package installed beside this Python."""
    exe = os.path.join(sysconfig.get_path("scripts"), "stet")
    if not os.path.exists(exe):
        exe = shutil.which("stet")
    require(exe and os.path.exists(exe), "the stet command installed by pip (pip install .)")
    return exe


def f32(x: float) -> bytes:
    """The float32 bits of a logprob (every one the engine reports is a float32)."""
    return struct.pack("<f", x)


def same_bits(a, b) -> bool:
    return len(a) == len(b) and all(f32(x) == f32(y) for x, y in zip(a, b))


def run_cli(*args, timeout=300):
    r = subprocess.run([installed_cli(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return r.stdout


@pytest.fixture(scope="session")
def stories():
    import stet
    return stet.LLM(stories_path(), threads=2)


@pytest.fixture(scope="session")
def smollm2():
    import stet
    return stet.LLM(smollm2_path(), threads=2)
