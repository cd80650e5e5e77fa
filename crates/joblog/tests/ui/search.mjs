// The Search page: the header's Search link, a search of every job's log
// (sealed and not) drawn newest job first as its pages come, each line a
// link to itself in its job's log with its neighbours a click away; the
// filters kept in the URL; hostile output shown as inert text; a long
// search stopped; axe in both colour schemes.

import { scenario, browser, submit, finished, api, shot, assert, URL, until, axe, rows } from "./lib.mjs";

const HOSTILE = '<img src=x onerror="window.__pwned=1"> disk full';

// The hits on the page, by job, as the page shows them.
async function shown(page) {
  return page.$$eval("#search-results section.search-job", (sections) =>
    sections.map((s) => ({
      job: Number(s.dataset.job),
      heading: s.querySelector("h2").textContent,
      hits: [...s.querySelectorAll("li.search-hit")].map((li) => ({
        seq: Number(li.dataset.seq),
        text: li.querySelector(".hit-row .msg").textContent,
        href: li.querySelector("a.ln").getAttribute("href"),
      })),
    })),
  );
}

const status = (page) => page.textContent("#search-status");

await scenario("search", async (step) => {
  const db = await submit({
    name: "backup-db",
    script: `echo start; echo 'ERROR: disk full'; printf '%s\\n' '${HOSTILE}'; printf '\\033[31mdisk full\\033[0m in red\\n'; echo end`,
  });
  await finished(db.id);
  await api("POST", "/api/v1/sealing");
  await until("the log sealed", async () => (await api("GET", "/api/v1/sealing")).unsealed_jobs === 0);
  const report = await submit({ name: "report", script: "for i in $(seq 1 620); do echo \"row $i: disk full\"; done" });
  await finished(report.id);
  await submit({ name: "quiet", script: "echo nothing to see" }).then((j) => finished(j.id));

  const b = await browser();
  const page = await b.newPage();
  await page.goto(`${URL}/`);
  await page.click('nav a[href="/search"]');
  await page.waitForSelector("#search-form");
  assert.equal(await page.title(), "Search · joblog");
  step("the header links to the Search page");

  // A search whose hits take several pages: 500 lines, then it asks.
  await page.fill('input[name="q"]', "DISK FULL");
  await page.click('#search-form button[type="submit"]');
  await until("500 lines, then a button to search on", async () => (await page.$("#search-more")) !== null, 30000);
  let groups = await shown(page);
  assert.equal(groups.length, 1, "only the newest job's lines so far");
  assert.equal(groups[0].job, report.id);
  assert.equal(groups[0].hits.length, 500);
  assert.deepEqual(groups[0].hits.slice(0, 3).map((h) => h.seq), [1, 2, 3]);
  assert.match(await status(page), /^500 lines in 1 job so far\. \d+ sealed segments? read, \d+ skipped by their index\. More may follow\.$/);
  assert.match(page.url(), /\/search\?q=DISK\+FULL$/);
  await shot(page, "search");
  step("a search's first pages are drawn as they come, 500 lines at most");

  await page.click("#search-more");
  await until("the search's end", async () => /^\d+ lines? in \d+ jobs?\./.test(await status(page)), 30000);
  groups = await shown(page);
  assert.deepEqual(groups.map((g) => g.job), [report.id, db.id], "newest job first");
  assert.equal(groups[0].hits.length, 620);
  assert.equal(groups[1].heading, `#${db.id} backup-db`);
  assert.deepEqual(groups[1].hits.map((h) => h.seq), [2, 3, 4]);
  assert.match(await status(page), /^623 lines in 2 jobs\. \d+ sealed segments? read, \d+ skipped by their index\.$/);
  step("searching on reaches every job, sealed or not");

  // Hostile output is text; a colour is drawn as the log viewer draws it;
  // the text searched for is marked.
  const hits = groups[1].hits;
  assert.equal(hits[0].text, "ERROR: disk full");
  assert.equal(hits[1].text, HOSTILE);
  assert.equal(hits[2].text, "disk full in red");
  assert.equal(await page.$$eval("#search-results img, #search-results script", (x) => x.length), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  const marks = await page.$$eval(`section[data-job="${db.id}"] mark`, (m) => m.map((x) => x.textContent));
  assert.deepEqual(marks, ["disk full", "disk full", "disk full"]);
  await page.locator(`section[data-job="${db.id}"]`).scrollIntoViewIfNeeded();
  await shot(page, "search-results");
  step("hostile text is inert, matches are marked");

  // A line's neighbours, then the line in its job's log.
  const hostileHit = page.locator(`section[data-job="${db.id}"] li.search-hit[data-seq="3"]`);
  await hostileHit.locator("button").click();
  await until("the context", async () => (await hostileHit.locator(".ctx-line").count()) === 5);
  const ctx = await hostileHit.locator(".ctx-line").allTextContents();
  assert.equal(ctx[0], "1start");
  assert.equal(ctx[2], `3${HOSTILE}`);
  assert.equal(await hostileHit.locator(".ctx-hit").textContent(), `3${HOSTILE}`);
  assert.equal(await hostileHit.locator("button").getAttribute("aria-expanded"), "true");
  step("a line's context opens under it");
  const found = await axe(page, "search");
  assert.deepEqual(found, [], "axe finds nothing serious");
  step("axe passes in both schemes");

  assert.equal(hits[1].href, `/jobs/${db.id}#seq-3`);
  await hostileHit.locator("a.ln").first().click();
  await page.waitForURL(`${URL}/jobs/${db.id}#seq-3`);
  await until("the line in the job's log", async () => (await rows(page)).some((r) => r.seq === 3 && r.cls.split(" ").includes("hl")));
  step("a line links to itself in its job's log");

  // Filters and the regex switch live in the URL; a link repeats the search.
  await page.goto(`${URL}/search?q=row+6%5B0-9%5D%3A&regex=true&name=report`);
  await until("the linked search's end", async () => /^\d+ lines? in \d+ jobs?\./.test(await status(page)));
  groups = await shown(page);
  assert.deepEqual(groups[0].hits.map((h) => h.seq), [60, 61, 62, 63, 64, 65, 66, 67, 68, 69]);
  assert.equal(await page.isChecked("#search-regex"), true);
  assert.equal(await page.inputValue('input[name="name"]'), "report");
  await page.fill('input[name="q"]', "(unclosed");
  await page.click('#search-form button[type="submit"]');
  await until("the refusal", async () => /q: not a valid regular expression/.test(await status(page)));
  // The browser logs the refusal's 400; it is the one expected.
  const expected = b.problems.filter((p) => p.includes("status of 400"));
  assert.equal(expected.length, 1, JSON.stringify(b.problems));
  b.problems.splice(b.problems.indexOf(expected[0]), 1);
  step("a link repeats a search; a bad pattern is refused in the status line");

  // A long search stops when asked: its requests are held back here, so
  // Stop comes while one is in flight.
  await page.route("**/api/v1/search?*", async (route) => {
    await new Promise((r) => setTimeout(r, 1500));
    await route.continue().catch(() => {});
  });
  await page.goto(`${URL}/search?q=disk`);
  await until("a search under way", async () => page.isVisible("#search-stop"));
  await page.click("#search-stop");
  assert.match(await status(page), /^Stopped: 0 lines in 0 jobs so far\. .*\.$/);
  assert.equal(await page.isVisible("#search-stop"), false);
  await new Promise((r) => setTimeout(r, 2000));
  assert.equal((await shown(page)).length, 0, "nothing drawn after Stop");
  await page.unroute("**/api/v1/search?*");
  step("Stop ends a search");

  await b.close();
});
