// app.js: the console's shell. It routes between the views on the URL's
// hash (#/jobs, #/job/NAME, #/chains, #/instances, #/history,
// #/dispatcher), polls
// the current view every second so that a change in ZooKeeper shows within
// a couple of seconds, keeps the operator's token, and reports what every
// action did (the server's answer) or why it was refused.
//
// It asks the server the role of its token (GET /whoami) and sets it on
// the body (data-role): the style sheet hides every control marked
// data-need="operator" or "admin" that the role may not use. Without a
// token (or with one the server does not know) nothing is hidden: the
// server refuses the action and the page says to enter the token. The
// server enforces the roles whatever the page shows.

import { call, setToken, token } from "./api.js";
import { el } from "./dom.js";
import * as jobs from "./views/jobs.js";
import * as job from "./views/job.js";
import * as chains from "./views/chains.js";
import * as instances from "./views/instances.js";
import * as history from "./views/history.js";
import * as dispatcher from "./views/dispatcher.js";
import * as audit from "./views/audit.js";

const views = { jobs, job, chains, instances, history, dispatcher, audit };
const POLL_MS = 1000;

const $ = (id) => document.getElementById(id);

let current = null; // the mounted view: {name, ctx}
let timer = 0;
let ticking = false;
let again = false;
let problems = [];
let info = null; // GET / once it answered: namespace, readOnly

// show sets a banner's text, hiding it when empty.
function show(id, text) {
  const b = $(id);
  b.textContent = text;
  b.hidden = !text;
}

function tokenState() {
  $("token-state").textContent = token() ? "token set (kept in this tab only)" : "no token: read-only";
}

// summary turns the server's answer to an action into one plain line.
function summary(data) {
  if (!data || typeof data !== "object") return "";
  if (Array.isArray(data.changes)) {
    if (!data.changes.length) return "nothing to change";
    return data.changes
      .map((c) => `${c.job}${c.server ? " on " + c.server : ""}: ${c.changed ? "changed" : "already so"}`)
      .join("; ");
  }
  if (data.created) return `job ${data.job} created (type ${data.type}); instances that follow definitions run it`;
  if (Array.isArray(data.stopped) && data.job) {
    return `job ${data.job} removed` + (data.stopped.length ? `; stopped on ${data.stopped.join(", ")}` : "");
  }
  if (data.config) {
    const c = data.config;
    return `${data.changed ? "changed" : "unchanged"}: cron "${c.cron}", ${c.shardingTotalCount} items`;
  }
  if ("server" in data && "changed" in data) return `${data.server}: ${data.changed ? "changed" : "already so"}`;
  return "";
}

// notice shows the outcome of an action with the server's answer.
function notice(label, res) {
  const n = $("notice");
  const head = res.ok
    ? `${label}: done — ${summary(res.data) || "HTTP " + res.status}`
    : `${label}: refused (HTTP ${res.status || "—"}) — ${res.error}`;
  n.className = "notice " + (res.ok ? "ok" : "refused");
  n.replaceChildren(
    el("span", { class: "notice-text", text: head }),
    el("button", { type: "button", class: "close", onclick: () => (n.hidden = true), "aria-label": "dismiss" }, "×"),
    res.data ? el("details", null, el("summary", { text: "server's answer" }), el("pre", { text: JSON.stringify(res.data, null, 2) })) : null,
  );
  n.hidden = false;
}

// context is what a view gets: its root element, its argument, reads that
// report a missing token once for the page, and actions.
function context(name, arg, root) {
  const ctx = {
    root,
    arg,
    alive: () => current && current.ctx === ctx,
    async get(path, params) {
      const res = await call("GET", path, { params });
      if (res.status === 401 || res.status === 403) {
        problems.push(`Reading ${path || "/"} was refused (HTTP ${res.status}): ${res.error}. ` + (token() ? "Check the token." : "Enter the token above."));
      }
      return res;
    },
    async act(label, path, { params, body, yaml } = {}) {
      const res = await call("POST", path, { params, body, yaml });
      notice(label, res);
      kick();
      return res;
    },
    refresh: kick,
  };
  return ctx;
}

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/");
  let name = parts[0];
  let arg = parts.slice(1).map(decodeURIComponent).join("/");
  if (!views[name] || (name === "job" && !arg)) {
    name = "jobs";
    arg = "";
  }
  const root = $("view");
  root.replaceChildren();
  $("notice").hidden = true; // an action's outcome belongs to the page it was done on
  current = { name, ctx: context(name, arg, root) };
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("active", a.dataset.view === name || (name === "job" && a.dataset.view === "jobs"));
  }
  views[name].mount(current.ctx);
  kick();
}

// kick refreshes the current view now (or right after the refresh under
// way), then every POLL_MS.
function kick() {
  clearTimeout(timer);
  if (ticking) {
    again = true;
    return;
  }
  tick();
}

async function tick() {
  ticking = true;
  again = false;
  const mine = current;
  problems = [];
  try {
    if (!info) {
      const res = await call("GET", "");
      if (res.ok && res.data) {
        info = res.data;
        $("namespace").textContent = info.namespace || "";
        show("readonly", info.readOnly ? "Read-only: the server has no token configured, so every action is refused." : "");
        await learnRole();
      } else if (res.status === 401 || res.status === 403) {
        problems.push(`The server needs the token to read (HTTP ${res.status}): ${res.error}. ` + (token() ? "Check the token." : "Enter the token above."));
      }
    }
    if (!document.hidden) await views[mine.name].refresh(mine.ctx);
    $("updated").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) {
    problems.push("The page failed to refresh: " + e.message);
  } finally {
    ticking = false;
  }
  show("problem", [...new Set(problems)].join(" "));
  if (again) tick();
  else timer = setTimeout(tick, POLL_MS);
}

// learnRole asks the server who the token is and marks the page with its
// role; an unknown token or an older server leaves the page unmarked.
async function learnRole() {
  const res = await call("GET", "whoami");
  const role = res.ok && res.data && typeof res.data.role === "string" ? res.data.role : "";
  if (role) document.body.dataset.role = role;
  else delete document.body.dataset.role;
  $("role").textContent = role ? `— ${res.data.name} (${role})` : "";
}

function init() {
  tokenState();
  $("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const input = $("token");
    setToken(input.value.trim());
    input.value = "";
    info = null;
    tokenState();
    kick();
  });
  $("token-forget").addEventListener("click", () => {
    setToken("");
    info = null;
    tokenState();
    kick();
  });
  window.addEventListener("hashchange", route);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) kick();
  });
  route();
}

init();
