// views/chains.js: the jobs that run after others (GET /chains), each
// chain drawn as a graph in layers with where every job stands, and the
// same as a table: its state, last fire, parents, dependents and why.

import { badge, el, table, time } from "../dom.js";
import { chains, draw, legend, stateKind, stateText } from "../chaingraph.js";

export function mount(ctx) {
  ctx.problems = el("div", { id: "chains-problems" });
  ctx.graphs = el("div", { id: "chains-graph" });
  ctx.body = el("div", { id: "chains-table" });
  ctx.root.append(
    el("h1", { text: "Chains" }),
    el("p", { class: "muted", text: "Jobs that run after others (after: in a job's config): each runs once its parents have completed the same fire on every item." }),
    legend(),
    ctx.problems,
    ctx.graphs,
    ctx.body,
  );
}

// jobLinks links each name to its job's page, "—" for none.
export function jobLinks(list) {
  if (!list || !list.length) return "—";
  return list.map((p, i) => [i ? ", " : null, el("a", { href: "#/job/" + encodeURIComponent(p), text: p })]);
}

export async function refresh(ctx) {
  const res = await ctx.get("chains");
  if (!ctx.alive()) return;
  if (!res.ok) {
    ctx.graphs.replaceChildren(el("p", { class: "error-text", text: `Cannot read the chains (HTTP ${res.status}): ${res.error}` }));
    ctx.body.replaceChildren();
    ctx.last = "";
    return;
  }
  const g = res.data || {};
  const sig = JSON.stringify(g);
  if (sig === ctx.last) return;
  ctx.last = sig;
  const problems = g.problems || [];
  ctx.problems.replaceChildren(problems.length ? el("div", { class: "banner warn" }, el("ul", null, problems.map((p) => el("li", { text: p })))) : "");
  const parts = chains(g);
  if (!parts.length) {
    ctx.graphs.replaceChildren(el("p", { class: "empty", text: "no job in this namespace runs after another" }));
    ctx.body.replaceChildren();
    return;
  }
  ctx.graphs.replaceChildren(
    ...parts.map((nodes, i) =>
      el("figure", { class: "chain", "data-chain": i }, el("div", { class: "chain-scroll" }, draw(nodes, g.edges || []))),
    ),
  );
  ctx.body.replaceChildren(
    table(
      [
        { label: "Job", cell: (n) => el("a", { href: "#/job/" + encodeURIComponent(n.name), class: "job-link", text: n.name }) },
        { label: "Chain", cls: "num", cell: (n) => String(n.chain + 1) },
        { label: "Layer", cls: "num", cell: (n) => String(n.layer) },
        { label: "State", cell: (n) => badge(stateText(n), stateKind(n.state)) },
        { label: "Last fire", cell: (n) => time(n.lastFire) || "—" },
        { label: "Runs after", cell: (n) => jobLinks(n.parents) },
        { label: "Runs before", cell: (n) => jobLinks(n.dependents) },
        { label: "Detail", cell: (n) => (n.detail ? el("span", { class: n.state === "failed" || n.state === "skipped" ? "error-text" : "muted", text: n.detail }) : "") },
      ],
      g.nodes,
    ),
  );
}
