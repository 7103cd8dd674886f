// views/history.js: the execution history (GET /history) with filters and
// paging, each run's output (collapsed when long), and the job status
// changes (GET /history/status). A server without history answers 404,
// and the page says so plainly.

import { badge, duration, el, section, table, time } from "../dom.js";

const KINDS = ["", "fire", "misfire", "failover", "trigger", "backfill"];
const SINCE = ["15m", "1h", "6h", "24h", "168h", ""];
const LIMIT = 50;

export function mount(ctx) {
  const input = (id, label) => el("input", { id, name: id, type: "text", spellcheck: "false", placeholder: label, "aria-label": label, size: 14 });
  const select = (id, label, options, names) =>
    el("select", { id, name: id, "aria-label": label }, options.map((o, i) => el("option", { value: o, text: names[i] })));
  ctx.f = {
    job: input("h-job", "job"),
    server: input("h-server", "server"),
    kind: select("h-kind", "kind", KINDS, ["any kind", ...KINDS.slice(1)]),
    failed: el("input", { id: "h-failed", type: "checkbox" }),
    since: select("h-since", "since", SINCE, ["last 15 min", "last hour", "last 6 h", "last 24 h", "last 7 days", "all"]),
  };
  ctx.f.since.value = "1h";
  // pages is the stack of cursors: [""] is the newest page.
  ctx.pages = [""];
  // gen counts the operator's moves (apply, newer, older): a read begun
  // before the latest move is dropped when it answers, so that it can
  // neither show the page left behind nor mark the new one as read.
  ctx.gen = 0;
  const form = el(
    "form",
    { id: "history-form", class: "inline-form" },
    ctx.f.job,
    ctx.f.server,
    ctx.f.kind,
    el("label", null, ctx.f.failed, " failed only"),
    ctx.f.since,
    el("button", { type: "submit", text: "Apply" }),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    ctx.pages = [""];
    ctx.last = "";
    ctx.gen++;
    ctx.refresh();
  });
  ctx.newer = el("button", { type: "button", id: "h-newer", text: "← Newer", disabled: true });
  ctx.older = el("button", { type: "button", id: "h-older", text: "Older →", disabled: true });
  ctx.newer.addEventListener("click", () => {
    if (ctx.pages.length > 1) ctx.pages.pop();
    ctx.last = "";
    ctx.gen++;
    ctx.refresh();
  });
  ctx.older.addEventListener("click", () => {
    if (!ctx.next) return;
    ctx.pages.push(ctx.next);
    ctx.last = "";
    ctx.gen++;
    ctx.refresh();
  });
  ctx.pageInfo = el("span", { class: "muted" });
  ctx.body = el("div", { id: "history-table" });
  ctx.events = el("div", { id: "history-events" });
  ctx.root.append(
    el("h1", { text: "History" }),
    form,
    el("div", { class: "toolbar" }, ctx.newer, ctx.older, ctx.pageInfo),
    ctx.body,
    section("Status changes", ctx.events),
  );
}

function filters(ctx) {
  return {
    job: ctx.f.job.value.trim(),
    server: ctx.f.server.value.trim(),
    kind: ctx.f.kind.value,
    failed: ctx.f.failed.checked,
    since: ctx.f.since.value,
  };
}

// SHORT is the longest output shown inline, in characters.
const SHORT = 80;

// output shows a run's output, any JSON value: a string as its text,
// anything else as JSON. A short one is shown inline; a longer one is
// collapsed to its start and opens on a click, in full (pretty-printed).
// As everything on the page, it is text, never HTML.
function output(x) {
  if (!("output" in x)) return "";
  const v = x.output;
  const flat = typeof v === "string" ? v : JSON.stringify(v);
  const cut = x.outputTruncated ? el("span", { class: "muted", text: " (cut at 64 KiB)" }) : null;
  if (flat.length <= SHORT && !flat.includes("\n")) return [el("code", { class: "output", text: flat }), cut];
  const full = typeof v === "string" ? v : JSON.stringify(v, null, 2);
  return el(
    "details",
    { class: "output" },
    el("summary", { text: flat.slice(0, SHORT).replace(/\s+/g, " ") + "…" }),
    el("pre", { text: full }),
    cut,
  );
}

function result(r) {
  const kind = { success: "ok", failure: "bad", timeout: "bad" }[r] || "muted";
  return badge(r || "unknown", kind);
}

export async function refresh(ctx) {
  const page = ctx.pages[ctx.pages.length - 1];
  // Older pages stay as they were read; the newest follows new executions.
  if (page && ctx.last) return;
  const f = filters(ctx);
  const gen = ctx.gen;
  const [res, ev] = await Promise.all([
    ctx.get("history", { ...f, limit: LIMIT, before: page }),
    ctx.get("history/status", { job: f.job, server: f.server, since: f.since, limit: 20 }),
  ]);
  if (!ctx.alive() || gen !== ctx.gen) return;
  if (res.status === 404) {
    const sig = "404:" + res.error;
    if (sig === ctx.last) return;
    ctx.last = sig;
    ctx.next = "";
    ctx.newer.disabled = ctx.older.disabled = true;
    ctx.pageInfo.textContent = "";
    ctx.body.replaceChildren(
      el("p", { class: "banner warn", id: "history-missing", text: "History is not configured on this server, so there is nothing to show." }),
      el("p", { class: "muted", text: "The server said: " + res.error }),
    );
    ctx.events.replaceChildren(el("p", { class: "muted", text: "history is not configured" }));
    return;
  }
  if (!res.ok) {
    ctx.body.replaceChildren(el("p", { class: "error-text", text: `Cannot read the history (HTTP ${res.status}): ${res.error}` }));
    ctx.last = "";
    return;
  }
  const sig = JSON.stringify([res.data, ev.data, ev.status]);
  if (sig === ctx.last) return;
  ctx.last = sig;
  const execs = (res.data && res.data.executions) || [];
  ctx.next = (res.data && res.data.next) || "";
  ctx.newer.disabled = ctx.pages.length <= 1;
  ctx.older.disabled = !ctx.next;
  ctx.pageInfo.textContent = `page ${ctx.pages.length}` + (ctx.pages.length > 1 ? " (not refreshed)" : "");
  ctx.body.replaceChildren(
    table(
      [
        { label: "Start", cell: (x) => time(x.start) },
        { label: "Job", cell: (x) => el("a", { href: "#/job/" + encodeURIComponent(x.job), text: x.job }) },
        { label: "Item", cls: "num", cell: (x) => String(x.item) },
        // A retry (the job's retry policy) says which attempt of its fire it was.
        { label: "Kind", cell: (x) => (x.attempt > 1 ? `${x.kind}, attempt ${x.attempt}` : x.kind) },
        { label: "Server", cell: (x) => x.server },
        { label: "Fire", cell: (x) => time(x.fireTime) },
        { label: "Took", cls: "num", cell: (x) => duration(x.durationMs) },
        { label: "Result", cell: (x) => [result(x.result), x.error ? el("div", { class: "error-text", text: x.error }) : null] },
        { label: "Output", cell: output },
      ],
      execs,
      "no execution matches",
    ),
  );
  if (!ev.ok) {
    ctx.events.replaceChildren(el("p", { class: "error-text", text: `Cannot read the status changes (HTTP ${ev.status}): ${ev.error}` }));
    return;
  }
  ctx.events.replaceChildren(
    table(
      [
        { label: "At", cell: (x) => time(x.at) },
        { label: "Job", cell: (x) => x.job || "—" },
        { label: "Server", cell: (x) => x.server || "—" },
        { label: "Kind", cell: (x) => x.kind },
        { label: "Units", cls: "num", cell: (x) => (x.units == null ? "" : String(x.units)) },
        { label: "Detail", cell: (x) => x.detail || "" },
      ],
      (ev.data && ev.data.events) || [],
      "no status change matches",
    ),
  );
}
