// views/dispatcher.js: the dispatcher's caps and queues (GET
// /dispatch/workers): per worker its cap, running, due and waiting tasks,
// the other states and the late starts; the global cap.

import { badge, el, table } from "../dom.js";

const STATES = ["waiting", "running", "finished", "failed", "cancelled"];

export function mount(ctx) {
  ctx.head = el("div", { id: "dispatch-head" });
  ctx.body = el("div", { id: "dispatch-table" });
  ctx.root.append(el("h1", { text: "Dispatcher" }), ctx.head, ctx.body);
}

// meter shows running against a cap.
function meter(running, cap) {
  const full = cap > 0 && running >= cap;
  return el(
    "span",
    { class: "meter" },
    el("meter", { min: 0, max: Math.max(cap, 1), value: Math.min(running, Math.max(cap, 1)) }),
    ` ${running} / ${cap}`,
    cap === 0 ? badge("paused (cap 0)", "warn") : full ? badge("at cap", "warn") : null,
  );
}

export async function refresh(ctx) {
  const res = await ctx.get("dispatch/workers");
  if (!ctx.alive()) return;
  if (res.status === 404) {
    if (ctx.last === "404") return;
    ctx.last = "404";
    ctx.head.replaceChildren(el("p", { class: "banner warn", id: "dispatch-missing", text: "The dispatcher is not configured on this server." }));
    ctx.body.replaceChildren(el("p", { class: "muted", text: "The server said: " + res.error }));
    return;
  }
  if (!res.ok) {
    ctx.body.replaceChildren(el("p", { class: "error-text", text: `Cannot read the dispatcher (HTTP ${res.status}): ${res.error}` }));
    ctx.last = "";
    return;
  }
  const d = res.data;
  const sig = JSON.stringify(d);
  if (sig === ctx.last) return;
  ctx.last = sig;
  const s = d.stats;
  ctx.head.replaceChildren(
    el("p", { id: "dispatch-global" }, "Global: ", meter(d.global.running, d.global.maxRunning), " running across all workers and nodes."),
    el(
      "p",
      { class: "muted" },
      s
        ? `This node (${d.node}) since it opened: ${s.started} started, ${s.late} late, ${s.finished} finished, ` +
            `${s.timedOut} timed out, ${s.retried} retried, ${s.failed} failed, ${s.lateFailed} failed late, ${s.reaped} reaped.`
        : "This server reads the dispatcher's store; it runs no tasks itself.",
    ),
  );
  ctx.body.replaceChildren(
    table(
      [
        { label: "Worker", cell: (q) => q.worker },
        { label: "Running / cap", cell: (q) => meter(q.running, q.maxRunning) },
        { label: "Due (queued)", cls: "num", cell: (q) => String(q.due) },
        ...STATES.map((st) => ({ label: st[0].toUpperCase() + st.slice(1), cls: "num", cell: (q) => String((q.tasks && q.tasks[st]) || 0) })),
        { label: "Late starts", cls: "num", cell: (q) => (q.late ? badge(String(q.late), "warn") : "0") },
      ],
      d.workers || [],
      "no worker yet",
    ),
  );
}
