// api.js: every request the console makes. URLs are relative to the
// console's own directory, so the page works under any prefix the handler
// is mounted at: the console is PREFIX/console/, the API PREFIX/jobs...
// The token lives in sessionStorage (this tab only) and travels in the
// Authorization header; never in a URL, a cookie or the page.

const KEY = "shardjob.token";

export function token() {
  try {
    return sessionStorage.getItem(KEY) || "";
  } catch {
    return "";
  }
}

export function setToken(t) {
  try {
    if (t) sessionStorage.setItem(KEY, t);
    else sessionStorage.removeItem(KEY);
  } catch {
    // storage disabled: the token is simply not kept
  }
}

// apiBase is PREFIX/: one level above the console's directory.
const apiBase = new URL("../", document.baseURI);

// url builds PREFIX/path?params, leaving out empty parameters.
export function url(path, params) {
  const u = new URL(path, apiBase);
  u.hash = "";
  for (const [k, v] of Object.entries(params || {})) {
    if (v === "" || v == null || v === false) continue;
    u.searchParams.set(k, v === true ? "1" : String(v));
  }
  return u;
}

// call sends one request and resolves to {ok, status, data, error}; it
// never throws. error is the server's {"error": ...} message, or the body
// or status text when there is none.
// A yaml option is sent as it is, as a YAML document, instead of a JSON body.
export async function call(method, path, { params, body, yaml } = {}) {
  const headers = { Accept: "application/json" };
  const t = token();
  if (t) headers.Authorization = "Bearer " + t;
  const init = { method, headers, cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" };
  if (yaml !== undefined) {
    headers["Content-Type"] = "application/yaml";
    init.body = yaml;
  } else if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(url(path, params), init);
  } catch (e) {
    return { ok: false, status: 0, data: null, error: "the server cannot be reached (" + e.message + ")" };
  }
  const text = await resp.text().catch(() => "");
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  let error = "";
  if (!resp.ok) {
    error = data && typeof data.error === "string" ? data.error : text.trim() || resp.statusText || "HTTP " + resp.status;
  }
  return { ok: resp.ok, status: resp.status, data, error };
}

// path joins segments, each escaped.
export function path(...segments) {
  return segments.map((s) => encodeURIComponent(s)).join("/");
}
