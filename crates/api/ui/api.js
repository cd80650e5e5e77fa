// The JSON API as the UI calls it: the bearer token (session storage,
// never a URL), errors as exceptions carrying the API's code, and
// Server-Sent Events read through fetch so that they carry the token too
// (EventSource cannot send headers).

const TOKEN_KEY = "joblog.token";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

function headers(extra) {
  const h = { Accept: "application/json", ...extra };
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  return h;
}

// Listeners told when the server refuses the token (401), so the page can
// ask for one.
const unauthorized = new Set();
export function onUnauthorized(fn) {
  unauthorized.add(fn);
}

async function failure(res) {
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
  if (res.status === 401) for (const fn of unauthorized) fn(message);
  return new ApiError(res.status, code, message);
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
async function send(method, path, body) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(path, init);
  if (!res.ok) throw await failure(res);
  const text = await res.text();
  return text ? JSON.parse(text) : null;
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
