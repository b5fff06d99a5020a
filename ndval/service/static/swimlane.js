// Swimlane of one rank: one lane per host thread and device stream, drawn on a canvas.
// Every zoom or pan asks the server for the window at an item budget (items are real events or
// events merged per pixel bucket, with their count); nothing but the answer is kept in memory.
"use strict";

const SL_COLORS = {
  compute: "#4f7cc0", communication: "#c0392b", memcpy: "#16a085", memset: "#27ae60",
  host_op: "#8e6bb8", dispatch: "#e67e22", sync: "#d4ac0d", step: "#7f8c8d",
  annotation: "#95a5a6", other: "#b0b7c3",
};
const SL_LABEL_W = 280, SL_LANE_H = 22, SL_AXIS_H = 26;

class Swimlane {
  constructor(canvas, status, tip, api) {
    this.canvas = canvas; this.status = status; this.tip = tip; this.api = api;
    this.dataset = null; this.rank = null; this.win = null; this.span = null;
    this.lanes = []; this.items = []; this.answer = null; this.highlight = null;
    this.seq = 0; this.budgetMax = 20000; this.drag = null; this.timer = null;
    this.loading = Promise.resolve();
    canvas.addEventListener("wheel", (e) => this.onWheel(e), { passive: false });
    canvas.addEventListener("mousedown", (e) => this.onDown(e));
    window.addEventListener("mouseup", (e) => this.onUp(e));
    canvas.addEventListener("mousemove", (e) => this.onMove(e));
  }

  plotWidth() { return Math.max(100, this.canvas.width - SL_LABEL_W); }
  budget() { return Math.min(this.budgetMax, Math.max(200, Math.floor(this.plotWidth() * 2))); }

  open(dataset, rank) {
    this.dataset = dataset; this.rank = rank; this.win = null; this.span = null; this.highlight = null;
    this.tip.textContent = "";  // the previous dataset's event is not under the pointer any more
    this.items = []; this.lanes = [];
    return this.fetch(null, null);
  }

  fetch(start, end) {
    const seq = ++this.seq;
    const q = new URLSearchParams({ budget: String(this.budget()) });
    if (this.rank !== null && this.rank !== undefined) q.set("rank", String(this.rank));
    if (start !== null) { q.set("start_us", String(start)); q.set("end_us", String(end)); }
    const url = `/api/datasets/${encodeURIComponent(this.dataset)}/timeline?${q}`;
    this.status.textContent = "loading…";
    this.loading = this.api(url).then((a) => {
      if (seq !== this.seq) return;  // a newer window was asked for meanwhile
      this.answer = a; this.lanes = a.lanes; this.items = a.items; this.span = a.span_us;
      this.win = a.window_us; this.layout(); this.draw(); this.report(); this.legend();
    }).catch((err) => { if (seq === this.seq) this.status.textContent = `error: ${err.message}`; });
    return this.loading;
  }

  report() {
    const a = this.answer, s = this.status;
    s.dataset.items = a.item_count; s.dataset.budget = a.budget; s.dataset.events = a.events_in_window;
    s.dataset.start = a.window_us[0]; s.dataset.end = a.window_us[1]; s.dataset.merged = a.merged_items;
    const kinds = a.aggregated ? `${a.merged_items} merged item(s) holding ${a.events_merged} events` : "all real events";
    const omitted = a.omitted_lanes.length ? `; ${a.omitted_lanes.length} lane(s) omitted (budget)` : "";
    const c = a.capture;
    s.dataset.complete = String(c.complete);
    const fidelity = c.complete ? "" : ` — capture not complete: ${c.dropped_events} event(s) dropped at ingest` +
      `${c.dropped_reason ? ` (${c.dropped_reason})` : ""}, totals source '${c.totals_source}'`;
    s.textContent = `rank ${a.rank}: ${a.item_count} item(s) ≤ budget ${a.budget} for ${a.events_in_window} event(s) in ` +
      `[${fmtUs(a.window_us[0])}, ${fmtUs(a.window_us[1])}] µs (${fmtUs(a.window_us[1] - a.window_us[0])} µs wide); ${kinds}${omitted}${fidelity}`;
    const st = document.getElementById("sl-start"), en = document.getElementById("sl-end");
    if (st && en) { st.value = a.window_us[0].toFixed(3); en.value = a.window_us[1].toFixed(3); }
  }

  legend() {  // one swatch per category drawn in this window, with its item count (and what the outlines mean)
    const box = document.getElementById("sl-legend");
    if (!box) return;
    const counts = new Map();
    for (const it of this.items) counts.set(it.category, (counts.get(it.category) || 0) + 1);
    const entries = [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([cat, n]) => {
      const sw = document.createElement("span"); sw.className = "swatch"; sw.style.background = SL_COLORS[cat] || SL_COLORS.other;
      const item = document.createElement("span"); item.className = "legend-item"; item.dataset.category = cat;
      item.append(sw, `${cat} (${n})`);
      return item;
    });
    const merged = document.createElement("span"); merged.className = "legend-item";
    merged.textContent = "outlined box: events merged per pixel (hover for the count) · lanes: host threads, then device streams";
    box.replaceChildren(...entries, merged);
  }

  layout() {
    const wrap = this.canvas.parentElement;
    this.canvas.width = Math.max(600, wrap.clientWidth || 1200);
    this.canvas.height = SL_AXIS_H + Math.max(1, this.lanes.length) * SL_LANE_H + 4;
  }

  x(t) { return SL_LABEL_W + (t - this.win[0]) / (this.win[1] - this.win[0]) * this.plotWidth(); }
  t(x) { return this.win[0] + (x - SL_LABEL_W) / this.plotWidth() * (this.win[1] - this.win[0]); }

  depths() {  // nesting depth of each real event inside its lane (stack of open ends)
    const byLane = new Map();
    this.items.forEach((it, i) => { if (!byLane.has(it.lane)) byLane.set(it.lane, []); byLane.get(it.lane).push(i); });
    const depth = new Array(this.items.length).fill(0);
    for (const idx of byLane.values()) {
      idx.sort((a, b) => this.items[a].start_us - this.items[b].start_us || this.items[b].end_us - this.items[a].end_us);
      const stack = [];
      for (const i of idx) {
        const it = this.items[i];
        while (stack.length && stack[stack.length - 1] <= it.start_us) stack.pop();
        depth[i] = Math.min(stack.length, 5);
        if (it.kind === "event") stack.push(it.end_us);
      }
    }
    return depth;
  }

  draw() {
    const c = this.canvas.getContext("2d"), W = this.canvas.width, H = this.canvas.height;
    c.clearRect(0, 0, W, H);
    c.font = "11px system-ui, sans-serif"; c.textBaseline = "middle";
    this.lanes.forEach((ln, i) => {
      const y = SL_AXIS_H + i * SL_LANE_H;
      c.fillStyle = i % 2 ? "#f4f6f9" : "#ffffff"; c.fillRect(0, y, W, SL_LANE_H);
      c.fillStyle = ln.side === "host" ? "#5a3d8a" : "#24324a";
      c.fillText(ln.label.slice(0, 44), 4, y + SL_LANE_H / 2);
    });
    this.drawAxis(c, W);
    const depth = this.depths();
    c.save(); c.beginPath(); c.rect(SL_LABEL_W, SL_AXIS_H, W - SL_LABEL_W, H - SL_AXIS_H); c.clip();
    this.items.forEach((it, i) => {
      const y0 = SL_AXIS_H + it.lane * SL_LANE_H + 2 + depth[i] * 3;
      const h = Math.max(4, SL_LANE_H - 4 - depth[i] * 3);
      const x0 = this.x(it.start_us), w = Math.max(1, this.x(it.end_us) - x0);
      const dim = this.highlight && !this.highlight.includes(it.category);
      c.globalAlpha = dim ? 0.18 : (it.kind === "merged" ? 0.55 : 0.95);
      c.fillStyle = SL_COLORS[it.category] || SL_COLORS.other;
      c.fillRect(x0, y0, w, h);
      if (it.kind === "merged") { c.globalAlpha = dim ? 0.2 : 0.9; c.strokeStyle = "#1d2430"; c.strokeRect(x0, y0, w, h); }
    });
    this.drawLabels(c, depth);
    c.restore(); c.globalAlpha = 1;
  }

  drawLabels(c, depth) {
    // an event's name inside its box when there is room, and only where no other event of its lane starts under
    // the text (nested and neighbouring boxes would make labels collide)
    const starts = new Map();
    this.items.forEach((it) => { if (!starts.has(it.lane)) starts.set(it.lane, []); starts.get(it.lane).push(this.x(it.start_us)); });
    c.save(); c.beginPath(); c.rect(SL_LABEL_W, SL_AXIS_H, this.canvas.width - SL_LABEL_W, this.canvas.height - SL_AXIS_H); c.clip();
    c.fillStyle = "#ffffff"; c.globalAlpha = 1;
    this.items.forEach((it, i) => {
      const x0 = this.x(it.start_us), w = this.x(it.end_us) - x0;
      if (w < 40 || !it.name || (this.highlight && !this.highlight.includes(it.category))) return;
      const text = it.kind === "merged" ? `${it.count}× ${it.name}` : it.name;
      const fit = Math.floor((w - 6) / 6.2), shown = text.length > fit ? text.slice(0, Math.max(1, fit - 1)) + "…" : text;
      const end = x0 + 3 + c.measureText(shown).width;
      if (starts.get(it.lane).some((s) => s > x0 + 0.5 && s < end)) return;
      const y0 = SL_AXIS_H + it.lane * SL_LANE_H + 2 + depth[i] * 3, h = Math.max(4, SL_LANE_H - 4 - depth[i] * 3);
      c.fillText(shown, x0 + 3, y0 + h / 2);
    });
    c.restore();
  }

  drawAxis(c, W) {
    c.fillStyle = "#eef1f5"; c.fillRect(0, 0, W, SL_AXIS_H);
    c.fillStyle = "#1d2430"; c.fillText("time, µs (rank-relative)", 4, SL_AXIS_H / 2);
    const span = this.win[1] - this.win[0], step = niceStep(span / 8);
    for (let t = Math.ceil(this.win[0] / step) * step; t <= this.win[1]; t += step) {
      const x = this.x(t);
      c.fillRect(x, SL_AXIS_H - 6, 1, 6); c.fillText(fmtUs(t), x + 2, SL_AXIS_H / 2);
    }
  }

  zoom(factor, atX) {
    if (!this.win) return;
    const at = atX === undefined ? (this.win[0] + this.win[1]) / 2 : this.t(atX);
    const s = at - (at - this.win[0]) * factor, e = at + (this.win[1] - at) * factor;
    this.setWindow(s, Math.max(e, s + 0.001));
  }

  setWindow(s, e) { this.win = [s, e]; this.draw(); this.schedule(); }
  schedule() { clearTimeout(this.timer); this.timer = setTimeout(() => this.fetch(this.win[0], this.win[1]), 120); }

  focus(start, end, categories) {
    this.highlight = categories && categories.length ? categories : null;
    return this.fetch(start, end);
  }

  onWheel(e) { e.preventDefault(); this.zoom(e.deltaY < 0 ? 1 / 1.5 : 1.5, e.offsetX); }
  onDown(e) { if (this.win) this.drag = { x: e.offsetX, win: this.win.slice() }; }
  onUp() { if (this.drag) { this.drag = null; this.schedule(); } }
  onMove(e) {
    if (this.drag) {
      const dt = (e.offsetX - this.drag.x) / this.plotWidth() * (this.drag.win[1] - this.drag.win[0]);
      this.win = [this.drag.win[0] - dt, this.drag.win[1] - dt]; this.draw(); return;
    }
    this.tip.textContent = this.describeAt(e.offsetX, e.offsetY);
  }

  describeAt(px, py) {
    const lane = Math.floor((py - SL_AXIS_H) / SL_LANE_H);
    if (!this.win || lane < 0 || lane >= this.lanes.length || px < SL_LABEL_W) return "";
    const t = this.t(px), slack = (this.win[1] - this.win[0]) / this.plotWidth() * 2;
    const hits = this.items.filter((it) => it.lane === lane && it.start_us - slack <= t && t <= it.end_us + slack);
    if (!hits.length) return `${this.lanes[lane].label} · t = ${fmtUs(t)} µs`;
    hits.sort((a, b) => (a.end_us - a.start_us) - (b.end_us - b.start_us));
    const it = hits[0];
    const what = it.kind === "merged" ? `${it.count} events merged (longest: ${it.name})` : it.name;
    return `${this.lanes[lane].label} · ${what} · ${it.category} · ${fmtUs(it.start_us)}–${fmtUs(it.end_us)} µs` +
      ` (${fmtUs(it.end_us - it.start_us)} µs)`;
  }
}

function niceStep(raw) {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-6))));
  const m = raw / p;
  return (m < 2 ? 2 : m < 5 ? 5 : 10) * p;
}

function fmtUs(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "—";
  const a = Math.abs(v);
  if (a >= 1000) return v.toLocaleString("en-US", { maximumFractionDigits: 1 });
  if (a >= 1) return v.toFixed(3).replace(/\.?0+$/, "");
  return v.toPrecision(3);
}
