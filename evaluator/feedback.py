"""`Result.feedback`: what a model should read before its next attempt.

Computed from the finished Result and the candidate's own source at the end of `evaluate`:
- compile_error: the first compiler errors, each at the line of the candidate's source it is
  about (raw sources compile as `submission.*`, so their line numbers are the author's; for
  generated files — a KernelBench module's load_inline sources — the echoed source line is
  looked up in the candidate), with that line quoted;
- incorrect: the first mismatch (where, got, expected, the tolerance it broke) and how many;
- every integrity flag, with one sentence on what was detected and what to do instead;
- runtime_error / timeout: the message and the tail of the run's log;
- the profile's bottleneck line when the evaluation was profiled;
- correct: the speedup vs eager (and torch.compile) and the headroom the roofline leaves.

Bounded (MAX_CHARS) and scrubbed: host paths lose their directories and anything shaped like a
key or a URL with credentials is removed, so the text can go straight into a prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evaluator.result import Result, Verdict

MAX_CHARS = 2000
MAX_COMPILE_ERRORS = 3
RUN_LOG_LINES = 6

# One sentence per integrity flag (docs/integrity.md): what was seen, and what to do instead.
FLAG_SENTENCES: dict[str, str] = {
    "reference_op_called": "the kernel ran the reference's own PyTorch operator instead of computing the "
    "result itself; implement the operation in your kernel (no torch fallback, also not in a try/except).",
    "side_stream_work": "the outputs were written by work the caller's stream does not order (a side "
    "stream or a host thread), which escapes timing; launch everything on the current stream "
    "(at::cuda::getCurrentCUDAStream()) and finish before returning.",
    "output_aliases_input": "an output shares memory with an input; allocate and return a new tensor.",
    "input_modified": "the kernel wrote into its inputs; leave inputs untouched and write to new outputs.",
    "monkey_patched": "the submission replaced functions of torch, the timer or the checker; do not patch "
    "anything outside your own module.",
    "cached_output": "outputs did not follow the inputs (a cache across calls); compute from the inputs "
    "on every call.",
    "lazy_output": "outputs were lazy or changed after a later call; return plain, fully computed tensors.",
    "exceeds_roofline": "the measured time is below what moving the data once allows on this device, so "
    "the work was not really done in the timed call.",
    "recycled_memory": "outputs depended on leftover contents of freed memory; write every output element.",
    "timed_output_mismatch": "a timed call returned wrong outputs although the checked calls were right; "
    "the kernel must compute the same correct result on every call.",
    "no_custom_kernel": "only PyTorch's own kernels ran; no custom kernel of yours was launched.",
    "problem_error": "the problem itself failed (not your kernel); nothing to fix on your side.",
}

_GCC = re.compile(
    r"^(?P<file>[^\s:][^:\n]*):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?:fatal\s+)?error:\s*(?P<msg>.+)$"
)
_NVCC = re.compile(r"^(?P<file>[^\s(][^(\n]*)\((?P<line>\d+)\):\s*(?:catastrophic\s+)?error:\s*(?P<msg>.+)$")
_GCC_ECHO = re.compile(r"^\s*(?:\d+\s*)?\|\s?(?P<code>.*)$")
_CANDIDATE_FILES = re.compile(r"(?:^|/)submission\.(?:cpp|cu|hip)$|(?:^|/)kjudge_candidate\.\w+$")
_MISMATCH = re.compile(
    r"(?:(?P<where>correctness trial \d+/\d+):\s*)?(?P<count>\d+) element\(s\) outside "
    r"atol=(?P<atol>[^,]+), rtol=(?P<rtol>[^;]+); first: (?P<index>.+?) = (?P<got>\S+), expected (?P<expected>\S+)$"
)
# Scrubbing: absolute paths keep their last component; credentials never leave.
_PATH = re.compile(r"(?<![\w.])/(?:[\w.+~@-]+/)+(?P<name>[\w.+~@-]*)")
_URL_CREDENTIALS = re.compile(r"\b(\w+://)[^\s/@:]+:[^\s/@]+@")
_SECRET = re.compile(r"\b(?:kj|sk|ghp|hf)_[A-Za-z0-9_-]{12,}\b")


def scrub(text: str) -> str:
    text = _URL_CREDENTIALS.sub(r"\1***@", text)
    text = _SECRET.sub("***", text)
    return _PATH.sub(lambda m: m.group("name") or "/", text)


@dataclass(frozen=True)
class CompileError:
    line: int | None  # in the candidate's source; None when it could not be placed there
    message: str
    code: str | None  # the candidate's line, quoted
    generated: str | None = None  # "main.cpp:12" when the error is in a generated file only


def compile_errors(log: str, source: str, limit: int = MAX_COMPILE_ERRORS) -> list[CompileError]:
    lines = log.splitlines()
    source_lines = source.splitlines()
    out: list[CompileError] = []
    for i, raw in enumerate(lines):
        m = _GCC.match(raw.strip()) or _NVCC.match(raw.strip())
        if m is None:
            continue
        file, number, message = m.group("file"), int(m.group("line")), m.group("msg").strip()
        if _CANDIDATE_FILES.search(file) and 0 < number <= len(source_lines):
            out.append(CompileError(number, message, source_lines[number - 1].strip()))
        else:
            echoed = _echoed_line(lines[i + 1 : i + 4])
            found = _find_line(source_lines, echoed) if echoed else None
            if found is not None:
                out.append(CompileError(found, message, source_lines[found - 1].strip()))
            else:
                name = file.rsplit("/", 1)[-1]
                out.append(CompileError(None, message, echoed, generated=f"{name}:{number}"))
        if len(out) >= limit:
            break
    return out


def _echoed_line(following: list[str]) -> str | None:
    """The source line a compiler printed under its diagnostic (gcc/clang `  12 |  code`; nvcc
    the bare line followed by a caret line)."""
    for line in following:
        if _GCC.match(line.strip()) or _NVCC.match(line.strip()):
            return None
        m = _GCC_ECHO.match(line)
        if m and m.group("code").strip() and set(m.group("code").strip()) - set("^~ "):
            return m.group("code").strip()
        if line.strip() and not line.strip().startswith(("^", "~", "|", "In file", "detected during")):
            return line.strip()
    return None


def _find_line(source_lines: list[str], code: str) -> int | None:
    for n, line in enumerate(source_lines, start=1):
        if line.strip() == code:
            return n
    for n, line in enumerate(source_lines, start=1):  # a Python string literal may add quoting
        if code and code in line:
            return n
    return None


def _compile_section(result: Result, source: str) -> list[str]:
    errors = compile_errors(result.logs.compile, source)
    if not errors:
        return [f"Compilation failed: {result.message}"] if result.message else ["Compilation failed."]
    out = ["Compilation failed. First errors, at lines of your source:"]
    for e in errors:
        if e.line is not None:
            out.append(f"- line {e.line}: {e.message}")
            if e.code:
                out.append(f"    {e.code}")
        else:
            out.append(f"- {e.message} (in generated {e.generated})")
            if e.code:
                out.append(f"    {e.code}")
    return out


def _mismatch_section(result: Result) -> list[str]:
    c = result.correctness
    message = (c.message if c else None) or result.message or "outputs differ from the reference"
    m = _MISMATCH.search(message)
    if m is None:
        lines = [f"Incorrect: {message}"]
    else:
        trial = f" ({m.group('where')})" if m.group("where") else ""
        lines = [
            f"Incorrect{trial}: first mismatch at {m.group('index')}: got {m.group('got')}, expected "
            f"{m.group('expected')}; allowed |got - expected| <= atol + rtol*|expected| with "
            f"atol={m.group('atol')}, rtol={m.group('rtol').strip()}. {m.group('count')} element(s) "
            "out of tolerance.",
        ]
    if c is not None and c.max_abs_err is not None:
        lines.append(f"Max abs error {c.max_abs_err:.3g}, max rel error {c.max_rel_err or 0:.3g}.")
    return lines


def _run_section(result: Result) -> list[str]:
    head = "Timed out" if result.verdict is Verdict.TIMEOUT else "Runtime error"
    out = [f"{head}: {result.message}" if result.message else f"{head}."]
    tail = [line for line in result.logs.run.splitlines() if line.strip()][-RUN_LOG_LINES:]
    if tail and result.verdict is Verdict.RUNTIME_ERROR:
        out.append("End of the run's output:")
        out.extend(f"    {line[:200]}" for line in tail)
    return out


def _correct_section(result: Result) -> list[str]:
    s, t, b = result.speedup, result.timing, result.baseline
    text = "Correct."
    if t is not None:
        text = f"Correct. Median {t.median_ms:.4g} ms"
        if b is not None and b.eager_ms:
            text += f" vs eager PyTorch {b.eager_ms:.4g} ms"
        if s is not None and s.vs_eager is not None:
            text += f": {s.vs_eager:.2f}x speedup vs eager"
            if s.vs_compile is not None:
                text += f", {s.vs_compile:.2f}x vs torch.compile"
        text += "."
    lines = [text]
    r = result.roofline
    if r is not None and r.fraction_of_bound > 0:
        headroom = 1.0 / r.fraction_of_bound
        lines.append(
            f"Roofline: {r.fraction_of_bound:.0%} of the {r.limiter}-bound limit ({r.bound_ms:.4g} ms); "
            f"at most {headroom:.1f}x faster is possible on this device."
        )
    return lines


def _profile_line(result: Result) -> str | None:
    profile = getattr(result, "profile", None)
    if hasattr(profile, "model_dump"):  # evaluator.profiling's Profile model
        profile = profile.model_dump()
    if isinstance(profile, dict):
        line = profile.get("bottleneck")
        if not line:
            kernels = profile.get("kernels") or []
            line = next(
                (k.get("bottleneck") for k in kernels if isinstance(k, dict) and k.get("bottleneck")), None
            )
        return f"Profile: {line}" if line else None
    if isinstance(profile, list):
        line = next(
            (k.get("bottleneck") for k in profile if isinstance(k, dict) and k.get("bottleneck")), None
        )
        return f"Profile: {line}" if line else None
    return None


def feedback(result: Result, source: str = "", max_chars: int = MAX_CHARS) -> str:
    """The feedback text for `result` (never empty for a result with a verdict)."""
    verdict = result.verdict
    if verdict is Verdict.COMPILE_ERROR:
        lines = _compile_section(result, source)
    elif verdict is Verdict.INCORRECT:
        lines = _mismatch_section(result)
    elif verdict in (Verdict.RUNTIME_ERROR, Verdict.TIMEOUT):
        lines = _run_section(result)
    elif verdict is Verdict.CORRECT:
        lines = _correct_section(result)
    elif verdict is Verdict.REJECTED:
        lines = ["Rejected by the integrity checks."]
        if not result.flags and result.message:
            lines.append(result.message)
    else:
        lines = [result.message or "No verdict."]
    for flag in result.flags:
        lines.append(f"Flag {flag}: {FLAG_SENTENCES.get(flag, 'an integrity check fired.')}")
    profile = _profile_line(result)
    if profile:
        lines.append(profile)
    text = scrub("\n".join(lines))
    if len(text) > max_chars:
        text = text[: max_chars - 15].rstrip() + "\n[truncated]"
    return text
