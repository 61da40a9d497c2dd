"""The whole suite as ./test.sh runs it: two pytest sessions side by side, one home between them,
then the timing-sensitive tests alone.

On the 2-core CI host one session keeps about one core busy: much of the suite waits on a child
process (a sandboxed compile, a worker's lease, a browser). Two sessions fill both cores. The
split keeps apart what must not overlap:

- the Redis lane: every test that uses the Redis on 127.0.0.1:6379 (tests/api, most of
  tests/service) runs in this one session, in order, because tests/service/test_worker_e2e.py
  restarts that Redis; any test file not named below runs here too, so none is left out;
- the no-Redis lane: the sandbox, evaluator, integrity and reward suites, and the service tests
  that bring their own services (embedded `kjudge serve`, the multi-host test's private
  PostgreSQL and Redis): none of them talks to the shared Redis. The two lanes take about as
  long (measured: the Redis lane with the evaluator suite ran 6 minutes longer than this one);
- last, alone: the tests whose assertions depend on the host being otherwise idle while they
  time (a CPU timing taken while more than half a core of other work runs is `contended`, and a
  contended baseline is neither cached nor trusted: test_eval_cpu asserts a cached baseline,
  the re-check and host-load tests compare re-measurements).

Both lanes share one KJUDGE_HOME (KJUDGE_TEST_HOME, tests/conftest.py): the precompiled header,
the lite runtime and the builds are made once, under the build cache's own file locks, as the
worker processes of one host share them.

Usage: python tests/lanes.py [pytest options...] (./test.sh does this when it is given no test
paths); each session's output is printed when it ends, then one line per session.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

QUIET = [
    "tests/evaluator/test_baseline_recheck.py",
    "tests/evaluator/test_eval_cpu.py",
    "tests/evaluator/test_timing_baselines.py",
]
NO_REDIS = [
    "tests/adversarial",
    "tests/bench",
    "tests/evaluator",
    "tests/integrity",
    "tests/rewards",
    "tests/service/test_dashboard_browser.py",
    "tests/service/test_multihost.py",
    "tests/service/test_serve_embedded.py",
    "tests/test_layering.py",
    "tests/test_progress.py",
    *(f"--ignore={path}" for path in QUIET),
]
SHARED_REDIS = ["tests", *(f"--ignore={path}" for path in QUIET + NO_REDIS if not path.startswith("-"))]


def _start(name: str, paths: list[str], options: list[str], env: dict[str, str], logs: Path):
    log = open(logs / f"{name}.log", "wb")  # noqa: SIM115 - closed in _finish
    cmd = [sys.executable, "-m", "pytest", *paths, *options]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    return name, proc, log, time.monotonic()


def _finish(lane, logs: Path) -> tuple[str, int, float]:
    name, proc, log, started = lane
    code = proc.wait()
    log.close()
    took = time.monotonic() - started
    sys.stdout.write(f"\n======== lane {name}: exit {code} after {took:.0f} s ========\n")
    sys.stdout.write((logs / f"{name}.log").read_text(errors="replace"))
    sys.stdout.flush()
    return name, code, took


def _own_basetemp(options: list[str], name: str) -> list[str]:
    """A --basetemp given for the run becomes one folder per session under it (pytest empties
    its basetemp when it starts: two sessions on one would remove each other's files)."""
    out, rest = [], iter(options)
    for option in rest:
        if option == "--basetemp":
            base = Path(next(rest, "."))
        elif option.startswith("--basetemp="):
            base = Path(option.split("=", 1)[1])
        else:
            out.append(option)
            continue
        # pytest makes its basetemp but not the folders above it: without this, a --basetemp
        # that does not exist yet errors every test that takes tmp_path.
        base.mkdir(parents=True, exist_ok=True)
        out.append(f"--basetemp={base / name}")
    return out


def main(options: list[str]) -> int:
    # Not /tmp/kjudge*: the home's cache is bound into sandboxes at its path, and the
    # read_secrets.py attack reports any /tmp/kjudge* it can see.
    logs = Path(tempfile.mkdtemp(prefix="test-lanes-"))
    home = logs / "home"
    env = {**os.environ, "KJUDGE_TEST_HOME": str(home)}
    results = []
    lanes: list = []
    started = time.monotonic()
    try:
        lanes = [
            _start("redis", SHARED_REDIS, _own_basetemp(options, "redis"), env, logs),
            _start("no-redis", NO_REDIS, _own_basetemp(options, "no-redis"), env, logs),
        ]
        # Printed in the order they end; the other keeps running meanwhile.
        pending = list(lanes)
        while pending:
            done = next((lane for lane in pending if lane[1].poll() is not None), None)
            if done is None:
                time.sleep(1)
                continue
            pending.remove(done)
            results.append(_finish(done, logs))
        quiet = _start("quiet", QUIET, _own_basetemp(options, "quiet"), env, logs)
        lanes.append(quiet)
        results.append(_finish(quiet, logs))
    finally:
        for _, proc, _, _ in lanes:
            if proc.poll() is None:
                proc.kill()
        shutil.rmtree(logs, ignore_errors=True)
    for name, code, took in results:
        print(f"lanes: {name} exit {code} in {took:.0f} s")
    print(f"lanes: {time.monotonic() - started:.0f} s in all")
    codes = [code for _, code, _ in results]
    failed = [code for code in codes if code not in (0, 5)]  # 5: a lane had nothing selected
    if failed:
        return max(failed)
    return 0 if 0 in codes else 5


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
