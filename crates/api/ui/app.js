// The web UI's entry: asks who the caller is (and for a token when the
// server wants one), then shows the page the server found for the URL.

import { get, setToken, token, onUnauthorized, ApiError } from "./api.js";
import { el, text, clear, fail, can, zoneMode, setZoneMode, zoneLabel } from "./dom.js";
import { showCachedScheduler, followScheduler, stopScheduler, retimeScheduler } from "./scheduler.js";

const main = document.getElementById("app");
let page = null;

// This path's page, as the server declares it (ui.rs, PAGES): its path,
// its module and that module's exports.
const PAGE = JSON.parse(document.querySelector('meta[name="joblog-page"]').content);

async function boot() {
  const params = pathParams();
  // The page's module loads, and its data is asked for (a job's page: its
  // job and outline), while we ask who we are.
  const module = import(`./${PAGE.module}`);
  const early = PAGE.prefetch ? module.then((m) => m[PAGE.prefetch](params)) : Promise.resolve(null);
  early.catch(() => {});
  let me;
  try {
    me = await get("/api/v1/whoami");
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return askToken(token() ? "That token was refused." : null);
    return fail(main, err);
  }
  showWho(me);
  showCachedScheduler(me);
  onUnauthorized(() => {
    page?.destroy?.();
    stopScheduler();
    askToken("The server no longer accepts the token.");
  });
  try {
    page = await route(me, module, params, early);
  } catch (err) {
    fail(main, err);
  }
  // Whether schedules fire (the banner): one small read, after the page's
  // own, when the browser is idle.
  afterPage(() => followScheduler(me));
}

function afterPage(fn) {
  if (window.requestIdleCallback) window.requestIdleCallback(fn, { timeout: 1000 });
  else setTimeout(fn, 200);
}

async function route(me, module, params, early) {
  for (const a of document.querySelectorAll("[data-needs]")) {
    a.hidden = !can(me, a.dataset.needs);
  }
  const show = (await module)[PAGE.show];
  return show(main, me, params, await early);
}

// The ids the page's path names, by name: `/jobs/{id}` at `/jobs/42` is
// `{id: 42}`. The server serves a page only where its ids are numbers.
function pathParams() {
  const names = [];
  const pattern = PAGE.path.replace(/\{(\w+)\}/g, (_, name) => {
    names.push(name);
    return "(\\d+)";
  });
  const m = new RegExp(`^${pattern}$`).exec(location.pathname);
  return Object.fromEntries(names.map((name, i) => [name, Number(m?.[i + 1])]));
}

function showWho(me) {
  const who = document.getElementById("who");
  clear(who);
  who.append(text(`${me.name} · ${me.role}`, "muted"));
  if (token()) {
    const out = el("button", "button small");
    out.textContent = "Forget token";
    out.addEventListener("click", () => {
      setToken(null);
      location.reload();
    });
    who.append(out);
  }
}

// The server needs a token: nothing but this form is shown until it
// accepts one. It is kept in this tab's session storage only.
function askToken(problem) {
  clear(main);
  const form = el("form", "token-form");
  form.id = "token-form";
  form.append(text("This joblog server needs an API token", null, "h1"));
  if (problem) form.append(text(problem, "error-text", "p"));
  const input = el("input");
  input.type = "password";
  input.name = "token";
  input.autocomplete = "off";
  input.placeholder = "jl_…";
  input.setAttribute("aria-label", "API token");
  input.required = true;
  const go = el("button", "button primary");
  go.type = "submit";
  go.textContent = "Use token";
  form.append(
    input,
    go,
    text("It stays in this browser tab (session storage) and is sent as a bearer header, never in a URL.", "hint", "p"),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    boot();
  });
  main.append(form);
  input.focus();
}

// The one setting for every time shown: local (the browser's zone) or
// UTC. A page redraws its times when it changes.
function zoneSetting() {
  const select = document.getElementById("time-zone");
  const here = Intl.DateTimeFormat().resolvedOptions().timeZone;
  select.options[0].textContent = `local (${zoneLabel(new Date(), false)})`;
  select.title = `Times are shown in this zone: local is ${here ?? "the browser's zone"}`;
  select.value = zoneMode();
  select.addEventListener("change", () => {
    setZoneMode(select.value);
    page?.retime?.();
    retimeScheduler();
  });
}

document.addEventListener("keydown", (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const typing = e.target.closest?.("input, textarea, select");
  if (typing) {
    if (e.key === "Escape") e.target.blur();
    else return;
  }
  if (page?.key?.(e)) e.preventDefault();
});

zoneSetting();
boot();
