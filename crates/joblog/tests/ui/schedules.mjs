// The schedules pages: a schedule made through the form (a bad cron is
// refused first, in the API's words naming the field) fires every second
// and its runs appear in its history; it is listed with its next fire; Run
// now queues a job shown in the history; Disable removes its next fire;
// the edit form sends only what changed and shows a taken name's 409;
// Delete asks in the page first. A schedule named with HTML shows it as
// text; history and list page; a viewer sees everything and no button.

import { scenario, browser, shot, assert, URL, until, api } from "./lib.mjs";

const HOSTILE = "<img src=x onerror=alert(1)>";

// The runs table as shown: id, state, fire time text.
async function runs(page) {
  return page.$$eval("#runs tbody tr[data-id]", (trs) =>
    trs.map((tr) => ({
      id: Number(tr.dataset.id),
      state: tr.children[2].textContent,
      fire: tr.children[3].textContent,
      attempt: tr.children[4].textContent,
    })),
  );
}

async function listed(page) {
  return page.$$eval("#schedules tbody tr[data-id]", (trs) =>
    trs.map((tr) => ({
      id: Number(tr.dataset.id),
      name: tr.querySelector("td.name").textContent,
      href: tr.querySelector("td.name a").getAttribute("href"),
      cron: tr.querySelector("td.cron").textContent,
      status: tr.children[2].textContent,
      next: tr.querySelector("td.next-fire").textContent,
      nextAt: tr.querySelector("td.next-fire").title,
      last: tr.querySelector("td.last-run").textContent,
    })),
  );
}

const status = (page) => page.textContent("#form-status");

await scenario("schedules", async (step) => {
  const b = await browser();
  const page = await b.newPage();
  await page.goto(`${URL}/schedules`);
  await until("the empty list", async () => /no schedules yet/.test(await page.textContent("#schedules")));
  await Promise.all([page.waitForURL(/\/schedules\/new$/), page.click("#new-schedule")]);
  await until("the form", () => page.$("#schedule-form"));
  const f = (name) => `#schedule-form [name="${name}"]`;
  assert.equal(await page.inputValue(f("timezone")), "UTC", "UTC unless told");
  assert.equal(await page.isChecked(f("enabled")), true);
  await page.fill(f("name"), "every-second");
  await page.fill(f("cron"), "0 25 * * *");
  await page.fill(f("timezone"), "Europe/Berlin");
  await page.fill(f("body"), 'echo "tick $GREETING"');
  await page.fill(f("env"), "GREETING=hello");
  await page.fill(f("timeout_s"), "30");
  await page.selectOption(f("missed"), "one");
  await page.fill(f("retries.attempts"), "2");
  await page.fill(f("retries.backoff_s"), "5");
  await page.click("#schedule-form button[type=submit]");
  await until("the refusal", async () => /cron/.test(await status(page)));
  assert.match(await status(page), /^Error: cron: "0 25 \* \* \*" is not a cron expression/);
  assert.ok(await page.$eval(f("cron"), (i) => i.classList.contains("invalid")), "the cron input is marked");
  assert.match(page.url(), /\/schedules\/new$/, "still on the form");
  await shot(page, "schedule-new");
  step("a bad cron is refused with the API's message naming the field, the input marked");

  await page.fill(f("cron"), "*/1 * * * * *");
  await Promise.all([page.waitForURL(/\/schedules\/\d+$/), page.click("#schedule-form button[type=submit]")]);
  const id = Number(/\/schedules\/(\d+)$/.exec(page.url())[1]);
  const made = await api("GET", `/api/v1/schedules/${id}`);
  assert.equal(made.name, "every-second");
  assert.equal(made.cron, "*/1 * * * * *");
  assert.equal(made.timezone, "Europe/Berlin");
  assert.equal(made.script, 'echo "tick $GREETING"');
  assert.deepEqual(made.env, { GREETING: "hello" });
  assert.equal(made.timeout_s, 30);
  assert.equal(made.missed, "one");
  assert.deepEqual(made.retries, { attempts: 2, backoff_s: 5 });
  assert.equal(made.enabled, true);
  step("the form made the schedule the fields say, and opened its page");

  await until("its next fires", async () => (await page.$$("#next-fires li")).length === 5);
  const fires = await page.$$eval("#next-fires li", (ls) => ls.map((l) => l.title));
  const gaps = fires.slice(1).map((t, i) => new Date(t) - new Date(fires[i]));
  assert.deepEqual(gaps, [1000, 1000, 1000, 1000], `a second apart: ${fires}`);
  assert.match(await page.textContent("#definition"), /tick \$GREETING/);
  // The scheduler's fires come in as runs, live.
  await until("a fired run that succeeded", async () =>
    (await runs(page)).some((r) => r.fire !== "run now" && r.state === "succeeded" && r.attempt === "1"),
  );
  step("five next fires a second apart; a fired run appeared in the history");

  await page.click("#run-now");
  await until("the queued job's link", () => page.$("#action-status a[href^='/jobs/']"));
  const jobId = Number((await page.getAttribute("#action-status a", "href")).split("/").pop());
  await until("the run-now job in the history", async () =>
    (await runs(page)).some((r) => r.id === jobId && r.fire === "run now" && r.state === "succeeded"),
  );
  const job = await api("GET", `/api/v1/jobs/${jobId}`);
  assert.equal(job.schedule_id, id);
  assert.equal(job.fire_time, null);
  // A few more fires, for a history worth a look.
  await until("six runs", async () => (await runs(page)).filter((r) => r.state === "succeeded").length >= 6);
  await shot(page, "schedule");
  step("Run now queued a job, linked and shown in the history as run now");

  // The job's page names its schedule.
  await page.click(`#action-status a[href="/jobs/${jobId}"]`);
  await until("the job's page", () => page.$(".job-details summary"));
  await page.click(".job-details summary");
  assert.equal(await page.getAttribute(`.job-details a[href="/schedules/${id}"]`, "href"), `/schedules/${id}`);
  assert.match(await page.textContent(".job-details"), new RegExp(`schedule#${id} · run now · attempt 1`));
  step("the job's details link back to its schedule");

  // The list: its row, its next fire soon.
  for (const [name, body] of [
    ["db-backup", { cron: "30 2 * * *", timezone: "Europe/Berlin", script: "pg_dump -Fc app > /tmp/app.dump", retries: { attempts: 3, backoff_s: 60 } }],
    ["rotate-logs", { cron: "@hourly", command: ["true"], overlap: "queue" }],
    ["weekly-report", { cron: "0 8 * * MON", timezone: "America/New_York", command: ["false"], enabled: false }],
  ]) {
    await api("POST", "/api/v1/schedules", { name, ...body });
  }
  const weekly = (await api("GET", "/api/v1/schedules")).schedules.find((s) => s.name === "weekly-report");
  await api("POST", `/api/v1/schedules/${weekly.id}/run`);
  await page.goto(`${URL}/schedules`);
  await until("the four schedules", async () => (await listed(page)).length === 4);
  let rows = await listed(page);
  let mine = rows.find((r) => r.id === id);
  assert.equal(mine.name, "every-second");
  assert.equal(mine.href, `/schedules/${id}`);
  assert.equal(mine.cron, "*/1 * * * * * Europe/Berlin");
  assert.equal(mine.status, "enabled");
  const ahead = new Date(mine.nextAt) - Date.now();
  assert.ok(ahead > -5000 && ahead < 5000, `its next fire is about now: ${mine.nextAt}`);
  assert.match(mine.next, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (UTC|[+-]\d\d:\d\d) (in \d+ s|now|\d+ s ago)$/);
  assert.match(mine.last, /#\d+ (succeeded|running|queued)/);
  const off = rows.find((r) => r.name === "weekly-report");
  assert.equal(off.status, "disabled");
  assert.equal(off.next, "—");
  await until("the disabled one's failed run", async () =>
    /#\d+ failed/.test((await listed(page)).find((r) => r.name === "weekly-report").last),
  );
  await shot(page, "schedules");
  step("listed with its cron, zone, next fire and last run");
  // On a phone (390 px) the list fits: no sideways scroll, each schedule's
  // name and cron in view.
  await page.setViewportSize({ width: 390, height: 800 });
  await until("the narrow layout", async () =>
    (await page.evaluate(() => document.documentElement.scrollWidth)) <= 390);
  for (const part of ["td.name", "td.cron"]) {
    const box = await page.locator(`#schedules tr[data-id='${id}'] ${part}`).boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= 390, `${part} out of view at 390 px: ${JSON.stringify(box)}`);
  }
  await shot(page, "schedules-phone");
  await page.setViewportSize({ width: 1280, height: 800 });
  step("on a 390 px screen the schedule list fits");

  // Disable: no next fire, on its page and in the list.
  await page.click(`#schedules a[href="/schedules/${id}"]`);
  await until("its page", () => page.$("#toggle-enabled"));
  assert.equal(await page.textContent("#toggle-enabled"), "Disable");
  await page.click("#toggle-enabled");
  await until("disabled", async () => (await page.textContent("#toggle-enabled")) === "Enable");
  assert.match(await page.textContent("#next-fire"), /next fire — \(disabled\)/);
  assert.match(await page.textContent("#next-fires"), /none: it is disabled/);
  assert.equal((await api("GET", `/api/v1/schedules/${id}`)).next_fire, null);
  await page.goto(`${URL}/schedules`);
  await until("the list", async () => (await listed(page)).length === 4);
  mine = (await listed(page)).find((r) => r.id === id);
  assert.equal(mine.status, "disabled");
  assert.equal(mine.next, "—");
  step("Disable took its next fire away, on its page and in the list");

  // A schedule whose name, script and environment are HTML: text.
  const evil = await api("POST", "/api/v1/schedules", {
    name: HOSTILE,
    cron: "0 0 1 1 *",
    script: "echo '<script>alert(2)</script>'",
    env: { X: "<b>bold</b>" },
  });
  for (let i = 0; i < 27; i++) await api("POST", `/api/v1/schedules/${evil.id}/run`);
  await page.goto(`${URL}/schedules`);
  await until("the hostile one listed", async () => (await listed(page)).some((r) => r.name === HOSTILE));
  await page.goto(`${URL}/schedules/${evil.id}`);
  await until("its page", async () => (await page.textContent("h1")).includes(HOSTILE));
  assert.match(await page.textContent("#definition"), /echo '<script>alert\(2\)<\/script>'/);
  assert.match(await page.textContent("#definition"), /X=<b>bold<\/b>/);
  assert.equal(await page.$$eval("#app img, #app b, #app script", (x) => x.length), 0, "no element made of its data");
  assert.equal(await page.title(), `${HOSTILE} · schedules · joblog`);
  step("a name, script and environment of HTML show as text");

  // History pages back by before_id: 27 runs, 25 a page.
  await until("a page of runs", async () => (await runs(page)).length === 25);
  const all = (await api("GET", `/api/v1/jobs?schedule_id=${evil.id}&limit=100`)).jobs.map((j) => j.id);
  assert.equal(all.length, 27);
  assert.deepEqual((await runs(page)).map((r) => r.id), all.slice(0, 25), "newest first");
  await page.click("#runs-older");
  await until("the older runs", async () => (await runs(page))[0]?.id === all[25]);
  assert.deepEqual((await runs(page)).map((r) => r.id), all.slice(25));
  assert.equal(await page.$("#runs-older"), null, "nothing older");
  await page.click("#runs-newest");
  await until("the newest again", async () => (await runs(page))[0]?.id === all[0]);
  step("the history pages back and returns, each run once");

  // Edit: prefilled; a bad cron, then a taken name, are refused in place;
  // a good edit sends only what changed.
  await page.goto(`${URL}/schedules/${id}`);
  await until("its page", () => page.$("#edit"));
  await page.click("#edit");
  await until("the form", () => page.$("#schedule-form"));
  assert.equal(await page.inputValue(f("name")), "every-second");
  assert.equal(await page.inputValue(f("cron")), "*/1 * * * * *");
  assert.equal(await page.inputValue(f("env")), "GREETING=hello");
  assert.equal(await page.inputValue(f("retries.attempts")), "2");
  assert.equal(await page.isChecked(f("enabled")), false);
  await page.click("#schedule-form button[type=submit]");
  await until("nothing to save", async () => (await status(page)) === "Nothing changed.");
  await page.fill(f("timezone"), "Mars/Olympus");
  await page.click("#schedule-form button[type=submit]");
  await until("the zone refused", async () => /^Error: timezone: "Mars\/Olympus" is not an IANA/.test(await status(page)));
  assert.ok(await page.$eval(f("timezone"), (i) => i.classList.contains("invalid")));
  await page.fill(f("timezone"), "America/New_York");
  await page.fill(f("name"), "db-backup");
  await page.click("#schedule-form button[type=submit]");
  await until("the name taken", async () => /^Error: a schedule named "db-backup" exists/.test(await status(page)));
  assert.ok(await page.$eval(f("name"), (i) => i.classList.contains("invalid")), "the name is marked");
  await shot(page, "schedule-edit");
  await page.fill(f("name"), "every-second");
  await page.fill(f("cron"), "30 2 * * *");
  await page.fill(f("retries.attempts"), "3");
  const sent = [];
  page.on("request", (r) => r.method() === "PATCH" && sent.push(JSON.parse(r.postData())));
  await page.click("#schedule-form button[type=submit]");
  await until("the saved schedule", async () => (await page.textContent("#action-status")) === "Saved.");
  assert.deepEqual(sent, [{ cron: "30 2 * * *", timezone: "America/New_York", retries: { attempts: 3, backoff_s: 5 } }]);
  assert.equal(await page.$("#schedule-form"), null, "the form closed");
  // (The facts' colons are drawn by the style sheet.)
  assert.match(await page.textContent(".head-facts"), /^cron 30 2 \* \* \*zone America\/New_York/);
  const edited = await api("GET", `/api/v1/schedules/${id}`);
  assert.equal(edited.cron, "30 2 * * *");
  assert.deepEqual(edited.env, { GREETING: "hello" }, "what was not changed stays");
  assert.equal(edited.enabled, false);
  step("the edit form: prefilled, refusals in the API's words, only changes sent");

  // A viewer sees it all and gets no button.
  const viewer = (await api("POST", "/api/v1/tokens", { name: "schedules-viewer", role: "viewer" })).token;
  const as = await b.newPage();
  await as.addInitScript((t) => sessionStorage.setItem("joblog.token", t), viewer);
  await as.goto(`${URL}/schedules`);
  await until("the viewer's list", async () => (await listed(as)).length === 5);
  assert.equal(await as.$("#new-schedule"), null, "no New schedule for a viewer");
  await as.goto(`${URL}/schedules/${id}`);
  await until("the viewer's schedule page", async () => (await as.$$("#definition dt")).length > 3);
  for (const b of ["#run-now", "#toggle-enabled", "#edit", "#delete"]) {
    assert.equal(await as.$(b), null, `no ${b} for a viewer`);
  }
  await until("the viewer sees its runs", async () => (await runs(as)).length > 0);
  await as.goto(`${URL}/schedules/new`);
  await until("the refusal", async () => /Not allowed/.test(await as.textContent("#app")));
  assert.equal(await as.$("#schedule-form"), null);
  step("a viewer sees schedules and runs, and no button or form");

  // Delete asks first, in the page.
  await page.click("#delete");
  await until("the question", () => page.$("#confirm-delete"));
  await page.click("#action-status button:not(#confirm-delete)");
  assert.equal(await page.$("#confirm-delete"), null, "Keep keeps it");
  await page.click("#delete");
  await Promise.all([page.waitForURL(/\/schedules$/), page.click("#confirm-delete")]);
  await until("the list without it", async () => {
    const r = await listed(page);
    return r.length === 4 && !r.some((s) => s.id === id);
  });
  const gone = await fetch(`${URL}/api/v1/schedules/${id}`);
  assert.equal(gone.status, 404);
  assert.equal((await api("GET", `/api/v1/jobs/${jobId}`)).schedule_id, id, "its runs stay");
  step("Delete asked in the page, then deleted; its runs stay");

  // The list pages by after_id: "More" shows the next 50.
  for (let i = 0; i < 50; i++) {
    await api("POST", "/api/v1/schedules", { name: `filler-${String(i).padStart(2, "0")}`, cron: "@daily", command: ["true"], enabled: false });
  }
  await page.reload();
  await until("a page of 50", async () => (await listed(page)).length === 50);
  await page.click("#more");
  await until("all 54", async () => (await listed(page)).length === 54);
  const ids = (await listed(page)).map((r) => r.id);
  assert.deepEqual(ids, [...ids].sort((x, y) => x - y), "by id");
  assert.equal(new Set(ids).size, 54, "each once");
  assert.equal(await page.$("#more"), null, "nothing more");
  step("More reads the next page by after_id");

  // A schedule after another, through the form: cron's fields give way
  // to the schedule and the states; its page says what it runs after and
  // the other's lists it; a run of the other triggers it, and the run's
  // page links back to the job that triggered it.
  const rotate = (await api("GET", "/api/v1/schedules?limit=1000")).schedules.find((s) => s.name === "rotate-logs");
  await page.goto(`${URL}/schedules/new`);
  await until("the schedules to run after", async () => (await page.$$(`${f("after")} option`)).length > 2);
  assert.equal(await page.isVisible(f("after")), false, "cron unless chosen");
  await page.selectOption(f("start"), "after");
  assert.equal(await page.isVisible(f("cron")), false, "no cron for a trigger");
  assert.equal(await page.isChecked(`${f("after.states")}[value="succeeded"]`), true, "on success unless told");
  await page.fill(f("name"), "after-rotate");
  await page.fill(f("body"), 'echo "after $JOBLOG_TRIGGER_JOB_ID $JOBLOG_TRIGGER_STATE"');
  await page.click("#schedule-form button[type=submit]");
  await until("the schedule asked for", async () => /^Error: after: choose the schedule/.test(await status(page)));
  assert.ok(await page.$eval(f("after"), (i) => i.classList.contains("invalid")), "the choice is marked");
  await page.selectOption(f("after"), String(rotate.id));
  await page.check(`${f("after.states")}[value="failed"]`);
  await shot(page, "schedule-after-form");
  await Promise.all([page.waitForURL(/\/schedules\/\d+$/), page.click("#schedule-form button[type=submit]")]);
  const afterId = Number(/\/schedules\/(\d+)$/.exec(page.url())[1]);
  const follower = await api("GET", `/api/v1/schedules/${afterId}`);
  assert.deepEqual(follower.after, { schedule_id: rotate.id, states: ["succeeded", "failed"] });
  assert.equal(follower.cron, null);
  await until("what it runs after", async () => /runs after rotate-logs on succeeded, failed/.test(await page.textContent(".head-facts")));
  assert.match(await page.textContent("#next-fire"), /next fire on its trigger/);
  step("the form made a schedule that runs after another, and its page says so");
  await page.goto(`${URL}/schedules/${rotate.id}`);
  await until("what runs after it", async () => /after-rotate on succeeded, failed/.test(await page.textContent("#followers")));
  await page.click("#run-now");
  const triggered = await until("the triggered run", async () => (await api("GET", `/api/v1/jobs?schedule_id=${afterId}`)).jobs[0]);
  await page.goto(`${URL}/jobs/${triggered.id}`);
  await until("the run's page", () => page.$(".job-details summary"));
  await page.click(".job-details summary");
  assert.equal(await page.getAttribute("#triggered-by", "href"), `/jobs/${triggered.triggered_by}`);
  assert.match(await page.textContent(".job-details"), new RegExp(`schedule#${afterId} · triggered · attempt 1`));
  await until("its log", async () => /after \d+ succeeded/.test(await page.textContent(".log")));
  await shot(page, "job-triggered");
  step("a run of the other triggered it; the run's page links back to its trigger");

  // A saved job: neither cron nor after; it runs when run.
  const saved = await api("POST", "/api/v1/schedules", { name: "restore-db", command: ["echo", "restored"] });
  await page.goto(`${URL}/schedules/${saved.id}`);
  await until("its page", () => page.$("#on-demand"));
  assert.match(await page.textContent("#next-fire"), /when run/);
  await page.click("#run-now");
  const savedRun = await until("its run", async () => (await api("GET", `/api/v1/jobs?schedule_id=${saved.id}`)).jobs[0]);
  assert.equal(savedRun.fire_time, null);
  step("a saved job: its page says on demand, and Run now runs it");

  // The expected refusals (400, 409) were reported by the browser.
  b.problems.splice(0, b.problems.length, ...b.problems.filter((p) => !/status of (400|409)/.test(p)));
  await b.close();
});
