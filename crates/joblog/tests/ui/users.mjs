// The Users page. The server has a bootstrap token (JOBLOG_TOKEN), with
// which the scenario makes grace, an admin; she signs in at /users. Through
// the page she adds linus (a too short password and a taken name refused
// in the API's words, the field marked), makes him a viewer, disables him
// (he cannot sign in) and enables him, resets his password (asked in the
// page: the old one is refused, the new one works), lists his sessions and
// signs them out, and deletes him (asked in the page first; Keep keeps
// him); each step is checked in the table and through the API. Her own
// sessions: the current one marked, another signed out from the page, then
// her own, which shows the sign-in form. A viewer's /users is only their
// own sessions. axe runs on the page, with and without the password form.

import { scenario, browser, shot, assert, URL, TOKEN, until, api, axe } from "./lib.mjs";

// Beside the serious and critical findings, axe holds these pages to:
const AXE_ALSO = ["label", "page-has-heading-one"];

const ADMIN_PASSWORD = "grace hopper's compiler";
const FIRST = "a long enough password";
const SECOND = "a brand new password";

// Signs in by the API, outside the browser: the status, the error code
// and the session's cookie (`joblog_session=…`).
async function signInByApi(name, password) {
  const res = await fetch(`${URL}/api/v1/session`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ name, password }),
  });
  const body = await res.json().catch(() => null);
  const cookie = res.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .find((c) => c.startsWith("joblog_session=") && c !== "joblog_session=");
  return { status: res.status, code: body?.error?.code ?? null, cookie };
}

// whoami's status with a cookie: 200 while its session lasts.
async function whoamiWith(cookie) {
  return (await fetch(`${URL}/api/v1/whoami`, { headers: { Cookie: cookie } })).status;
}

// Fills the sign-in form and sends it.
async function signIn(page, name, password) {
  await until("the sign-in form", () => page.$("#sign-in-form"));
  await page.fill("#sign-in-form input[name=name]", name);
  await page.fill("#sign-in-form input[name=password]", password);
  await page.click("#sign-in-form button[type=submit]");
}

// The users' table as shown.
async function users(page) {
  return page.$$eval("#users tbody tr[data-name]", (trs) =>
    trs.map((tr) => ({
      name: tr.dataset.name,
      role: tr.querySelector("select").value,
      roleLocked: tr.querySelector("select").disabled,
      status: tr.querySelector("td.user-status").textContent,
      created: tr.querySelector("td.created").textContent,
      createdAt: tr.querySelector("td.created").title,
      last: tr.querySelector("td.last-sign-in").textContent,
      buttons: [...tr.querySelectorAll("button")].map((b) => b.textContent),
    })),
  );
}
const shown = async (page, name) => (await users(page)).find((u) => u.name === name);
const stored = async (name) => (await api("GET", "/api/v1/users")).users.find((u) => u.name === name);

// The sessions' table as shown.
async function sessions(page) {
  return page.$$eval("#sessions-table tbody tr[data-id]", (trs) =>
    trs.map((tr) => ({ id: tr.dataset.id, current: tr.classList.contains("current"), text: tr.textContent })),
  );
}


await scenario("users", async (step) => {
  assert.ok(TOKEN, "this scenario needs JOBLOG_TOKEN (the bootstrap token)");
  await api("POST", "/api/v1/users", { name: "grace", password: ADMIN_PASSWORD, role: "admin" });
  const found = [];
  const b = await browser();
  const page = await b.newPage();
  const row = (name) => `#users tr[data-name='${name}']`;
  const note = async () => page.textContent("#user-action");

  // Signed in at /users, the page comes.
  await page.goto(`${URL}/users`);
  await signIn(page, "grace", ADMIN_PASSWORD);
  await until("the users", () => page.$(row("grace")));
  assert.equal(await page.textContent("h1"), "Users");
  assert.ok(await page.isVisible("nav a[href='/users']"), "Users in the top bar, for an admin");
  const grace = await shown(page, "grace");
  assert.equal(grace.role, "admin");
  assert.equal(grace.status, "active");
  assert.equal(grace.roleLocked, true, "her own role is another admin's to change");
  assert.deepEqual(grace.buttons, ["Reset password", "Sessions"], "no Disable or Delete of herself");
  assert.match(grace.created, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (UTC|[+-]\d\d:\d\d) /);
  assert.equal(grace.createdAt, (await stored("grace")).created_at, "the time as the API gives it, on hover");
  assert.notEqual(grace.last, "never", "she has just signed in");
  assert.match(await page.textContent("#users-status"), /^1 user$/);
  const mine = await sessions(page);
  assert.equal(mine.length, 1, JSON.stringify(mine));
  assert.equal(mine[0].current, true, "this browser's session is marked");
  assert.match(mine[0].text, /this session/);
  assert.equal(await page.textContent("#sessions-title"), "Your sessions");
  await shot(page, "users");
  found.push(...(await axe(page, "users", AXE_ALSO)));
  step("signed in as an admin at /users: her row (no Disable or Delete of herself) and her session, marked");

  // Add a user: refusals in the API's words, then made.
  const form = (name) => `#user-form [name="${name}"]`;
  await page.fill(form("name"), "linus");
  await page.fill(form("password"), "short");
  await page.selectOption(form("role"), "operator");
  await page.click("#user-form button[type=submit]");
  await until("the refusal", async () => /12 characters/.test(await page.textContent("#user-form-status")));
  assert.ok(await page.$eval(form("password"), (i) => i.classList.contains("invalid")), "the password is marked");
  assert.equal(await page.$(row("linus")), null);
  await page.fill(form("password"), FIRST);
  await page.click("#user-form button[type=submit]");
  await until("linus's row", () => page.$(row("linus")));
  assert.equal(await page.textContent("#user-form-status"), "Added linus.");
  assert.equal(await note(), "Added linus, an operator.");
  assert.equal(await page.inputValue(form("name")), "", "the form is emptied");
  assert.equal(await page.inputValue(form("password")), "");
  const linus = await shown(page, "linus");
  assert.deepEqual([linus.role, linus.status, linus.last], ["operator", "active", "never"]);
  assert.deepEqual(linus.buttons, ["Disable", "Reset password", "Sessions", "Delete"]);
  const kept = await stored("linus");
  assert.deepEqual([kept.role, kept.disabled, kept.last_sign_in_at], ["operator", false, null]);
  assert.match(await page.textContent("#users-status"), /^2 users$/);
  step("a user added through the form, after a too short password was refused");

  await page.fill(form("name"), "linus");
  await page.fill(form("password"), FIRST);
  await page.click("#user-form button[type=submit]");
  await until("the taken name's refusal", () => page.$("#user-form-status.error-text"));
  assert.ok(await page.$eval(form("name"), (i) => i.classList.contains("invalid")), "the name is marked");
  assert.equal((await users(page)).filter((u) => u.name === "linus").length, 1);
  await page.fill(form("name"), "");
  await page.fill(form("password"), "");
  step("a taken name is refused, the name marked");

  // His role.
  await page.selectOption(`${row("linus")} select`, "viewer");
  await until("linus a viewer", async () => (await stored("linus")).role === "viewer");
  await until("the row redrawn", async () => (await note()) === "linus is now a viewer.");
  assert.equal((await shown(page, "linus")).role, "viewer");
  step("his role changed by its select");

  // Disabled: he cannot sign in; enabled again, he can.
  await page.click(`${row("linus")} button.toggle-disabled`);
  await until("linus disabled", async () => (await shown(page, "linus"))?.status === "disabled");
  assert.equal((await stored("linus")).disabled, true);
  assert.equal(await note(), "Disabled linus: they cannot sign in until enabled.");
  assert.deepEqual((await shown(page, "linus")).buttons, ["Enable", "Reset password", "Sessions", "Delete"]);
  assert.match(await page.textContent("#users-status"), /^2 users, 1 disabled$/);
  const refused = await signInByApi("linus", FIRST);
  assert.deepEqual([refused.status, refused.code], [403, "user_disabled"]);
  await shot(page, "users-disabled");
  await page.click(`${row("linus")} button.toggle-disabled`);
  await until("linus enabled", async () => (await shown(page, "linus"))?.status === "active");
  assert.equal((await stored("linus")).disabled, false);
  const first = await signInByApi("linus", FIRST);
  assert.equal(first.status, 200, JSON.stringify(first));
  assert.ok(first.cookie, "a session's cookie");
  step("disabled, he cannot sign in (403 user_disabled); enabled, he can");

  // A new password, asked in the page.
  await page.click(`${row("linus")} button.reset-password`);
  await until("the password form", () => page.$("#reset-password-form"));
  assert.equal(
    await page.$eval("#reset-password-form", (f) => f.closest("tr").previousElementSibling.dataset.name),
    "linus",
    "the form is under his row",
  );
  const newPassword = "#reset-password-form input[type=password]";
  assert.equal(await page.evaluate(() => document.activeElement?.type), "password", "its field has the focus");
  assert.equal(await page.getAttribute(newPassword, "autocomplete"), "new-password");
  found.push(...(await axe(page, "users, resetting a password", AXE_ALSO)));
  await page.fill(newPassword, "short");
  await page.click("#reset-password-form button[type=submit]");
  await until("the refusal", async () => /12 characters/.test(await page.textContent("#reset-password-status")));
  await page.fill(newPassword, SECOND);
  await shot(page, "users-reset-password");
  await page.click("#reset-password-form button[type=submit]");
  await until("the form gone", async () => (await page.$("#reset-password-form")) === null);
  assert.equal(await note(), "Set a new password for linus.");
  const old = await signInByApi("linus", FIRST);
  assert.deepEqual([old.status, old.code], [401, "sign_in_failed"], "the old password is refused");
  const second = await signInByApi("linus", SECOND);
  assert.equal(second.status, 200, JSON.stringify(second));
  step("Reset password: asked in the page, a short one refused; the old password no longer works, the new one does");

  // His sessions, listed by an admin and signed out from the page.
  await page.click(`${row("linus")} button.show-sessions`);
  await until("his sessions", async () => (await page.textContent("#sessions-title")) === "Sessions of linus");
  await until("their rows", async () => (await sessions(page)).length > 0);
  const his = await sessions(page);
  assert.ok(his.every((s) => !s.current), "none of his is this browser's");
  assert.equal(his.length, (await api("GET", "/api/v1/sessions?user=linus")).sessions.length);
  assert.ok(await page.isVisible("#show-my-sessions"));
  for (let left = his.length; left > 0; left--) {
    await page.click("#sessions-table tbody tr[data-id] button.end-session");
    await until(`${left - 1} of his sessions left`, async () => (await sessions(page)).length === left - 1);
  }
  assert.equal((await api("GET", "/api/v1/sessions?user=linus")).sessions.length, 0);
  assert.equal(await whoamiWith(second.cookie), 401, "his session is over");
  step(`an admin lists his sessions (${his.length}) and signs them out; his cookie is refused`);

  // Deleted, asked first; Keep keeps him.
  await page.click(`${row("linus")} button.delete-user`);
  await until("the question", () => page.$("#confirm-delete-user"));
  assert.equal(await page.textContent(`${row("linus")} + tr.user-extra .confirm`), "Delete the user linus? They can no longer sign in. Delete user Keep");
  await page.click("#keep-user");
  assert.equal(await page.$("#confirm-delete-user"), null, "Keep keeps him");
  assert.ok(await stored("linus"));
  await page.click(`${row("linus")} button.delete-user`);
  await page.click("#confirm-delete-user");
  await until("his row gone", async () => (await page.$(row("linus"))) === null);
  assert.equal(await note(), "Deleted the user linus.");
  assert.equal(await stored("linus"), undefined);
  assert.match(await page.textContent("#users-status"), /^1 user$/);
  assert.equal((await signInByApi("linus", SECOND)).status, 401);
  // His sessions were shown: the section is hers again.
  await until("her sessions again", async () => (await page.textContent("#sessions-title")) === "Your sessions");
  assert.equal(await page.isVisible("#show-my-sessions"), false);
  step("Delete asks in the page; Keep keeps him, Delete user deletes him");

  // Her own sessions: another one (signed in elsewhere, read when the
  // page is) signed out from here, then this one.
  const elsewhere = await signInByApi("grace", ADMIN_PASSWORD);
  assert.equal(elsewhere.status, 200);
  await page.reload();
  await until("her two sessions", async () => (await sessions(page)).length === 2);
  assert.equal(await page.textContent("#sessions-title"), "Your sessions");
  const two = await sessions(page);
  assert.deepEqual(two.map((s) => s.current).sort(), [false, true]);
  await shot(page, "sessions");
  await page.click("#sessions-table tbody tr[data-id]:not(.current) button.end-session");
  await until("one left", async () => (await sessions(page)).length === 1);
  assert.equal((await sessions(page))[0].current, true);
  assert.match(await page.textContent("#session-action"), /^Signed out the session from /);
  assert.equal(await whoamiWith(elsewhere.cookie), 401, "that session is over");
  assert.ok(await page.$(row("grace")), "and this one goes on");
  await page.click("#sessions-table tbody tr.current button.end-session");
  await until("the sign-in form", () => page.$("#sign-in-form"));
  assert.equal(await page.textContent("#who"), "");
  assert.equal(await page.$("#users"), null, "no users left on the page");
  step("her sessions: another signed out from the page, then this one, which shows the sign-in form");

  // A viewer's /users: only their own sessions.
  await api("POST", "/api/v1/users", { name: "vera", password: FIRST, role: "viewer" });
  await signIn(page, "vera", FIRST);
  await until("her sessions", async () => (await sessions(page)).length === 1);
  assert.equal(await page.textContent("h1"), "Your sessions");
  assert.equal(await page.$("#users"), null, "no users for a viewer");
  assert.equal(await page.$("#user-form"), null);
  assert.ok(await page.isHidden("nav a[href='/users']"));
  assert.equal((await sessions(page))[0].current, true);
  found.push(...(await axe(page, "a viewer's sessions", AXE_ALSO)));
  step("a viewer's /users is their own sessions, nothing else");

  assert.deepEqual(found, [], `axe found:\n${found.join("\n")}`);
  // The refusals were the point: 400 (a short password), 409 (a taken
  // name), 401 (the sign-in form at the start and after signing out).
  b.problems.splice(0, b.problems.length, ...b.problems.filter((p) => !/\b(400|401|409)\b/.test(p)));
  await b.close();
});
