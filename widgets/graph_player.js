// gradlab graph player: replays a *recorded* forward or backward pass over the
// graph's SVG (drawn by gradlab.show_graph's renderer, laid out once).
//
// Every frame was recorded in Python from the real engine and sent once as
// the `frames` trait; stepping, playing and the inspector all run here in the
// browser with no kernel round trip. Plain ES module: no bundler, no CDN.
//
// Traits read: svg (string), nodes ({id: inspector record}), frames ([...]),
// mem0 (saved bytes before the first frame), title, step (synced on pause).

const SPEEDS = [0.5, 1, 2, 4, 8, 16];

function h(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function esc(s) {
  return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

function shape(s) {
  if (!s) return "?";
  return "(" + s.join(", ") + (s.length === 1 ? ",)" : ")");
}

// gradlab.backend.memory_limit.format_bytes, written again in JS (tests/browser/test_widgets_browser.py runs both on the
// same sizes): whole bytes below 1 KiB, then one decimal in binary units.
const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];
export function bytes(n) {
  if (n === null || n === undefined) return "-";
  let k = 0;
  while (Math.abs(n) >= 1024 && k < BYTE_UNITS.length - 1) { n /= 1024; k++; }
  return k === 0 ? `${Math.trunc(n)} B` : `${(Math.floor(n * 10 + 0.5) / 10).toFixed(1)} ${BYTE_UNITS[k]}`;
}

function fmt(v) {
  if (typeof v === "string") return v;
  if (v === 0) return "0";
  const a = Math.abs(v);
  return a >= 1e4 || a < 1e-3 ? v.toExponential(2) : String(+v.toPrecision(4));
}

function preview(v) {
  if (!v) return "<i>none</i>";
  const more = v.k > v.p.length ? ", …" : "";
  return `<code>${esc(shape(v.s))}</code> [${v.p.map(fmt).join(", ")}${more}] <span class="gl-dim">‖·‖=${fmt(v.n)}</span>`;
}

// a diverging, colour-blind-safe ramp (PuOr): purple < 0 < orange, white at 0
function heatColor(x, m) {
  if (typeof x === "string") return "#000";
  const t = m > 0 ? Math.max(-1, Math.min(1, x / m)) : 0;
  const [r0, g0, b0] = t < 0 ? [84, 39, 136] : [179, 88, 6];
  const a = Math.abs(t);
  const mix = (c) => Math.round(247 + (c - 247) * a);
  return `rgb(${mix(r0)},${mix(g0)},${mix(b0)})`;
}

function heatmap(v, caption) {
  if (!v || !v.h) return "";
  let m = 0;
  for (const row of v.h) for (const x of row) if (typeof x === "number") m = Math.max(m, Math.abs(x));
  const cols = v.h[0].length;
  let cells = "";
  for (const row of v.h)
    for (const x of row) cells += `<div class="gl-cell" style="background:${heatColor(x, m)}" title="${fmt(x)}"></div>`;
  const note = v.hs ? ` <span class="gl-dim">(top-left ${v.h.length}×${cols} slice)</span>` : "";
  return `<div class="gl-heat-cap">${esc(caption)} ${preview(v)}${note}</div>
    <div class="gl-heat" style="grid-template-columns: repeat(${cols}, 14px)">${cells}</div>
    <div class="gl-dim gl-heat-key">purple &lt; 0 &lt; orange, scale ±${fmt(m)}</div>`;
}

function render({ model, el }) {
  const frames = model.get("frames") || [];
  const nodes = model.get("nodes") || {};
  const meta = model.get("meta") || {};
  const F = frames.length;
  let elemMap = model.get("elem") || {};   // model id -> drawn id (a collapsed module box)
  let groups = model.get("groups") || {};  // drawn box id -> {path, label, ops, ...}
  const E = (id) => elemMap[id] || id;
  const nameOf = (id) => {                 // what a student calls it: a tensor's name, an op's name
    if (id === "seed") return "the seed gradient (1)";
    const n = nodes[id];
    return n ? (n.kind === "op" ? n.op : n.label) : id;
  };
  const root = h("div", "gl-root");
  root.tabIndex = 0;
  root.setAttribute("data-lm-suppress-shortcuts", "true");
  root.setAttribute("role", "application");
  root.setAttribute("aria-label", (model.get("title") || "graph") + ": left/right arrows step, space plays");

  // ---------------------------------------------------------------- layout
  const head = h("div", "gl-head");
  head.append(h("span", "gl-title", model.get("title") || ""));
  const bar = h("div", "gl-bar");
  const bBack = h("button", "gl-btn gl-back", "◀ Step back");
  const bPlay = h("button", "gl-btn gl-play", "▶ Play");
  const bFwd = h("button", "gl-btn gl-fwd", "Step forward ▶");
  const slider = h("input", "gl-slider");
  slider.type = "range"; slider.min = 0; slider.max = F; slider.value = 0;
  slider.setAttribute("aria-label", "step");
  const speed = h("select", "gl-speed");
  for (const s of SPEEDS) { const o = h("option", "", s + "×"); o.value = s; if (s === 2) o.selected = true; speed.append(o); }
  speed.setAttribute("aria-label", "speed (steps per second)");
  const label = h("span", "gl-steplabel");
  for (const b of [bBack, bPlay, bFwd]) b.type = "button";
  bar.append(bBack, bPlay, bFwd, slider, h("span", "gl-dim", "speed"), speed, label);
  const body = h("div", "gl-body");
  const graph = h("div", "gl-graph");
  graph.innerHTML = model.get("svg") || "";
  const side = h("div", "gl-side");
  const panel = h("div", "gl-panel");
  const mem = h("div", "gl-mem");
  const insp = h("div", "gl-inspector");
  insp.hidden = true;
  side.append(panel, mem, insp);
  body.append(graph, side);
  const legend = h("div", "gl-legend");
  legend.innerHTML = `<span class="gl-key gl-key-current">current step</span>
    <span class="gl-key gl-key-target">receives a gradient now</span>
    <span class="gl-key gl-key-done">done</span><span class="gl-key gl-key-pending">not reached yet</span>
    <span class="gl-dim">click a node to inspect · ←/→ step · space play/pause</span>`;
  if (!F) {  // a still graph (graph_widget): only the inspector
    bar.hidden = true; panel.hidden = true; mem.hidden = true;
    legend.innerHTML = `<span class="gl-dim">click a node to inspect it</span>`;
  }
  root.append(head, bar, body, legend);
  el.append(root);

  // ------------------------------- index the SVG (again after a box is expanded)
  let svg = null, elOf = new Map(), appear = new Map(), runs = new Map(), edgesFrom = new Map(), footer = null;
  const isEdge = new Set();
  function index() {
    svg = graph.querySelector("svg");
    elOf = new Map();
    if (svg) {
      svg.removeAttribute("width"); svg.removeAttribute("height");
      for (const g of svg.querySelectorAll("g.node, g.edge")) if (g.id) elOf.set(g.id, g);
      footer = null;
      for (const t of svg.querySelectorAll("text")) if (t.textContent.startsWith("memory:")) { footer = t; break; }
    }
    appear = new Map();   // drawn id -> frame index where it appears (forward frames)
    runs = new Map();     // drawn id -> [frame indices where the engine is at it (or inside it)]
    frames.forEach((f, k) => {
      if (f.show) for (const id of f.show) { const d = E(id); if (!appear.has(d)) appear.set(d, k); }
      for (const id of [f.n].concat(f.also || [])) {
        const d = E(id);
        if (!runs.has(d)) runs.set(d, []);
        const r = runs.get(d);
        if (r[r.length - 1] !== k) r.push(k);
      }
    });
    edgesFrom = new Map();  // drawn edges leaving a drawn node (the gradient's way in the backward view)
    isEdge.clear();
    for (const [id, a, b] of model.get("edges") || []) {
      isEdge.add(id);
      if (!edgesFrom.has(a)) edgesFrom.set(a, []);
      edgesFrom.get(a).push(id);
      if (appear.size) {   // forward frames: an edge appears with the later of its two ends
        const ka = appear.get(a), kb = appear.get(b);
        if (ka !== undefined || kb !== undefined) appear.set(id, Math.max(ka ?? -1, kb ?? -1));
      }
    }
    for (const id of elOf.keys()) (isEdge.has(id) ? edgeState : nodeState)(id, cur);
  }
  const bwFrame = (id) => { const r = runs.get(E(id)) || []; for (const k of r) if (!frames[k].fw) return k; return -1; };

  // ------------------------------------------------------------- stepping
  let cur = 0;                 // 0 = before the first frame; k = frame k-1 has just run
  let marked = [];             // elements with transient classes (current, target, flow)
  function nodeState(id, p) {
    const g = elOf.get(id);
    if (!g) return;
    const a = appear.get(id);
    g.classList.toggle("gl-hidden", a !== undefined && a >= p);
    const r = (runs.get(id) || []).filter((k) => !frames[k].fw);
    // done once the engine has left it for good (a module box: after its last node)
    const done = r.length > 0 && r[r.length - 1] < p - 1;
    g.classList.toggle("gl-done", done);
    const pending = r.length > 0 && !done && !r.includes(p - 1);
    g.classList.toggle("gl-pending", pending);
  }
  function edgeState(id, p) {
    const g = elOf.get(id);
    const a = appear.get(id);
    if (g && a !== undefined) g.classList.toggle("gl-hidden", a >= p);
  }
  function touched(lo, hi) {
    const ids = new Set();
    for (let k = Math.max(0, lo - 1); k <= Math.min(F - 1, hi); k++) {
      const f = frames[k];
      ids.add(E(f.n));
      if (f.also) for (const a of f.also) ids.add(E(a));
      if (f.show) for (const s of f.show) {
        const d = E(s);
        ids.add(d);
        for (const eid of edgesFrom.get(d) || []) ids.add(eid);
      }
    }
    if (appear.size) for (const [id, k] of appear) if (isEdge.has(id) && k >= lo - 1 && k <= hi) ids.add(id);
    return ids;
  }
  function go(p, sync) {
    const t0 = performance.now();
    p = Math.max(0, Math.min(F, p | 0));
    const old = cur;
    cur = p;
    for (const g of marked) g.classList.remove("gl-current", "gl-target", "gl-flow");
    marked = [];
    const ids = touched(Math.min(old, p), Math.max(old, p));
    for (const id of ids) (isEdge.has(id) ? edgeState : nodeState)(id, p);
    const f = p > 0 ? frames[p - 1] : null;
    if (f) {
      const here = E(f.n);
      for (const id of [f.n].concat(f.also || [])) {
        const g = elOf.get(E(id));
        if (g) { g.classList.add("gl-current"); g.classList.remove("gl-pending"); marked.push(g); }
      }
      if (!f.fw) {
        for (const o of f.gout) {
          const d = E(o.to);
          const g = d !== here && elOf.get(d);
          if (g) { g.classList.add("gl-target"); marked.push(g); }
        }
        const tos = new Set(f.gout.map((o) => E(o.to)));
        for (const eid of edgesFrom.get(here) || []) {
          const g = elOf.get(eid);
          if (g && (groups[here] === undefined || tos.has(edgeDst.get(eid)))) { g.classList.add("gl-flow"); marked.push(g); }
        }
      }
    }
    slider.value = p;
    label.textContent = `step ${p} / ${F}`;
    panel.innerHTML = describe(f, p);
    memMark(p);
    footerAt(p, f);
    if (inspId) inspect(inspId);
    root.dataset.step = p;
    root.dataset.current = f ? f.n : "";
    if (sync) { model.set("step", p); model.save_changes(); }
    root.dataset.lastUpdateMs = (performance.now() - t0).toFixed(3);
  }

  function describe(f, p) {
    if (!f) {
      const bw = frames.length && !frames[0].fw;
      return `<div class="gl-ptitle">${bw ? "Before backward" : "Before the forward pass"}</div>
        <p>${bw ? "Press <b>Step forward</b>: the engine starts at the output with gradient 1 and visits one node per step, latest-created first among the nodes whose gradients have all arrived."
                : "Press <b>Step forward</b>: each step is one op as the forward pass recorded it, with the bytes it saved for backward."}</p>`;
    }
    const info = nodes[f.n] || {};
    const box = groups[E(f.n)];
    const what = info.kind === "tensor" ? ` <span class="gl-dim">→ ${esc(info.label)}</span>` : "";
    let s = `<div class="gl-ptitle">step ${p}: <b>${esc(f.op)}</b>${what}</div>`;
    if (box && !box.more) s += `<p class="gl-dim gl-inside">inside <b>${esc(box.label)}</b> (${esc(box.type)}); click the box to expand it</p>`;
    if (f.fw) {
      s += `<p>forward: ran <b>${esc(f.op)}</b> → <code>${esc(shape(info.shape))}</code></p>`;
      s += `<p>saved for backward: +${bytes(f.added)} (total ${bytes(f.mem)})</p>`;
      if (f.site) s += `<p class="gl-dim">at ${esc(f.site)}</p>`;
      return s;
    }
    if (f.f) s += `<div class="gl-formula"><code>${esc(f.f)}</code></div>`;
    const acc = f.acc || [];
    if (acc.length > 1)
      s += `<p class="gl-accum"><b>accumulation:</b> ${acc.length} gradients arrived (from ${acc.map((a) => esc(nameOf(a.from))).join(", ")}) and were added up</p>`;
    s += `<p>incoming gradient dY: ${f.gin.map(preview).join("<br>")}</p>`;
    if (f.leaf) {
      s += `<p>.grad before: ${f.leaf.before ? preview(f.leaf.before) : "<i>None</i>"}</p>`;
      s += `<p>.grad after: ${preview(f.leaf.after)}</p>`;
    }
    if (f.bcast) s += `<p>broadcast back along axes ${esc(shape(f.bcast))}</p>`;
    if (f.gout.length) {
      s += `<p>outgoing gradients:</p><ul class="gl-gout">`;
      for (const o of f.gout) {
        const tgt = nodes[o.to] || {};
        s += `<li>input ${o.i} → <b>${esc(tgt.kind === "op" ? tgt.op : (tgt.label || "?"))}</b>: ${preview(o.v)}`;
        if (o.axes) s += `<br><span class="gl-bcast">broadcast: summed over axes ${esc(shape(o.axes))} to fit ${esc(shape(o.v.s))}</span>`;
        s += `</li>`;
      }
      s += `</ul>`;
    }
    s += `<p class="gl-dim">saved tensors still held: ${bytes(f.mem)}${f.freed ? ` (this node freed ${bytes(f.freed)})` : ""}</p>`;
    return s;
  }

  // ---------------------------------------------------- memory timeline
  const W = 260, H = 70;
  const memv = [model.get("mem0") || 0].concat(frames.map((f) => f.mem || 0));
  const mmax = Math.max(1, ...memv);
  const xs = (k) => (F ? (k / F) * (W - 4) + 2 : 2);
  const ys = (v) => H - 14 - (v / mmax) * (H - 22);
  const pts = memv.map((v, k) => `${xs(k).toFixed(1)},${ys(v).toFixed(1)}`).join(" ");
  mem.innerHTML = `<div class="gl-mtitle">saved for backward (peak ${bytes(mmax)})</div>
    <svg class="gl-mchart" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="saved bytes per step">
      <polyline class="gl-mline" points="${pts}" fill="none"/>
      <line class="gl-mmark" x1="2" x2="2" y1="2" y2="${H - 12}"/>
      <text class="gl-mtext" x="2" y="${H - 2}">0</text><text class="gl-mtext" x="${W - 2}" y="${H - 2}" text-anchor="end">step ${F}</text>
    </svg>`;
  const mark = mem.querySelector(".gl-mmark");
  function memMark(p) { const x = xs(p).toFixed(1); mark.setAttribute("x1", x); mark.setAttribute("x2", x); }
  // the SVG's footer follows the steps: saved activations fall, gradients grow
  let lastGb = meta.gradients || 0;
  function footerAt(p, f) {
    if (!footer || !F) return;
    let gb = meta.gradients || 0;
    for (let k = p - 1; k >= 0; k--) if (frames[k].gb !== undefined) { gb = frames[k].gb; break; }
    lastGb = gb;
    const saved = p > 0 ? (f.mem || 0) : (model.get("mem0") || 0);
    const parts = [`parameters ${bytes(meta.parameters || 0)}`];
    if (meta.leaves) parts.push(`other leaves ${bytes(meta.leaves)}`);
    parts.push(`saved activations ${bytes(saved)}`, `gradients ${bytes(gb)}`);
    footer.textContent = "memory: " + parts.join(", ");
    root.dataset.footer = footer.textContent;
  }

  // ------------------------------------------------------------ inspector
  let inspId = null;
  function inspect(id) {
    const n = nodes[id];
    if (!n) return;
    inspId = id;
    const rows = [];
    const row = (k, v) => rows.push(`<tr><th>${k}</th><td>${v}</td></tr>`);
    row("shape", `<code class="gl-ishape">${esc(shape(n.shape))}</code>`);
    row("dtype", esc(n.dtype || "?"));
    row("device", esc(n.device || "cpu"));
    if (n.strides) row("strides", `<code>${esc(shape(n.strides))}</code> ${n.contiguous ? "contiguous" : "<b>not contiguous</b>"}`);
    row("requires_grad", String(!!n.requires_grad));
    if (n.kind === "op") {
      row("op", `<b>${esc(n.op)}</b>`);
      if (n.formula) row("formula", `<code>${esc(n.formula)}</code>`);
      const sv = n.saved || [];
      row("saved", sv.length ? sv.map((x) => `${esc(x.name || (x.output ? "output" : "input"))} <code>${esc(shape(x.shape))}</code> ${esc(x.dtype)} ${bytes(x.bytes)}`).join("<br>") : "<i>nothing</i>");
    } else {
      row("role", esc(n.role || ""));
      if (n.bytes !== undefined) row("bytes", bytes(n.bytes));
    }
    if (n.module) row("module", esc(n.module));
    if (n.aliases) row("also named", esc(n.aliases.join(", ")) + " <span class=\"gl-dim\">(tied: one tensor)</span>");
    if (n.users) row("used by", esc(n.users.join(", ")));
    if (n.site) row("created at", `<code>${esc(n.site)}</code>`);
    if (n.missing) row("missing grad", esc(n.missing));
    let g = "";
    const k = bwFrame(id);
    const arrived = k < 0 || k < cur;
    if (n.grad && arrived) g = heatmap(n.grad, ".grad");
    else if (n.grad_in && arrived) g = heatmap(n.grad_in, "gradient arriving (dY)");
    else if (k >= 0) g = `<p class="gl-dim">no gradient yet: this node runs at step ${k + 1}</p>`;
    const kind = n.kind === "op" ? "op" : (n.role || "tensor");
    insp.innerHTML = `<div class="gl-ititle"><b>${esc(n.label || "?")}</b> <span class="gl-dim">${esc(kind)}</span>
      <button class="gl-btn gl-close" type="button" aria-label="close inspector">×</button></div>
      <table class="gl-itable">${rows.join("")}</table>${g}`;
    insp.hidden = false;
    insp.dataset.node = id;
    insp.querySelector(".gl-close").onclick = () => { insp.hidden = true; inspId = null; };
  }
  graph.addEventListener("click", (ev) => {
    const g = ev.target.closest && ev.target.closest("g.node");
    if (!g || !g.id) return;
    if (groups[g.id] && !groups[g.id].more) {   // a collapsed module: ask the kernel to draw it open
      g.classList.add("gl-expanding");
      model.send({ expand: g.id });
    } else if (nodes[g.id]) inspect(g.id);
  });

  // ------------------------------------------------------------ controls
  let timer = null;
  function stop(sync = true) {
    if (timer) { clearInterval(timer); timer = null; }
    bPlay.textContent = "▶ Play";
    root.dataset.playing = "0";
    if (sync) { model.set("step", cur); model.save_changes(); }
  }
  function play() {
    if (timer) return;
    if (cur >= F) go(0, false);
    bPlay.textContent = "⏸ Pause";
    root.dataset.playing = "1";
    timer = setInterval(() => { if (cur >= F) stop(); else go(cur + 1, false); if (cur >= F) stop(); },
                        1000 / Number(speed.value));
  }
  const toggle = () => (timer ? stop() : play());
  bPlay.onclick = toggle;
  bFwd.onclick = () => { stop(false); go(cur + 1, true); };
  bBack.onclick = () => { stop(false); go(cur - 1, true); };
  slider.oninput = () => { stop(false); go(Number(slider.value), false); };
  slider.onchange = () => go(Number(slider.value), true);
  speed.onchange = () => { if (timer) { stop(false); play(); } };
  root.addEventListener("keydown", (ev) => {
    if (ev.target.tagName === "SELECT" || (ev.target.tagName === "INPUT" && ev.key !== " ")) return;
    let used = true;
    if (ev.key === "ArrowRight") bFwd.onclick();
    else if (ev.key === "ArrowLeft") bBack.onclick();
    else if (ev.key === " " || ev.key === "Spacebar") toggle();
    else used = false;
    if (used) { ev.preventDefault(); ev.stopPropagation(); }
  });
  // space on a focused button would also "click" it on keyup: the keydown above already acted
  root.addEventListener("keyup", (ev) => { if (ev.key === " " && ev.target.tagName === "BUTTON") ev.preventDefault(); });
  root.addEventListener("click", (ev) => { if (!ev.target.closest("select, input, button")) root.focus({ preventScroll: true }); });
  model.on("change:step", () => { const s = model.get("step"); if (s !== cur) { stop(false); go(s, false); } });

  // the initial state: everything pending (backward) or hidden (forward)
  let edgeDst = new Map();
  const reindex = () => {
    edgeDst = new Map((model.get("edges") || []).map(([id, , b]) => [id, b]));
    marked = [];
    index();
  };
  cur = 0;
  reindex();
  go(Math.max(0, Math.min(F, model.get("step") || 0)), false);
  // a box was expanded: the kernel sent a new drawing; keep the step, redraw, re-index
  model.on("change:svg", () => {
    const t0 = performance.now();
    elemMap = model.get("elem") || {};
    groups = model.get("groups") || {};
    graph.innerHTML = model.get("svg") || "";
    reindex();
    go(cur, false);
    root.dataset.expandMs = (performance.now() - t0).toFixed(1);
    root.dataset.expanded = String((+root.dataset.expanded || 0) + 1);
  });
  root.__gradlab = { go, frames, E, get step() { return cur; }, get groups() { return groups; } };
  return () => stop(false);
}

export default { render };
