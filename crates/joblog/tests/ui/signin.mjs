// Signing in with a name and password. The server has a bootstrap token
// (JOBLOG_TOKEN), with which the scenario makes ada, an operator. A browser
// without a session sees the sign-in form and no data; a wrong password and
// an unknown name are refused in the same words, which name no one; the
// right password shows the job list, under an HttpOnly, SameSite=Strict
// cookie, with no token kept. A second tab of the same browser is signed in
// without asking. A state change by the cookie needs the session's CSRF
// token (403 without it or with a wrong one); the UI sends it, so its
// submit form makes a job. Sign out shows the form; the other tab's next
// call gets 401 and shows it too, and signing in there again works; a
// change made after a sign-in in another tab goes through with the new
// session's token. Too many failed sign-ins of a name: the form says how
// long to wait.

import { scenario, browser, shot, assert, URL, TOKEN, until, api, submit, finished, axe } from "./lib.mjs";

// Beside the serious and critical findings, axe holds these pages to:
const AXE_ALSO = ["label", "page-has-heading-one"];

const PASSWORD = "correct horse battery";

// Fills the sign-in form of `page` and sends it; resolves once the
// server answered (the page has yet to show what came of it).
async function signIn(page, name, password) {
  await page.fill("#sign-in-form input[name=name]", name);
  await page.fill("#sign-in-form input[name=password]", password);
  await Promise.all([
    page.waitForResponse((r) => new globalThis.URL(r.url()).pathname === "/api/v1/session" && r.request().method() === "POST"),
    page.click("#sign-in-form button[type=submit]"),
  ]);
}


const sessionCookie = async (context) => (await context.cookies()).find((c) => c.name === "joblog_session");

await scenario("signin", async (step) => {
  assert.ok(TOKEN, "this scenario needs JOBLOG_TOKEN (the bootstrap token)");
  await api("POST", "/api/v1/users", { name: "ada", password: PASSWORD, role: "operator" });
  const { id } = await submit({ name: "before-sign-in", command: ["echo", "private output"] });
  await finished(id);
  const found = [];

  const b = await browser();
  const page = await b.newPage();
  const context = page.context();
  const urls = [];
  const pageChanges = [];
  page.on("request", (r) => {
    urls.push(r.url());
    if (r.method() !== "GET") pageChanges.push({ method: r.method(), path: new globalThis.URL(r.url()).pathname, csrf: r.headers()["x-csrf-token"] });
  });

  // No session: the form, and nothing else.
  await page.goto(`${URL}/`);
  await until("the sign-in form", () => page.$("#sign-in-form"));
  const input = (name) => `#sign-in-form input[name=${name}]`;
  assert.equal(await page.getAttribute(input("name"), "autocomplete"), "username");
  assert.equal(await page.getAttribute(input("password"), "type"), "password");
  assert.equal(await page.getAttribute(input("password"), "autocomplete"), "current-password");
  assert.deepEqual(
    await page.$$eval("#sign-in-form input", (is) => is.map((i) => i.labels[0]?.querySelector(".label")?.textContent)),
    ["Name", "Password"],
    "each field under its label",
  );
  assert.equal(await page.textContent("#sign-in-form button[type=submit]"), "Sign in");
  assert.ok(await page.$(".sign-in-other button:has-text('Use an API token instead')"), "a token is one click away");
  assert.equal(await page.evaluate(() => document.activeElement?.name), "name", "the name has the focus");
  const before = await page.textContent("body");
  assert.ok(!before.includes("before-sign-in") && !before.includes("private output"), "no data without a session");
  assert.equal(await page.$("#jobs"), null);
  assert.equal(await page.textContent("#who"), "");
  assert.equal(await sessionCookie(context), undefined);
  await shot(page, "sign-in");
  found.push(...(await axe(page, "the sign-in form", AXE_ALSO)));
  step("without a session: the sign-in form, labelled for password managers, and no data");

  // Refused: a wrong password and an unknown name, in the same words.
  await signIn(page, "ada", "not the password at all");
  await until("the refusal", async () => (await page.textContent("#sign-in-status")) === "wrong name or password");
  assert.ok(await page.$eval("#sign-in-status", (e) => e.classList.contains("error-text")));
  assert.equal(await page.inputValue(input("password")), "", "a refused password is not kept in the form");
  assert.equal(await page.inputValue(input("name")), "ada", "the name stays, to try again");
  await shot(page, "sign-in-refused");
  await signIn(page, "nobody-of-that-name", "not the password at all");
  await until("the same refusal", async () => (await page.textContent("#sign-in-status")) === "wrong name or password");
  assert.equal(await page.$("#jobs"), null);
  assert.equal(await sessionCookie(context), undefined, "no cookie for a refused sign-in");
  step("a wrong password and an unknown name: both 'wrong name or password', no name told, no session");

  // Signed in: the list, by cookie.
  await signIn(page, "ada", PASSWORD);
  await until("the job list", () => page.$(`#jobs tbody tr[data-id='${id}']`));
  assert.equal(await page.textContent("#who .who-name"), "ada · operator");
  assert.ok(await page.$("#sign-out"), "a session signs out");
  assert.equal(await page.$("#forget-token"), null, "there is no token to forget");
  assert.equal(await page.evaluate(() => sessionStorage.getItem("joblog.token")), null, "no token kept");
  const cookie = await sessionCookie(context);
  assert.ok(cookie, "the session's cookie");
  assert.equal(cookie.httpOnly, true, "scripts cannot read the session's cookie");
  assert.equal(cookie.sameSite, "Strict");
  assert.equal(cookie.path, "/");
  assert.ok(!(await page.evaluate(() => document.cookie)).includes("joblog_session"));
  assert.ok(await page.isVisible("nav a[href='/submit']"), "an operator submits");
  assert.ok(await page.isHidden("nav a[href='/users']"), "an operator manages no users");
  for (const u of urls) assert.ok(!u.includes("correct") && !u.includes("horse"), `the password is in a URL: ${u}`);
  await shot(page, "signed-in");
  step("the right password: the job list, ada · operator, an HttpOnly SameSite=Strict cookie, no token");

  // A second tab of the same browser: signed in by the cookie, its CSRF
  // token from whoami.
  const tab = await b.newPage();
  const changes = [];
  tab.on("request", (r) => {
    if (r.method() !== "GET") changes.push({ method: r.method(), path: new globalThis.URL(r.url()).pathname, csrf: r.headers()["x-csrf-token"] });
  });
  await tab.goto(`${URL}/submit`);
  await until("the submit form in the second tab", () => tab.$("#submit"));
  assert.equal(await tab.$("#sign-in-form"), null, "not asked again");
  assert.equal(await tab.textContent("#who .who-name"), "ada · operator");
  step("a second tab is signed in without asking");

  // A state change by the cookie alone is refused; with the session's
  // CSRF token it is made.
  const raw = await tab.evaluate(async () => {
    const post = async (extra) => {
      const r = await fetch("/api/v1/jobs", {
        method: "POST",
        headers: { "Content-Type": "application/json", ...extra },
        body: JSON.stringify({ name: "by-hand", command: ["true"] }),
      });
      const body = await r.json().catch(() => ({}));
      return { status: r.status, code: body.error?.code ?? null };
    };
    const me = await (await fetch("/api/v1/whoami")).json();
    return {
      me,
      missing: await post({}),
      wrong: await post({ "X-CSRF-Token": "not-the-token" }),
      right: await post({ "X-CSRF-Token": me.csrf_token }),
    };
  });
  assert.equal(raw.me.via, "session", JSON.stringify(raw.me));
  assert.equal(raw.me.name, "ada");
  assert.ok(raw.me.csrf_token, "whoami gives a session its CSRF token");
  assert.deepEqual(raw.missing, { status: 403, code: "csrf_token_missing" });
  assert.deepEqual(raw.wrong, { status: 403, code: "csrf_token_invalid" });
  assert.equal(raw.right.status, 201, JSON.stringify(raw.right));
  step("by cookie, a POST without the CSRF token is 403 csrf_token_missing, a wrong one csrf_token_invalid, the right one works");

  // The UI sends it: the submit form makes a job.
  changes.length = 0;
  await tab.fill("textarea[name=body]", "echo submitted by ada");
  await tab.fill("input[name=name]", "from-a-session");
  await Promise.all([tab.waitForURL(/\/jobs\/\d+$/), tab.click("#submit button[type=submit]")]);
  const made = await finished(Number(/\/jobs\/(\d+)$/.exec(tab.url())[1]));
  assert.equal(made.name, "from-a-session");
  assert.equal(made.state, "succeeded");
  const sent = changes.find((c) => c.method === "POST" && c.path === "/api/v1/jobs");
  assert.ok(sent?.csrf, `the UI's POST carries X-CSRF-Token: ${JSON.stringify(changes)}`);
  assert.equal(sent.csrf, raw.me.csrf_token, "the session's token, from whoami");
  step("the submit page, signed in by cookie, sends the CSRF token and makes a job");

  // The second tab follows the job list; the first signs out.
  await tab.goto(`${URL}/`);
  await until("the list in the second tab", () => tab.$(`#jobs tbody tr[data-id='${made.id}']`));
  await page.click("#sign-out");
  await until("the sign-in form after signing out", () => page.$("#sign-in-form"));
  assert.equal(await page.textContent("#sign-in-status"), "You signed out.");
  assert.equal(await page.textContent("#who"), "");
  assert.equal(await page.$("#jobs"), null);
  assert.equal(await sessionCookie(context), undefined, "the cookie is cleared");
  const signOut = pageChanges.find((c) => c.method === "DELETE" && c.path === "/api/v1/session");
  assert.ok(signOut?.csrf, `Sign out is a state change, with the CSRF token: ${JSON.stringify(pageChanges)}`);
  assert.equal(signOut.csrf, raw.me.csrf_token, "the token of the sign-in's answer");
  const whoami = await page.evaluate(async () => (await fetch("/api/v1/whoami")).status);
  assert.equal(whoami, 401, "the session is over");
  await shot(page, "signed-out");
  step("Sign out: the sign-in form, the cookie cleared, whoami 401");

  // The other tab's next call (the list re-read when a job comes) is
  // refused: it shows the form, and no data.
  await submit({ name: "after-sign-out", command: ["true"] });
  await until("the other tab's sign-in form", () => tab.$("#sign-in-form"));
  assert.equal(await tab.textContent("#sign-in-status"), "Your session has ended: sign in again.");
  assert.equal(await tab.$("#jobs"), null);
  assert.equal(await tab.textContent("#who"), "");
  assert.ok(!(await tab.textContent("main")).includes("from-a-session"), "no data left on the page");
  step("the other tab's next call gets 401 and shows the sign-in form");

  // Signing in again there works, and so does the page.
  await signIn(tab, "ada", PASSWORD);
  await until("the list again", () => tab.$(`#jobs tbody tr[data-id='${made.id}']`));
  assert.equal(await tab.textContent("#who .who-name"), "ada · operator");
  assert.equal((await tab.$$("#sign-in-form")).length, 0);
  step("signed in again in the other tab: the list");

  // A sign-in in one tab replaces the cookie every tab sends: the first
  // tab's next change is refused (its CSRF token is the old session's),
  // then sent again with the new one, from whoami.
  await page.goto(`${URL}/submit`);
  await until("the submit form in the first tab", () => page.$("#submit"));
  await tab.evaluate(async (password) => {
    const r = await fetch("/api/v1/session", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name: "ada", password }),
    });
    if (!r.ok) throw new Error(`signing in again: ${r.status}`);
  }, PASSWORD);
  pageChanges.length = 0;
  await page.fill("textarea[name=body]", "echo after another sign-in");
  await page.fill("input[name=name]", "after-another-sign-in");
  await Promise.all([page.waitForURL(/\/jobs\/\d+$/), page.click("#submit button[type=submit]")]);
  const again = await finished(Number(/\/jobs\/(\d+)$/.exec(page.url())[1]));
  assert.equal(again.name, "after-another-sign-in");
  const posts = pageChanges.filter((c) => c.method === "POST" && c.path === "/api/v1/jobs");
  assert.equal(posts.length, 2, `refused once, then made: ${JSON.stringify(posts)}`);
  assert.notEqual(posts[0].csrf, posts[1].csrf, "the second with the new session's token");
  assert.equal((await api("GET", `/api/v1/jobs?name=after-another-sign-in`)).jobs.length, 1, "one job made");
  step("after a sign-in in another tab, a change is sent again with the new session's CSRF token");
  await page.click("#sign-out");
  await until("the sign-in form", () => page.$("#sign-in-form"));

  // Too many failures of one name: the form says how long to wait (the
  // answer's Retry-After) and keeps Sign in disabled meanwhile.
  for (let i = 0; i < 5; i++) {
    const res = await fetch(`${URL}/api/v1/session`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name: "mallory", password: `guess number ${i}` }),
    });
    assert.equal(res.status, 401);
  }
  await signIn(page, "mallory", "one guess too many");
  await until("the wait", async () => /^Too many sign-ins: wait \d+ (seconds|minutes) and try again\.$/.test(await page.textContent("#sign-in-status")));
  assert.ok(await page.$eval("#sign-in-form button[type=submit]", (b) => b.disabled), "Sign in waits too");
  await shot(page, "sign-in-throttled");
  step("too many failed sign-ins: the form says how long to wait, and Sign in waits");

  assert.deepEqual(found, [], `axe found:\n${found.join("\n")}`);
  // The refusals were the point: 401s of the sign-in and of the ended
  // session, 403s of the POSTs without a good CSRF token, the 429.
  b.problems.splice(0, b.problems.length, ...b.problems.filter((p) => !/\b(401|403|429)\b/.test(p)));
  await b.close();
});
