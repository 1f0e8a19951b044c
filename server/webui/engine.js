// The engine view: polls GET v1/engine/stats every 500 ms while visible and
// draws it: a per-layer heat strip of the FFN neurons active, where they ran
// (GPU hot / GPU cached / CPU cold), bytes per token, gauges, sparklines of
// the last minute, and the profile's firing curve when a stats file is loaded.
import { ApiError, getJson } from "./api.js";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const POLL_MS = 500;
const HISTORY = 120;  // samples kept for the sparklines: one minute

function svg(tag, attrs, parent) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  if (parent) parent.appendChild(el);
  return el;
}

function figure(container, width, height, label) {
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label });
  svg("title", {}, root).textContent = label;
  container.replaceChildren(root);
  return root;
}

function text(parent, x, y, content, attrs) {
  const t = svg("text", Object.assign({ x, y }, attrs), parent);
  t.textContent = content;
  return t;
}

function percent(v, digits = 1) {
  return v == null ? "n/a" : (100 * v).toFixed(digits) + "%";
}

function bytes(v) {
  if (v == null) return "not known";
  if (v >= 1e9) return (v / 1e9).toFixed(2) + " GB";
  if (v >= 1e6) return (v / 1e6).toFixed(2) + " MB";
  if (v >= 1e3) return (v / 1e3).toFixed(1) + " kB";
  return Math.round(v) + " B";
}

// Colours of where neurons ran (readable on light and dark backgrounds).
const COLORS = { hot: "#d6453d", cached: "#f0a030", cold: "#3b7dd8", none: "#8888" };

// Cold (dark blue) to hot (yellow-white) over [0, 1].
const STOPS = [[13, 8, 135], [84, 2, 163], [139, 10, 165], [185, 50, 137], [219, 92, 104], [244, 136, 73], [254, 188, 43], [240, 249, 33]];
function heatColor(x) {
  const t = Math.max(0, Math.min(1, x)) * (STOPS.length - 1);
  const i = Math.min(Math.floor(t), STOPS.length - 2);
  const f = t - i;
  const c = STOPS[i].map((a, k) => Math.round(a + (STOPS[i + 1][k] - a) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

// The colour scale's top: the first of 5, 10, 20, 30, 50, 100% with a quarter
// of headroom above the largest value, so that cells differ in colour.
function niceScale(max) {
  for (const top of [0.05, 0.1, 0.2, 0.3, 0.5]) if (max * 1.25 <= top) return top;
  return 1;
}

// Rows of per-layer values as a strip of cells, one column per layer.
function drawHeat(container, rows, nLayer) {
  const W = 640, left = 74, top = 6, rowH = 26, legendH = 34;
  const H = top + rows.length * rowH + legendH;
  let max = 0;
  for (const r of rows) for (const v of r.values) if (v != null) max = Math.max(max, v);
  const scale = niceScale(max);
  const summary = rows.map((r) => r.label + ": " + r.values.map((v, l) => `layer ${l} ${percent(v, 0)}`).join(", ")).join("; ");
  const root = figure(container, W, H, "Heat strip of FFN neurons per layer. " + summary);
  const cellW = (W - left - 8) / Math.max(1, nLayer);
  rows.forEach((r, ri) => {
    const y = top + ri * rowH;
    text(root, left - 6, y + rowH / 2 + 4, r.label, { "text-anchor": "end", class: "axis" });
    r.values.forEach((v, l) => {
      const cell = svg("rect", { x: left + l * cellW, y, width: Math.max(cellW - (cellW > 4 ? 1 : 0), 0.5), height: rowH - 4,
        fill: v == null ? COLORS.none : heatColor(v / scale), class: "cell" }, root);
      svg("title", {}, cell).textContent = `layer ${l}: ${percent(v)} of the ${r.label} neurons`;
    });
  });
  // Layer ticks and the colour legend.
  const ly = top + rows.length * rowH;
  const step = Math.max(1, Math.ceil(nLayer / 8));
  for (let l = 0; l < nLayer; l += step) text(root, left + (l + 0.5) * cellW, ly + 8, String(l), { "text-anchor": "middle", class: "axis" });
  text(root, left - 6, ly + 8, "layer", { "text-anchor": "end", class: "axis" });
  const gx = left, gw = 160, gy = ly + 16;
  for (let i = 0; i < 32; i++) svg("rect", { x: gx + (i * gw) / 32, y: gy, width: gw / 32 + 0.5, height: 10, fill: heatColor(i / 31) }, root);
  text(root, gx - 6, gy + 9, "0%", { "text-anchor": "end", class: "axis" });
  text(root, gx + gw + 6, gy + 9, percent(scale, 0) + " of the layer's neurons per token", { class: "axis" });
}

// Hybrid mode: per layer, the predicted neurons by where they ran, stacked.
function drawSplit(container, layers, nLayer) {
  const W = 640, H = 150, left = 74, top = 8, bottom = 34;
  const ph = H - top - bottom;
  const parts = [["hot", "GPU (hot)", COLORS.hot], ["cached", "GPU (cached)", COLORS.cached], ["cold", "CPU (cold)", COLORS.cold]];
  let max = 0;
  for (let l = 0; l < nLayer; l++) max = Math.max(max, parts.reduce((s, [k]) => s + (layers[k][l] || 0), 0));
  const scale = niceScale(max);
  const summary = parts.map(([k, name]) => name + " " + percent(avg(layers[k]))).join(", ");
  const root = figure(container, W, H, "Predicted neurons per layer by where they ran, mean per layer: " + summary);
  const cellW = (W - left - 8) / Math.max(1, nLayer);
  text(root, left - 6, top + 10, percent(scale, 0), { "text-anchor": "end", class: "axis" });
  text(root, left - 6, top + ph, "0%", { "text-anchor": "end", class: "axis" });
  for (let l = 0; l < nLayer; l++) {
    let y = top + ph;
    for (const [k, name, color] of parts) {
      const v = layers[k][l] || 0;
      const h = (v / scale) * ph;
      y -= h;
      const bar = svg("rect", { x: left + l * cellW, y, width: Math.max(cellW - (cellW > 4 ? 1 : 0), 0.5), height: h, fill: color }, root);
      svg("title", {}, bar).textContent = `layer ${l}: ${percent(v)} ${name}`;
    }
  }
  parts.forEach(([, name, color], i) => {
    const x = left + i * 150;
    svg("rect", { x, y: H - 16, width: 12, height: 12, fill: color }, root);
    text(root, x + 16, H - 6, name, { class: "axis" });
  });
}

function avg(values) {
  const v = (values || []).filter((x) => x != null);
  return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
}

function drawBytes(container, b) {
  const items = [["VRAM", b.vram, COLORS.hot], ["host memory", b.host, COLORS.cold], ["PCIe", b.pcie, COLORS.cached]];
  const W = 640, rowH = 22, left = 100;
  const root = figure(container, W, items.length * rowH + 4, "Bytes read per token: " + items.map(([n, v]) => n + " " + bytes(v)).join(", "));
  const max = Math.max(1, ...items.map(([, v]) => v || 0));
  items.forEach(([name, v, color], i) => {
    const y = 2 + i * rowH;
    text(root, left - 8, y + 14, name, { "text-anchor": "end", class: "axis" });
    if (v != null) svg("rect", { x: left, y: y + 3, width: Math.max(1, ((W - left - 120) * v) / max), height: rowH - 8, fill: color }, root);
    text(root, v != null ? left + 6 + ((W - left - 120) * v) / max : left, y + 14, bytes(v), { class: "axis" });
  });
}

function millis(v) {
  return v == null ? "not known" : v >= 100 ? v.toFixed(0) + " ms" : v >= 1 ? v.toFixed(2) + " ms" : (1000 * v).toFixed(0) + " µs";
}

// The last decode steps' time per step (and, timed, its GPU / CPU / wait
// parts) against the modelled limit: the bytes a token reads over each
// memory's measured bandwidth.
function drawTime(container, note, t) {
  if (!t || !t.window_steps) {
    container.replaceChildren();
    note.textContent = "No decode step yet.";
    return;
  }
  const items = [["decode step", t.step_ms, COLORS.cold]];
  if (t.split_timed) items.push(["GPU busy", t.gpu_ms, COLORS.hot], ["CPU (cold)", t.cpu_ms, COLORS.cold], ["waits", t.wait_ms, COLORS.none]);
  items.push(["modelled limit", t.limit_ms, COLORS.cached]);
  const W = 640, rowH = 22, left = 110;
  const root = figure(container, W, items.length * rowH + 4, "Time per decode step: " + items.map(([n, v]) => n + " " + millis(v)).join(", "));
  const max = Math.max(1e-9, ...items.map(([, v]) => v || 0));
  items.forEach(([name, v, color], i) => {
    const y = 2 + i * rowH;
    text(root, left - 8, y + 14, name, { "text-anchor": "end", class: "axis" });
    if (v != null) svg("rect", { x: left, y: y + 3, width: Math.max(1, ((W - left - 120) * v) / max), height: rowH - 8, fill: color }, root);
    text(root, v != null ? left + 6 + ((W - left - 120) * v) / max : left, y + 14, millis(v), { class: "axis" });
  });
  const parts = [`last ${t.window_steps} decode steps, ${t.sequences_per_step.toFixed(1)} sequences each`];
  if (t.limit_ms != null && t.sequences_per_step <= 1.0001) parts.push(`${percent(t.limit_ms / t.step_ms, 0)} of the modelled limit reached`);
  else if (t.limit_ms != null) parts.push("the limit is modelled for one sequence");
  else parts.push("no limit modelled here (layer offload, or a bandwidth not measured)");
  if (!t.split_timed && t.bandwidths_gbs && t.bandwidths_gbs.device != null) parts.push("start with --time-split for the GPU / CPU / wait split");
  note.textContent = parts.join("; ") + ".";
}

function drawSpark(container, label, values, format) {
  const W = 200, H = 44;
  const last = values.length ? values[values.length - 1] : null;
  const wrap = document.createElement("figure");
  wrap.className = "spark";
  const cap = document.createElement("figcaption");
  cap.textContent = label + ": " + (last == null ? "n/a" : format(last));
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": cap.textContent });
  const max = Math.max(1e-9, ...values.filter((v) => v != null));
  // The newest sample at the right edge.
  const pts = values.map((v, i) => `${W - ((values.length - 1 - i) * W) / (HISTORY - 1)},${H - 2 - ((v || 0) / max) * (H - 4)}`);
  if (pts.length > 1) svg("polyline", { points: pts.join(" "), fill: "none", stroke: "currentColor", "stroke-width": 1.5 }, root);
  wrap.append(cap, root);
  container.appendChild(wrap);
}

function drawCurve(container, curve) {
  const W = 640, H = 300, left = 56, right = 10, top = 10, bottom = 36;
  const pw = W - left - right, ph = H - top - bottom;
  let minFreq = 1, maxRank = 1;
  for (const layer of curve.layers) {
    for (const f of layer.freq) if (f > 0) minFreq = Math.min(minFreq, f);
    for (const r of layer.rank) maxRank = Math.max(maxRank, r);
  }
  const xMax = Math.max(1, Math.ceil(Math.log10(maxRank)));
  const yMin = Math.min(-1, Math.floor(Math.log10(minFreq)));
  const px = (r) => left + (pw * Math.log10(r)) / xMax;
  const py = (f) => top + (ph * Math.log10(f)) / yMin;
  const root = figure(container, W, H, `Firing frequency by neuron rank, log-log, ${curve.layers.length} layers, ${curve.n_tokens} profiled tokens`);
  for (let e = 0; e <= xMax; e++) {
    svg("line", { x1: px(10 ** e), y1: top, x2: px(10 ** e), y2: top + ph, class: "grid" }, root);
    text(root, px(10 ** e), top + ph + 14, "1e" + e, { "text-anchor": "middle", class: "axis" });
  }
  for (let e = yMin; e <= 0; e++) {
    svg("line", { x1: left, y1: py(10 ** e), x2: left + pw, y2: py(10 ** e), class: "grid" }, root);
    text(root, left - 6, py(10 ** e) + 4, "1e" + e, { "text-anchor": "end", class: "axis" });
  }
  text(root, left + pw / 2, H - 4, "neuron rank (1 = hottest)", { "text-anchor": "middle", class: "axis" });
  text(root, left + 6, top + 12, "firings per token", { class: "axis" });
  curve.layers.forEach((layer, l) => {
    const pts = [];
    layer.rank.forEach((r, i) => { if (layer.freq[i] > 0) pts.push(`${px(r).toFixed(1)},${py(layer.freq[i]).toFixed(1)}`); });
    const hue = Math.round((300 * l) / Math.max(1, curve.layers.length - 1));
    const line = svg("polyline", { points: pts.join(" "), fill: "none", stroke: `hsl(${hue},70%,50%)`, "stroke-width": 1.2 }, root);
    svg("title", {}, line).textContent = "layer " + l;
  });
}

function gauge(label, value, fraction) {
  const div = document.createElement("div");
  div.className = "gauge";
  const name = document.createElement("span");
  name.textContent = label;
  const val = document.createElement("strong");
  val.textContent = value;
  div.append(name, val);
  if (fraction != null) {
    const meter = document.createElement("meter");
    meter.min = 0;
    meter.max = 1;
    meter.value = fraction;
    meter.setAttribute("aria-label", label);
    div.append(meter);
  }
  return div;
}

export function initEngine({ onAuthError, isVisible, model = () => "" }) {
  const forModel = (route) => (model() ? `${route}?model=${encodeURIComponent(model())}` : route);
  const history = [];
  let previous = null;
  let curveShown = false;
  let updates = 0;
  let timer = null;

  function draw(s) {
    const f = s.ffn;
    $("engine-state").textContent = s.state;
    $("gauges").replaceChildren(
      gauge("slots busy", `${s.slots.busy} / ${s.slots.total}`, s.slots.busy / Math.max(1, s.slots.total)),
      gauge("queue", `${s.queue.waiting} waiting`, s.queue.waiting / Math.max(1, s.queue.size)),
      gauge("KV cache", `${s.kv.used} / ${s.kv.capacity} tokens`, s.kv.used / Math.max(1, s.kv.capacity)),
      gauge("generated", `${s.tokens.generated_total} tokens`, null),
      // Lookup drafts (--lookup-draft, or requests' draft_max): shown once there are any.
      ...(s.tokens.drafted_total > 0
        ? [gauge("drafts kept", `${s.tokens.draft_kept_total} / ${s.tokens.drafted_total} tokens`,
                 s.tokens.draft_kept_total / s.tokens.drafted_total)]
        : []),
      gauge("device", s.device, null),
    );
    const heat = $("heat");
    if (f.mode === "dense") {
      $("engine-note").textContent =
        "This model runs the dense FFN: every neuron of every layer for every token, so there are no per-neuron " +
        "counts to draw. (The sparse FFN needs predictors, in the model or from a --stats file, and a sparsity other " +
        "than dense.)";
      $("ffn-window").textContent = "";
      heat.replaceChildren(Object.assign(document.createElement("p"), { className: "note", textContent: "Dense FFN: 100% of the neurons run on every token." }));
      $("split").replaceChildren();
    } else {
      $("engine-note").textContent = f.mode === "hybrid"
        ? "Hybrid mode: hot neurons run on the GPU, cold ones on the CPU."
        : "Sparse FFN on the CPU: each layer's predictor picks the neurons to compute.";
      $("ffn-window").textContent = f.window_tokens ? `(last ${f.window_tokens} tokens)` : "(no sparse token yet)";
      const rows = [{ label: "active", values: f.layers.active }, { label: "predicted", values: f.layers.predicted }];
      drawHeat(heat, rows, f.n_layer);
      if (f.mode === "hybrid") drawSplit($("split"), f.layers, f.n_layer);
      else $("split").replaceChildren(Object.assign(document.createElement("p"), { className: "note", textContent: "All of them run on the CPU (no GPU split)." }));
    }
    drawBytes($("bytes"), s.bytes_per_token);
    drawTime($("time"), $("time-split"), s.time_per_token);
    heat.dataset.updates = String(++updates);
    heat.dataset.mode = f.mode;
    heat.dataset.windowSteps = String(f.window_steps ?? 0);
    heat.dataset.generated = String(s.tokens.generated_total);
  }

  function record(s) {
    const now = performance.now();
    let tps = 0;
    if (previous && now > previous.t) tps = Math.max(0, (s.tokens.generated_total - previous.generated) / ((now - previous.t) / 1000));
    previous = { t: now, generated: s.tokens.generated_total };
    history.push({ tps, active: s.ffn.layers ? avg(s.ffn.layers.active) : null, kv: s.kv.used / Math.max(1, s.kv.capacity),
      busy: s.slots.busy, waiting: s.queue.waiting });
    if (history.length > HISTORY) history.shift();
    const sparks = $("sparks");
    sparks.replaceChildren();
    drawSpark(sparks, "tokens/s", history.map((h) => h.tps), (v) => v.toFixed(1));
    if (s.ffn.mode !== "dense") drawSpark(sparks, "neurons active", history.map((h) => h.active), (v) => percent(v));
    drawSpark(sparks, "KV cache", history.map((h) => h.kv), (v) => percent(v));
    drawSpark(sparks, "slots busy", history.map((h) => h.busy), (v) => String(v));
    drawSpark(sparks, "queued", history.map((h) => h.waiting), (v) => String(v));
  }

  async function showCurve(s) {
    if (curveShown) return;
    curveShown = true;
    const box = $("curve");
    if (!s.firing_curve) {
      box.replaceChildren(Object.assign(document.createElement("p"), { className: "note",
        textContent: "No stats file loaded: start the server with --stats FILE (from `thermocline profile`) to see it." }));
      return;
    }
    try {
      drawCurve(box, await getJson(forModel("v1/engine/firing_curve")));
    } catch (e) {
      curveShown = false;
      box.textContent = "Could not load the firing curve: " + e.message;
    }
  }

  async function poll() {
    timer = null;
    if (!isVisible() || document.visibilityState !== "visible") return;
    try {
      const s = await getJson(forModel("v1/engine/stats"));
      draw(s);
      record(s);
      showCurve(s);
    } catch (e) {
      $("engine-note").textContent = "Engine stats unavailable: " + e.message;
      if (e instanceof ApiError && e.status === 401) {
        onAuthError();
        return;
      }
    }
    schedule();
  }

  function schedule() {
    if (timer === null) timer = setTimeout(poll, POLL_MS);
  }

  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") schedule(); });
  return {
    // Starts (or resumes) polling, at once.
    start() {
      if (timer !== null) clearTimeout(timer);
      timer = null;
      poll();
    },
  };
}
