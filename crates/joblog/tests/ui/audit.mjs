// The audit page (the Rust test wrote 62 entries into the server's
// database before starting it, two of them with HTML in their actor,
// action, request id and detail): an admin sees the Audit link and the
// trail newest first, hostile values as inert text, pages older entries,
// filters by actor, action and job id kept in the URL; a viewer gets no
// link and a 403 from the API.

import { scenario, browser, shot, assert, URL, until, api } from "./lib.mjs";

const HOSTILE = '<img src=x onerror="window.__pwned=1">';

// The table's rows as the page shows them.
async function shown(page) {
  return page.$$eval("#audit tbody tr[data-id]", (trs) =>
    trs.map((tr) => {
      const td = [...tr.children].map((c) => c.textContent);
      return {
        id: Number(tr.dataset.id),
        actor: td[1],
        action: td[2],
        job: td[3],
        from: td[4],
        request: td[5],
        detail: td[6],
        href: tr.children[3].querySelector("a")?.getAttribute("href") ?? null,
      };
    }),
  );
}

// What the API holds for a filter, newest first.
async function expected(query) {
  const res = await api("GET", `/api/v1/audit?before=9223372036854775807&limit=1000&${query}`);
  return res.entries.map((e) => e.id).reverse();
}

await scenario("audit", async (step) => {
  const all = await expected("");
  assert.equal(all.length, 62, "the entries written before the server started");
  const b = await browser();
  const page = await b.newPage();
  await page.goto(`${URL}/audit`);
  await until("the newest entries", async () => (await shown(page)).length === 50);
  assert.ok(await page.isVisible('nav a[href="/audit"]'), "an admin sees the Audit link");
  let rows = await shown(page);
  assert.deepEqual(
    rows.map((r) => r.id),
    all.slice(0, 50),
    "the newest 50, newest first",
  );
  step("an admin sees the link and the newest page, newest first");

  // Hostile values are text: no element was made of them, nothing ran.
  const evil = rows.find((r) => r.actor === HOSTILE);
  assert.ok(evil, `the hostile actor shown as text: ${JSON.stringify(rows.slice(0, 3))}`);
  assert.equal(evil.action, "<b>job.cancelled</b>");
  assert.equal(evil.detail, JSON.stringify({ html: HOSTILE, script: "<script>window.__pwned=2</script>" }));
  assert.equal(evil.href, "/jobs/2");
  const config = rows.find((r) => r.action === "config.changed");
  assert.equal(config.request, HOSTILE);
  assert.equal(config.detail, "", "an empty detail shows nothing");
  assert.equal(config.job, "");
  assert.equal(await page.$$eval("#audit img, #audit b, #audit script", (x) => x.length), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  const plain = rows.find((r) => r.request === "req-0059");
  assert.equal(plain.detail, JSON.stringify({ n: 59, name: "nightly-59" }));
  assert.equal(plain.from, "192.0.2.59:50059");
  assert.equal(plain.href, "/jobs/3");
  step("HTML in actor, action, request id and detail is shown as text");
  await shot(page, "audit-hostile");

  // Older entries, then back to the newest.
  await page.click("#older");
  await until("the older page", async () => (await shown(page))[0]?.id === all[50]);
  rows = await shown(page);
  assert.deepEqual(rows.map((r) => r.id), all.slice(50), "the 12 older ones, each once");
  assert.match(page.url(), /\/audit\?before=\d+$/);
  assert.equal(await page.$("#older"), null, "nothing older");
  await page.click("#newest");
  await until("the newest page again", async () => (await shown(page))[0]?.id === all[0]);
  step("Older » pages back by before, each entry once; « Newest returns");

  // Filters narrow the table and live in the URL.
  await page.fill("#audit-filter input[name=actor]", "ops-alice");
  await page.click("#audit-filter button[type=submit]");
  const alice = await expected("actor=ops-alice");
  assert.ok(alice.length > 0 && alice.length < all.length);
  await until("alice's entries", async () => (await shown(page)).length === alice.length);
  rows = await shown(page);
  assert.deepEqual(rows.map((r) => r.id), alice);
  assert.ok(rows.every((r) => r.actor === "ops-alice"));
  assert.match(page.url(), /\/audit\?actor=ops-alice$/);
  await page.fill("#audit-filter input[name=action]", "job.cancelled");
  await page.fill("#audit-filter input[name=job_id]", "2");
  await page.click("#audit-filter button[type=submit]");
  const narrow = await expected("actor=ops-alice&action=job.cancelled&job_id=2");
  assert.ok(narrow.length > 0 && narrow.length < alice.length);
  await until("the narrower table", async () => (await shown(page)).length === narrow.length);
  rows = await shown(page);
  assert.deepEqual(rows.map((r) => r.id), narrow);
  assert.ok(rows.every((r) => r.actor === "ops-alice" && r.action === "job.cancelled" && r.href === "/jobs/2"));
  await page.reload();
  await until("the same table after a reload", async () => (await shown(page)).length === narrow.length);
  assert.equal(await page.inputValue("#audit-filter input[name=action]"), "job.cancelled");
  assert.equal(await page.inputValue("#audit-filter input[name=job_id]"), "2");
  step("actor, action and job id narrow the table and are kept in the URL");

  await page.goto(`${URL}/audit?action=job.cancelled`);
  const cancelled = await expected("action=job.cancelled");
  await until("the cancellations", async () => (await shown(page)).length === cancelled.length);
  await shot(page, "audit");

  // A viewer: no link, and the API refuses.
  const viewer = (await api("POST", "/api/v1/tokens", { name: "audit-viewer", role: "viewer" })).token;
  const refused = await fetch(`${URL}/api/v1/audit`, { headers: { Authorization: `Bearer ${viewer}` } });
  assert.equal(refused.status, 403);
  assert.equal((await refused.json()).error.code, "forbidden");
  const as = await b.newPage();
  await as.addInitScript((t) => sessionStorage.setItem("joblog.token", t), viewer);
  await as.goto(`${URL}/`);
  await until("the viewer's job list", async () => (await as.textContent("#who")).includes("viewer"));
  assert.ok(await as.isHidden('nav a[href="/audit"]'), "a viewer gets no Audit link");
  assert.ok(await as.isHidden('nav a[href="/submit"]'), "nor a Submit link");
  await as.goto(`${URL}/audit`);
  await until("the refusal", async () => /Not allowed/.test(await as.textContent("#app")));
  assert.equal(await as.$("#audit tbody tr[data-id]"), null, "no entry shown to a viewer");
  step("a viewer gets no link, and the page and the API refuse it");
  // The refusals of the viewer's page were expected.
  b.problems.splice(0, b.problems.length, ...b.problems.filter((p) => !p.includes("403")));
  await b.close();
});
