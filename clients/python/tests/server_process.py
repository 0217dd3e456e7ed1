"""Runs the metaopt-server binary as a child process for the Python client's tests.

The binary comes from ``$METAOPT_SERVER_BINARY`` (ctest sets it). The server listens on
127.0.0.1 with the port given (0: a free one, read from its "listening on HOST:PORT" log line).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
import unittest
from typing import List, Optional

_LISTENING = re.compile(r"listening on [0-9.]+:([0-9]+)")


def server_binary() -> str:
    binary = os.environ.get("METAOPT_SERVER_BINARY", "")
    if not binary or not os.access(binary, os.X_OK):
        raise RuntimeError(
            f"METAOPT_SERVER_BINARY={binary!r} is not an executable metaopt-server; run the tests "
            "through ctest, or set it")
    return binary


class ServerProcess:
    """A metaopt-server child with a database and an (empty) model registry in ``directory``.

    Not thread-safe. Use as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    def __init__(self, directory: str, extra_args: Optional[List[str]] = None) -> None:
        self.directory = directory
        self.db = os.path.join(directory, "metaopt.db")
        self.models = os.path.join(directory, "models")
        os.makedirs(self.models, exist_ok=True)
        self.extra_args = list(extra_args or [])
        self.log_path = os.path.join(directory, "server.log")
        self.port = 0
        self._process: Optional[subprocess.Popen] = None

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, port: int = 0, timeout: float = 30.0) -> int:
        """Starts the server on 127.0.0.1:``port``; returns the port it listens on."""
        with open(self.log_path, "w") as log:
            self._process = subprocess.Popen(
                [server_binary(), f"--listen=127.0.0.1:{port}", f"--db={self.db}",
                 f"--models={self.models}", *self.extra_args],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = _LISTENING.search(self.log())
            if match:
                self.port = int(match.group(1))
                return self.port
            if self._process.poll() is not None:
                raise RuntimeError(f"metaopt-server exited early:\n{self.log()}")
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"metaopt-server did not report its port:\n{self.log()}")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Sends ``sig`` and waits for the child to exit."""
        if self._process is not None:
            if self._process.poll() is None:
                self._process.send_signal(sig)
            self._process.wait(timeout=30)
            self._process = None

    def stop(self) -> None:
        self.kill(signal.SIGTERM)

    def log(self) -> str:
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def __enter__(self) -> "ServerProcess":
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class TempServer(ServerProcess):
    """A :class:`ServerProcess` in a temporary directory removed on exit."""

    def __init__(self, extra_args: Optional[List[str]] = None) -> None:
        self._temp = tempfile.TemporaryDirectory(prefix="metaopt-py-")
        super().__init__(self._temp.name, extra_args)

    def __exit__(self, *exc_info: object) -> None:
        try:
            super().__exit__(*exc_info)
        finally:
            self._temp.cleanup()


class ServerTestCase(unittest.TestCase):
    """A test case class with one :class:`TempServer` (``cls.server``) shared by its tests."""

    server: TempServer

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = TempServer()
        cls.server.start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.__exit__(None, None, None)
