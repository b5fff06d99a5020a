// The page of `ndval serve`: overview of the reasoning chain, phase scope, compare, swimlane, health.
// Plain JavaScript, no build step; text is always set with textContent (never parsed as HTML).
"use strict";

const state = { datasets: [], dataset: null, phase: "overall", analysis: null, health: null, view: "overview" };
let swimlane = null;

async function api(url) {
  const r = await fetch(url, { headers: { Accept: "application/json" } });
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || `HTTP ${r.status}`);
  return body;
}

function el(tag, attrs, ...kids) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") n.className = v; else if (k.startsWith("on")) n.addEventListener(k.slice(2), v);
    else n.setAttribute(k, v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) n.append(k instanceof Node ? k : String(k));
  return n;
}

function num(v, digits) {
  if (v === null || v === undefined) return "—";
  if (typeof v !== "number") return String(v);
  return v.toLocaleString("en-US", { maximumFractionDigits: digits === undefined ? 3 : digits });
}

function table(headers, rows, rowAttrs) {
  return el("table", {}, el("tr", {}, headers.map((h) => el("th", {}, h))),
    rows.map((r, i) => el("tr", rowAttrs ? rowAttrs(i) : {},
      r.map((c) => (c instanceof Node ? el("td", {}, c) : el("td", typeof c === "number" ? { class: "num" } : {}, num(c)))))));
}

function busy(text) { document.getElementById("busy").textContent = text || ""; }
function fail(target, err) { target.replaceChildren(el("div", { class: "error", "data-testid": "error" }, String(err.message || err))); }

// ------------------------------------------------------------------------------------------ overview
function shownScope(rank) {
  return state.phase !== "overall" && rank.scopes[state.phase] ? state.phase : "overall";
}

function verdictBox(a, rank, scopeName) {
  const v = rank.scopes[scopeName].verdict;
  const phase = state.phase, own = rank.scopes[phase], whole = rank.scopes.overall;
  const same = own && whole && JSON.stringify(own.windows_us) === JSON.stringify(whole.windows_us);
  const notice = phase === "overall" ? null : !own
    ? `rank ${rank.rank} has no ${phase} phase in this profile (no step of that phase was found): the numbers below ` +
      "are the whole window's"
    : same ? `the ${phase} scope of rank ${rank.rank} is the whole window (the phase override reads every step as ` +
      `${phase}; the profile has no separate ${phase} steps): its numbers equal the overall ones` : null;
  return el("div", { class: "verdict", "data-testid": "verdict" },
    notice ? el("div", { class: "notice", "data-testid": "phase-notice" }, notice) : null,
    el("div", {}, "scope ", el("span", { class: "scope", "data-testid": "shown-scope" }, scopeName),
      ` · phase override: ${a.phase_override || "none"} · rank ${rank.rank} · ${a.source_format}`),
    el("div", { class: "kind", "data-testid": "verdict-kind" }, `${v.kind} — ${v.label}`),
    v.evaluable === false
      ? el("div", { "data-testid": "not-evaluable" }, `not evaluable — no score: ${v.not_evaluable_reasons.join("; ")}`)
      : el("div", {}, `score ${num(v.score, 1)}${v.subtype ? ` · sub-type ${v.subtype}` : ""}`
        + (v.secondary.length ? ` · secondary: ${v.secondary.join(", ")}` : "")),
    el("p", {}, v.summary));
}

function bar(score, triggered) {  // width set through the CSSOM: the page's CSP forbids style attributes
  const b = el("span", { class: `bar${triggered ? " trig" : ""}`, "data-score": String(score) });
  b.style.width = `${Math.round(score * 2)}px`;
  return b;
}

function scoresChart(v) {
  const chart = table(["candidate", "score (0–100)", "", "triggered", "gates not reached"],
    v.candidates.map((c) => [c.label + (c.kind === v.kind ? " (verdict)" : ""), c.score,
      bar(c.score, c.triggered),
      c.triggered ? "yes" : "no", c.not_reached.join("; ") || "—"]));
  // the verdict rule may pick a candidate below the top bar (a gate it reaches, a priority): say why
  const top = v.candidates.reduce((best, c) => (best === null || c.score > best.score ? c : best), null);
  const chosen = v.candidates.find((c) => c.kind === v.kind);
  if (!top || !chosen || top.kind === chosen.kind || top.score <= chosen.score) return chart;
  return el("div", {}, chart, el("p", { class: "note", "data-testid": "score-note" },
    `The verdict is ${chosen.label} (score ${num(chosen.score, 1)}), not the highest bar ${top.label} ` +
    `(${num(top.score, 1)}): ${v.selection || "the verdict rule picks among the triggered candidates, not the top score"}` +
    (top.triggered ? "" : ` — ${top.label} did not reach its trigger (${top.not_reached.join("; ") || "gates"})`)));
}

function evidenceTables(v, rank) {
  const out = [];
  for (const c of v.candidates) {
    out.push(el("h3", {}, `${c.label} — evidence (${c.evidence.length} rows)`));
    out.push(table(["metric", "label", "value", "unit", "threshold", "relation", "comparison", "source", "basis", "passed"],
      c.evidence.map((e) => [e.metric, e.label, e.value, e.unit, e.threshold === null ? "—" : `${e.threshold_id} = ${num(e.threshold)}`,
        e.relation || "—", e.comparison, e.source, e.basis || "—",
        el("span", { class: e.passed ? "pass" : "fail" }, e.passed === null ? "n/a" : e.passed ? "passed" : "not passed")]),
      (i) => ({ class: "ev-row", "data-metric": c.evidence[i].metric, title: "show these events in the swimlane",
        onclick: () => jumpToEvidence(c.evidence[i].metric, rank.rank) })));
  }
  return out;
}

function breakdownTable(rank) {
  if (!rank.step_breakdown_us.length) return el("p", {}, "no step breakdown (no trace)");
  const cols = Object.keys(rank.step_breakdown_us[0]);
  return el("div", { "data-testid": "breakdown" }, el("p", { class: "small" }, `source: ${rank.breakdown_source}`),
    table(cols.map((k) => (k === "step" ? k : `${k} (µs)`)), rank.step_breakdown_us.map((r) => cols.map((k) => r[k]))));
}

function rootCauses(scope) {
  if (!scope.hypotheses.length) return el("p", {}, "no hypothesis (no candidate reached the trigger score)");
  return table(["id", "mechanism", "framework behaviour", "triggers", "checks"],
    scope.hypotheses.map((h) => [h.id, h.mechanism, h.framework_behaviour, h.triggers.join("; "), h.checks.join(" ")]));
}

function recommendations(rank, scope) {
  const g = scope.combined_gain;
  return [table(["priority", "id", "title", "scopes", "actions", "expected gain %", "range %", "basis / assumption", "validation", "risk"],
    rank.recommendations.map((r) => [`${r.priority} (${num(r.priority_score, 1)})`, r.id, r.title, r.scopes.join(", "),
      r.actions.map((x) => `[${x.kind}] ${x.text}`).join(" "), r.expected_gain_pct,
      r.expected_gain ? `${num(r.expected_gain.low_pct, 1)}–${num(r.expected_gain.high_pct, 1)} (${r.expected_gain.derived ? "derived" : "empirical"})` : "—",
      r.expected_gain ? `${r.expected_gain.basis}; ${r.expected_gain.assumption}` : "—", r.validation,
      r.risk + (r.needs_version_confirmation ? ` (needs version confirmation: ${r.version_note})` : "")])),
  el("p", { "data-testid": "combined-gain" }, `combined gain of scope ${scope.name}: conservative ${num(g.conservative_pct, 1)} %, ` +
    `optimistic ${num(g.optimistic_pct, 1)} % (cap ${num(g.cap_pct, 0)} %) — ${g.note}`)];
}

function advisorFindings(rank) {
  const adv = rank.advisor;
  if (!adv) return [el("p", {}, "advisor not run")];
  const out = [table(["phase", "priority", "finding", "summary", "share of window %", "recommendation", "verify", "risk"],
    adv.findings.map((f) => [f.scope || "overall", f.severity, f.id, f.summary, f.share_pct === null ? "—" : num(f.share_pct, 2),
      f.rule.recommendation, f.rule.verification, f.rule.risk]))];
  for (const f of adv.findings) {
    out.push(el("h4", {}, `${f.id} — evidence`), table(f.columns, f.rows.map((r) => r.map((v) => String(v).slice(0, 80)))));
  }
  for (const [name, ph] of Object.entries(adv.phases || {})) {
    out.push(el("h4", { "data-testid": `advisor-phase-${name}` }, `Phase ${name}: findings ranked by share of the phase (${num(ph.window_us, 0)} µs)`),
      table(["phase", "priority", "finding", "summary", "share of phase %"],
        ph.findings.map((f) => [name, f.severity, f.id, f.summary, f.share_pct === null ? "—" : num(f.share_pct, 2)])),
      el("p", { class: "small" }, "Rules without a finding: " +
        Object.entries(ph.rules_without_finding).map(([k, v]) => `${k} ${v}`).join("; ")));
  }
  const hb = rank.hta_breakdowns;
  if (hb) {
    out.push(el("h4", {}, "HTA idle breakdown per stream (HTA's window)"), table(["stream", "host wait %", "kernel wait %", "other %", "idle µs"],
      hb.hta.idle_by_stream.map((s) => [s.stream, num(s.host_wait_pct, 2), num(s.kernel_wait_pct, 2), num(s.other_pct, 2), num(s.idle_us, 0)])));
  }
  return out;
}

function renderOverview(payload) {
  const a = payload.analysis, root = document.getElementById("view-overview");
  const blocks = [el("p", { class: "small", "data-testid": "request" }, `GET ${payload.request} · phase ${payload.phase}`)];
  for (const rank of a.ranks) {
    const sname = shownScope(rank), scope = rank.scopes[sname];
    blocks.push(el("h2", {}, `Rank ${rank.rank}`), verdictBox(a, rank, sname),
      el("h3", {}, "Bottleneck scores"), scoresChart(scope.verdict),
      el("h3", {}, "Step breakdown (µs)"), breakdownTable(rank),
      ...evidenceTables(scope.verdict, rank),
      el("h3", {}, "Root causes"), rootCauses(scope),
      el("h3", {}, "Recommendations"), ...recommendations(rank, scope),
      el("h3", { "data-testid": "advisor" }, "Advisor findings (beside the verdict)"), ...advisorFindings(rank));
  }
  blocks.push(el("h2", {}, `Warnings (${a.warnings.length})`),
    el("ul", { "data-testid": "warnings" }, a.warnings.map((w) => el("li", { class: "warn" }, w))));
  root.replaceChildren(...blocks);
}

async function loadAnalysis() {
  const root = document.getElementById("view-overview");
  if (!state.dataset) { root.replaceChildren(el("p", {}, "no dataset loaded")); return; }
  const url = `/api/datasets/${encodeURIComponent(state.dataset)}/analysis?phase=${encodeURIComponent(state.phase)}`;
  busy(`analysing ${state.dataset} (${state.phase})…`);
  try {
    const payload = await api(url);
    payload.request = url; state.analysis = payload; renderOverview(payload);
    state.datasets = (await api("/api/datasets")).datasets; renderDatasets();  // the dataset is loaded now
  } catch (err) { fail(root, err); } finally { busy(""); }
}

// ------------------------------------------------------------------------------------------- compare
function comparability(c) {
  const cls = c.level === "not_comparable" ? "bad" : c.level === "comparable" ? "ok" : "caveat";
  const label = c.comparable ? (c.level === "comparable" ? "comparable" : "comparable with caveats") : "not comparable";
  return [el("div", { class: `banner ${cls}`, "data-testid": "comparability" }, label),
    el("ul", { "data-testid": "comparability-reasons" }, c.reasons.map((r) => el("li", {}, r)))];
}

function renderCompare(p) {
  const c = p.comparison, out = document.getElementById("cmp-out");
  out.replaceChildren(el("p", { "data-testid": "headline" }, c.headline.sentence), ...comparability(c.comparability),
    el("h3", {}, "Recommendations of the before side"),
    table(["id", "verdict", "primary metric", "observed improvement %", "threshold %", "threshold rule", "still listed after", "reason"],
      c.recommendations.map((r) => [r.id, r.verdict, r.primary_metric || "—", r.observed_improvement_pct, r.threshold_pct,
        r.threshold_rule, r.still_listed_after ? "yes" : "no", r.reason])),
    el("h3", {}, "Metrics"),
    table(["metric", "direction", "before", "after", "abs change", "change %", "improvement %", "status"],
      c.metrics.map((m) => [m.label || m.id, m.direction, m.before, m.after, m.abs_change, m.rel_change_pct, m.improvement_pct, m.status])),
    el("h3", {}, "Warnings"), el("ul", {}, c.warnings.map((w) => el("li", { class: "warn" }, w))));
}

async function runCompare() {
  const b = document.getElementById("cmp-before").value, a = document.getElementById("cmp-after").value;
  const out = document.getElementById("cmp-out");
  busy(`comparing ${b} → ${a}…`);
  try { renderCompare(await api(`/api/datasets/${encodeURIComponent(b)}/compare?with=${encodeURIComponent(a)}`)); }
  catch (err) { fail(out, err); } finally { busy(""); }
}

// ------------------------------------------------------------------------------------------ swimlane
async function openSwimlane() {
  const ds = state.datasets.find((d) => d.id === state.dataset);
  const sel = document.getElementById("sl-rank");
  const ranks = ds && ds.ranks ? ds.ranks : [];
  sel.replaceChildren(...ranks.map((r) => el("option", { value: String(r) }, `rank ${r}`)));
  if (!state.dataset) return;
  if (swimlane.dataset !== state.dataset) await swimlane.open(state.dataset, ranks.length ? ranks[0] : null);
}

async function jumpToEvidence(metric, rank) {
  showView("swimlane");
  await openSwimlane();
  document.getElementById("sl-rank").value = String(rank);
  swimlane.rank = rank;
  const q = new URLSearchParams({ metric, phase: state.phase, rank: String(rank) });
  const loc = await api(`/api/datasets/${encodeURIComponent(state.dataset)}/evidence?${q}`);
  const focus = document.getElementById("sl-focus");
  focus.textContent = loc.mapped
    ? `evidence ${metric}: ${loc.event_count} ${loc.categories.join("/")} event(s) in the scope; longest: ` +
      (loc.events.length ? `${loc.events[0].name} (${num(loc.events[0].dur_us)} µs)` : "none")
    : `evidence ${metric}: no event category is mapped to this indicator; showing the scope window`;
  focus.dataset.metric = metric;
  await swimlane.focus(loc.focus_us[0], loc.focus_us[1], loc.categories);
}

// ----------------------------------------------------------------------------------- datasets, about
function renderDatasets() {
  document.getElementById("view-datasets").replaceChildren(el("h2", {}, "Datasets"),
    table(["id", "status", "kind", "ranks", "steps", "events", "size (bytes)", "reason"],
      state.datasets.map((d) => [d.id, d.status, d.kind || "—", (d.ranks || []).join(", ") || "—", d.steps ?? "—",
        d.events ?? "—", d.size_bytes, d.reason || ""])));
}

function renderAbout() {
  const h = state.health;
  const items = Object.values(h.thresholds.items);
  document.getElementById("view-about").replaceChildren(el("h2", {}, "About / health"),
    el("p", { "data-testid": "version" }, `ndval ${h.version} · API v${h.api_version} · status ${h.status}`),
    el("h3", {}, "Limits"), table(["limit", "value"], Object.entries(h.limits).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : v])),
    el("h3", {}, `Thresholds in force (${h.thresholds.origin}, ${items.length})`),
    table(["id", "value", "relation", "unit", "rationale", "source"], items.map((t) => [t.id, t.value, t.relation, t.unit, t.rationale, t.source])));
}

// ------------------------------------------------------------------------------------------- wiring
function showView(name) {
  state.view = name;
  for (const s of document.querySelectorAll(".view")) s.classList.toggle("active", s.id === `view-${name}`);
  for (const b of document.querySelectorAll(".tab")) b.classList.toggle("active", b.dataset.view === name);
  if (name === "swimlane") openSwimlane();
}

function fillSelect(id, options, value) {
  const sel = document.getElementById(id);
  sel.replaceChildren(...options.map((d) => el("option", { value: d.id }, `${d.id}${d.status === "ready" ? "" : ` (${d.status})`}`)));
  if (value) sel.value = value;
}

async function init() {
  swimlane = new Swimlane(document.getElementById("sl-canvas"), document.getElementById("sl-status"),
    document.getElementById("sl-tip"), api);
  for (const b of document.querySelectorAll(".tab")) b.addEventListener("click", () => showView(b.dataset.view));
  document.getElementById("phase").addEventListener("change", (e) => { state.phase = e.target.value; loadAnalysis(); });
  document.getElementById("dataset").addEventListener("change", (e) => { state.dataset = e.target.value; loadAnalysis(); if (state.view === "swimlane") openSwimlane(); });
  document.getElementById("cmp-run").addEventListener("click", runCompare);
  document.getElementById("sl-rank").addEventListener("change", (e) => swimlane.open(state.dataset, Number(e.target.value)));
  document.getElementById("sl-in").addEventListener("click", () => swimlane.zoom(1 / 2));
  document.getElementById("sl-out").addEventListener("click", () => swimlane.zoom(2));
  document.getElementById("sl-reset").addEventListener("click", () => { swimlane.highlight = null; swimlane.fetch(null, null); });
  document.getElementById("sl-go").addEventListener("click", () => swimlane.focus(Number(document.getElementById("sl-start").value),
    Number(document.getElementById("sl-end").value), swimlane.highlight));
  try {
    state.health = await api("/api/health"); swimlane.budgetMax = state.health.limits.budget_max; renderAbout();
    state.datasets = (await api("/api/datasets")).datasets;
  } catch (err) { fail(document.getElementById("view-overview"), err); return; }
  const ready = state.datasets.filter((d) => d.status !== "failed");
  state.dataset = ready.length ? ready[0].id : null;
  fillSelect("dataset", ready, state.dataset);
  fillSelect("cmp-before", ready, ready[0] && ready[0].id);
  fillSelect("cmp-after", ready, ready[1] && ready[1].id);
  renderDatasets();
  showView(location.hash.slice(1) || "overview");
  await loadAnalysis();
}

window.addEventListener("DOMContentLoaded", init);
