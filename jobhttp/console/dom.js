// dom.js: building the page. Everything shown goes through textContent or
// text nodes (el's children, attributes set with setAttribute): no data is
// ever parsed as HTML.

// el creates an element. attrs: class, text, on<event> handlers, and any
// other attribute; children: nodes or strings (added as text).
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = String(v);
    else if (k.startsWith("on") && typeof v === "function") e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

// table renders rows with columns [{label, cell(row) -> node|string, cls}].
export function table(columns, rows, empty) {
  if (!rows.length) return el("p", { class: "empty", text: empty || "nothing to show" });
  return el(
    "table",
    null,
    el("thead", null, el("tr", null, columns.map((c) => el("th", { class: c.cls }, c.label)))),
    el(
      "tbody",
      null,
      rows.map((r) => el("tr", null, columns.map((c) => el("td", { class: c.cls }, c.cell(r))))),
    ),
  );
}

// badge is a small coloured label; kind is ok, warn, bad or muted.
export function badge(text, kind) {
  return el("span", { class: "badge " + (kind || "muted"), text });
}

// button is an action button.
export function button(label, onclick, attrs) {
  return el("button", Object.assign({ type: "button", onclick }, attrs || {}), label);
}

function pad(n) {
  return String(n).padStart(2, "0");
}

// time shows an RFC 3339 time as local YYYY-MM-DD HH:MM:SS, "" for none.
export function time(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (isNaN(d)) return String(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// duration shows milliseconds as 850 ms, 12.3 s, 4 m 5 s.
export function duration(ms) {
  if (ms == null || isNaN(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} m ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} m`;
}

// items shows a list of item ids with their count, "3 (items 0, 1, 2)", so
// that neither can be read for the other; "none" for an empty list.
export function items(list) {
  if (!list || !list.length) return "none";
  return `${list.length} (${list.length === 1 ? "item" : "items"} ${list.join(", ")})`;
}

// section is a titled block.
export function section(title, ...children) {
  return el("section", null, el("h2", { text: title }), children);
}
