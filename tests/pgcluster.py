"""A throwaway PostgreSQL cluster in a temporary folder, for tests and benchmarks.

Real PostgreSQL (Debian's ``postgresql`` package; ``make test`` installs it), started
with ``initdb`` and ``pg_ctl`` on a free 127.0.0.1 port, trust authentication, and
removed on :meth:`PgCluster.stop`. PostgreSQL refuses to run as root, so when the
tests run as root (as CI does) the server runs as the unprivileged ``nobody`` user
through ``runuser``.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from app_process import free_port

RUN_AS = "nobody"


def bindir() -> Path:
    """The newest installed PostgreSQL's binaries (Debian keeps them per major version)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise FileNotFoundError("PostgreSQL is not installed: run `make postgres` (Debian's postgresql package)")


class PgCluster:
    def __init__(self):
        self.bin = bindir()
        self.port = free_port()
        # mkdtemp's folder is 0700 and root's: make one the server user can own and reach.
        self.root = Path(tempfile.mkdtemp(prefix="pairlab-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.as_root = os.geteuid() == 0

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        cmd = [str(self.bin / args[0]), *args[1:]]
        if self.as_root:
            cmd = ["runuser", "-u", RUN_AS, "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, check=False)

    def start(self) -> PgCluster:
        if self.as_root:
            os.chmod(self.root, 0o755)
            shutil.chown(self.root, RUN_AS)
        done = self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                         "--no-instructions")
        if done.returncode:
            raise RuntimeError(f"initdb failed:\n{done.stdout}\n{done.stderr}")
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories='' "
                   "-c max_connections=300 -c fsync=on -c synchronous_commit=on")
        done = self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60",
                         "start")
        if done.returncode:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"pg_ctl start failed:\n{done.stdout}\n{done.stderr}\n{log[-3000:]}")
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str | None = None) -> str:
        """A fresh, empty database; returns its SQLAlchemy URL."""
        import psycopg

        name = name or f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self.data.exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        for _ in range(20):  # the server's files go once it has exited
            try:
                shutil.rmtree(self.root)
                return
            except OSError:
                time.sleep(0.2)

    def __enter__(self) -> PgCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
