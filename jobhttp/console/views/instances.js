// views/instances.js: every instance of the namespace (GET /instances):
// load score, health, drain state, units against the cap, alarms; and the
// server-wide actions (drain, pause, disable: every job of the server).

import { path } from "../api.js";
import { badge, button, el, table } from "../dom.js";

export function mount(ctx) {
  ctx.summary = el("p", { id: "instances-summary" });
  ctx.body = el("div", { id: "instances-table" });
  ctx.root.append(
    el("h1", { text: "Instances" }),
    ctx.summary,
    ctx.body,
    el("p", { class: "muted", text: "Pause, resume, disable and enable here act on every job of the server; a job's page acts on that job only." }),
  );
}

function health(i) {
  if (!i.live) return badge("gone", "bad");
  if (i.offline) return badge("offline", "bad");
  return badge("online", "ok");
}

function drain(i) {
  if (i.drained) return badge("drained", "warn");
  if (i.draining) return badge("draining", "warn");
  return "";
}

function actions(ctx, i) {
  const op = (verb, label, what) =>
    button(label, () => ctx.act(`${label} ${i.server}${what}`, path("servers", i.server, verb)), {
      class: "act",
      "data-action": verb,
      "data-server": i.server,
      "data-need": "operator",
    });
  return [
    i.draining ? op("undrain", "Undrain", "") : op("drain", "Drain", ""),
    op("pause", "Pause", " (every job)"),
    op("resume", "Resume", " (every job)"),
    op("disable", "Disable", " (every job)"),
    op("enable", "Enable", " (every job)"),
  ];
}

export async function refresh(ctx) {
  const res = await ctx.get("instances");
  if (!ctx.alive()) return;
  if (!res.ok) {
    ctx.body.replaceChildren(el("p", { class: "error-text", text: `Cannot read the instances (HTTP ${res.status}): ${res.error}` }));
    ctx.last = "";
    return;
  }
  const p = res.data;
  const sig = JSON.stringify(p);
  if (sig === ctx.last) return;
  ctx.last = sig;
  ctx.summary.replaceChildren(
    `${p.units} unit${p.units === 1 ? "" : "s"} across the namespace, `,
    p.unplaced ? badge(`${p.unplaced} unplaced`, "bad") : "none unplaced",
    `, ${p.instances.length} instance${p.instances.length === 1 ? "" : "s"}.`,
  );
  ctx.body.replaceChildren(
    table(
      [
        { label: "Server", cell: (i) => i.server },
        { label: "Health", cell: health },
        { label: "Load score", cls: "num", cell: (i) => (i.score == null ? "—" : i.score.toFixed(1)) },
        { label: "Units / cap", cls: "num", cell: (i) => `${i.units} / ${i.cap}` },
        { label: "Alarm", cell: (i) => (i.alarmed ? badge(`over ${i.alarmThreshold}`, "bad") : i.alarmThreshold ? `at ${i.alarmThreshold}` : "—") },
        { label: "Drain", cell: drain },
        { label: "Running", cls: "num", cell: (i) => String(i.running) },
        { label: "Slots free", cls: "num", cell: (i) => (i.slots ? `${i.freeSlots} / ${i.slots}` : "—") },
        { label: "", cell: (i) => actions(ctx, i) },
      ],
      p.instances,
      "no instance in this namespace",
    ),
  );
}
