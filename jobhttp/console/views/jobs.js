// views/jobs.js: the overview of the namespace's jobs (GET /jobs), with
// each shown job's items per instance and last results (GET /jobs/{job});
// a form that creates a script or http job from its YAML document (POST
// /jobs), and each job's remove action (POST /jobs/{job}/remove).

import { path } from "../api.js";
import { badge, button, el, table, time } from "../dom.js";

// DETAILS bounds the jobs whose detail is read on every refresh.
const DETAILS = 25;

// EXAMPLE is the new-job form's starting text: an http job, as one entry
// of a job file's jobs: list.
const EXAMPLE = `name: ping-orders
cron: "0 */5 * * * *"
shardingTotalCount: 1
type: http
http:
  method: GET
  url: https://orders.internal/health
  timeout: 10s
`;

// newJobForm is the "New job" form: the document, Create, and the
// server's refusal shown as text under it.
function newJobForm(ctx) {
  const doc = el("textarea", { id: "new-job-doc", rows: "10", cols: "72", spellcheck: "false", "aria-label": "the new job's YAML document" });
  doc.value = EXAMPLE;
  const error = el("pre", { id: "new-job-error", class: "error-text", hidden: true });
  const form = el(
    "form",
    { id: "new-job-form", novalidate: true },
    el("p", { class: "muted", text: "One job as in a job file's jobs: list, of type script or http. It runs on the instances that follow definitions (script jobs only where allowed)." }),
    doc,
    el("div", { class: "toolbar" }, el("button", { type: "submit", id: "new-job-create" }, "Create")),
    error,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const res = await ctx.act("Create job", "jobs", { yaml: doc.value });
    error.textContent = res.ok ? "" : res.error;
    error.hidden = res.ok;
  });
  return el("details", { id: "new-job", "data-need": "admin" }, el("summary", { text: "New job" }), form);
}

// removeButton asks for a second click before removing a job. Which job
// is asked about is kept in ctx, so a refresh of the table keeps it.
function removeButton(ctx, name) {
  const b = button(ctx.armed === name ? "Click again to remove" : "Remove", () => {
    if (ctx.armed !== name) {
      ctx.armed = name;
      b.textContent = "Click again to remove";
      return;
    }
    ctx.armed = "";
    ctx.act(`Remove ${name}`, path("jobs", name, "remove"));
  }, { class: "act", "data-action": "remove", "data-job": name, "data-need": "admin" });
  return b;
}

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
  ctx.root.append(el("h1", { text: "Jobs" }), el("div", { class: "toolbar" }, filter, count), newJobForm(ctx), body);
}

// statusBadge shows a job's status. A job that has never fired and whose
// items no server holds reports a reshard due: that is its first placement,
// made just before its first fire, and it reads as such.
export function statusBadge(status, firstPlacement) {
  if (status === "resharding" && firstPlacement) return badge("awaiting first fire", "muted");
  const kind = { ok: "ok", disabled: "warn", resharding: "warn", ended: "warn", crashed: "bad" }[status] || "muted";
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
  // A job's detail (read after the list) carries its summary too: the row
  // shows that one, so that its last fire and its last results come from
  // the same read — a completion between the two reads showed a result
  // beside no last fire.
  const rows = shown.map((j, i) => {
    const st = details[i].ok ? details[i].data : null;
    return { j: st ? { ...j, ...st } : j, st };
  });
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
        {
          label: "Runs after",
          cell: (r) =>
            r.j.after && r.j.after.length
              ? el("span", { class: "job-after" }, r.j.after.map((p, i) => [i ? ", " : null, el("a", { href: "#/job/" + encodeURIComponent(p), text: p })]))
              : "",
        },
        { label: "Next fire", cell: (r) => (r.j.nextFire ? time(r.j.nextFire) : r.j.nextFireNote || time(r.j.nextFire)) },
        { label: "Last fire", cell: (r) => time(r.j.lastFire) },
        { label: "Items", cls: "num", cell: (r) => String(r.j.shardingTotalCount) },
        { label: "Online", cls: "num", cell: (r) => `${r.j.online}/${r.j.registered}` },
        { label: "Items per instance", cell: (r) => perInstance(r.j, r.st) },
        { label: "Last results", cell: (r) => lastResults(r.st) },
        {
          label: "",
          cell: (r) => [
            button("Trigger", () => ctx.act(`Trigger ${r.j.name}`, path("jobs", r.j.name, "trigger")), {
              class: "act",
              "data-action": "trigger",
              "data-job": r.j.name,
              "data-need": "operator",
            }),
            " ",
            removeButton(ctx, r.j.name),
          ],
        },
      ],
      rows,
      all.length ? "no job matches the filter" : "no job in this namespace",
    ),
  );
}
