// chaingraph.js: a chain of jobs (GET /chains) drawn as inline SVG, in
// layers from left to right: the jobs that run after no other in the first
// column, each dependent one column right of its deepest parent, an arrow
// from every parent to its dependent. Each job's box says where it stands
// (its state) and its last fire, in the colour of its state, and links to
// its page. Nothing is loaded from elsewhere; all text is set as text.

import { el, time } from "./dom.js";

const NS = "http://www.w3.org/2000/svg";
const W = 210; // a box's width
const H = 62; // and height
const GX = 80; // the gap between columns
const GY = 18; // and between boxes of a column
const PAD = 8;

// STATES are the words shown for each state, and whether it needs a look.
export const STATES = {
  completed: "completed on every item",
  running: "running",
  waiting: "waiting for a parent",
  failed: "failed",
  skipped: "skipped: a parent failed",
  partial: "completed on some items",
  none: "no fire yet",
  gone: "not in the namespace",
  unknown: "unknown",
};

// stateText is a node's state in words, with its item counts where they
// tell more.
export function stateText(n) {
  const word = STATES[n.state] || n.state || "unknown";
  if (n.state === "partial") return `${word} (${n.done} of ${n.items})`;
  return word;
}

// stateKind maps a state to a badge's colour.
export function stateKind(state) {
  return { completed: "ok", running: "muted", waiting: "warn", partial: "warn", failed: "bad", skipped: "bad" }[state] || "muted";
}

// svg creates an SVG element, as el does an HTML one.
function svg(tag, attrs, ...children) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === "text") e.textContent = String(v);
    else e.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

// clip shortens s to n characters, marking the cut.
function clip(s, n) {
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

// columns orders each layer's jobs: the first by name, each next one by
// the mean position of their parents in the columns before (fewer
// crossings), then by name.
function columns(nodes) {
  const byLayer = new Map();
  for (const n of nodes) {
    if (!byLayer.has(n.layer)) byLayer.set(n.layer, []);
    byLayer.get(n.layer).push(n);
  }
  const layers = [...byLayer.keys()].sort((a, b) => a - b);
  const pos = new Map();
  return layers.map((l) => {
    const col = byLayer.get(l);
    const key = (n) => {
      const ps = (n.parents || []).filter((p) => pos.has(p));
      return ps.length ? ps.reduce((s, p) => s + pos.get(p), 0) / ps.length : -1;
    };
    const keys = new Map(col.map((n) => [n.name, key(n)]));
    col.sort((a, b) => keys.get(a.name) - keys.get(b.name) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    col.forEach((n, i) => pos.set(n.name, i));
    return col;
  });
}

let drawn = 0; // numbers each drawing, for its arrowhead's id

// draw returns an SVG of one chain: nodes and the edges among them.
// current, if given, is the job whose page it is on (drawn bolder). An
// edge between neighbouring columns is a plain curve; one that skips
// columns passes above the boxes between, each in a lane of its own.
export function draw(nodes, edges, current) {
  const cols = columns(nodes);
  const tallest = Math.max(...cols.map((c) => c.length));
  const at = new Map();
  const colOf = new Map();
  cols.forEach((col, ci) => {
    const top = PAD + ((tallest - col.length) * (H + GY)) / 2;
    col.forEach((n, i) => {
      at.set(n.name, { x: PAD + ci * (W + GX), y: top + i * (H + GY) });
      colOf.set(n.name, ci);
    });
  });
  const names = new Set(nodes.map((n) => n.name));
  const shown = edges.filter((e) => names.has(e.from) && names.has(e.to));
  // The lanes of the edges that skip columns (or go back, on a cycle).
  const lanes = new Map();
  let lane = 0;
  for (const e of shown) {
    const a = colOf.get(e.from);
    const b = colOf.get(e.to);
    if (b === a + 1) continue;
    let over = Infinity;
    for (const n of nodes) {
      const c = colOf.get(n.name);
      if (c >= Math.min(a, b) && c <= Math.max(a, b)) over = Math.min(over, at.get(n.name).y);
    }
    lanes.set(e, over - 14 - 10 * lane++);
  }
  const shift = Math.max(0, PAD - Math.min(PAD, ...lanes.values()));
  for (const p of at.values()) p.y += shift;
  for (const [e, y] of lanes) lanes.set(e, y + shift);
  const height = tallest * H + (tallest - 1) * GY + 2 * PAD + shift;
  const width = cols.length * W + (cols.length - 1) * GX + 2 * PAD;
  const arrow = `chain-arrow-${++drawn}`;
  const lines = shown.map((e) => {
    const a = at.get(e.from);
    const b = at.get(e.to);
    // An edge over the boxes leaves and enters them higher up, apart from
    // the plain edges.
    const up = lanes.has(e) ? 12 : 0;
    const x1 = a.x + W;
    const y1 = a.y + H / 2 - up;
    const x2 = b.x - 2;
    const y2 = b.y + H / 2 - up;
    let d;
    if (lanes.has(e)) {
      const y = lanes.get(e);
      const r = GX / 2;
      d = `M${x1},${y1} C${x1 + r},${y1} ${x1 + r},${y} ${x1 + GX - 4},${y} L${x2 - GX + 4},${y} C${x2 - r},${y} ${x2 - r},${y2} ${x2},${y2}`;
    } else {
      const bend = Math.max(30, Math.abs(x2 - x1) / 2);
      d = `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`;
    }
    return svg(
      "path",
      { class: "chain-edge", "data-from": e.from, "data-to": e.to, d, "marker-end": `url(#${arrow})` },
      svg("title", { text: `${e.to} runs after ${e.from}` }),
    );
  });
  const boxes = cols.flat().map((n) => {
    const p = at.get(n.name);
    return svg(
      "g",
      {
        class: `chain-node state-${n.state}` + (n.name === current ? " current" : ""),
        "data-job": n.name,
        "data-layer": n.layer,
        "data-state": n.state,
        transform: `translate(${p.x},${p.y})`,
      },
      svg(
        "a",
        { href: "#/job/" + encodeURIComponent(n.name) },
        svg("title", { text: `${n.name}: ${stateText(n)}${n.detail ? " — " + n.detail : ""}` }),
        svg("rect", { width: W, height: H, rx: 6, ry: 6 }),
        svg("text", { class: "chain-name", x: 10, y: 19, text: clip(n.name, 26) }),
        svg("text", { class: "chain-state", x: 10, y: 37, text: clip(stateText(n), 32) }),
        svg("text", { class: "chain-fire", x: 10, y: 54, text: n.lastFire ? "last fire " + time(n.lastFire) : "no fire completed" }),
      ),
    );
  });
  return svg(
    "svg",
    { class: "chain-graph", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "jobs and the jobs they run after" },
    svg("defs", null, svg("marker", { id: arrow, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse" }, svg("path", { class: "chain-arrowhead", d: "M0,0 L10,5 L0,10 z" }))),
    lines,
    boxes,
  );
}

// chains splits a graph into its chains (connected parts), in order.
export function chains(graph) {
  const out = new Map();
  for (const n of graph.nodes || []) {
    if (!out.has(n.chain)) out.set(n.chain, []);
    out.get(n.chain).push(n);
  }
  return [...out.values()];
}

// legend names the states and their colours.
export function legend() {
  return el(
    "p",
    { class: "chain-legend muted" },
    Object.keys(STATES).map((s) => el("span", { class: `chain-key state-${s}`, text: STATES[s] })),
  );
}
