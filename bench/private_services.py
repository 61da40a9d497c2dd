"""Private, restartable PostgreSQL and Redis servers for fault benches and tests.

Each runs from a temporary directory on a loopback port of its own, so restarting it disturbs
nobody else's server. PostgreSQL refuses to run as root: as root, the cluster is created and
run as the `postgres` system user (runuser).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(predicate, timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not happen within {timeout_s:.0f} s")
        time.sleep(0.1)


class PrivateRedis:
    """redis-server without persistence: a restart loses every queued message, as in a crash."""

    def __init__(self, root: Path, port: int | None = None, bind: tuple[str, ...] = ()) -> None:
        self.dir = root / "redis"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.bind = ("127.0.0.1", *bind)  # extra addresses: test network namespaces' links
        self.proc: subprocess.Popen[bytes] | None = None

    def url_at(self, host: str = "127.0.0.1") -> str:
        return f"redis://{host}:{self.port}/0"

    @property
    def url(self) -> str:
        return self.url_at()

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def start(self) -> None:
        argv = ["redis-server", "--bind", *self.bind, "--port", str(self.port), "--save", "",
                "--protected-mode", "no", "--appendonly", "no", "--dir", str(self.dir),
                "--logfile", str(self.dir / "redis.log")]  # fmt: skip
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait(self.ping, 20, "redis-server to answer")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()  # no save: everything in it is gone
            self.proc.wait(timeout=10)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


class PrivatePostgres:
    """A PostgreSQL cluster of its own (initdb), restarted with `pg_ctl restart -m fast`: every
    connection is cut, committed data survives."""

    def __init__(self, root: Path, port: int | None = None, listen: tuple[str, ...] = ()) -> None:
        self.port = port or free_port()
        self.listen = ("127.0.0.1", *listen)  # extra addresses: test network namespaces' links
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
        self.bin = Path(bins[-1]) if bins else Path(shutil.which("pg_ctl") or "pg_ctl").parent
        self._as_postgres = os.geteuid() == 0
        # As root the cluster belongs to `postgres`, who must reach it: pytest's and mkdtemp's
        # directories are private to root, so the cluster gets a directory of its own in /tmp.
        self.dir = (Path(tempfile.mkdtemp(prefix="kjudge-pg-")) if self._as_postgres else root) / "pg"

    def url_at(self, host: str = "127.0.0.1", **params: str) -> str:
        query = "&".join(f"{k}={v}" for k, v in params.items())
        return f"postgresql+psycopg://postgres@{host}:{self.port}/kjudge" + (f"?{query}" if query else "")

    @property
    def url(self) -> str:
        return self.url_at()

    def _run(self, *argv: str) -> None:
        cmd = [str(self.bin / argv[0]) if (self.bin / argv[0]).exists() else argv[0], *argv[1:]]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, timeout=120)

    def init(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        if self._as_postgres:
            shutil.chown(self.dir, "postgres", "postgres")
            os.chmod(self.dir.parent, 0o755)
        self._run("initdb", "-D", str(self.dir / "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        if len(self.listen) > 1:
            hba = self.dir / "data" / "pg_hba.conf"
            rules = "".join(f"host all all {addr.rsplit('.', 1)[0]}.0/24 trust\n" for addr in self.listen[1:])
            self._run("sh", "-c", f"printf '{rules}' >> {hba}")
        self.start()
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "kjudge")

    def _ctl(self, action: str) -> None:
        listen = ",".join(self.listen)
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses={listen} -c fsync=off -c max_connections=200"
        )
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-l", str(self.dir / "pg.log"), "-w", "-m", "fast",
                  "-o", options, action)  # fmt: skip

    def ready(self) -> bool:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
            return True
        return False

    def start(self) -> None:
        self._ctl("start")
        _wait(self.ready, 30, "PostgreSQL to accept connections")

    def restart(self) -> None:
        self._ctl("restart")
        _wait(self.ready, 30, "PostgreSQL to accept connections")

    def stop(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self._ctl("stop")
        if self._as_postgres:
            shutil.rmtree(self.dir.parent, ignore_errors=True)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL to the process's whole session (it was started with start_new_session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


def stop_group(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, grace_s: float = 30) -> None:
    """Ask the process to stop (`sig`), give it `grace_s`, then kill what is left of its session."""
    if proc.poll() is None:
        proc.send_signal(sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace_s)
    kill_group(proc)
