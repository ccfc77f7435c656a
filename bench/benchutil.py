"""Helpers shared by bench/run.py and bench/serve/run.py: log lines, the CPU
model, git queries on this checkout, and a preexec_fn that puts a measured
process in its own session with a given niceness. Standard library only."""

import os
import platform
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git(*args):
    try:
        return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def session_preexec(nice, always_new_session=False, tolerate_nice_error=False):
    """A preexec_fn: with autogroup scheduling (Linux's default), niceness only ranks
    processes within one session; a new session with its autogroup's nice set ranks
    against the machine's other sessions (plain nice does not). A niceness the caller
    may not set fails the start unless tolerate_nice_error."""
    def f():
        if nice or always_new_session:
            os.setsid()
        if nice:
            try:
                with open("/proc/self/autogroup", "w") as fh:
                    fh.write(str(nice))
            except OSError:
                pass
            try:
                os.nice(nice)
            except OSError:
                if not tolerate_nice_error:
                    raise
    return f
