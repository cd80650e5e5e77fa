// Small DOM helpers shared by the pages. Text always goes in as text.

const ROLES = ["viewer", "operator", "admin"];

export function el(tag, cls) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  return e;
}

export function text(value, cls, tag = "span") {
  const e = el(tag, cls);
  e.textContent = value;
  return e;
}

// A search box of a filter form, named `key`, showing `filters[key]`. A
// placeholder is no label: `label` is its accessible name, `title` the
// longer hint.
// A form's labelled fields: `field(label, input, hint, cls)` appends the
// input under its label (and hint) to `form`; `input(name, type)` makes
// one that the browser neither checks nor spell-checks (the API's checks
// speak).
export function formFields(form) {
  const field = (label, input, hint, cls) => {
    const l = el("label", cls);
    l.append(text(label, "label"), input);
    if (hint) l.append(text(hint, "hint"));
    form.append(l);
    return input;
  };
  const input = (name, type = "text") => {
    const i = el("input");
    i.name = name;
    i.type = type;
    i.spellcheck = false;
    return i;
  };
  return { field, input };
}

// The states a job ends in, in the API's order.
export const END_STATES = ["succeeded", "failed", "cancelled", "timed_out", "interrupted"];

// A box per end state, each named `name`, in a fieldset `id` under
// `legend`; those in `checked` ticked at first. `input` is formFields'.
export function endStates(input, name, id, legend, checked) {
  const states = el("fieldset", "states wide2");
  states.id = id;
  states.append(text(legend, "label", "legend"));
  for (const s of END_STATES) {
    const box = input(name, "checkbox");
    box.value = s;
    box.defaultChecked = checked.includes(s);
    const l = el("label", "check");
    l.append(box, text(s.replace("_", " ")));
    states.append(l);
  }
  return states;
}

export function filterInput(form, filters, key, placeholder, title, label) {
  const i = el("input");
  i.type = "search";
  i.name = key;
  i.placeholder = placeholder;
  i.title = title;
  i.setAttribute("aria-label", label);
  i.value = filters[key];
  form.append(i);
  return i;
}

// Labels as the API gives them (`{"role": "db"}`): one `key=value` each,
// in key order; `none` (muted) when there are none.
export function labelList(labels, none = "") {
  const span = el("span", "labels");
  const items = labelItems(labels);
  // Spaces between them, for copying and for screen readers.
  items.forEach((item, i) => span.append(...(i ? [" "] : []), text(item, "lbl")));
  if (!items.length && none) span.append(text(none, "muted"));
  return span;
}

function labelItems(labels) {
  return Object.keys(labels ?? {})
    .sort()
    .map((k) => `${k}=${labels[k]}`);
}

// Labels as a form shows them: `os=linux,role=db`.
export function labelText(labels) {
  return labelItems(labels).join(",");
}

// A form's `role=db,os=linux` as the API takes it, an object in key
// order ({} for the empty text). Only what the object cannot say is
// refused here, in the API's words for its text form (an item that is no
// key=value, a key given twice); the API judges the keys and values.
export function parseLabels(value, field = "node_selector") {
  const labels = new Map();
  for (const raw of value.split(",")) {
    const item = raw.trim();
    if (!item) continue;
    const eq = item.indexOf("=");
    const refuse = (why) => {
      const err = new Error(`${field}: ${why}`);
      err.field = field;
      return err;
    };
    if (eq < 0) throw refuse(`${JSON.stringify(item)} is not key=value`);
    const k = item.slice(0, eq).trim();
    const v = item.slice(eq + 1).trim();
    if (labels.has(k) && labels.get(k) !== v) {
      throw refuse(`${JSON.stringify(k)} is given twice (${JSON.stringify(labels.get(k))} and ${JSON.stringify(v)})`);
    }
    labels.set(k, v);
  }
  return Object.fromEntries([...labels].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

// Text for screen readers only (a table header over dots or symbols).
export function srOnly(value) {
  return text(value, "sr-only");
}

// A table's header row. A column headed by a symbol or by nothing visible
// ({sym, name} or {name, hidden}) still has a name for screen readers.
export function headerRow(heads) {
  const tr = el("tr");
  for (const h of heads) {
    const th = el("th");
    th.scope = "col";
    if (typeof h === "string") th.textContent = h;
    else if (h.sym) {
      th.title = h.name;
      const sym = text(h.sym);
      sym.setAttribute("aria-hidden", "true");
      th.append(sym, srOnly(h.name));
    } else th.append(srOnly(h.name));
    tr.append(th);
  }
  return tr;
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
}

export function stateBadge(state, { label = false } = {}) {
  const s = text(state, `state st-${state}`);
  s.title = state;
  if (!label) return s;
  // The dot, and the state in words beside it: failed, timed out and
  // interrupted share a red dot but not a style.
  s.setAttribute("aria-hidden", "true");
  const both = el("span", `state-badge st-${state}`);
  both.append(s, text(state.replace("_", " "), `state-label st-${state}`));
  return both;
}

// Whether the caller's role is at least `role`.
// Whether the caller has `role`: in the folder given (a job's or a
// schedule's; null for none) when one is, else anywhere (the best of a
// caller limited to folders, whose top-level role is never admin).
export function can(me, role, ...folder) {
  if (!me) return false;
  const rank = (r) => ROLES.indexOf(r);
  let has = rank(me.role);
  if (me.folders) {
    const mine = (f) => (f != null && Object.hasOwn(me.folders, f) ? rank(me.folders[f]) : -1);
    has = folder.length ? mine(folder[0]) : Math.max(has, ...Object.keys(me.folders).map(mine));
  }
  return has >= rank(role);
}

// The folders a caller limited to them may file a job or schedule in
// (where it is an operator); null for a caller with every folder.
export function fileableFolders(me) {
  if (!me?.folders) return null;
  return Object.keys(me.folders).filter((f) => me.folders[f] === "operator");
}

// A folder field: a choice of the caller's own folders when it is
// limited to some (one is needed), else free text (optional).
export function folderInput(me, name = "folder") {
  const mine = fileableFolders(me);
  if (!mine) {
    const input = el("input");
    input.name = name;
    input.spellcheck = false;
    return input;
  }
  const select = el("select");
  select.name = name;
  for (const f of mine) {
    const o = el("option");
    o.value = f;
    o.textContent = f;
    select.append(o);
  }
  return select;
}

// Times are shown in one zone, the browser's local one or UTC (a setting
// of the top bar, kept in localStorage), and always say which.
const ZONE_KEY = "joblog.times";

let zone = (() => {
  try {
    return localStorage.getItem(ZONE_KEY) === "utc" ? "utc" : "local";
  } catch {
    return "local";
  }
})();

export function zoneMode() {
  return zone;
}

export function setZoneMode(mode) {
  zone = mode === "utc" ? "utc" : "local";
  try {
    localStorage.setItem(ZONE_KEY, zone);
  } catch {
    // No storage: the choice lasts as long as the page.
  }
}

const utc = () => zone === "utc";

// The zone's label for the instant `d`: "UTC", or the local offset
// ("+01:00"), which daylight saving changes within a year.
export function zoneLabel(d = new Date(), inUtc = utc()) {
  if (inUtc) return "UTC";
  const off = -d.getTimezoneOffset();
  const a = Math.abs(off);
  return `${off < 0 ? "-" : "+"}${p2(Math.floor(a / 60))}:${p2(a % 60)}`;
}

const p2 = (n) => String(n).padStart(2, "0");

function fields(d, inUtc) {
  return inUtc
    ? [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds()]
    : [d.getFullYear(), d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds(), d.getMilliseconds()];
}

// "2026-11-25 03:10:05 UTC" or "2026-11-25 04:10:05 +01:00".
export function when(ts, { ms = false } = {}) {
  if (!ts) return null;
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return ts;
  const inUtc = utc();
  const [y, mo, da, h, mi, s, milli] = fields(d, inUtc);
  const frac = ms ? `.${String(milli).padStart(3, "0")}` : "";
  return `${y}-${p2(mo)}-${p2(da)} ${p2(h)}:${p2(mi)}:${p2(s)}${frac} ${zoneLabel(d, inUtc)}`;
}

// A log record's time of day, to the millisecond: "03:10:05.123 UTC".
export function clock(ts) {
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return ts ?? "";
  const inUtc = utc();
  const [, , , h, mi, s, milli] = fields(d, inUtc);
  return `${p2(h)}:${p2(mi)}:${p2(s)}.${String(milli).padStart(3, "0")} ${zoneLabel(d, inUtc)}`;
}

// A job's run time: finished − started, or started → now while running.
export function duration(job) {
  if (job.duration_ms !== null && job.duration_ms !== undefined) return human(job.duration_ms);
  if (job.started_at && !job.finished_at) return human(Date.now() - new Date(job.started_at).getTime());
  return null;
}

export function human(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
  const h = Math.floor(m / 60);
  return `${h} h ${m % 60} min`;
}

// Shows an API error where the user is looking.
export function fail(where, err) {
  console.warn(err);
  const msg = err && err.message ? err.message : String(err);
  where.textContent = err && err.status === 403 ? `Not allowed: ${msg}` : `Error: ${msg}`;
  where.classList.add("error-text");
}

// The end of an "Add …" form: its button (`label`) and status line (id
// `statusId`), and its submit. The status and the fields marked invalid
// are cleared and the button disabled while `send()` runs; the text it
// returns is the status then. A refusal is shown in the status, and
// `fieldOf(err)` names the field to mark (`markInvalid`), if any.
export function addForm(form, label, statusId, send, fieldOf) {
  const actions = el("div", "form-actions full");
  const go = el("button", "button primary");
  go.type = "submit";
  go.textContent = label;
  const out = el("span", "form-status");
  out.id = statusId;
  out.setAttribute("role", "status");
  actions.append(go, out);
  form.append(actions);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    out.textContent = "";
    out.classList.remove("error-text");
    for (const m of form.querySelectorAll(".invalid")) m.classList.remove("invalid");
    for (const m of form.querySelectorAll("[aria-invalid]")) m.removeAttribute("aria-invalid");
    go.disabled = true;
    try {
      out.textContent = await send();
    } catch (err) {
      fail(out, err);
      const field = fieldOf(err);
      if (field instanceof HTMLElement) markInvalid(field);
    } finally {
      go.disabled = false;
    }
  });
}

// Outlines a field a refusal named, says so to assistive technology, and
// puts the cursor there.
function markInvalid(input) {
  input.classList.add("invalid");
  input.setAttribute("aria-invalid", "true");
  input.focus();
}

// A button that does `onClick`.
export function button(label, cls, onClick, title) {
  const b = el("button", cls ? `button ${cls}` : "button");
  b.type = "button";
  b.textContent = label;
  if (title) b.title = title;
  b.addEventListener("click", onClick);
  return b;
}

export function link(href, label, cls) {
  const a = text(label, cls, "a");
  a.href = href;
  return a;
}

// How far `ts` is from now, as people say it: "in 3 min", "12 s ago".
export function relative(ts, now = Date.now()) {
  const t = new Date(ts).getTime();
  if (Number.isNaN(t)) return "";
  const ms = t - now;
  const s = Math.abs(ms) / 1000;
  if (s < 1) return "now";
  let span;
  if (s < 60) span = `${Math.floor(s)} s`;
  else if (s < 3600) span = `${Math.floor(s / 60)} min`;
  else if (s < 172800) span = `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  else span = `${Math.floor(s / 86400)} d`;
  return ms > 0 ? `in ${span}` : `${span} ago`;
}

// A time shown as local time with how far it is ("in 3 min"); the
// relative part is kept current by `tickRelative`.
export function timeCell(ts, tag = "td") {
  const cell = el(tag, "time");
  if (!ts) return cell;
  cell.title = ts;
  const rel = text(relative(ts), "rel muted");
  rel.dataset.ts = ts;
  cell.append(text(when(ts)), text(" "), rel);
  return cell;
}

export function tickRelative(root) {
  const now = Date.now();
  for (const r of root.querySelectorAll(".rel[data-ts]")) r.textContent = relative(r.dataset.ts, now);
}

// Running jobs' durations tick without asking the server: each
// `tr.st-running` row of `root` names its job of `jobs` by `data-id`.
export function tickDurations(root, jobs) {
  for (const td of root.querySelectorAll("tr.st-running td.duration")) {
    const job = jobs.find((j) => String(j.id) === td.parentElement.dataset.id);
    if (job) td.textContent = duration(job) ?? "";
  }
}
