"""How `brain bench cluster` files an error: by cause, and by when it failed relative to the faults."""

from __future__ import annotations

import subprocess
from pathlib import Path

from brain.bench.cluster_agents import Call
from brain.bench.cluster_procs import haproxy_config, haproxy_exe
from brain.bench.cluster_report import Fault, cause_of, errors_report, timing_of

FAULTS = [Fault("kill web replica", at=10.0, until=13.0), Fault("stop redis", at=40.0, until=70.0)]


def _failed(at: float, ms: float, error: str = "HTTP 503 (balancer)") -> Call:
    return Call("brain_log_event", at, ms, False, "", error)


def test_timing_is_judged_by_the_calls_own_span() -> None:
    assert timing_of(_failed(9.5, 1000), FAULTS) == ("in flight at fault", "kill web replica")
    assert timing_of(_failed(11.0, 10), FAULTS) == ("during outage", "kill web replica")
    assert timing_of(_failed(14.0, 10), FAULTS) == ("recovering", "kill web replica")
    assert timing_of(_failed(30.0, 10), FAULTS) == ("outside faults", "no fault")
    assert timing_of(_failed(69.0, 2000), FAULTS) == ("during outage", "stop redis")


def test_causes_name_who_answered() -> None:
    assert cause_of("HTTP 503 (app)") == "HTTP 503 (app)"
    assert cause_of("RemoteProtocolError: Server disconnected without sending a response.") == "connection dropped"
    assert cause_of("ReadTimeout: timed out") == "client timeout"
    assert cause_of("rpc -32603: internal error") == "rpc -32603"
    assert cause_of("tool error: [{'type': 'text'}]") == "tool error"


def test_the_report_counts_each_error_once_and_lists_those_not_in_flight() -> None:
    ok = Call("brain_log_event", 20.0, 5, True, "web1")
    calls = [ok, _failed(9.5, 1000, "RemoteProtocolError: x"), _failed(11.0, 10), _failed(30.0, 10, "HTTP 500 (app)")]
    report = errors_report(calls, FAULTS)
    assert report["errors"] == 3
    assert report["errors_by_timing"] == {"in flight at fault": 1, "during outage": 1, "recovering": 0,
                                          "outside faults": 1}
    assert report["errors_by_fault_and_cause"] == {
        "kill web replica": {"connection dropped": 1, "HTTP 503 (balancer)": 1}, "no fault": {"HTTP 500 (app)": 1}}
    assert [e["timing"] for e in report["errors_not_in_flight"]] == ["during outage", "outside faults"]


def test_the_balancer_config_of_the_bench_is_valid(tmp_path: Path) -> None:
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(haproxy_config(8000, [8001, 8002], threads=4))
    checked = subprocess.run([haproxy_exe(), "-c", "-f", str(cfg)], capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr
    assert "server web2 127.0.0.1:8002 maxconn 7" in cfg.read_text()
