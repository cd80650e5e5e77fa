// The JSON API as the UI calls it: who the caller is (a session cookie,
// which the browser sends itself, or a bearer token kept in session
// storage, never in a URL), errors as exceptions carrying the API's code,
// and Server-Sent Events read through fetch so that they carry the token
// too (EventSource cannot send headers).
//
// A session's state changes carry its CSRF token (`X-CSRF-Token`): the
// cookie goes with every request the browser makes, the header only with
// the UI's. The token is kept in memory, set by the sign-in's answer or
// by whoami (which a fresh tab asks first, by cookie).

const TOKEN_KEY = "joblog.token";

export class ApiError extends Error {
  constructor(status, code, message, retryAfter = null) {
    super(message);
    this.status = status;
    this.code = code;
    // Seconds to wait before asking again (a 429's `Retry-After`), or null.
    this.retryAfter = retryAfter;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

// The session's CSRF token, while signed in with a password, and whose
// session it is.
let csrf = null;
let csrfOf = null;

// From whoami or the sign-in's answer: its `csrf_token` when the caller
// is a session, else none.
export function setCsrf(value, name = null) {
  csrf = value || null;
  csrfOf = csrf ? name : null;
}

function headers(extra, stateChange = false) {
  const h = { Accept: "application/json", ...extra };
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  if (stateChange && csrf) h["X-CSRF-Token"] = csrf;
  return h;
}

// Listeners told when the server no longer knows the caller (401: a token
// refused, a session ended or expired), so the page can ask who they are.
const unauthorized = new Set();
export function onUnauthorized(fn) {
  unauthorized.add(fn);
}

// Signs in with a name and password: the server sets the session's cookie
// (HttpOnly: this code never sees it) and answers with the CSRF token,
// kept here. A refusal is an ApiError (`sign_in_failed`, `user_disabled`,
// `too_many_sign_ins` with its `retryAfter`); it tells no listener, since
// the sign-in form is already what is shown.
// The ways in besides a password: `{password, oidc: {label, start} | null}`.
// Asked with no credentials (the route is public); a failure offers the
// password alone.
export async function signInOptions() {
  try {
    const res = await fetch("/api/v1/session/options", { headers: { Accept: "application/json" }, credentials: "omit" });
    return res.ok ? await res.json() : { password: true, oidc: null };
  } catch {
    return { password: true, oidc: null };
  }
}

export async function signIn(name, password) {
  const res = await fetch("/api/v1/session", {
    method: "POST",
    headers: { Accept: "application/json", "Content-Type": "application/json" },
    body: JSON.stringify({ name, password }),
  });
  if (!res.ok) throw await failure(res, { quiet: true });
  const me = await res.json();
  setCsrf(me.csrf_token, me.name);
  return me;
}

// Ends this tab's session (and so every tab's of this browser: they share
// the cookie). A session already gone is as good as ended.
export async function signOut() {
  try {
    const res = await fetch("/api/v1/session", { method: "DELETE", headers: headers({}, true) });
    if (!res.ok && res.status !== 401) throw await failure(res, { quiet: true });
  } finally {
    setCsrf(null);
  }
}

// The caller's own session was ended another way (its row on the Users
// page): the page is told, as by a 401.
export function sessionEnded() {
  setCsrf(null);
  for (const fn of unauthorized) fn("the session ended");
}

async function failure(res, { quiet = false } = {}) {
  let code = "http_" + res.status;
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = await res.json();
    if (body && body.error) {
      code = body.error.code;
      message = body.error.message;
    }
  } catch {
    // Not JSON: keep the status line.
  }
  if (res.status === 401 && !quiet) for (const fn of unauthorized) fn(message);
  return new ApiError(res.status, code, message, retryAfter(res));
}

// `Retry-After` in seconds (the server sends seconds; a date is read too).
function retryAfter(res) {
  const v = res.headers.get("Retry-After");
  if (!v) return null;
  if (/^\d+$/.test(v.trim())) return Number(v.trim());
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

export async function get(path, params, signal) {
  const res = await fetch(withQuery(path, params), { headers: headers(), signal });
  if (!res.ok) throw await failure(res);
  return res.json();
}

export function post(path, body) {
  return send("POST", path, body ?? {});
}

export function patch(path, body) {
  return send("PATCH", path, body);
}

export function del(path) {
  return send("DELETE", path);
}

// A state change: a JSON body (if any), the answer's JSON or null (204).
async function send(method, path, body, again = true) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }, true) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(path, init);
  if (!res.ok) {
    const err = await failure(res);
    // The cookie is of a newer session than the token kept here (the same
    // user signed out and in again in another tab): refused before it did
    // anything, the change is sent once more with the new session's token.
    if (again && err.code === "csrf_token_invalid" && (await newCsrf())) return send(method, path, body, false);
    throw err;
  }
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

// Whether whoami gives another CSRF token for the same user's session.
// Another user's is no reason to go on: the page was drawn for this one.
async function newCsrf() {
  try {
    const me = await get("/api/v1/whoami");
    if (!me.csrf_token || me.csrf_token === csrf || me.name !== csrfOf) return false;
    setCsrf(me.csrf_token, me.name);
    return true;
  } catch {
    return false;
  }
}

// The raw body of a GET (a log as text, a result): a Blob for downloads,
// bytes for the result viewer to hand to its worker.
async function raw(path) {
  const res = await fetch(path, { headers: headers({ Accept: "*/*" }) });
  if (!res.ok) throw await failure(res);
  return res;
}

export async function blob(path) {
  return (await raw(path)).blob();
}

export async function arrayBuffer(path) {
  return (await raw(path)).arrayBuffer();
}

export function withQuery(path, params) {
  if (!params) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

// Follows an SSE endpoint until `end` or `close()`. `onEvent(type, data,
// id)` gets every event; a dropped connection is resumed after a pause
// with `Last-Event-ID` set to the last id seen, so nothing is missed or
// repeated. Returns `{close()}`.
export function stream(path, { onEvent, onState, lastEventId }) {
  let closed = false;
  let controller = null;
  let last = lastEventId ?? null;
  let retry = 500;

  async function connect() {
    while (!closed) {
      controller = new AbortController();
      let ended = false;
      try {
        const extra = { Accept: "text/event-stream" };
        if (last !== null) extra["Last-Event-ID"] = String(last);
        const res = await fetch(path, { headers: headers(extra), signal: controller.signal });
        if (!res.ok) {
          const err = await failure(res);
          // Refusals do not get better by retrying.
          if (res.status < 500 && res.status !== 429) {
            onState?.("error", err);
            return;
          }
          throw err;
        }
        onState?.("open");
        retry = 500;
        ended = await read(res.body, (type, data, id) => {
          if (id !== null) last = id;
          onEvent(type, data, id);
        });
      } catch (err) {
        if (closed) return;
        onState?.("retrying", err);
      }
      if (ended || closed) {
        onState?.("closed");
        return;
      }
      onState?.("retrying");
      await new Promise((r) => setTimeout(r, retry));
      retry = Math.min(retry * 2, 5000);
    }
  }
  connect();
  return {
    close() {
      closed = true;
      controller?.abort();
    },
  };
}

// Parses an event stream (the WHATWG format: `field: value` lines, events
// ended by a blank line). Resolves true when an `end` event came.
async function read(body, emit) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  let type = "message";
  let data = [];
  let id = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return false;
    buf += value;
    let start = 0;
    let nl;
    while ((nl = buf.indexOf("\n", start)) >= 0) {
      let line = buf.slice(start, nl);
      start = nl + 1;
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line === "") {
        if (data.length) {
          emit(type, data.join("\n"), id);
          if (type === "end") {
            reader.cancel().catch(() => {});
            return true;
          }
        }
        type = "message";
        data = [];
        id = null;
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let val = colon < 0 ? "" : line.slice(colon + 1);
      if (val.startsWith(" ")) val = val.slice(1);
      if (field === "data") data.push(val);
      else if (field === "event") type = val;
      else if (field === "id") id = val;
    }
    buf = buf.slice(start);
  }
}
