// Whether schedules fire (`GET /api/v1/scheduler`), for every page: while
// the scheduler is paused the shell shows a banner under the top bar
// (with Resume for admins), and pages that care (the schedules' Pause)
// follow it through `onScheduler`. The job feed does not tell of a pause,
// so the state is read after the page has drawn, then every 15 s, and
// again after a change made here.
//
// A tab keeps the last paused state it read (session storage), so a page
// opened while paused shows the banner (and hides Pause) at once, before
// its own data, and nothing below it moves when the read confirms it.

import { get, post } from "./api.js";
import { el, text, clear, fail, button, can, when } from "./dom.js";

const EVERY_MS = 15000;
const KEY = "joblog.scheduler";

let me = null;
let state = null;
let timer = null;
let readAt = 0;
const listeners = new Set();

// The banner's element: in the shell (index.html), a status region, empty
// (and so of no height) while schedules fire.
const banner = () => document.getElementById("scheduler-banner");

// Shows the last paused state this tab read, if any: called once the
// caller is known (so a refused token shows no banner).
export function showCachedScheduler(who) {
  me = who;
  try {
    const kept = JSON.parse(sessionStorage.getItem(KEY) ?? "null");
    if (kept?.paused) {
      state = kept;
      render(kept);
    }
  } catch {
    // Nothing kept, or no storage.
  }
}

// Reads the state now and then every 15 s while the tab is visible.
export function followScheduler(who) {
  me = who;
  clearInterval(timer);
  readScheduler();
  timer = setInterval(() => {
    if (!document.hidden) readScheduler();
  }, EVERY_MS);
  document.addEventListener("visibilitychange", onVisible);
}

// The token was refused: no more reads, and no banner beside the form
// that asks for another.
export function stopScheduler() {
  clearInterval(timer);
  timer = null;
  document.removeEventListener("visibilitychange", onVisible);
  state = null;
  const b = banner();
  if (b) clear(b);
}

function onVisible() {
  if (!document.hidden && Date.now() - readAt > EVERY_MS) readScheduler();
}

export async function readScheduler() {
  readAt = Date.now();
  try {
    setScheduler(await get("/api/v1/scheduler"));
  } catch (err) {
    // A banner is no place for a failed poll: the page says when the
    // server is gone. The last state shown stays.
    console.warn(err);
  }
}

// The scheduler's state as the API gave it (a read, or the answer of a
// pause or resume made on a page): the banner and the pages follow it.
export function setScheduler(s) {
  state = s;
  try {
    if (s.paused) sessionStorage.setItem(KEY, JSON.stringify(s));
    else sessionStorage.removeItem(KEY);
  } catch {
    // No storage: the banner waits for the read.
  }
  render(s);
  for (const fn of listeners) fn(s);
}

// `fn(state)` on every state read or set, at once if one is known.
// Returns what stops it.
export function onScheduler(fn) {
  listeners.add(fn);
  if (state) fn(state);
  return () => listeners.delete(fn);
}

// The times shown follow the Times setting.
export function retimeScheduler() {
  if (state) render(state);
}

// "Scheduler paused since 2026-11-27 09:00:00 UTC by alice — no schedule
// fires. [Resume]": text nodes only (the name is a token's).
function render(s) {
  const b = banner();
  if (!b) return;
  clear(b);
  if (!s.paused) return;
  const say = el("span", "banner-text");
  say.append(text("Scheduler paused", "k"));
  if (s.paused_at) {
    const at = text(when(s.paused_at), "time");
    at.title = s.paused_at;
    say.append(text(" since "), at);
  }
  if (s.paused_by) say.append(text(" by "), text(s.paused_by, "who"));
  say.append(text(" — no schedule fires."));
  b.append(say);
  if (can(me, "admin")) {
    const resume = button("Resume", "small", () => resumeScheduler(resume), "let schedules fire again (fires missed meanwhile follow each schedule's missed policy)");
    resume.id = "resume-scheduler";
    b.append(resume);
  }
}

async function resumeScheduler(b) {
  b.disabled = true;
  try {
    setScheduler(await post("/api/v1/scheduler/resume"));
  } catch (err) {
    b.disabled = false;
    const why = el("span");
    fail(why, err);
    banner()?.querySelector(".banner-error")?.remove();
    why.classList.add("banner-error");
    banner()?.append(why);
  }
}
