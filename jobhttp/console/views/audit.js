// views/audit.js: the audit trail (GET /audit, admins only): who did
// what, when, from where, and how it ended, newest first, with filters
// and paging. Another role is refused by the server, and the page says
// so plainly.

import { badge, el, section, table, time } from "../dom.js";

const LIMIT = 50;

export function mount(ctx) {
  const input = (id, label) => el("input", { id, name: id, type: "text", spellcheck: "false", placeholder: label, "aria-label": label, size: 14 });
  ctx.f = { who: input("a-who", "who"), job: input("a-job", "job"), op: input("a-op", "operation") };
  ctx.pages = [""];
  const form = el("form", { id: "audit-form", class: "inline-form" }, ctx.f.who, ctx.f.job, ctx.f.op, el("button", { type: "submit", text: "Apply" }));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    ctx.pages = [""];
    ctx.refresh();
  });
  ctx.newer = el("button", { type: "button", id: "a-newer", text: "← Newer", disabled: true });
  ctx.older = el("button", { type: "button", id: "a-older", text: "Older →", disabled: true });
  ctx.newer.addEventListener("click", () => {
    if (ctx.pages.length > 1) ctx.pages.pop();
    ctx.refresh();
  });
  ctx.older.addEventListener("click", () => {
    if (ctx.next) ctx.pages.push(ctx.next);
    ctx.refresh();
  });
  ctx.body = el("div", { id: "audit-body" });
  ctx.root.append(
    el("h1", { text: "Audit trail" }),
    el("p", { class: "muted", text: "Every operation through the API, this console and the shardjob command, refused ones too." }),
    form,
    section("Operations", ctx.body, el("div", { class: "toolbar" }, ctx.newer, ctx.older)),
  );
}

function result(e) {
  const kind = { ok: "ok", failed: "bad", refused: "bad", started: "warn" }[e.result] || "muted";
  return badge(e.result, kind);
}

function target(e) {
  const parts = [];
  if (e.job) parts.push("job " + e.job);
  if (e.server) parts.push("server " + e.server);
  if (e.items) parts.push("items " + e.items);
  return parts.join(", ");
}

export async function refresh(ctx) {
  const params = { who: ctx.f.who.value.trim(), job: ctx.f.job.value.trim(), op: ctx.f.op.value.trim(), limit: LIMIT, before: ctx.pages[ctx.pages.length - 1] };
  const res = await ctx.get("audit", params);
  if (!ctx.alive()) return;
  if (!res.ok) {
    const why = res.status === 404 ? "The server keeps no audit trail (it was started without one)." : `The audit trail cannot be read (HTTP ${res.status}): ${res.error}`;
    ctx.body.replaceChildren(el("p", { id: "audit-error", class: "error-text", text: why }));
    ctx.next = "";
    ctx.older.disabled = true;
    ctx.newer.disabled = ctx.pages.length <= 1;
    return;
  }
  const entries = (res.data && res.data.entries) || [];
  ctx.next = (res.data && res.data.next) || "";
  ctx.older.disabled = !ctx.next;
  ctx.newer.disabled = ctx.pages.length <= 1;
  ctx.body.replaceChildren(
    table(
      [
        { label: "When", cell: (e) => time(e.at) },
        { label: "Who", cell: (e) => (e.who ? e.who + (e.role ? ` (${e.role})` : "") : el("span", { class: "muted", text: "unknown" })) },
        { label: "Operation", cell: (e) => el("span", { class: "audit-op", text: e.op }) },
        { label: "Target", cell: target },
        { label: "From", cell: (e) => `${e.remote || ""}${e.via ? " via " + e.via : ""}` },
        { label: "Result", cell: result },
        { label: "Error", cell: (e) => e.error || "" },
      ],
      entries,
      "no operation recorded",
    ),
  );
}
