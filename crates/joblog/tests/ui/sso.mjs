// Single sign-on in the browser, through a real OpenID provider
// (oidc-provider.mjs, started by the Rust test; its issuer in
// JOBLOG_OIDC_ISSUER). The sign-in page offers "Sign in with Test
// provider"; the person opened a job's page, so that is where they come
// back to, signed in as alice · operator, with the session's cookie (no
// token). A second tab shares the session; Sign out ends it. Bob, an admin
// by his group, sees alice on the Users page as a single sign-on user with
// no password to reset. Carol, whose group maps to no role, gets a page
// saying so and no session; the page's way back leads to the sign-in form.

import { scenario, browser, shot, assert, URL, until, submit, finished, axe } from "./lib.mjs";

const ISSUER = process.env.JOBLOG_OIDC_ISSUER;
const AXE_ALSO = ["label", "page-has-heading-one"];

const sessionCookie = async (context) => (await context.cookies()).find((c) => c.name === "joblog_session");

// From joblog's sign-in page through the provider's login as `who`.
async function throughProvider(page, who) {
  await until("the single sign-on button", () => page.$("#sign-in-sso"));
  await Promise.all([page.waitForURL((u) => u.href.startsWith(ISSUER)), page.click("#sign-in-sso")]);
  await page.fill("input[name=login]", who);
  await Promise.all([page.waitForURL((u) => u.href.startsWith(URL)), page.click("button[type=submit]")]);
}

await scenario("sso", async (step) => {
  assert.ok(ISSUER, "this scenario needs JOBLOG_OIDC_ISSUER");
  const { id } = await submit({ name: "seen-after-sso", command: ["echo", "hello from a job"] });
  await finished(id);
  const found = [];

  const b = await browser();
  const page = await b.newPage();
  const context = page.context();

  await page.goto(`${URL}/jobs/${id}`);
  await until("the sign-in form", () => page.$("#sign-in-form"));
  await until("the single sign-on button", () => page.$("#sign-in-sso"));
  assert.equal(await page.textContent("#sign-in-sso"), "Sign in with Test provider");
  const href = await page.getAttribute("#sign-in-sso", "href");
  assert.equal(href, `/api/v1/session/oidc?return=${encodeURIComponent(`/jobs/${id}`)}`);
  await shot(page, "sign-in-sso");
  found.push(...(await axe(page, "the sign-in form with single sign-on", AXE_ALSO)));
  step("the sign-in page offers 'Sign in with Test provider', coming back to the job's page");

  await throughProvider(page, "alice");
  await until("the job's page", () => page.$("#download"));
  assert.equal(new globalThis.URL(page.url()).pathname, `/jobs/${id}`);
  await until("who is signed in", async () => (await page.textContent("#who .who-name")) === "alice · operator");
  const cookie = await sessionCookie(context);
  assert.ok(cookie && cookie.httpOnly && cookie.sameSite === "Strict", JSON.stringify(cookie));
  assert.equal(await page.evaluate(() => sessionStorage.length), 0, "no token kept");
  await until("the job's output", async () => (await page.textContent("body")).includes("hello from a job"));
  await shot(page, "signed-in-by-sso");
  step("through the provider's login: back on the job's page as alice · operator, by an HttpOnly cookie");

  const tab = await context.newPage();
  await tab.goto(`${URL}/`);
  await until("the list in a second tab", () => tab.$("#jobs"));
  assert.equal(await tab.textContent("#who .who-name"), "alice · operator");
  await tab.close();
  step("a second tab shares the session");

  await page.click("#sign-out");
  await until("the sign-in form", () => page.$("#sign-in-form"));
  assert.equal(await sessionCookie(context), undefined, "signed out");
  step("Sign out: the sign-in form, the cookie cleared");

  // Bob, an admin by his group, sees alice on the Users page as made by
  // single sign-on, with no password to reset.
  const b3 = await browser();
  const admin = await b3.newPage();
  await admin.goto(`${URL}/users`);
  await throughProvider(admin, "bob");
  await until("the users", () => admin.$("tr[data-name=alice]"));
  assert.equal(await admin.textContent("#who .who-name"), "bob · admin");
  assert.equal(await admin.textContent("tr[data-name=alice] .badge.sso"), "single sign-on");
  assert.equal(await admin.$("tr[data-name=alice] .reset-password"), null, "no password to reset");
  await shot(admin, "users-sso");
  // The 401s of the page asking who is there, before bob signed in.
  b3.problems.splice(0, b3.problems.length, ...b3.problems.filter((p) => !/\b401\b/.test(p)));
  await b3.close();
  step("bob, admin by his group: alice listed as single sign-on, with no password to reset");

  // Carol, at a browser of her own (the provider remembers alice here).
  const b2 = await browser();
  const other = await b2.newPage();
  await other.goto(`${URL}/`);
  await until("the sign-in form", () => other.$("#sign-in-form"));
  await throughProvider(other, "carol");
  await until("the refusal page", () => other.$("main.sign-in-failed"));
  assert.equal(await other.textContent("h1"), "You have no role in joblog");
  assert.ok((await other.textContent("main")).includes("sales"));
  assert.equal(await sessionCookie(other.context()), undefined, "no session");
  await shot(other, "sso-no-role");
  found.push(...(await axe(other, "the no-role page", AXE_ALSO)));
  await other.click("text=Back to sign in");
  await until("the sign-in form again", () => other.$("#sign-in-form"));
  step("carol, whose group maps to no role: a page saying so, no session, and the way back");

  // Expected: the 401s of the pages asking who is there before anyone
  // signed in, and the refusal page's 403.
  const expected = (p) => /\b(401|403)\b/.test(p);
  for (const x of [b, b2]) x.problems.splice(0, x.problems.length, ...x.problems.filter((p) => !expected(p)));
  await b.close();
  await b2.close();
  assert.deepEqual(found, [], `axe found:\n${found.join("\n")}`);
});
