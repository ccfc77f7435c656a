"""A private PostgreSQL server for the store tests, from Debian's `postgresql`
package: initdb into a temporary directory, listening only on a Unix socket
there (listen_addresses = ''), on a port of its own, stopped and deleted at
the end. As root (CI on this machine) the server runs as the `postgres` user
(PostgreSQL refuses to run as root); otherwise as the current user.

Missing PostgreSQL binaries skip the test module (exit 77) with a loud message
outside CI and fail it in CI (CI=true).
"""
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile

from stet_server import require  # noqa: F401  (tests/server is on sys.path via e2e_support)


def _bindir():
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(os.path.join(d, "initdb")) and os.path.exists(os.path.join(d, "pg_ctl")):
            return d
    for d in ("/usr/local/bin", "/usr/bin"):
        if os.path.exists(os.path.join(d, "initdb")) and os.path.exists(os.path.join(d, "pg_ctl")):
            return d
    return None


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class PgCluster:
    def __init__(self):
        self.bindir = _bindir()
        require(self.bindir is not None,
                "PostgreSQL server binaries (initdb, pg_ctl: apt-get install postgresql; scripts/setup does)")
        self.tmp = tempfile.mkdtemp(prefix="stet-pg-")
        os.chmod(self.tmp, 0o755)
        self.data = os.path.join(self.tmp, "data")
        self.sock = self.tmp
        self.port = _free_port()
        self.as_user = None
        if os.geteuid() == 0:
            self.as_user = "postgres"
            pw = pwd.getpwnam("postgres")
            os.chown(self.tmp, pw.pw_uid, pw.pw_gid)
        self._run("initdb", "-D", self.data, "-A", "trust", "-U", "stet", "--no-sync", "-E", "UTF8")
        log = os.path.join(self.tmp, "server.log")
        self._run("pg_ctl", "-D", self.data, "-l", log, "-w", "-t", "60", "-o",
                  f"-c listen_addresses='' -k {self.sock} -p {self.port} -c fsync=on -c max_connections=50",
                  "start")
        self.url = f"postgresql:///postgres?host={self.sock}&port={self.port}&user=stet"

    def _run(self, tool, *args):
        cmd = [os.path.join(self.bindir, tool), *args]
        if self.as_user:
            cmd = ["runuser", "-u", self.as_user, "--", *cmd]
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
        return p

    def database(self, name):
        """A fresh database on the cluster; returns its URL."""
        self.psql("postgres", f"CREATE DATABASE {name}")
        return f"postgresql:///{name}?host={self.sock}&port={self.port}&user=stet"

    def psql(self, db, sql):
        psql = shutil.which("psql") or os.path.join(self.bindir, "psql")
        p = subprocess.run([psql, "-X", "-At", "-h", self.sock, "-p", str(self.port), "-U", "stet", "-d", db,
                            "-c", sql], capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise RuntimeError(f"psql {sql!r} failed: {p.stderr}")
        return p.stdout

    def stop(self):
        try:
            self._run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")
        except Exception:
            pass
        shutil.rmtree(self.tmp, ignore_errors=True)
