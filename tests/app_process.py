"""The app as a child process on a free port: for tests and benchmarks that need a real server.

``AppProcess`` starts ``app.py`` (never in-process: a SIGKILL must hit a real separate
server), waits until it answers, and can kill it the hard way and start it again on the
same port and store; ``ModelServer`` does the same for ``python -m arena.model_server``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ChildServer:
    """A server in a child process on a free port: started, waited for, killed or stopped."""

    ready_path = "/"

    def __init__(self, log: Path, port: int | None = None):
        self.log = log
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        raise NotImplementedError

    def start(self, timeout: float = 300.0) -> ChildServer:
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(self.command(), cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.command()[1]} exited with {self.proc.returncode}:\n"
                                   f"{self.log.read_text()[-3000:]}")
            try:
                if httpx.get(self.url + self.ready_path, timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise TimeoutError(f"{self.command()[1]} did not answer within {timeout:.0f} s:\n"
                           f"{self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        """SIGKILL: no shutdown handlers, no flushing; what was committed must survive."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class AppProcess(ChildServer):
    """``app.py`` on ``config`` and the store ``db``."""

    def __init__(self, config: Path, db: str, log: Path, port: int | None = None):
        super().__init__(log, port)
        self.config, self.db = config, db

    def command(self) -> list[str]:
        return [sys.executable, str(ROOT / "app.py"), "--config", str(self.config), "--db", self.db,
                "--port", str(self.port)]

    def status(self) -> dict:
        """The app's ``/arena-api/status``: battles generating and waiting for a slot."""
        answered = httpx.get(self.url + "/arena-api/status", timeout=10)
        answered.raise_for_status()
        return answered.json()


class ModelServer(ChildServer):
    """``python -m arena.model_server``: one model behind an OpenAI-compatible API, as a GPU host would serve it."""

    ready_path = "/v1/models"

    def __init__(self, model: str, log: Path, port: int | None = None):
        super().__init__(log, port)
        self.model = model

    def command(self) -> list[str]:
        return [sys.executable, "-m", "arena.model_server", "--model", self.model, "--port", str(self.port)]

    def model_name(self) -> str:
        """How an arena config names this server's model: ``openai:URL/v1#id``."""
        return f"openai:{self.url}/v1#{httpx.get(self.url + '/v1/models', timeout=5).json()['data'][0]['id']}"
