// The Notifications page (the Rust test started a receiver, whose URL is
// JOBLOG_RECEIVER, and a server that may send to loopback): a rule with no
// state checked is refused in the API's words naming the field; a rule
// made through the form is listed with its web hook as scheme and host
// only, and Send test delivers to the receiver; a rule to a port nobody
// answers says why its test failed. A failing job's end shows on its page
// (live, as it ends) and in each rule's last deliveries; Disable and
// Delete work in the page; a rule named with HTML shows as text; axe finds
// nothing serious; a viewer gets a clear refusal and the job's page still.
// The Rust test then checks what the receiver got.

import { scenario, browser, shot, assert, URL, until, api, submit, finished, axe } from "./lib.mjs";

const HOOK = process.env.JOBLOG_RECEIVER;
assert.ok(HOOK && HOOK.endsWith("/hook"), "JOBLOG_RECEIVER names the test's receiver");
// Nobody listens on port 1: every try is refused.
const NOWHERE = "http://127.0.0.1:1/nobody/listens?key=k3y";
const HOSTILE = "<img src=x onerror=alert(1)>";

const f = (name) => `#rule-form [name="${name}"]`;
const box = (state) => `#rule-form input[name="when.states"][value="${state}"]`;
const status = (page) => page.textContent("#rule-form-status");

// The rules as listed: name, facts, the buttons' note and deliveries.
async function listed(page) {
  return page.$$eval("#rules article.rule", (rs) =>
    rs.map((r) => ({
      id: Number(r.dataset.id),
      title: r.querySelector("h2").textContent,
      facts: [...r.querySelectorAll(".head-facts .fact")].map((e) => e.textContent),
      note: r.querySelector(".action-status").textContent,
      deliveries: [...r.querySelectorAll("table.deliveries tbody tr")].map((tr) => ({
        state: tr.children[0].textContent,
        job: tr.children[1].textContent,
        href: tr.children[1].querySelector("a")?.getAttribute("href") ?? null,
        tries: tr.children[2].textContent,
        error: tr.children[3].textContent,
      })),
    })),
  );
}

const rule = async (page, name) => (await listed(page)).find((r) => r.title.includes(` ${name} `));

// axe (these rules besides the serious and critical), and one h1 a page.
async function checked(page, name, problems) {
  problems.push(...(await axe(page, name, ["page-has-heading-one", "label", "empty-table-header"])));
  const h1s = await page.$$eval("h1", (h) => h.length);
  if (h1s !== 1) problems.push(`${name}: ${h1s} h1 elements, not one`);
}

await scenario("notifications", async (step) => {
  const b = await browser();
  const page = await b.newPage();
  await page.goto(`${URL}/`);
  await until("the admin's links", () => page.isVisible('nav a[href="/notifications"]'));
  await Promise.all([page.waitForURL(/\/notifications$/), page.click('nav a[href="/notifications"]')]);
  await until("the empty list", () => page.$("#no-rules"));
  assert.equal(await page.title(), "Notifications · joblog");
  step("an admin gets the link and an empty list");

  // No state checked: the API's refusal, naming the field, beside the
  // button; the states' box marked.
  assert.deepEqual(
    await page.$$eval('#rule-form input[name="when.states"]:checked', (bs) => bs.map((b) => b.value)),
    ["failed", "timed_out", "interrupted"],
    "the ways a job goes wrong, unless changed",
  );
  await page.fill(f("name"), "failures");
  await page.fill(f("when.name"), "notify-*");
  await page.fill(f("webhook.url"), HOOK);
  for (const s of ["failed", "timed_out", "interrupted"]) await page.uncheck(box(s));
  await page.click("#rule-form button[type=submit]");
  await until("the refusal", async () => /when\.states/.test(await status(page)));
  assert.match(await status(page), /^Error: when\.states: empty/);
  assert.ok(await page.$eval("#rule-states", (e) => e.classList.contains("invalid")), "the states are marked");
  assert.equal(await page.getAttribute(box("failed"), "aria-invalid"), "true");
  assert.equal((await api("GET", "/api/v1/notifications")).rules.length, 0, "nothing made");
  // A bad URL names its field too.
  await page.check(box("failed"));
  await page.fill(f("webhook.url"), "ftp://files.example.com/x");
  await page.click("#rule-form button[type=submit]");
  await until("the URL refused", async () => /^Error: webhook\.url: not an http or https URL/.test(await status(page)));
  assert.ok(await page.$eval(f("webhook.url"), (e) => e.classList.contains("invalid")), "the URL is marked");
  assert.ok(!(await page.$eval("#rule-states", (e) => e.classList.contains("invalid"))), "the states no longer");
  await shot(page, "notifications-refused");
  step("no state checked, then a bad URL: refused in the API's words, the field marked");

  // Made through the form: listed, its hook as scheme and host only.
  await page.check(box("timed_out"));
  await page.fill(f("webhook.url"), HOOK);
  await page.click("#rule-form button[type=submit]");
  await until("the rule listed", async () => (await rule(page, "failures")) !== undefined);
  const made = (await api("GET", "/api/v1/notifications")).rules;
  assert.equal(made.length, 1);
  assert.deepEqual(made[0].when, { states: ["failed", "timed_out"], name: "notify-*", schedule_id: null });
  assert.equal(made[0].webhook.url, HOOK);
  assert.equal(made[0].webhook.format, "json");
  const failures = made[0].id;
  let shown = await rule(page, "failures");
  const host = HOOK.replace(/\/hook$/, "");
  assert.deepEqual(shown.facts, ["when failed, timed out", "jobs notify-*", `to web hook ${host}/… (json)`]);
  assert.match(shown.title, /^enabled failures #\d+$/);
  assert.match(await status(page), /^Added the rule "failures"/);
  assert.equal(await page.inputValue(f("name")), "", "the form is cleared");
  assert.ok(await page.isChecked(box("failed")), "to its defaults");
  assert.equal(await page.evaluate(() => document.activeElement?.closest("article")?.id), `rule-${failures}`, "focus on the new rule");
  step("the form made the rule it says; the list shows its hook's host, not its path");

  // Send test: delivered to the receiver (an example job: none failed yet).
  await page.click(`#rule-${failures} .send-test`);
  await until("the test's outcome", async () => /^Test /.test((await rule(page, "failures")).note));
  assert.equal((await rule(page, "failures")).note, "Test delivered (HTTP 200), telling of an example job.");
  step("Send test: delivered (HTTP 200)");

  // A second rule, to nowhere, in Slack's format: its test says why not.
  await page.fill(f("name"), "nowhere");
  await page.fill(f("webhook.url"), NOWHERE);
  await page.selectOption(f("webhook.format"), "slack");
  await page.click("#rule-form button[type=submit]");
  await until("the second rule", async () => (await rule(page, "nowhere")) !== undefined);
  const nowhere = (await rule(page, "nowhere")).id;
  assert.deepEqual((await rule(page, "nowhere")).facts, ["when failed, timed out, interrupted", "jobs any", "to web hook http://127.0.0.1:1/… (slack)"]);
  await page.click(`#rule-${nowhere} .send-test`);
  await until("its test's outcome", async () => /^Test /.test((await rule(page, "nowhere")).note));
  const note = (await rule(page, "nowhere")).note;
  assert.match(note, /^Test not delivered: .+, telling of an example job\.$/);
  // The server keeps no URL in a delivery's error (a hook's path is its
  // credential); the page would cut one to its host all the same.
  assert.ok(!note.includes("k3y") && !note.includes("/nobody"), "no hook path in the error");
  assert.ok(await page.$eval(`#rule-${nowhere} .test-result`, (e) => e.classList.contains("error-text")));
  step(`a rule to a closed port: ${note}`);

  // A rule named with HTML (made through the API): text.
  const evil = await api("POST", "/api/v1/notifications", {
    name: HOSTILE,
    when: { states: ["succeeded"], name: "<b>never</b>" },
    webhook: { url: `${host}/evil/<script>` },
  });
  await page.reload();
  await until("three rules", async () => (await listed(page)).length === 3);
  const hostile = await rule(page, HOSTILE);
  assert.deepEqual(hostile.facts, ["when succeeded", "jobs <b>never</b>", `to web hook ${host}/… (json)`]);
  assert.equal(await page.$$eval("#rules img, #rules b, #rules script", (x) => x.length), 0, "no element made of a rule");
  // No rule's path or query is anywhere in the page.
  const body = await page.textContent("body");
  for (const secret of ["/hook", "/nobody", "k3y", "/evil"]) assert.ok(!body.includes(secret), `${secret} shown`);
  const attrs = await page.$$eval("#rules *", (es) => es.flatMap((e) => [...e.attributes].map((a) => a.value)).join(" "));
  for (const secret of ["/hook", "/nobody", "k3y", "/evil"]) assert.ok(!attrs.includes(secret), `${secret} in an attribute`);
  step("a name and pattern of HTML show as text; no hook's path or query is in the page");

  // A failing job: its page, open as it runs, shows what was sent when
  // it ends.
  const { id } = await submit({ name: "notify-fail", script: "sleep 1; echo 'it broke' >&2; exit 3" });
  const jobPage = await b.newPage();
  await jobPage.goto(`${URL}/jobs/${id}`);
  await until("its header", () => jobPage.$(".job-head h1"));
  assert.ok(await jobPage.isHidden("#job-notifications"), "nothing while it runs");
  await until(
    "its notifications, one delivered and one tried",
    async () => {
      const items = await jobPage.$$eval("#job-notifications li", (ls) => ls.map((l) => [l.dataset.state, !!l.querySelector(".dl-error")]));
      if (items.length === 2 && items[0][0] === "delivered" && items[1][1]) return true;
      // What the page shows, and what the API says meanwhile.
      throw new Error(`${JSON.stringify(items)}; the API: ${JSON.stringify(await api("GET", `/api/v1/jobs/${id}/notifications`))}`);
    },
    // The page reads at least every 15 s while one is pending (a read
    // while a sender holds one shows it pending, its next try two minutes
    // off: the lease).
    30000,
  );
  const items = await jobPage.$$eval("#job-notifications li", (ls) =>
    ls.map((l) => ({ text: l.textContent, href: l.querySelector("a")?.getAttribute("href") })),
  );
  assert.match(items[0].text, new RegExp(`^rule #${failures} delivered · 1 attempt · HTTP 200 · \\d{4}-`));
  assert.equal(items[0].href, `/notifications#rule-${failures}`);
  assert.match(items[1].text, new RegExp(`^rule #${nowhere} (pending|failed) · \\d+ attempts? · .*Connection refused`));
  // No URL in the error: the server strips it (a hook's path is its
  // credential).
  assert.ok(!items[1].text.includes("/nobody"), items[1].text);
  assert.ok(!(await jobPage.textContent("body")).includes("k3y"), "no hook's path or query on the job's page");
  assert.equal((await finished(id)).state, "failed");
  step(`the job's page, open as it ended: ${items.map((i) => i.text).join(" | ")}`);

  // Its deliveries on the Notifications page: one delivered, one tried.
  await page.reload();
  await until("the delivered one", async () => (await rule(page, "failures")).deliveries[0]?.state === "delivered");
  shown = await rule(page, "failures");
  assert.deepEqual(shown.deliveries, [{ state: "delivered", job: `#${id}`, href: `/jobs/${id}`, tries: "1 attempt · HTTP 200", error: "" }]);
  await until("the tried one", async () => (await rule(page, "nowhere")).deliveries[0]?.error !== undefined);
  const tried = (await rule(page, "nowhere")).deliveries;
  assert.equal(tried.length, 1);
  assert.equal(tried[0].href, `/jobs/${id}`);
  assert.match(tried[0].state, /^(pending|failed)$/);
  assert.match(tried[0].tries, /^\d+ attempts?$/);
  assert.notEqual(tried[0].error, "", "its error is shown");
  assert.deepEqual((await rule(page, HOSTILE)).deliveries, [], "the HTML one matched nothing");
  step(`each rule's last deliveries: ${JSON.stringify(tried[0])}`);

  // Send test again: now of the job that failed.
  await page.click(`#rule-${failures} .send-test`);
  await until("the test of the job", async () => (await rule(page, "failures")).note.includes(`job #${id}`));
  assert.equal((await rule(page, "failures")).note, `Test delivered (HTTP 200), telling of job #${id}.`);
  await shot(page, "notifications");
  await jobPage.bringToFront();
  await shot(jobPage, "job-notifications");
  step("a second test tells of the failed job");

  const problems = [];
  await checked(page, "notifications", problems);
  await checked(jobPage, "job with notifications", problems);
  assert.deepEqual(problems, [], `axe found:\n${problems.join("\n")}`);
  step("axe: nothing serious on the page or the job's, light and dark");

  // The job's page links each rule to its block on the Notifications page.
  await Promise.all([jobPage.waitForURL(/\/notifications#rule-\d+$/), jobPage.click(`#job-notifications a[href="/notifications#rule-${nowhere}"]`)]);
  await until("the linked rule focused", async () =>
    (await jobPage.evaluate(() => document.activeElement?.closest("article")?.id)) === `rule-${nowhere}`);
  step("a rule's link on the job's page lands on its block");

  // Disable, then Delete (asked in the page).
  await page.bringToFront();
  await page.click(`#rule-${nowhere} .toggle-enabled`);
  await until("disabled", async () => (await rule(page, "nowhere")).title.startsWith("disabled"));
  assert.equal(await page.textContent(`#rule-${nowhere} .toggle-enabled`), "Enable");
  assert.equal((await api("GET", `/api/v1/notifications/${nowhere}`)).enabled, false);
  await page.click(`#rule-${evil.id} .delete`);
  await until("the question", () => page.$(`#rule-${evil.id} .confirm-delete`));
  await page.click(`#rule-${evil.id} .action-status button:not(.confirm-delete)`);
  assert.equal(await page.$(`#rule-${evil.id} .confirm-delete`), null, "Keep keeps it");
  await page.click(`#rule-${evil.id} .delete`);
  await page.click(`#rule-${evil.id} .confirm-delete`);
  await until("two rules", async () => (await listed(page)).length === 2);
  assert.match(await page.textContent("#rules-status"), /^Deleted the rule "<img src=x onerror=alert\(1\)>" · 2 rules$/);
  assert.equal((await fetch(`${URL}/api/v1/notifications/${evil.id}`)).status, 404);
  step("Disable and Delete, asked in the page");

  // A job no rule tells of shows no section.
  const quiet = await submit({ name: "notify-quiet", command: ["true"] });
  await finished(quiet.id);
  await jobPage.goto(`${URL}/jobs/${quiet.id}`);
  await until("its header", () => jobPage.$(".job-head h1"));
  assert.ok(await jobPage.isHidden("#job-notifications"), "no section when nothing was sent");
  step("a job nothing was sent of has no Notifications section");

  // A viewer: no link, a clear refusal, and the job's page with rule ids.
  const viewer = (await api("POST", "/api/v1/tokens", { name: "notify-viewer", role: "viewer" })).token;
  const as = await b.newPage();
  await as.addInitScript((t) => sessionStorage.setItem("joblog.token", t), viewer);
  await as.goto(`${URL}/notifications`);
  await until("the refusal", () => as.$("#not-allowed"));
  assert.match(await as.textContent("#not-allowed"), /^Not allowed: notification rules are an administrator's .* this token is a viewer's/);
  assert.equal(await as.$("#rule-form"), null, "no form");
  assert.ok(await as.isHidden('nav a[href="/notifications"]'), "no link");
  const refused = await fetch(`${URL}/api/v1/notifications`, { headers: { Authorization: `Bearer ${viewer}` } });
  assert.equal(refused.status, 403, "the API refuses it too");
  await checked(as, "notifications refused", problems);
  assert.deepEqual(problems, [], `axe found:\n${problems.join("\n")}`);
  await as.goto(`${URL}/jobs/${id}`);
  await until("the viewer's job notifications", async () => (await as.$$("#job-notifications li")).length === 2);
  assert.match(await as.textContent("#job-notifications li"), new RegExp(`^rule #${failures} delivered`));
  assert.equal(await as.$("#job-notifications a"), null, "rule ids, no links to rules it may not read");
  step("a viewer: a clear refusal, and what was sent of a job on its page");

  // The refusals asked for (400) were reported by the browser.
  b.problems.splice(0, b.problems.length, ...b.problems.filter((p) => !/status of 400/.test(p)));
  await b.close();
});
