"""Printing a Result for people: a short table (`kjudge eval` without --json)."""

from __future__ import annotations

from evaluator.result import Result, Verdict

LOG_LINES = 20


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f} ms"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _err(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _profile_rows(result: Result) -> list[tuple[str, str]]:
    p = result.profile
    assert p is not None
    if not p.available:
        return [("profile", f"none: {p.message}")]
    rows = [("profile", p.bottleneck or f"{len(p.kernels)} kernels ({p.profiler})")]
    for k in p.kernels[:5]:
        parts = [f"{k.duration_us:.2f} us" if k.duration_us is not None else "-"]
        if k.dram_pct_of_peak is not None:
            parts.append(f"DRAM {k.dram_pct_of_peak:.0f}%")
        if k.sm_pct_of_peak is not None:
            parts.append(f"SM {k.sm_pct_of_peak:.0f}%")
        if k.achieved_occupancy_pct is not None:
            parts.append(f"occupancy {k.achieved_occupancy_pct:.0f}%")
        if k.registers_per_thread is not None:
            parts.append(f"{k.registers_per_thread} regs")
        if k.top_stalls:
            parts.append("stalls " + ", ".join(s.reason for s in k.top_stalls))
        name = k.name.split("(")[0].removeprefix("void ")[:60]
        rows.append(("  kernel", f"{name} x{k.calls}: " + "  ".join(parts)))
    if p.message:
        rows.append(("  note", p.message))
    return rows


def format_result(result: Result) -> str:
    rows: list[tuple[str, str]] = [
        ("verdict", result.verdict.value if result.verdict else result.status.value)
    ]
    if result.message:
        rows.append(("message", result.message))
    rows.append(("problem", result.problem_id[:16]))
    if result.target is not None:
        t = result.target
        rows.append(("target", f"{t.backend.value} {t.arch} ({t.device})"))
    if result.correctness is not None:
        c = result.correctness
        rows.append(
            ("correctness", f"{c.passed}/{c.trials} trials passed (atol={c.atol:g}, rtol={c.rtol:g})")
        )
        rows.append(("max error", f"abs {_err(c.max_abs_err)}, rel {_err(c.max_rel_err)}"))
    if result.timing is not None:
        tm = result.timing
        flushed = "L2 flushed" if tm.l2_flushed else "no L2 flush"
        rows.append(
            (
                "time",
                f"median {_ms(tm.median_ms)}  mean {_ms(tm.mean_ms)}  std {_ms(tm.std_ms)}  "
                f"min {_ms(tm.min_ms)}  (n={tm.n}, {flushed})",
            )
        )
    if result.baseline is not None:
        b = result.baseline
        line = f"eager {_ms(b.eager_ms)}  torch.compile {_ms(b.compile_ms)}"
        if b.remeasured:
            old = [
                f"{n} {_ms(v)}"
                for n, v in (("eager", b.replaced_eager_ms), ("torch.compile", b.replaced_compile_ms))
                if v
            ]
            line += f"  (re-measured: the cached {', '.join(old)} disagreed and was replaced)"
        elif b.recheck:
            line += f"  (cached; re-checked: {b.recheck})"
        rows.append(("baseline", line))
    if result.speedup is not None:
        s = result.speedup
        rows.append(("speedup", f"vs eager {_x(s.vs_eager)}  vs torch.compile {_x(s.vs_compile)}"))
    if result.flags:
        rows.append(("flags", ", ".join(result.flags)))
    if result.profile is not None:
        rows += _profile_rows(result)
    if result.durations_s:
        rows.append(("durations", "  ".join(f"{k} {v:.2f}s" for k, v in result.durations_s.items())))
    width = max(len(k) for k, _ in rows)
    lines = [f"{k:<{width}}  {v}" for k, v in rows]
    if result.feedback:
        lines += ["", "--- feedback ---", result.feedback]
    if result.verdict not in (Verdict.CORRECT, None):
        for name, log in (("compile log", result.logs.compile), ("run log", result.logs.run)):
            if log.strip():
                tail = log.strip().splitlines()[-LOG_LINES:]
                lines += ["", f"--- {name} (last {len(tail)} lines) ---", *tail]
    return "\n".join(lines)
