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

// A search box of a filter form, named `key`, showing `filters[key]`.
export function filterInput(form, filters, key, placeholder, title) {
  const i = el("input");
  i.type = "search";
  i.name = key;
  i.placeholder = placeholder;
  i.title = title;
  i.value = filters[key];
  form.append(i);
  return i;
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
export function can(me, role) {
  return !!me && ROLES.indexOf(me.role) >= ROLES.indexOf(role);
}

export function when(ts) {
  if (!ts) return null;
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return ts;
  // Local time, as people read it at a glance: 2026-11-22 10:15:01.
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
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
