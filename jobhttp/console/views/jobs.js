// views/jobs.js: the overview of the namespace's jobs (GET /jobs), with
// each shown job's items per instance and last results (GET /jobs/{job}).

import { path } from "../api.js";
import { badge, button, el, table, time } from "../dom.js";

// DETAILS bounds the jobs whose detail is read on every refresh.
const DETAILS = 25;

export function mount(ctx) {
  const filter = el("input", { id: "jobs-filter", type: "search", placeholder: "filter by name", "aria-label": "filter jobs by name" });
  const count = el("span", { class: "muted", id: "jobs-count" });
  const body = el("div", { id: "jobs-table" });
  filter.addEventListener("input", () => {
    ctx.last = "";
    ctx.refresh();
  });
  ctx.filter = filter;
  ctx.body = body;
  ctx.count = count;
  ctx.root.append(el("h1", { text: "Jobs" }), el("div", { class: "toolbar" }, filter, count), body);
}

// statusBadge shows a job's status. A job that has never fired and whose
// items no server holds reports a reshard due: that is its first placement,
// made just before its first fire, and it reads as such.
export function statusBadge(status, firstPlacement) {
  if (status === "resharding" && firstPlacement) return badge("awaiting first fire", "muted");
  const kind = { ok: "ok", disabled: "warn", resharding: "warn", crashed: "bad" }[status] || "muted";
  return badge(status || "unknown", kind);
}

// firstPlacementDue: the job j (a summary, or a job's detail st) has never
// fired and no server holds any of its items — they are placed just before
// its first fire.
export function firstPlacementDue(j, st) {
  return !!st && !j.lastFire && !(st.servers || []).some((s) => s.items && s.items.length);
}

// perInstance shows how many items each server holds: "a1 2 · a2 2".
function perInstance(j, st) {
  if (!st) return "";
  const held = st.servers.filter((s) => s.items && s.items.length);
  if (!held.length) {
    if (firstPlacementDue(j, st) && j.nextFire) return `not yet assigned: placed before its first fire at ${time(j.nextFire)}`;
    return "none assigned";
  }
  return held.map((s) => `${s.id} ${s.items.length}`).join(" · ");
}

// lastResults counts the items' last completed executions by result and
// names the latest error.
function lastResults(st) {
  if (!st) return "";
  let ok = 0;
  let failed = 0;
  let err = "";
  let running = 0;
  for (const it of st.items) {
    if (it.running) running++;
    if (!it.last) continue;
    if (it.last.error) {
      failed++;
      err = it.last.error;
    } else ok++;
  }
  const parts = [];
  if (ok) parts.push(badge(`${ok} ok`, "ok"));
  if (failed) parts.push(badge(`${failed} failed`, "bad"), el("span", { class: "error-text", text: " " + err }));
  if (running) parts.push(badge(`${running} running`, "muted"));
  if (!parts.length) parts.push(el("span", { class: "muted", text: "no run yet" }));
  return el("span", null, parts);
}

export async function refresh(ctx) {
  const res = await ctx.get("jobs");
  if (!ctx.alive()) return;
  if (!res.ok) {
    ctx.body.replaceChildren(el("p", { class: "error-text", text: `Cannot read the jobs (HTTP ${res.status}): ${res.error}` }));
    ctx.last = "";
    return;
  }
  const q = ctx.filter.value.trim().toLowerCase();
  const all = res.data || [];
  const shown = all.filter((j) => !q || j.name.toLowerCase().includes(q)).slice(0, DETAILS);
  const details = await Promise.all(shown.map((j) => ctx.get(path("jobs", j.name))));
  if (!ctx.alive()) return;
  const rows = shown.map((j, i) => ({ j, st: details[i].ok ? details[i].data : null }));
  // Render only what changed, so that a refresh never swallows a click.
  const sig = JSON.stringify(rows);
  ctx.count.textContent = `${all.length} job${all.length === 1 ? "" : "s"}` + (shown.length < all.length ? `, ${shown.length} shown` : "");
  if (sig === ctx.last) return;
  ctx.last = sig;
  ctx.body.replaceChildren(
    table(
      [
        { label: "Job", cell: (r) => el("a", { href: "#/job/" + encodeURIComponent(r.j.name), class: "job-link", text: r.j.name }) },
        { label: "Status", cell: (r) => [statusBadge(r.j.status, firstPlacementDue(r.j, r.st)), r.j.configError ? el("div", { class: "error-text", text: r.j.configError }) : null] },
        { label: "Cron", cell: (r) => el("code", { text: r.j.cron + (r.j.timeZone ? " " + r.j.timeZone : "") }) },
        { label: "Next fire", cell: (r) => time(r.j.nextFire) },
        { label: "Last fire", cell: (r) => time(r.j.lastFire) },
        { label: "Items", cls: "num", cell: (r) => String(r.j.shardingTotalCount) },
        { label: "Online", cls: "num", cell: (r) => `${r.j.online}/${r.j.registered}` },
        { label: "Items per instance", cell: (r) => perInstance(r.j, r.st) },
        { label: "Last results", cell: (r) => lastResults(r.st) },
        {
          label: "",
          cell: (r) =>
            button("Trigger", () => ctx.act(`Trigger ${r.j.name}`, path("jobs", r.j.name, "trigger")), {
              class: "act",
              "data-action": "trigger",
              "data-job": r.j.name,
            }),
        },
      ],
      rows,
      all.length ? "no job matches the filter" : "no job in this namespace",
    ),
  );
}
