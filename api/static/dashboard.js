// kjudge dashboard: a hash-routed page over the JSON API (/v1/...). No build step, no CDN:
// Chart.js and highlight.js are vendored under /static/vendor.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const view = $("#view");
const keyInput = $("#key");
keyInput.value = localStorage.getItem("kjudge-key") || "";
keyInput.addEventListener("change", () => { localStorage.setItem("kjudge-key", keyInput.value); route(); });

// Explanations of integrity flags (evaluator/integrity.py MESSAGES; a test keeps them in step).
const FLAG_TEXT = {
  reference_op_called: "the candidate runs the reference's PyTorch operators instead of its own kernel",
  side_stream_work: "outputs were still being written after the call returned (work on a side stream or thread escapes the caller's stream and the timer)",
  output_aliases_input: "an output shares memory with an input (returned an input or a view of one)",
  input_modified: "the candidate modified its inputs in place",
  monkey_patched: "the candidate replaced functions of torch, the timer or the checker",
  cached_output: "outputs do not follow the inputs (cached across calls)",
  lazy_output: "outputs are lazy: not plain tensors, or they change after a later call",
  exceeds_roofline: "faster than moving the inputs and outputs once at the device's measured bandwidth",
  recycled_memory: "outputs depend on leftover contents of freed memory (unwritten or recycled buffers)",
  timed_output_mismatch: "a timed call's outputs were wrong although the checked calls were right (the kernel behaves differently once it thinks correctness is over)",
  no_custom_kernel: "only PyTorch's own kernels were launched (informational)",
};
const INFORMATIONAL_FLAGS = new Set(["no_custom_kernel"]);
const COLORS = ["#0969da", "#cf222e", "#1a7f37", "#9a6700", "#8250df", "#57606a"];
const REFRESH_MS = 5000;

// Per-view state, dropped on every route change.
let charts = [];
let timers = [];
let facetsCache = null;

Chart.defaults.animation = false; // draw at once: live refresh redraws often, and tests read pixels
Chart.defaults.maintainAspectRatio = false;
Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;

// ------------------------------------------------------------------------------------ helpers

function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function num(x, digits = 3) {
  if (x === null || x === undefined || Number.isNaN(x)) return "–";
  const a = Math.abs(x);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return x.toExponential(2);
  return x.toFixed(digits);
}

function ms(x) { return x === null || x === undefined ? "–" : `${num(x, x < 1 ? 4 : 3)} ms`; }
function speedup(x) { return x === null || x === undefined ? "–" : `${num(x, 2)}×`; }
function ago(iso) {
  const s = (Date.now() - new Date(iso).getTime()) / 1000;
  if (s < 60) return `${Math.max(0, Math.round(s))} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(iso).toISOString().slice(0, 16).replace("T", " ");
}

function pill(sub) {
  if (sub.verdict) return `<span class="pill v-${esc(sub.verdict)}">${esc(sub.verdict)}</span>`;
  return `<span class="pill s-${esc(sub.status)}">${esc(sub.status)}</span>`;
}

async function api(path) {
  const headers = keyInput.value ? { Authorization: `Bearer ${keyInput.value}` } : {};
  const res = await fetch(path, { headers });
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try { message = (await res.json()).error.message; } catch (_) { /* not JSON */ }
    throw new Error(`${path}: ${message}`);
  }
  return res.json();
}

function showError(err) {
  const box = $("#err");
  box.hidden = !err;
  box.textContent = err ? String(err.message || err) : "";
}

function every(ms, fn) { timers.push(setInterval(fn, ms)); }

function chart(canvas, config) {
  const c = new Chart(canvas, config);
  canvas.dataset.rendered = "true"; // animation is off: the chart is on the canvas now
  charts.push(c);
  return c;
}

function replaceChart(canvas, config) {
  const old = Chart.getChart(canvas);
  if (old) { old.destroy(); charts = charts.filter((c) => c !== old); }
  return chart(canvas, config);
}

async function facets() {
  if (!facetsCache) facetsCache = await api("/v1/stats/facets");
  return facetsCache;
}

function problemName(f, pid) {
  const p = f.problems.find((x) => x.id === pid);
  return p ? p.name : pid.slice(0, 12);
}

function options(values, selected, all = "any") {
  return [`<option value="">${all}</option>`]
    .concat(values.map((v) => {
      const [value, label] = Array.isArray(v) ? v : [v, v];
      return `<option value="${esc(value)}"${value === selected ? " selected" : ""}>${esc(label)}</option>`;
    })).join("");
}

function params(obj) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(obj)) if (v !== null && v !== undefined && v !== "") p.set(k, v);
  return p.toString();
}

// ------------------------------------------------------------------------- submissions list

const FILTERS = [
  ["problem_id", "problem"], ["model", "model"], ["run_id", "run id"],
  ["verdict", "verdict"], ["language", "language"], ["target", "target"],
];

async function submissionsView(query) {
  const f = await facets();
  const choices = {
    problem_id: f.problems.map((p) => [p.id, p.name]), model: f.models, run_id: f.run_ids,
    verdict: f.verdicts, language: f.languages, target: f.targets,
  };
  view.innerHTML = `
    <h1>Submissions</h1>
    <div class="card">
      <form class="filters" id="filters">
        ${FILTERS.map(([k, label]) => `<label>${label}<select name="${k}">${options(choices[k], query.get(k) || "")}</select></label>`).join("")}
        <label class="live"><span>live</span><input type="checkbox" id="live" checked></label>
        <span class="muted" id="updated"></span>
      </form>
    </div>
    <div class="card">
      <table id="subs"><thead><tr><th>created</th><th>id</th><th>problem</th><th>language</th><th>target</th>
        <th>model</th><th>run id</th><th>status</th><th class="num">median</th><th class="num">speedup</th></tr></thead>
        <tbody></tbody></table>
      <div class="toolbar"><button id="more" hidden>older</button></div>
    </div>`;
  const form = $("#filters");
  form.addEventListener("change", (e) => {
    if (e.target.id === "live") return;
    const q = params(Object.fromEntries(new FormData(form)));
    location.hash = `#/${q ? "?" + q : ""}`;
  });
  const filters = Object.fromEntries(FILTERS.map(([k]) => [k, query.get(k) || ""]));
  let cursor = null;
  let pages = 0;
  const body = $("#subs tbody");

  function row(s) {
    return `<tr data-id="${esc(s.id)}">
      <td title="${esc(s.created_at)}">${esc(ago(s.created_at))}</td>
      <td><a href="#/submission/${esc(s.id)}"><code>${esc(s.id.slice(0, 8))}</code></a></td>
      <td><a href="#/problem/${esc(s.problem_id)}">${esc(problemName(f, s.problem_id))}</a></td>
      <td>${esc(s.language)}</td><td>${esc(s.target)}</td>
      <td>${esc(s.metadata.model || "")}</td><td>${esc(s.metadata.run_id || "")}</td>
      <td>${pill(s)}</td><td class="num">${ms(s.median_ms)}</td><td class="num">${speedup(s.speedup_vs_eager)}</td></tr>`;
  }

  async function load(append) {
    const page = await api(`/v1/submissions?${params({ ...filters, limit: 50, cursor: append ? cursor : null })}`);
    const html = page.items.map(row).join("");
    if (append) body.insertAdjacentHTML("beforeend", html);
    else body.innerHTML = html || `<tr><td colspan="10" class="empty">no submissions match</td></tr>`;
    cursor = page.next_cursor;
    pages = append ? pages + 1 : 1;
    $("#more").hidden = !cursor;
    $("#updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
  }
  $("#more").addEventListener("click", () => load(true).catch(showError));
  await load(false);
  // Live refresh re-reads the first page only while the reader has not paged further back.
  every(REFRESH_MS, () => {
    if ($("#live")?.checked && pages === 1) load(false).then(() => showError(null)).catch(showError);
  });
}

// ------------------------------------------------------------------------- submission page

function timingChart(canvas, result) {
  const t = result.timing;
  const samples = t.samples_ms || t.times_ms;
  if (Array.isArray(samples) && samples.length > 1) {
    // A histogram of the repetitions, when the Result carries them.
    const lo = Math.min(...samples), hi = Math.max(...samples);
    const nbins = Math.min(40, Math.max(8, Math.round(Math.sqrt(samples.length))));
    const width = (hi - lo) / nbins || 1;
    const counts = new Array(nbins).fill(0);
    for (const s of samples) counts[Math.min(nbins - 1, Math.floor((s - lo) / width))] += 1;
    return chart(canvas, {
      type: "bar",
      data: { labels: counts.map((_, i) => num(lo + (i + 0.5) * width, 4)),
              datasets: [{ label: "repetitions", data: counts, backgroundColor: COLORS[0] }] },
      options: { scales: { x: { title: { display: true, text: "ms" } }, y: { title: { display: true, text: "count" } } } },
    });
  }
  // Otherwise the summary the Result has: min … median as a bar, the median and the mean as
  // points, against the reference's baselines on the same device. The axis stops at 4x the
  // largest median so that a heavy tail (a busy host) does not squash the rest.
  const rows = [["this kernel", t.min_ms, t.median_ms, t.mean_ms]];
  const b = result.baseline || {};
  if (b.eager_ms) rows.push(["eager PyTorch", null, b.eager_ms, null]);
  if (b.compile_ms) rows.push(["torch.compile", null, b.compile_ms, null]);
  const xmax = 4 * Math.max(...rows.map((r) => r[2]));
  return chart(canvas, {
    data: {
      labels: rows.map((r) => r[0]),
      datasets: [
        { type: "bar", label: "min … median", data: rows.map((r) => (r[1] === null ? null : [r[1], r[2]])),
          backgroundColor: "rgba(9,105,218,.35)", borderColor: COLORS[0], borderWidth: 1 },
        { type: "scatter", label: "median", data: rows.map((r) => ({ x: r[2], y: r[0] })),
          backgroundColor: COLORS[1], pointRadius: 6 },
        { type: "scatter", label: `mean (± ${num(t.std_ms, 4)} ms)`, data: rows.filter((r) => r[3] !== null).map((r) => ({ x: Math.min(r[3], xmax), y: r[0] })),
          backgroundColor: COLORS[3], pointStyle: "triangle", pointRadius: 7 },
      ],
    },
    options: { indexAxis: "y", scales: { x: { type: "linear", beginAtZero: true, max: xmax,
      title: { display: true, text: `ms (n = ${t.n}${t.l2_flushed ? ", L2 flushed" : ""}; a mean beyond the axis sits at its end)` } } } },
  });
}

function rooflineChart(canvas, result) {
  // The problem's roofline in time: how far this kernel's median is from the bound the device
  // allows (max(bytes / bandwidth, FLOPs / peak)), next to the baselines.
  const r = result.roofline;
  const b = result.baseline || {};
  const rows = [["roofline bound", r.bound_ms, COLORS[2]], ["this kernel", result.timing.median_ms, COLORS[0]]];
  if (b.eager_ms) rows.push(["eager PyTorch", b.eager_ms, COLORS[5]]);
  if (b.compile_ms) rows.push(["torch.compile", b.compile_ms, COLORS[3]]);
  return chart(canvas, {
    type: "bar",
    data: { labels: rows.map((x) => x[0]),
            datasets: [{ label: "median ms", data: rows.map((x) => x[1]), backgroundColor: rows.map((x) => x[2]) }] },
    options: { indexAxis: "y", plugins: { legend: { display: false } },
               scales: { x: { type: "logarithmic", title: { display: true, text: "ms (log scale)" } } } },
  });
}

function kv(pairs) {
  return `<dl class="kv">${pairs.filter(([, v]) => v !== null && v !== undefined && v !== "")
    .map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join("")}</dl>`;
}

// The hardware profile (Result.profile, with "profile": true): the bottleneck line and one row per kernel.
const PROFILE_COLUMNS = [
  ["kernel", (k) => (k.name && k.name.length > 60 ? k.name.slice(0, 60) + "…" : k.name)],
  ["calls", (k) => k.calls], ["µs", (k) => num(k.duration_us, 2)],
  ["share", (k) => (k.share_of_time == null ? "" : `${Math.round(100 * k.share_of_time)}%`)],
  ["DRAM GB/s", (k) => num(k.dram_gbps, 0)], ["DRAM % peak", (k) => num(k.dram_pct_of_peak, 0)],
  ["SM % peak", (k) => num(k.sm_pct_of_peak, 0)], ["occupancy %", (k) => num(k.achieved_occupancy_pct, 0)],
  ["regs", (k) => k.registers_per_thread], ["smem B", (k) => k.shared_mem_per_block_bytes],
  ["block × grid", (k) => (k.block_size == null ? "" : `${k.block_size} × ${k.grid_size}`)],
  ["top stalls", (k) => (k.top_stalls || []).map((x) => x.reason).join(", ")], ["bound", (k) => k.bound],
];

function profileHtml(profile) {
  if (typeof profile !== "object" || profile === null) return `<pre>${esc(JSON.stringify(profile, null, 2))}</pre>`;
  if (profile.available === false) return `<p class="muted">no profile: ${esc(profile.message || "")}</p>`;
  const kernels = profile.kernels || [];
  let html = profile.bottleneck ? `<p><b>bottleneck:</b> ${esc(profile.bottleneck)}</p>` : "";
  if (kernels.length) {
    html += `<div style="overflow:auto"><table><thead><tr>${PROFILE_COLUMNS.map(([h]) => `<th>${esc(h)}</th>`).join("")}</tr></thead><tbody>${kernels.map((k) =>
      `<tr>${PROFILE_COLUMNS.map(([, f]) => `<td>${esc(f(k) ?? "")}</td>`).join("")}</tr>`).join("")}</tbody></table></div>`;
  }
  return html || `<pre>${esc(JSON.stringify(profile, null, 2))}</pre>`;
}

async function submissionView(id) {
  const f = await facets().catch(() => ({ problems: [] }));
  const s = await api(`/v1/submissions/${encodeURIComponent(id)}?include_source=true`);
  const r = s.result || {};
  const problem = await api(`/v1/problems/${encodeURIComponent(s.problem_id)}`).catch(() => null);
  const corr = r.correctness;
  const flags = r.flags || [];
  const lang = ["triton", "kernelbench"].includes(s.language) ? "python" : "cpp";
  view.innerHTML = `
    <div id="submission-detail">
    <h1>Submission <code>${esc(s.id)}</code> ${pill(s)}</h1>
    <div class="grid">
      <div class="card"><h2>Summary</h2>${kv([
        ["problem", `<a href="#/problem/${esc(s.problem_id)}">${esc(problem ? problem.name : problemName(f, s.problem_id))}</a>`],
        ["language", esc(s.language)], ["target", esc(s.target) + (r.target ? ` → ${esc(r.target.backend)} ${esc(r.target.arch)} (${esc(r.target.device)})` : "")],
        ["status", esc(s.status)], ["verdict", s.verdict ? esc(s.verdict) : null],
        ["message", esc(s.message || r.message || "")],
        ["speedup vs eager", r.speedup ? speedup(r.speedup.vs_eager) : null],
        ["speedup vs torch.compile", r.speedup && r.speedup.vs_compile ? speedup(r.speedup.vs_compile) : null],
        ["median", r.timing ? ms(r.timing.median_ms) : null],
        ["eager baseline", r.baseline && r.baseline.eager_ms ? ms(r.baseline.eager_ms) : null],
        ["torch.compile baseline", r.baseline && r.baseline.compile_ms ? ms(r.baseline.compile_ms) : null],
        ["profile requested", s.profile ? "yes" : null],
        ["model", esc(s.metadata.model || "")], ["run id", esc(s.metadata.run_id || "")],
        ["worker", esc(s.worker || "")], ["created", esc(s.created_at)], ["finished", esc(s.finished_at || "")],
        ["reused result of", s.reused_from ? `<a href="#/submission/${esc(s.reused_from)}">${esc(s.reused_from)}</a>` : null],
        ["durations (s)", r.durations_s ? esc(Object.entries(r.durations_s).map(([k, v]) => `${k} ${num(v, 2)}`).join(", ")) : null],
      ])}</div>
      <div class="card"><h2>Correctness</h2>${corr ? `<table><tbody>
        <tr><td>trials passed</td><td class="num">${corr.passed} / ${corr.trials}</td></tr>
        <tr><td>max abs error</td><td class="num">${num(corr.max_abs_err, 6)}</td></tr>
        <tr><td>max rel error</td><td class="num">${num(corr.max_rel_err, 6)}</td></tr>
        <tr><td>atol / rtol</td><td class="num">${num(corr.atol, 4)} / ${num(corr.rtol, 4)}</td></tr>
        ${corr.message ? `<tr><td>first failure</td><td>${esc(corr.message)}</td></tr>` : ""}</tbody></table>`
        : `<p class="empty">${s.status === "done" ? "no correctness trials ran" : "not evaluated yet"}</p>`}
        <h2 style="margin-top:1em">Flags</h2>${flags.length ? flags.map((fl) =>
          `<div class="flag ${INFORMATIONAL_FLAGS.has(fl) ? "" : "reject"}"><code>${esc(fl)}</code>: ${esc(FLAG_TEXT[fl] || "no description")}</div>`).join("")
          : `<p class="empty">none</p>`}
      </div>
    </div>
    <div class="grid" style="margin-top:1em">
      ${r.timing ? `<div class="card"><h2>Timing</h2><div class="chart"><canvas id="timing-chart"></canvas></div></div>` : ""}
      ${r.roofline && r.timing ? `<div class="card"><h2>Against the roofline</h2><div class="chart"><canvas id="roofline-chart"></canvas></div>
        <p class="muted">${num(100 * r.roofline.fraction_of_bound, 1)}% of the ${esc(r.roofline.limiter)} bound on ${esc(r.roofline.device)};
        achieved ${num(r.roofline.achieved_gbps, 1)} GB/s, ${num(r.roofline.achieved_tflops, 3)} TFLOP/s${problem && problem.roofline && problem.roofline.bytes ? `; the problem moves ${num(problem.roofline.bytes / 1e6, 1)} MB and does ${num((problem.roofline.flops || 0) / 1e9, 2)} GFLOP` : ""}.</p></div>` : ""}
    </div>
    ${r.feedback ? `<div class="card" style="margin-top:1em"><h2>Feedback</h2><pre>${esc(typeof r.feedback === "string" ? r.feedback : JSON.stringify(r.feedback, null, 2))}</pre></div>` : ""}
    ${r.profile ? `<div class="card" style="margin-top:1em"><h2>Profile</h2>${profileHtml(r.profile)}</div>` : ""}
    <div class="card" style="margin-top:1em"><h2>Source</h2><pre><code class="language-${lang}" id="source">${esc(s.source || "")}</code></pre></div>
    ${r.logs && (r.logs.compile || r.logs.run) ? `<div class="card"><h2>Logs</h2>
      ${r.logs.compile ? `<h3 class="muted">compile</h3><pre>${esc(r.logs.compile)}</pre>` : ""}
      ${r.logs.run ? `<h3 class="muted">run</h3><pre>${esc(r.logs.run)}</pre>` : ""}</div>` : ""}
    </div>`;
  if (window.hljs) hljs.highlightElement($("#source"));
  if (r.timing) timingChart($("#timing-chart"), r);
  if (r.roofline && r.timing) rooflineChart($("#roofline-chart"), r);
  if (!["done", "error"].includes(s.status)) every(REFRESH_MS, () => route());
}

// ------------------------------------------------------------------------------- problems

async function problemsView() {
  const [page, board] = await Promise.all([api("/v1/problems?limit=1000"), api("/v1/leaderboard?limit=1000")]);
  const best = {};
  for (const e of board.entries) if (!best[e.problem_id]) best[e.problem_id] = e;
  view.innerHTML = `<h1>Problems</h1><div class="card"><table><thead><tr><th>level</th><th>name</th><th>tags</th>
    <th class="num">best speedup</th><th>by</th></tr></thead><tbody>${page.items.map((p) => `<tr>
      <td>${esc(p.level ?? "")}</td><td><a href="#/problem/${esc(p.id)}">${esc(p.name)}</a></td><td>${esc(p.tags.join(", "))}</td>
      <td class="num">${best[p.id] ? speedup(best[p.id].speedup_vs_eager) : "–"}</td><td>${esc(best[p.id]?.model || "")}</td></tr>`).join("")}
    </tbody></table></div>`;
}

async function problemView(id) {
  const [p, st, board] = await Promise.all([
    api(`/v1/problems/${encodeURIComponent(id)}`), api(`/v1/stats/problems/${encodeURIComponent(id)}`),
    api(`/v1/leaderboard?${params({ problem_id: id, limit: 100 })}`),
  ]);
  view.innerHTML = `
    <h1>${esc(p.name)} <span class="muted">level ${esc(p.level ?? "–")}</span></h1>
    <div class="card"><span class="stat"><b>${st.submissions}</b>submissions</span>
      <span class="stat"><b>${st.correct}</b>correct</span><span class="stat"><b>${speedup(st.best_speedup)}</b>best speedup</span>
      <a href="#/?${params({ problem_id: id })}">its submissions →</a></div>
    <div class="grid">
      <div class="card"><h2>Speedup of correct submissions</h2><div class="chart"><canvas id="speedup-chart"></canvas></div></div>
      <div class="card"><h2>Verdicts</h2><div class="chart"><canvas id="verdict-chart"></canvas></div></div>
    </div>
    <div class="card" style="margin-top:1em"><h2>Leaderboard (best correct per model)</h2><table><thead><tr><th>#</th><th>model</th>
      <th class="num">speedup</th><th class="num">median</th><th>target</th><th>submission</th><th>when</th></tr></thead><tbody>
      ${board.entries.map((e) => `<tr><td>${e.rank}</td><td>${esc(e.model || "(none)")}</td><td class="num">${speedup(e.speedup_vs_eager)}</td>
        <td class="num">${ms(e.median_ms)}</td><td>${esc(e.target)}</td><td><a href="#/submission/${esc(e.submission_id)}"><code>${esc(e.submission_id.slice(0, 8))}</code></a></td>
        <td>${esc(ago(e.created_at))}</td></tr>`).join("") || `<tr><td colspan="7" class="empty">no correct submission yet</td></tr>`}
    </tbody></table></div>
    <div class="card"><h2>Reference</h2><pre><code class="language-python" id="source">${esc(p.source)}</code></pre></div>`;
  if (window.hljs) hljs.highlightElement($("#source"));
  chart($("#speedup-chart"), {
    type: "bar",
    data: { labels: st.speedup_bins.map((b) => (b.hi === null ? `≥ ${b.lo}×` : `${b.lo}–${b.hi}×`)),
            datasets: [{ label: "correct submissions", data: st.speedup_bins.map((b) => b.count),
                         backgroundColor: st.speedup_bins.map((b) => (b.lo >= 1 ? COLORS[2] : COLORS[5])) }] },
    options: { plugins: { legend: { display: false } }, scales: { x: { title: { display: true, text: "speedup vs eager" } }, y: { beginAtZero: true, ticks: { precision: 0 } } } },
  });
  const verdicts = Object.entries(st.verdicts);
  chart($("#verdict-chart"), {
    type: "doughnut",
    data: { labels: verdicts.map((v) => v[0]), datasets: [{ data: verdicts.map((v) => v[1]),
      backgroundColor: verdicts.map((v) => ({ correct: "#1a7f37", incorrect: "#cf222e", compile_error: "#fa4549", runtime_error: "#a40e26", timeout: "#bc4c00", rejected: "#9a6700" })[v[0]] || "#57606a") }] },
  });
}

// ----------------------------------------------------------------------------- models & runs

function runChoices(f) {
  return f.models.map((m) => [`model:${m}`, `model ${m}`]).concat(f.run_ids.map((r) => [`run:${r}`, `run ${r}`]));
}

function runQuery(choice) {
  const [kind, ...rest] = choice.split(":");
  const value = rest.join(":");
  return kind === "model" ? { model: value } : { run_id: value };
}

async function runsView(query) {
  const f = await facets();
  const all = runChoices(f);
  const a = query.get("a") || (all[0] ? all[0][0] : "");
  const b = query.get("b") || "";
  view.innerHTML = `
    <h1>Models &amp; runs</h1>
    <div class="card"><form class="filters" id="runs-form">
      <label>first<select name="a">${options(all, a, "choose")}</select></label>
      <label>compare with<select name="b">${options(all, b, "nothing")}</select></label>
    </form></div>
    <div class="grid">
      <div class="card"><h2>fast<sub>p</sub>: solved correctly with speedup &gt; p</h2><div class="chart"><canvas id="fastp-chart"></canvas></div></div>
      <div class="card"><h2>Correctness</h2><div class="chart"><canvas id="correct-chart"></canvas></div></div>
    </div>
    <div class="card" style="margin-top:1em"><table id="runs-table"><thead><tr><th></th><th class="num">submissions</th><th class="num">finished</th>
      <th class="num">pending</th><th class="num">correct</th><th class="num">correctness rate</th><th class="num">problems</th>
      <th class="num">solved</th><th class="num">fast<sub>1</sub></th><th class="num">fast<sub>2</sub></th></tr></thead><tbody></tbody></table>
      <p class="muted">fast<sub>p</sub> (KernelBench): the fraction of the problems a model or run attempted whose best correct
      submission is more than p times faster than eager PyTorch; fast<sub>0</sub> is the fraction solved correctly.</p></div>`;
  $("#runs-form").addEventListener("change", (e) => {
    location.hash = `#/runs?${params(Object.fromEntries(new FormData(e.currentTarget)))}`;
  });
  const picked = [a, b].filter(Boolean);
  if (!picked.length) { $("#runs-table tbody").innerHTML = `<tr><td colspan="10" class="empty">no model or run id yet</td></tr>`; return; }
  const runs = await Promise.all(picked.map((c) => api(`/v1/stats/runs?${params(runQuery(c))}`)));
  const label = (c) => c.replace(":", " ");
  const at = (run, p) => (run.fast_p.find((x) => Math.abs(x.p - p) < 1e-9) || { fraction: 0 }).fraction;
  chart($("#fastp-chart"), {
    type: "line",
    data: { datasets: runs.map((run, i) => ({ label: label(picked[i]), data: run.fast_p.map((x) => ({ x: x.p, y: x.fraction })),
      borderColor: COLORS[i], backgroundColor: COLORS[i], pointRadius: 0, stepped: true })) },
    options: { scales: { x: { type: "linear", min: 0, max: 4, title: { display: true, text: "p (speedup threshold)" } },
                         y: { min: 0, max: 1, title: { display: true, text: "fraction of problems" } } } },
  });
  chart($("#correct-chart"), {
    type: "bar",
    data: { labels: ["correct / finished submissions", "problems solved (fast₀)", "fast₁"],
      datasets: runs.map((run, i) => ({ label: label(picked[i]), backgroundColor: COLORS[i],
        data: [run.correctness_rate || 0, at(run, 0), at(run, 1)] })) },
    options: { scales: { y: { min: 0, max: 1 } } },
  });
  $("#runs-table tbody").innerHTML = runs.map((run, i) => `<tr><td><b style="color:${COLORS[i]}">${esc(label(picked[i]))}</b></td>
    <td class="num">${run.submissions}</td><td class="num">${run.finished}</td><td class="num">${run.pending}</td><td class="num">${run.correct}</td>
    <td class="num">${run.correctness_rate === null ? "–" : num(100 * run.correctness_rate, 1) + "%"}</td><td class="num">${run.problems}</td>
    <td class="num">${run.problems_solved}</td><td class="num">${num(at(run, 1), 3)}</td><td class="num">${num(at(run, 2), 3)}</td></tr>`).join("");
}

// ------------------------------------------------------------------------------- operations

async function opsView() {
  view.innerHTML = `
    <h1>Operations <span class="muted" id="updated"></span></h1>
    <div class="grid">
      <div class="card"><h2>Queue depth</h2><div class="chart"><canvas id="queue-chart"></canvas></div></div>
      <div class="card"><h2>Evaluations per minute (last hour)</h2><div class="chart"><canvas id="rate-chart"></canvas></div></div>
    </div>
    <div class="card" style="margin-top:1em"><h2>Workers</h2><table id="workers"><thead><tr><th>worker</th><th>device</th><th>queue</th>
      <th>status</th><th>current job</th><th class="num">heartbeat age</th></tr></thead><tbody></tbody></table></div>`;
  async function draw() {
    const ops = await api("/v1/stats/operations");
    replaceChart($("#queue-chart"), {
      type: "bar",
      data: { labels: ops.queues.map((q) => q.queue),
        datasets: [{ label: "queued", data: ops.queues.map((q) => q.queued), backgroundColor: COLORS[4] },
                   { label: "compiling or running", data: ops.queues.map((q) => q.running), backgroundColor: COLORS[0] }] },
      options: { indexAxis: "y", scales: { x: { stacked: true, beginAtZero: true, ticks: { precision: 0 } }, y: { stacked: true } } },
    });
    replaceChart($("#rate-chart"), {
      type: "bar",
      data: { labels: ops.evaluations_per_minute.map((p) => new Date(p.minute).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", hour12: false })),
        datasets: [{ label: "finished", data: ops.evaluations_per_minute.map((p) => p.count), backgroundColor: COLORS[2] }] },
      options: { plugins: { legend: { display: false } }, scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } },
    });
    $("#workers tbody").innerHTML = ops.workers.map((w) => `<tr><td>${esc(w.id)}</td>
      <td>${esc([w.backend, w.arch, w.device].filter(Boolean).join(" · "))}</td><td>${esc(w.queue)}</td><td>${esc(w.status)}</td>
      <td>${w.current_job ? `<a href="#/submission/${esc(w.current_job)}"><code>${esc(w.current_job.slice(0, 8))}</code></a> ${esc(w.current_status)}` : ""}</td>
      <td class="num" style="color:${w.heartbeat_age_s > 60 ? "var(--bad)" : "inherit"}">${num(w.heartbeat_age_s, 0)} s</td></tr>`).join("")
      || `<tr><td colspan="6" class="empty">no worker has reported</td></tr>`;
    $("#updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
  }
  await draw();
  every(REFRESH_MS, () => draw().then(() => showError(null)).catch(showError));
}

// ----------------------------------------------------------------------------------- router

async function route() {
  for (const t of timers) clearInterval(t);
  for (const c of charts) c.destroy();
  timers = []; charts = [];
  const [path, q] = (location.hash.slice(1) || "/").split("?");
  const query = new URLSearchParams(q || "");
  const parts = path.split("/").filter(Boolean);
  const section = parts[0] === "submission" ? "submissions" : parts[0] === "problem" ? "problems" : parts[0] || "submissions";
  document.querySelectorAll("header nav a[data-nav]").forEach((a) => a.classList.toggle("active", a.dataset.nav === section));
  showError(null);
  try {
    if (parts[0] === "submission" && parts[1]) await submissionView(parts[1]);
    else if (parts[0] === "problem" && parts[1]) await problemView(parts[1]);
    else if (parts[0] === "problems") await problemsView();
    else if (parts[0] === "runs") await runsView(query);
    else if (parts[0] === "ops") await opsView();
    else await submissionsView(query);
  } catch (err) {
    showError(err);
  }
}

window.addEventListener("hashchange", () => { facetsCache = null; route(); });
route();
