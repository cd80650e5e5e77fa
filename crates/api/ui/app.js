// The web UI's entry: asks who the caller is (and, when the server does
// not know, for a name and password, or a token), then shows the page the
// server found for the URL.

import { get, setToken, token, setCsrf, signIn, signInOptions, signOut, onUnauthorized, ApiError } from "./api.js";
import { el, text, clear, fail, can, link, button, formFields, zoneMode, setZoneMode, zoneLabel } from "./dom.js";
import { showCachedScheduler, followScheduler, stopScheduler, retimeScheduler } from "./scheduler.js";

const main = document.getElementById("app");
let page = null;
// Whether a page is shown for a known caller (not a form asking who).
let signedIn = false;
// Counts boots and sign-outs: a boot overtaken by either (a 401 while the
// page's module loads) shows nothing.
let boots = 0;

// This path's page, as the server declares it (ui.rs, PAGES): its path,
// its module and that module's exports.
const PAGE = JSON.parse(document.querySelector('meta[name="joblog-page"]').content);

async function boot() {
  const run = ++boots;
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
    if (run !== boots) return;
    if (err instanceof ApiError && err.status === 401) {
      return token() ? askToken("That token was refused.") : askSignIn();
    }
    return fail(main, err);
  }
  if (run !== boots) return;
  // A session's state changes carry its CSRF token; a token's need none.
  setCsrf(me.csrf_token, me.name);
  signedIn = true;
  showWho(me);
  showCachedScheduler(me);
  let shown;
  try {
    shown = await route(me, module, params, early);
  } catch (err) {
    if (run === boots) fail(main, err);
    return;
  }
  if (run !== boots) {
    // Signed out while the page was being drawn.
    shown?.destroy?.();
    return;
  }
  page = shown;
  // Whether schedules fire (the banner): one small read, after the page's
  // own, when the browser is idle.
  afterPage(() => {
    if (run === boots) followScheduler(me);
  });
}

// The server no longer knows the caller (a 401 to any call: the session
// ended or expired, the token was revoked): the page goes, and the form
// that asks who they are comes.
onUnauthorized(() => {
  if (!signedIn) return;
  leave();
  if (token()) askToken("The server no longer accepts the token.");
  else askSignIn("Your session has ended: sign in again.");
});

// Takes down the page, the banner's reads and who was signed in.
function leave() {
  signedIn = false;
  boots++;
  page?.destroy?.();
  page = null;
  stopScheduler();
  clear(document.getElementById("who"));
  for (const a of document.querySelectorAll("[data-needs]")) a.hidden = true;
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

// Who is signed in, and how to stop: a session signs out (for every tab
// of this browser, which share its cookie); a token is forgotten by this
// tab. A session's name leads to its sessions (the Users page, which
// shows every user their own).
function showWho(me) {
  const who = document.getElementById("who");
  clear(who);
  // A caller limited to folders says which, with its role in each.
  const label = me.folders
    ? `${me.name} · ${Object.entries(me.folders).map(([f, r]) => `${f}: ${r}`).join(", ")}`
    : `${me.name} · ${me.role}`;
  if (me.via === "session") {
    const name = link("/users#sessions", label, "who-name");
    name.title = "your sessions";
    const out = button("Sign out", "small", () => leaveSession(out));
    out.id = "sign-out";
    who.append(name, out);
  } else {
    who.append(text(label, "muted who-name"));
    if (token()) {
      const forget = button("Forget token", "small", () => {
        setToken(null);
        location.reload();
      });
      forget.id = "forget-token";
      who.append(forget);
    }
  }
}

async function leaveSession(b) {
  b.disabled = true;
  try {
    await signOut();
  } catch (err) {
    // The session still holds: say so, and stay.
    console.warn(err);
    b.disabled = false;
    b.parentElement.querySelector(".who-error")?.remove();
    b.after(text(`Not signed out: ${err.message}`, "error-text who-error"));
    return;
  }
  leave();
  askSignIn("You signed out.", false);
}

// The form that asks who is asking, in place of the page: nothing else is
// shown until the server knows the caller.
function asking() {
  clear(main);
  // Classes a page gave itself, or an error's.
  main.removeAttribute("class");
  clear(document.getElementById("who"));
}

// The server does not know the caller: a name and password, sent to
// `POST /api/v1/session`, which sets the session's cookie. The server's
// refusal is shown as it says it ("wrong name or password", never which).
// Under it, the other ways in: single sign-on when the server has it (a
// link to the provider, coming back to this page), and an API token.
function askSignIn(note = null, isError = true) {
  asking();
  const form = el("form", "token-form sign-in-form");
  form.id = "sign-in-form";
  form.append(text("Sign in to joblog", null, "h1"));
  const { field, input } = formFields(form);
  const name = field("Name", input("name"));
  name.autocomplete = "username";
  name.autocapitalize = "none";
  name.required = true;
  const password = field("Password", input("password", "password"));
  password.autocomplete = "current-password";
  password.required = true;
  const go = el("button", "button primary");
  go.type = "submit";
  go.textContent = "Sign in";
  const status = el("p", "form-status");
  status.id = "sign-in-status";
  status.setAttribute("role", "status");
  const say = (what, error) => {
    status.textContent = what ?? "";
    status.classList.toggle("error-text", !!error);
  };
  say(note, isError);
  const actions = el("div", "form-actions");
  actions.append(go);
  form.append(actions, status);
  let wait = null;
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (wait) return;
    go.disabled = true;
    say("Signing in…", false);
    try {
      await signIn(name.value.trim(), password.value);
      // The session is who this tab is now, not a token kept before.
      setToken(null);
      boot();
    } catch (err) {
      password.value = "";
      go.disabled = false;
      if (err instanceof ApiError && err.status === 429 && err.retryAfter !== null) {
        wait = countdown(err.retryAfter, go, (left) =>
          say(left > 0 ? `Too many sign-ins: wait ${howLong(left)} and try again.` : "You may try again now.", left > 0),
        );
        wait.done.then(() => (wait = null));
      } else if (err instanceof ApiError && (err.status === 401 || err.status === 403 || err.status === 429)) {
        say(err.message, true);
      } else {
        say(`Error: ${err.message ?? err}`, true);
      }
      (name.value ? password : name).focus();
    }
  });
  const other = el("div", "sign-in-other");
  other.append(button("Use an API token instead", "small", () => askToken()));
  main.append(form, other);
  name.focus();
  signInOptions().then((offered) => {
    if (!offered.oidc || !other.isConnected) return;
    const back = location.pathname + location.search + location.hash;
    const sso = link(`${offered.oidc.start}?return=${encodeURIComponent(back)}`, `Sign in with ${offered.oidc.label}`, "button primary sign-in-sso");
    sso.id = "sign-in-sso";
    other.prepend(sso);
  });
}

// "42 seconds", or "15 minutes" for a long wait.
function howLong(seconds) {
  if (seconds >= 120) return `${Math.ceil(seconds / 60)} minutes`;
  return `${seconds} ${seconds === 1 ? "second" : "seconds"}`;
}

// Counts `seconds` down once a second, the button disabled meanwhile.
function countdown(seconds, go, show) {
  let left = Math.max(0, Math.ceil(seconds));
  go.disabled = left > 0;
  show(left);
  let timer;
  const done = new Promise((resolve) => {
    if (left <= 0) return resolve();
    timer = setInterval(() => {
      left -= 1;
      show(left);
      if (left <= 0 || !go.isConnected) {
        clearInterval(timer);
        go.disabled = false;
        resolve();
      }
    }, 1000);
  });
  return { done };
}

// A token instead: nothing but this form is shown until the server
// accepts one. It is kept in this tab's session storage only.
function askToken(problem) {
  asking();
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
  const other = el("div", "sign-in-other");
  other.append(
    button("Sign in with a name and password instead", "small", () => {
      setToken(null);
      askSignIn();
    }),
  );
  main.append(form, other);
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
