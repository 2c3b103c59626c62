"""`brain bench cluster` with faults, as CI runs it: 2 replicas behind HAProxy, 1 worker, 8 agents, 1 minute.

The whole topology is real (PostgreSQL on TCP, its own Redis, gunicorn, HAProxy, Celery worker and beat);
the faults are real signals. Redis stays down 10 s here instead of the command's default 30 s so the test
keeps to about two minutes; the full run (`--redis-down-s 30`, 40 agents, 5 minutes) is in docs/deploy.md.
A second tenant exists in the cluster and must end with no sessions.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.proc import run_brain

pytestmark = pytest.mark.slow


def test_cluster_with_faults_loses_and_duplicates_nothing(tmp_path: object) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    done = run_brain("bench", "cluster", "--web", "2", "--workers", "1", "--agents", "8", "--minutes", "1",
                     "--faults", "--redis-down-s", "10", "--json", env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    report = json.loads(done.stdout)
    assert report["lost"] == 0 and report["duplicated"] == 0, report
    assert report["acknowledged"] > 50 and report["acknowledged_by_kind"]["closes"] > 5, report
    assert [f["name"] for f in report["faults"]] == ["kill web replica", "kill worker", "restart postgresql",
                                                     "stop redis"]
    # Closes while Redis was down all succeeded, and their jobs ran once it was back.
    assert report["closes_while_redis_down"]["calls"] > 0 and report["closes_while_redis_down"]["failed"] == 0
    assert report["jobs_not_run"] == 0 and report["jobs"].get("done", 0) >= 2 * report["acknowledged_by_kind"]["closes"]
    # Both replicas served, the other tenant saw nothing, and every fault has a measured recovery. Recovery
    # times and errors outside fault windows are reported, not asserted: on a CI machine shared with other
    # builds a starved probe misses its 5 s timeout (docs/deploy.md, "Still open").
    assert set(report["per_replica_calls_per_s"]) == {"web1", "web2"}
    assert report["other_tenant_sessions"] == 0
    assert set(report["recovery_by_fault_s"]) == {f["name"] for f in report["faults"]}
    # Every error is filed by cause and timing; none is an internal error (a deadlock or a bug answers 500 or a
    # retryable 503 outside any fault, which the timing would show as "outside faults" with an app cause).
    assert sum(report["errors_by_timing"].values()) == report["errors"]
    assert not any(cause.startswith("HTTP 500") for cause in report["errors_by_cause"]), report["errors_by_cause"]
    outside = report["errors_by_fault_and_cause"].get("no fault", {})
    assert not {cause: n for cause, n in outside.items() if cause.endswith("(app)")}, report["errors_not_in_flight"]


def test_cluster_rejects_bad_arguments() -> None:
    done = run_brain("bench", "cluster", "--web", "0")
    assert done.returncode == 2 and "--web" in done.stderr


def test_a_worker_that_exits_on_its_own_is_restarted_and_one_stopped_by_a_fault_is_not(tmp_path: Path) -> None:
    from brain.bench.cluster_procs import Proc, Topology

    topo = Topology(tmp_path, web=0, workers=1, env=dict(os.environ))
    topo.logs.mkdir(parents=True)
    worker = Proc("worker1", ["true"])  # exits at once, as a worker crashing on a broker outage does
    topo.celery.append(worker)
    worker.start(topo.env, topo.logs)
    assert worker.process is not None
    worker.process.wait()
    first = worker.process
    assert topo.revive_workers() == 1 and worker.process is not first and topo.worker_restarts == 1
    worker.process.wait()
    worker.held = True  # the fault killed it and will restore it itself
    assert topo.revive_workers() == 0 and topo.worker_restarts == 1
