"""Evaluation throughput of one device, over HTTP, as an RL trainer drives it.

    python bench/throughput.py [--target cuda|cpu] [--candidates 200] [--duration 240] [--out FILE]

Starts `kjudge serve` (embedded defaults, a fresh KJUDGE_HOME: every build is new) — or uses
`--url` — registers the problems, then:
1. warm-up: one correct candidate per problem, all at once (worker preparation, the reference
   baselines per problem); not counted;
2. empty queue: `--probes` new candidates one at a time, the languages in turn: submit→verdict
   latency of a new kernel, overall and per language;
3. backlog: the rest of the stream POSTed at once (async client, `--in-flight` requests at a
   time); for `--duration` seconds, or until all are done: evaluations/hour, latencies, the
   fraction of the wall time the device's run stage was busy, the time per stage.
The stream (bench/throughput_stream.py): distinct candidates over >= 6 problems in cuda, hip,
triton and kernelbench, ~10 % incorrect, ~5 % compile errors; on `--target cpu`, `cpp` loops.
Latencies and busy intervals use the server's own timestamps (created_at, finished_at).
Writes JSON with device, date, commit and headline {evaluations_per_hour, p50_new_kernel_s,
gpu_busy_fraction}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from bench.private_services import stop_group  # noqa: E402
from bench.provenance import commit  # noqa: E402
from bench.throughput_stream import (  # noqa: E402
    CPU_OPS,
    GPU_PROBLEMS,
    Candidate,
    cpu_stream,
    gpu_stream,
    launch_bound,
)

DEFAULT_OUT = REPO / "bench" / "results" / "throughput.json"
FINAL = ("done", "error")


# ---------------------------------------------------------------- the server


class Server:
    """`kjudge serve` in its own session, on a private home; stopped (the whole group) at exit."""

    def __init__(
        self, home: Path, port: int, compile_pool: int | None, log_path: Path, compile_baseline: bool = True
    ) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KJUDGE_")}
        env |= {
            "KJUDGE_HOME": str(home),
            "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]),
        }
        if compile_pool:
            env["KJUDGE_WORKER_COMPILE_POOL"] = str(compile_pool)
        if not compile_baseline:
            # Steady state never measures it (cached per problem); only the warm-up would.
            env["KJUDGE_COMPILE_BASELINE"] = "false"
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kjudge", "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            cwd=REPO,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.url = f"http://127.0.0.1:{port}"

    def wait_healthy(self, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kjudge serve exited ({self.proc.returncode}); log: {self.log_path}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"kjudge serve not healthy after {timeout_s} s; log: {self.log_path}")

    def stop(self) -> None:
        stop_group(self.proc)
        self._log.close()


def reset_queue(home: Path) -> None:
    """A reused home keeps its caches (precompiled header, probes, baselines, builds) but not the
    last run's database and broker: its unfinished backlog would be served before this run's."""
    shutil.rmtree(home / "broker", ignore_errors=True)
    for path in home.glob("kjudge.db*"):
        path.unlink()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------- the client side


def _ts(text: str | None) -> float | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class Client:
    def __init__(self, url: str, run_id: str, target: str, in_flight: int) -> None:
        self.http = httpx.AsyncClient(base_url=url, timeout=120)
        self.run_id = run_id
        self.target = target
        self.limit = asyncio.Semaphore(in_flight)

    async def problem(self, name: str, source: str) -> str:
        r = await self.http.post("/v1/problems", json={"name": f"{name}-{self.run_id[:8]}", "source": source})
        r.raise_for_status()
        return str(r.json()["id"])

    async def submit(self, problem_id: str, c: Candidate, phase: str) -> str:
        body = {
            "problem_id": problem_id,
            "language": c.language,
            "source": c.source,
            "target": self.target,
            "metadata": {"run_id": self.run_id, "tags": [phase, c.kind, c.problem]},
        }
        async with self.limit:
            r = await self.http.post("/v1/submissions", json=body)
        r.raise_for_status()
        return str(r.json()["id"])

    async def wait_one(self, sid: str, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            # The server's long poll never outlasts the caller's deadline (--max-wall holds).
            wait = int(min(20, max(1, deadline - time.monotonic())))
            r = await self.http.get(f"/v1/submissions/{sid}", params={"wait": wait})
            r.raise_for_status()
            body = r.json()
            if body["status"] in FINAL or time.monotonic() > deadline:
                return body

    async def statuses(self) -> dict[str, dict[str, Any]]:
        """Every submission of this run (no results): one cheap listing, not a request each."""
        out: dict[str, dict[str, Any]] = {}
        cursor = None
        while True:
            params: dict[str, Any] = {"run_id": self.run_id, "limit": 500}
            if cursor:
                params["cursor"] = cursor
            r = await self.http.get("/v1/submissions", params=params)
            r.raise_for_status()
            page = r.json()
            out.update({item["id"]: item for item in page["items"]})
            cursor = page.get("next_cursor")
            if not cursor:
                return out

    async def result(self, sid: str) -> dict[str, Any]:
        r = await self.http.get(f"/v1/submissions/{sid}")
        r.raise_for_status()
        return dict(r.json())


# ---------------------------------------------------------------- figures


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 3)


def latency(row: dict[str, Any]) -> float | None:
    created, finished = _ts(row.get("created_at")), _ts(row.get("finished_at"))
    return None if created is None or finished is None else finished - created


def busy_fraction(rows: list[dict[str, Any]], start: float, end: float) -> float | None:
    """The run stage's busy intervals [finished - gpu_stage + process_start, finished] (a run
    child still importing leaves the GPU idle), clipped to the window and merged, over the
    window's length."""
    spans = []
    for row in rows:
        finished = _ts(row.get("finished_at"))
        durations = (row.get("result") or {}).get("durations_s") or {}
        stage = durations.get("gpu_stage")
        if finished is None or stage is None:
            continue
        busy_s = max(0.0, float(stage) - float(durations.get("process_start", 0.0)))
        lo, hi = max(finished - busy_s, start), min(finished, end)
        if hi > lo:
            spans.append((lo, hi))
    if end <= start:
        return None
    spans.sort()
    busy, cur_lo, cur_hi = 0.0, None, None
    for lo, hi in spans:
        if cur_hi is None or lo > cur_hi:
            if cur_hi is not None:
                busy += cur_hi - cur_lo  # type: ignore[operator]
            cur_lo, cur_hi = lo, hi
        else:
            cur_hi = max(cur_hi, hi)
    if cur_hi is not None:
        busy += cur_hi - cur_lo  # type: ignore[operator]
    return round(busy / (end - start), 3)


def serial_per_hour(rows: list[dict[str, Any]]) -> float | None:
    """What one serial worker would sustain on the same candidates: each pays its compile and its
    run stage back to back (3600 / mean of compile + gpu_stage; a compile error has no run)."""
    costs = []
    for r in rows:
        d = (r.get("result") or {}).get("durations_s") or {}
        if "compile" in d or "gpu_stage" in d:
            costs.append(float(d.get("compile", 0.0)) + float(d.get("gpu_stage", 0.0)))
    return round(3600 / statistics.mean(costs), 1) if costs and statistics.mean(costs) > 0 else None


def stage_medians(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The median of every duration the results report (the pipeline's stages first, then the
    run's phases: process_start, spare_import, integrity, baselines_child...)."""
    first = ("queued", "compile", "gpu_wait", "gpu_stage", "run", "load", "correctness", "timing", "total")
    seen = [k for r in rows for k in ((r.get("result") or {}).get("durations_s") or {})]
    keys = [*first, *sorted(set(seen) - set(first))]
    out = {}
    for key in keys:
        values = [
            float(d[key])
            for r in rows
            if (d := (r.get("result") or {}).get("durations_s") or {}) and key in d
        ]
        if values:
            out[key] = round(statistics.median(values), 3)
    return out


def probe_row(row: dict[str, Any], kinds: dict[str, Candidate]) -> dict[str, Any]:
    """One empty-queue probe as it went: its language (compile p50s are read per language) and
    every duration the result reports."""
    c = kinds.get(row.get("id", ""))
    return {
        "language": c.language if c else None,
        "kind": c.kind if c else None,
        "verdict": row.get("verdict"),
        "latency_s": latency(row),
        "durations_s": (row.get("result") or {}).get("durations_s") or {},
        # Which path the build took (lite, the regular headers, a fallback): its first lines.
        "compile_log_head": (((row.get("result") or {}).get("logs") or {}).get("compile") or "")[:300],
    }


def timeline(rows: list[dict[str, Any]], kinds: dict[str, Candidate], t0: float) -> list[list[Any]]:
    """Each backlog job as it went, by finish time: [language, kind, verdict, created, started,
    finished (seconds from the window's start), gpu_wait, gpu_stage, compile]; what the busy
    fraction and the per-stage medians summarise, to be read when they disagree."""
    out = []
    for row in rows:
        c = kinds.get(row.get("id", ""))
        d = (row.get("result") or {}).get("durations_s") or {}

        def off(key: str, row: dict[str, Any] = row) -> float | None:
            ts = _ts(row.get(key))
            return None if ts is None else round(ts - t0, 3)

        out.append([c.language if c else None, c.kind if c else None, row.get("verdict"), off("created_at"),
                    off("started_at"), off("finished_at"), d.get("gpu_wait"), d.get("gpu_stage"), d.get("compile")])  # fmt: skip
    return sorted(out, key=lambda r: r[5] if r[5] is not None else float("inf"))


def verdict_table(rows: list[dict[str, Any]], kinds: dict[str, Candidate]) -> dict[str, Any]:
    by_kind: dict[str, dict[str, int]] = {}
    unexpected = []
    for row in rows:
        c = kinds[row["id"]]
        got = row.get("verdict") or row["status"]
        by_kind.setdefault(f"{c.language}/{c.kind}", {}).setdefault(got, 0)
        by_kind[f"{c.language}/{c.kind}"][got] += 1
        if got != c.kind:
            unexpected.append({"id": row["id"], "problem": c.problem, "language": c.language, "expected": c.kind,
                               "got": got, "message": (row.get("message") or "")[:300]})  # fmt: skip
    return {"by_language_and_kind": by_kind, "unexpected": unexpected}


# ---------------------------------------------------------------- the run


def problem_sources(target: str, count: int) -> dict[str, str]:
    from problems.catalog import get_builtin

    names = list(GPU_PROBLEMS if target != "cpu" else CPU_OPS)[:count]
    sources = {name: get_builtin(name).source for name in names}
    if target == "cpu":
        sources = {name: shrink(src) for name, src in sources.items()}
    return sources


def shrink(source: str) -> str:
    """The problem at its declared KJUDGE_SMALL sizes (a CPU run of the full size takes minutes)."""
    import re

    from problems.loader import small_sizes

    for name, value in (small_sizes(source) or {}).items():
        source = re.sub(rf"(?m)^{re.escape(name)}\s*=.*$", f"{name} = {value}", source, count=1)
    return source


async def run(args: argparse.Namespace, url: str) -> dict[str, Any]:
    run_id = f"throughput-{uuid.uuid4().hex[:12]}"
    target = "cpu" if args.target == "cpu" else args.target
    client = Client(url, run_id, target, args.in_flight)
    sources = problem_sources(args.target, args.problems)
    ids = {name: await client.problem(name, src) for name, src in sources.items()}
    ids["relu-launch"] = await client.problem("relu-launch", shrink(problem_sources("cpu", 1)["relu"]))
    # Variant numbers from the seed: a re-run on a warm home (--home) still sends only new kernels.
    base = args.seed * 100_000

    def make(count: int, offset: int) -> list[Candidate]:
        if args.target == "cpu":
            return cpu_stream(list(sources), count, seed=args.seed, base=base + offset)
        return gpu_stream(sources, count, seed=args.seed, base=base + offset)

    stream = make(args.candidates, 0)
    kinds: dict[str, Candidate] = {}

    # 1. Warm-up: one correct candidate per problem, its variant number outside the stream's.
    t = time.monotonic()
    if args.no_warmup:
        firsts: dict[str, Candidate] = {}
    else:
        firsts = {c.problem: c for c in reversed(make(40, 50_000)) if c.kind == "correct"}
        firsts["relu-launch"] = launch_bound(args.target, base + 90_000)
    warm_ids = await asyncio.gather(*(client.submit(ids[c.problem], c, "warm-up") for c in firsts.values()))
    await asyncio.gather(*(client.wait_one(s, args.warmup_timeout) for s in warm_ids))
    warmup_s = time.monotonic() - t
    print(f"warm-up: {len(warm_ids)} problems in {warmup_s:.0f} s", file=sys.stderr)
    if args.warmup_only:
        await client.http.aclose()
        return {"warmup_s": round(warmup_s, 1)}

    # 2. Empty queue: one new kernel at a time.
    probes = spread_over_languages(stream, args.probes)
    taken = {id(c) for c in probes}
    backlog = [c for c in stream if id(c) not in taken]
    empty_rows = []
    for c in probes:
        sid = await client.submit(ids[c.problem], c, "empty-queue")
        kinds[sid] = c
        empty_rows.append(await client.wait_one(sid, wall_left(args, 600)))
        print(f"empty queue: {c.language} {c.kind} -> {empty_rows[-1].get('verdict')} "
              f"in {latency(empty_rows[-1]) or float('nan'):.1f} s", file=sys.stderr)  # fmt: skip

    # Written now and replaced at the end: a device call cut short still returns the probes.
    checkpoint(args, {
        "partial": "the empty-queue probes only: the run was cut before its backlog ended",
        "device": device_of(empty_rows),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "headline": {"p50_new_kernel_s": pct([x for r in empty_rows if (x := latency(r)) is not None], 0.5)},
        "warmup_s": round(warmup_s, 1),
        "empty_queue": {"stages_median_s": stage_medians(empty_rows),
                        "probes": [probe_row(r, kinds) for r in empty_rows]},
    })  # fmt: skip

    # A launch-bound kernel timed with the compile pool idle (3 at once: they compile together,
    # then run back to back with nothing compiling)...
    idle = [launch_bound(args.target, base + 90_000 + k) for k in range(1, 1 + args.stability)]
    idle_ids = await asyncio.gather(*(client.submit(ids[c.problem], c, "stability-idle") for c in idle))
    idle_rows = list(await asyncio.gather(*(client.wait_one(s, wall_left(args, 600)) for s in idle_ids)))

    # 3. Backlog: everything else at once; first the same launch-bound kernel again, so that it
    # runs while the rest of the stream saturates the compile pool.
    started = time.time()
    busy = [launch_bound(args.target, base + 91_000 + k) for k in range(args.stability)]
    busy_ids = [await client.submit(ids[c.problem], c, "stability-saturated") for c in busy]
    sids = await asyncio.gather(*(client.submit(ids[c.problem], c, "backlog") for c in backlog))
    kinds.update(zip(sids, backlog, strict=True))
    submitted_s = time.time() - started
    # The backlog window ends early enough for the whole run to fit --max-wall (a device call's
    # limit): a run cut from outside writes nothing.
    deadline = min(started + args.duration, args.t_start + args.max_wall - 30 - kernelbench_reserve(args))
    pending = set(sids)
    listing: dict[str, dict[str, Any]] = {}
    while pending and time.time() < deadline:
        await asyncio.sleep(2.0)
        listing = await client.statuses()
        before = len(pending)
        pending = {s for s in sids if listing.get(s, {}).get("status") not in FINAL}
        if len(pending) != before:
            print(f"backlog: {len(sids) - len(pending)}/{len(sids)} done after {time.time() - started:.0f} s",
                  file=sys.stderr)  # fmt: skip
    window_end = time.time() if pending else max(_ts(listing[s]["finished_at"]) or started for s in sids)
    finished = [s for s in sids if listing.get(s, {}).get("status") in FINAL]
    rows = list(await asyncio.gather(*(client.result(s) for s in finished)))
    busy_rows = list(await asyncio.gather(*(client.wait_one(s, wall_left(args, 60)) for s in busy_ids)))
    t0 = min(_ts(r["created_at"]) or started for r in rows) if rows else started
    window = max(window_end - t0, 1e-9)
    in_window = [r for r in rows if (_ts(r.get("finished_at")) or 0) <= window_end]
    per_hour = len(in_window) / window * 3600
    empty_lat = [x for r in empty_rows if (x := latency(r)) is not None]
    backlog_lat = [x for r in rows if (x := latency(r)) is not None]
    device = device_of([*rows, *empty_rows])
    await client.http.aclose()
    return {
        "device": device,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "headline": {
            "evaluations_per_hour": round(per_hour, 1),
            "p50_new_kernel_s": pct(empty_lat, 0.5),
            # The saturated probes run inside the window too: the GPU is as busy with them.
            "gpu_busy_fraction": busy_fraction([*in_window, *busy_rows], t0, window_end),
        },
        "target": args.target,
        "seed": args.seed,
        "compile_baseline": not args.no_compile_baseline,
        "host": {"cores": len(os.sched_getaffinity(0)), "compile_pool": compile_pool_size(args)},
        "stream": {
            "problems": list(sources),
            "languages": sorted({c.language for c in stream}),
            "candidates": len(stream),
            "incorrect": sum(c.kind == "incorrect" for c in stream),
            "compile_errors": sum(c.kind == "compile_error" for c in stream),
        },
        "warmup_s": round(warmup_s, 1),
        "empty_queue": {
            "n": len(empty_lat),
            "p50_s": pct(empty_lat, 0.5),
            "p95_s": pct(empty_lat, 0.95),
            "p50_s_by_language": by_language(empty_rows, kinds),
            "stages_median_s": stage_medians(empty_rows),
            "probes": [probe_row(r, kinds) for r in empty_rows],
        },  # fmt: skip
        "backlog": {
            "submitted": len(sids),
            "submit_s": round(submitted_s, 2),
            "finished": len(in_window),
            "window_s": round(window, 1),
            "p50_s": pct(backlog_lat, 0.5),
            "p95_s": pct(backlog_lat, 0.95),
            "stages_median_s": stage_medians(in_window),
            "serial_extrapolated_per_hour": serial_per_hour(in_window),
            "gpu_stage_sum_s": round(
                sum(
                    ((r.get("result") or {}).get("durations_s") or {}).get("gpu_stage", 0.0)
                    for r in in_window
                ),
                1,
            ),  # fmt: skip
            "timeline": timeline(in_window, kinds, t0),
        },
        "verdicts": verdict_table([*empty_rows, *rows], kinds),
        "timing_stability": stability(idle_rows, busy_rows),
        "notes": "latency = server finished_at - created_at; busy = union of [finished - gpu_stage + "
        "process_start, finished] for the backlog and the saturated stability probes submitted before it, "
        "over the backlog window (first created_at to last verdict, or the --duration cut-off)",
    }


def spread_over_languages(stream: list[Candidate], count: int) -> list[Candidate]:
    """`count` candidates taken in turn from each language (stream order within one): the p50 of
    a new kernel is then over every language, not over whichever the shuffle put first."""
    queues: dict[str, list[Candidate]] = {}
    for c in stream:
        queues.setdefault(c.language, []).append(c)
    picked: list[Candidate] = []
    while len(picked) < count and any(queues.values()):
        for lang in sorted(queues):
            if queues[lang] and len(picked) < count:
                picked.append(queues[lang].pop(0))
    return picked


def by_language(rows: list[dict[str, Any]], kinds: dict[str, Candidate]) -> dict[str, float | None]:
    latencies: dict[str, list[float]] = {}
    for r in rows:
        c, x = kinds.get(r.get("id", "")), latency(r)
        if c is not None and x is not None:
            latencies.setdefault(c.language, []).append(x)
    return {lang: pct(xs, 0.5) for lang, xs in sorted(latencies.items())}


def wall_left(args: argparse.Namespace, cap: float) -> float:
    """A wait of at most `cap` seconds that still lets the run end inside --max-wall (less 20 s
    for the report and the server's stop, and the KernelBench harness's budget)."""
    left = args.t_start + args.max_wall - 20 - kernelbench_reserve(args) - time.time()
    return min(cap, max(1.0, left))


def kernelbench_reserve(args: argparse.Namespace) -> float:
    """The seconds --max-wall keeps for KernelBench's harness after the backlog (none without it)."""
    return args.kernelbench_budget if args.kernelbench is not None else 0.0


def device_of(rows: list[dict[str, Any]]) -> str:
    targets = ((r.get("result") or {}).get("target") for r in rows)
    return next((t["device"] for t in targets if t), platform.processor() or "unknown")


def checkpoint(args: argparse.Namespace, report: dict[str, Any]) -> None:
    if args.out and not args.warmup_only:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")


def stability(idle: list[dict[str, Any]], saturated: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the launch-bound kernel with the compile pool idle and saturated (relu at its
    KJUDGE_SMALL size, 4 x 64 fp32); max/min over all of them is the spread."""

    def medians(rows: list[dict[str, Any]]) -> list[float]:
        return [float(t["median_ms"]) for r in rows if (t := (r.get("result") or {}).get("timing"))]

    def stages(rows: list[dict[str, Any]]) -> list[float | None]:
        return [((r.get("result") or {}).get("durations_s") or {}).get("gpu_stage") for r in rows]

    a, b = medians(idle), medians(saturated)
    both = a + b
    return {
        "kernel": "relu 4x64 fp32 (problems/kernels/relu, KJUDGE_SMALL sizes)",
        "idle_median_ms": a,
        "saturated_median_ms": b,
        # They hold the GPU at the backlog's start (the busy fraction counts them).
        "saturated_gpu_stage_s": stages(saturated),
        "max_over_min": round(max(both) / min(both), 3) if both and min(both) > 0 else None,
        "saturated_over_idle": round(statistics.median(b) / statistics.median(a), 3) if a and b else None,
    }


def compile_pool_size(args: argparse.Namespace) -> int:
    from worker import pipeline

    plan = pipeline.plan_cpus(pipeline.available_cpus(), 1, pipeline.available_memory(),
                              pool_override=args.compile_pool)  # fmt: skip
    return plan.compile_pool


def kernelbench_ratio(args: argparse.Namespace, report: dict) -> dict:
    """KernelBench's harness on new candidates of the same stream, one after another, with the GPU
    idle (kjudge's server is stopped): its evaluations/hour and kjudge's over it."""
    from bench import kernelbench_harness

    budget = min(args.kernelbench_budget, args.t_start + args.max_wall - time.time())
    out = kernelbench_harness.measure(args.kernelbench, args.kernelbench_samples, budget, seed=args.seed)
    ours = report["headline"].get("evaluations_per_hour")
    theirs = out.get("evaluations_per_hour")
    if ours and theirs:
        out["kjudge_over_kernelbench"] = round(ours / theirs, 1)
        report["headline"]["kjudge_over_kernelbench_serial"] = out["kjudge_over_kernelbench"]
    print(f"KernelBench harness, serial: {theirs} evaluations/hour; kjudge {ours}", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", default="cuda", help="cuda (any NVIDIA GPU), sm_90, rocm, ... or cpu")
    p.add_argument("--candidates", type=int, default=200)
    p.add_argument("--problems", type=int, default=6)
    p.add_argument(
        "--probes",
        type=int,
        default=8,
        help="new kernels timed one at a time, empty queue (languages in turn)",
    )
    p.add_argument("--duration", type=float, default=240, help="backlog window cap, seconds")
    p.add_argument(
        "--max-wall",
        type=float,
        default=470,
        help="the whole run's cap, seconds (the backlog window shrinks)",
    )
    p.add_argument("--warmup-timeout", type=float, default=300)
    p.add_argument("--no-warmup", action="store_true", help="the --home is warm already (baselines measured)")
    p.add_argument("--stability", type=int, default=3, help="launch-bound probes, pool idle and saturated")
    p.add_argument("--in-flight", type=int, default=64, help="concurrent HTTP requests")
    p.add_argument("--compile-pool", type=int, default=None, help="override the pool size")
    p.add_argument(
        "--seed", type=int, default=int(time.time()) % 10_000, help="which new kernels (default: new)"
    )
    p.add_argument(
        "--no-compile-baseline",
        action="store_true",
        help="the started server skips the torch.compile baseline (a shorter warm-up; steady state is the same)",
    )
    p.add_argument(
        "--kernelbench",
        type=Path,
        help="a KernelBench checkout: afterwards, its harness runs the stream's kernelbench candidates "
        "serially (bench/kernelbench_harness.py) and the ratio is reported",
    )
    p.add_argument("--kernelbench-samples", type=int, default=2)
    p.add_argument(
        "--kernelbench-budget", type=float, default=150, help="seconds for those samples, within --max-wall"
    )
    p.add_argument("--url", help="an already running kjudge serve (else one is started)")
    p.add_argument("--home", type=Path, help="KJUDGE_HOME for the started server (default: fresh)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument(
        "--warmup-only",
        action="store_true",
        help="prepare --home (worker preparation, baselines per problem) and stop: a later run on it "
        "measures steady state within one device call",
    )
    args = p.parse_args(argv)
    args.t_start = time.time()

    server = None
    home = args.home or Path(tempfile.mkdtemp(prefix="kjudge-throughput-"))
    try:
        if args.url is None:
            reset_queue(home)
            server = Server(
                home,
                free_port(),
                args.compile_pool,
                home.parent / f"{home.name}-serve.log",
                compile_baseline=not args.no_compile_baseline,
            )
            server.wait_healthy()
            print(f"kjudge serve at {server.url}, home {home}, log {server.log_path}", file=sys.stderr)
        report = asyncio.run(run(args, args.url or server.url))  # type: ignore[union-attr]
    finally:
        if server is not None:
            server.stop()
        if args.home is None:
            shutil.rmtree(home, ignore_errors=True)
    if args.warmup_only:
        print(json.dumps(report))
        return 0
    if args.kernelbench is not None:
        checkpoint(args, report)  # kjudge's figures survive a harness run cut short
        report["kernelbench_harness"] = kernelbench_ratio(args, report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["headline"]))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
