"""Runs one client test module (test_NAME.py) under pytest in the clients'
venv ($STET_CLIENTS_VENV, else ~/.cache/stet/venv-clients: scripts/setup
--clients makes it). A missing venv or client package skips (exit 77) outside
CI and fails under CI=true, as every server test does."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
import stet_server as S  # noqa: E402

MODULES = {"langchain": "langchain_openai", "instructor": "instructor", "litellm": "litellm"}


def main():
    name = sys.argv[1]
    venv = os.environ.get("STET_CLIENTS_VENV", os.path.expanduser("~/.cache/stet/venv-clients"))
    python = os.path.join(venv, "bin", "python")
    S.require(os.path.exists(python), f"the clients' venv {venv} (scripts/setup --clients)")
    probe = subprocess.run([python, "-c", f"import {MODULES[name]}, pytest, jsonschema"],
                           capture_output=True, text=True)
    S.require(probe.returncode == 0,
              f"{MODULES[name]} in {venv} (scripts/setup --clients): {probe.stderr.strip()[-300:]}")
    S.stet_binary()
    S.smollm2_path()
    cmd = [python, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning",
           os.path.join(HERE, f"test_{name}.py"), *sys.argv[2:]]
    sys.exit(subprocess.run(cmd, cwd=HERE).returncode)


if __name__ == "__main__":
    main()
