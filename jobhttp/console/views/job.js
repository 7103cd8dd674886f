// views/job.js: one job (GET /jobs/{job}): its servers with their flags
// and actions, its items with their last results, the schedule edit
// (POST /jobs/{job}/schedule), and its place in its chain (GET
// /chains?job=NAME): the jobs it runs after and before, each with where it
// stands, and the chain's graph.

import { path } from "../api.js";
import { badge, button, duration, el, items, section, table, time } from "../dom.js";
import { draw, stateKind, stateText } from "../chaingraph.js";
import { firstPlacementDue, statusBadge } from "./jobs.js";

export function mount(ctx) {
  const name = ctx.arg;
  ctx.head = el("div", { id: "job-head" });
  ctx.servers = el("div", { id: "job-servers" });
  ctx.items = el("div", { id: "job-items" });
  ctx.problems = el("div", { id: "job-problems" });
  ctx.chain = el("div", { id: "job-chain" });

  const cron = el("input", { id: "edit-cron", name: "cron", required: true, spellcheck: "false", size: 28, "aria-label": "cron" });
  const count = el("input", { id: "edit-count", name: "shardingTotalCount", type: "number", min: 1, required: true, "aria-label": "item count" });
  ctx.cron = cron;
  ctx.count = count;
  ctx.dirty = false;
  for (const i of [cron, count]) i.addEventListener("input", () => (ctx.dirty = true));
  const form = el(
    "form",
    { id: "edit-form", class: "inline-form", novalidate: true, "data-need": "admin" },
    el("label", null, "Cron ", cron),
    el("label", null, "Items ", count),
    el("button", { type: "submit", id: "edit-save" }, "Save schedule"),
    el("span", { class: "muted", text: " validated as the instances will; nothing is written if it is refused" }),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const n = Number(count.value);
    const res = await ctx.act(`Edit schedule of ${name}`, path("jobs", name, "schedule"), {
      body: { cron: cron.value.trim(), shardingTotalCount: Number.isInteger(n) ? n : count.value },
    });
    if (res.ok) ctx.dirty = false;
  });

  ctx.backfill = el("div", { id: "backfill-state" });
  const bfFrom = el("input", { id: "backfill-from", name: "from", required: true, spellcheck: "false", size: 22, placeholder: "2026-11-01", "aria-label": "from" });
  const bfTo = el("input", { id: "backfill-to", name: "to", required: true, spellcheck: "false", size: 22, placeholder: "2026-11-30T23:59:59Z", "aria-label": "to" });
  const bfRate = el("input", { id: "backfill-rate", name: "rate", type: "number", min: 0, step: "any", size: 6, placeholder: "10", "aria-label": "rate" });
  const bfForm = el(
    "form",
    { id: "backfill-form", class: "inline-form", novalidate: true, "data-need": "operator" },
    el("label", null, "From ", bfFrom),
    el("label", null, "To ", bfTo),
    el("label", null, "Fires/s ", bfRate),
    el("button", { type: "submit", id: "backfill-start" }, "Start backfill"),
    el("span", { class: "muted", text: " past fires run again on each item's owner (RFC 3339 times or dates)" }),
  );
  bfForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    await ctx.act(`Backfill ${name}`, path("jobs", name, "backfill"), {
      body: { from: bfFrom.value.trim(), to: bfTo.value.trim(), rate: Number(bfRate.value) || 0 },
    });
  });

  ctx.root.append(
    el("p", null, el("a", { href: "#/jobs", text: "← all jobs" })),
    el("h1", null, "Job ", el("span", { id: "job-name", text: name })),
    ctx.head,
    el(
      "div",
      { class: "toolbar" },
      button("Trigger on every server", () => ctx.act(`Trigger ${name}`, path("jobs", name, "trigger")), { id: "job-trigger", class: "act", "data-need": "operator" }),
    ),
    ctx.chain,
    section("Schedule", form),
    section("Backfill", ctx.backfill, bfForm),
    section("Servers", ctx.servers),
    section("Items", ctx.items),
    ctx.problems,
  );
}

function serverActions(ctx, name, s) {
  const op = (verb, label) =>
    button(label, () => ctx.act(`${label} ${s.id} (job ${name})`, path("servers", s.id, verb), { params: { job: name } }), {
      class: "act",
      "data-action": verb,
      "data-server": s.id,
      "data-need": "operator",
    });
  return [
    button("Trigger here", () => ctx.act(`Trigger ${name} on ${s.id}`, path("jobs", name, "trigger"), { params: { server: s.id } }), {
      class: "act",
      "data-action": "trigger",
      "data-server": s.id,
      "data-need": "operator",
    }),
    s.paused ? op("resume", "Resume") : op("pause", "Pause"),
    s.disabled ? op("enable", "Enable") : op("disable", "Disable"),
  ];
}

function lastCell(it) {
  const l = it.last;
  if (!l) return el("span", { class: "muted", text: "no run yet" });
  return el(
    "span",
    null,
    l.error ? badge("failed", "bad") : badge("ok", "ok"),
    ` ${l.kind} of ${time(l.fire)} on ${l.server}, ${duration(l.durationMs)}`,
    l.error ? el("div", { class: "error-text", text: l.error }) : null,
  );
}

// neighbour shows a job of the chain: a link to it, its state and its
// last fire.
function neighbour(n) {
  return el(
    "div",
    { class: "chain-neighbour", "data-job": n.name },
    el("a", { href: "#/job/" + encodeURIComponent(n.name), text: n.name }),
    " ",
    badge(stateText(n), stateKind(n.state)),
    el("span", { class: "muted", text: n.lastFire ? ` last fire ${time(n.lastFire)}` : " no fire completed" }),
    n.detail && n.state !== "completed" ? el("div", { class: n.state === "failed" || n.state === "skipped" ? "error-text" : "muted", text: n.detail }) : null,
  );
}

// renderChain shows the job's place in its chain, or nothing when it runs
// after no job and no job runs after it.
function renderChain(ctx, name, res) {
  const sig = JSON.stringify([res.status, res.data]);
  if (sig === ctx.lastChain) return;
  ctx.lastChain = sig;
  if (!res.ok) {
    ctx.chain.replaceChildren(section("Chain", el("p", { class: "error-text", text: `Cannot read the job's chain (HTTP ${res.status}): ${res.error}` })));
    return;
  }
  const g = res.data || {};
  const nodes = g.nodes || [];
  const me = nodes.find((n) => n.name === name);
  if (!me) {
    ctx.chain.replaceChildren();
    return;
  }
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const list = (names, id) => el("dd", { id }, names.length ? names.map((p) => neighbour(byName.get(p) || { name: p, state: "unknown" })) : "none");
  ctx.chain.replaceChildren(
    section(
      "Chain",
      el(
        "dl",
        { class: "facts" },
        el("dt", { text: "This job" }),
        el("dd", { id: "job-chain-state" }, neighbour(me)),
        el("dt", { text: "Runs after" }),
        list(me.parents || [], "job-chain-parents"),
        el("dt", { text: "Runs before" }),
        list(me.dependents || [], "job-chain-dependents"),
      ),
      el("div", { class: "chain-scroll" }, draw(nodes, g.edges || [], name)),
      el("p", null, el("a", { href: "#/chains", text: "all chains" })),
    ),
  );
}

// renderBackfill shows the job's backfill, with its cancel or resume.
function renderBackfill(ctx, name, res) {
  const sig = JSON.stringify([res.status, res.data]);
  if (sig === ctx.lastBackfill) return;
  ctx.lastBackfill = sig;
  if (!res.ok) {
    ctx.backfill.replaceChildren(el("p", { class: "muted", text: res.status === 400 ? "no backfill" : `Cannot read the backfill (HTTP ${res.status}): ${res.error}` }));
    return;
  }
  const b = res.data;
  const r = b.request || {};
  const kind = b.state === "through" ? "ok" : b.state === "cancelled" ? "warn" : "muted";
  const steer =
    b.state === "running"
      ? button("Cancel backfill", () => ctx.act(`Cancel the backfill of ${name}`, path("jobs", name, "backfill", "cancel")), { id: "backfill-cancel", class: "act", "data-need": "operator" })
      : b.state === "cancelled"
        ? button("Resume backfill", () => ctx.act(`Resume the backfill of ${name}`, path("jobs", name, "backfill", "resume")), { id: "backfill-resume", class: "act", "data-need": "operator" })
        : null;
  ctx.backfill.replaceChildren(
    el(
      "p",
      { id: "backfill-progress" },
      badge(b.state, kind),
      ` ${r.id}: ${time(new Date(r.from).toISOString())} to ${time(new Date(r.to).toISOString())}, ${b.done} of ${b.fires * b.items} runs done, ${b.through} of ${b.items} items through`,
      r.by ? el("span", { class: "muted", text: ` (started by ${r.by})` }) : null,
      " ",
      steer,
    ),
  );
}

export async function refresh(ctx) {
  const name = ctx.arg;
  const [res, chainRes, bfRes] = await Promise.all([ctx.get(path("jobs", name)), ctx.get("chains", { job: name }), ctx.get(path("jobs", name, "backfill"))]);
  if (!ctx.alive()) return;
  if (res.ok) renderChain(ctx, name, chainRes);
  renderBackfill(ctx, name, bfRes);
  if (!res.ok) {
    ctx.head.replaceChildren(el("p", { class: "error-text", text: `Cannot read job ${name} (HTTP ${res.status}): ${res.error}` }));
    ctx.last = "";
    return;
  }
  const st = res.data;
  if (!ctx.dirty && document.activeElement !== ctx.cron && document.activeElement !== ctx.count) {
    ctx.cron.value = st.cron || "";
    ctx.count.value = st.shardingTotalCount || "";
  }
  const sig = JSON.stringify(st);
  if (sig === ctx.last) return;
  ctx.last = sig;
  ctx.head.replaceChildren(
    el(
      "dl",
      { class: "facts" },
      el("dt", { text: "Status" }),
      el("dd", null, statusBadge(st.status, firstPlacementDue(st, st))),
      el("dt", { text: "Cron" }),
      el("dd", null, el("code", { id: "job-cron", text: st.cron + (st.timeZone ? " " + st.timeZone : "") })),
      el("dt", { text: "Items" }),
      el("dd", { id: "job-count", text: String(st.shardingTotalCount) }),
      el("dt", { text: "Next fire" }),
      el("dd", { text: time(st.nextFire) || st.nextFireNote || "—" }),
      st.parents && st.parents.length
        ? [
            el("dt", { text: "Runs after" }),
            el(
              "dd",
              { id: "job-after" },
              st.parents.map((p, i) => [
                i ? "; " : null,
                el("a", { href: "#/job/" + encodeURIComponent(p.name), text: p.name }),
                ` (${p.status}, last fire ${time(p.lastFire) || "none yet"})`,
              ]),
            ),
          ]
        : null,
      st.pausedUntil
        ? [el("dt", { text: "Paused until" }), el("dd", { id: "job-paused", text: time(st.pausedUntil) + (st.pauseNote ? " — " + st.pauseNote : "") })]
        : null,
      firstPlacementDue(st, st) && st.nextFire
        ? [el("dt", { text: "Assignment" }), el("dd", { id: "job-assignment", text: `not yet assigned: placed before its first fire at ${time(st.nextFire)}` })]
        : null,
      el("dt", { text: "Leader" }),
      el("dd", { text: st.leader || "—" }),
      el("dt", { text: "Failover" }),
      el("dd", { text: st.failover ? "on" : "off" }),
      el("dt", { text: "Disabled items" }),
      el("dd", { text: st.disabledItems && st.disabledItems.length ? st.disabledItems.join(",") : "none" }),
      st.description ? [el("dt", { text: "Description" }), el("dd", { text: st.description })] : null,
      st.configError ? [el("dt", { text: "Config error" }), el("dd", { class: "error-text", text: st.configError })] : null,
    ),
  );
  ctx.servers.replaceChildren(
    table(
      [
        { label: "Server", cell: (s) => s.id + (s.host ? ` (${s.host})` : "") },
        { label: "Online", cell: (s) => (s.online ? badge("online", "ok") : badge("offline", "bad")) },
        {
          label: "Flags",
          cell: (s) => [
            s.leader ? badge("leader", "muted") : null,
            s.paused ? badge("paused", "warn") : null,
            s.disabled ? badge("disabled", "warn") : null,
            s.shutdownPending ? badge("shutdown pending", "warn") : null,
            s.triggerPending ? badge("trigger pending", "muted") : null,
          ],
        },
        { label: "Items held", cell: (s) => items(s.items) },
        { label: "Items running", cell: (s) => items(s.running) },
        { label: "", cell: (s) => serverActions(ctx, name, s) },
      ],
      st.servers || [],
      "no server has registered this job",
    ),
  );
  ctx.items.replaceChildren(
    table(
      [
        { label: "Item", cls: "num", cell: (it) => String(it.item) },
        { label: "Server", cell: (it) => it.server || "—" },
        {
          label: "State",
          cell: (it) => [
            it.disabled ? badge("disabled", "warn") : null,
            it.running ? badge(`${it.running.kind} running on ${it.running.server}`, "muted") : null,
            it.misfireSince ? badge(`misfire since ${time(it.misfireSince)}`, "warn") : null,
            it.failover ? badge(`failover from ${it.failover.from}${it.failover.claimedBy ? " to " + it.failover.claimedBy : ""}`, "warn") : null,
          ],
        },
        { label: "Last result", cell: lastCell },
      ],
      st.items || [],
      "no items",
    ),
  );
  ctx.problems.replaceChildren(
    st.problems && st.problems.length ? section("Problems", el("ul", null, st.problems.map((p) => el("li", { text: p })))) : "",
  );
}
