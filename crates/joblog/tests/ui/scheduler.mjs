// The scheduler's pause in the UI. An admin pauses it from the Schedules
// page (asked first); every page then shows the banner under the top bar
// ("Scheduler paused since … by … — no schedule fires.") with Resume, a
// viewer's without it; Resume clears it everywhere. A page reads the
// state after its own data (a job's page: after the job), and again every
// 15 s, so a pause made elsewhere (the API) shows without a reload. axe
// runs on a page with the banner in both schemes.

import { scenario, browser, shot, assert, URL, until, api, submit, finished, axe } from "./lib.mjs";

const banner = (page) => page.textContent("#scheduler-banner");
const TIME = "\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d (UTC|[+-]\\d\\d:\\d\\d)";
const PAUSED = new RegExp(`^Scheduler paused since ${TIME} by anonymous — no schedule fires\\.Resume$`);

await scenario("scheduler", async (step) => {
  const { id } = await submit({ name: "before-pause", command: ["echo", "hi"] });
  await finished(id);
  await api("POST", "/api/v1/schedules", { name: "nightly", cron: "0 3 * * *", command: ["true"] });
  const b = await browser();
  const page = await b.newPage();

  // Running: no banner, and Pause on the Schedules page (an admin's).
  await page.goto(`${URL}/schedules`);
  await until("Pause, once the state is read", () => page.isVisible("#pause-scheduler"));
  assert.equal(await banner(page), "");
  assert.equal(await page.$eval("#scheduler-banner", (e) => e.getBoundingClientRect().height), 0, "an empty banner takes no room");

  // Pause asks first, in the page.
  await page.click("#pause-scheduler");
  await until("the question", () => page.$("#confirm-pause"));
  assert.match(await page.textContent("#schedules-action"), /^Pause the scheduler\? No schedule fires on any node until it is resumed/);
  await page.click("#schedules-action button:not(#confirm-pause)");
  assert.equal(await page.$("#confirm-pause"), null, "Keep firing keeps it running");
  assert.equal((await api("GET", "/api/v1/scheduler")).paused, false);
  await page.click("#pause-scheduler");
  await page.click("#confirm-pause");
  await until("the banner", async () => PAUSED.test(await banner(page)));
  assert.equal(await page.isVisible("#pause-scheduler"), false, "no Pause while paused: the banner resumes");
  assert.equal(await page.textContent("#schedules-action"), "");
  const paused = await api("GET", "/api/v1/scheduler");
  assert.equal(paused.paused, true);
  assert.equal(paused.paused_by, "anonymous");
  assert.equal(await page.getAttribute("#scheduler-banner .time", "title"), paused.paused_at);
  step("Pause asks first; paused, the banner says since when and by whom");

  // Another page: the banner at once (the tab kept it), and read again
  // after the page's own data.
  const asked = [];
  page.on("request", (r) => asked.push(new globalThis.URL(r.url()).pathname));
  await page.goto(`${URL}/jobs/${id}`);
  await until("the banner on a job's page", async () => PAUSED.test(await banner(page)));
  await until("the state read again", () => asked.includes("/api/v1/scheduler"));
  const job = asked.indexOf(`/api/v1/jobs/${id}`);
  assert.ok(job >= 0 && job < asked.indexOf("/api/v1/scheduler"), `the job is read first: ${asked.join(" ")}`);
  await page.goto(`${URL}/`);
  await until("the list", () => page.$("#jobs tbody tr[data-id]"));
  await until("the banner on the job list", async () => PAUSED.test(await banner(page)));
  await shot(page, "scheduler-paused");
  const found = await axe(page, "the job list, paused", ["label", "region"]);
  assert.deepEqual(found, [], `axe found:\n${found.join("\n")}`);
  step("the banner on a job's page (read after the job) and the job list; axe in both schemes");

  // A viewer sees it, with no Resume and no Pause.
  const viewer = (await api("POST", "/api/v1/tokens", { name: "pause-viewer", role: "viewer" })).token;
  const as = await b.newPage();
  await as.addInitScript((t) => sessionStorage.setItem("joblog.token", t), viewer);
  await as.goto(`${URL}/schedules`);
  await until("the viewer's banner", async () => /^Scheduler paused since .* no schedule fires\.$/.test(await banner(as)));
  assert.equal(await as.$("#resume-scheduler"), null, "no Resume for a viewer");
  assert.equal(await as.$("#pause-scheduler"), null, "no Pause for a viewer");
  await as.close();
  step("a viewer sees the banner, without Resume");

  // The Schedules page while paused: the banner, no Pause, from the start.
  await page.goto(`${URL}/schedules`);
  await until("the list", () => page.$("#schedules tbody tr[data-id]"));
  assert.match(await banner(page), PAUSED);
  assert.equal(await page.isVisible("#pause-scheduler"), false);
  // Resume, from the banner: gone, Pause back, and on the next page too.
  await page.click("#resume-scheduler");
  await until("no banner", async () => (await banner(page)) === "");
  assert.equal(await page.isVisible("#pause-scheduler"), true);
  assert.equal((await api("GET", "/api/v1/scheduler")).paused, false);
  await page.goto(`${URL}/nodes`);
  await until("the nodes", () => page.$("#nodes tbody tr[data-name]"));
  await page.waitForTimeout(500);
  assert.equal(await banner(page), "", "no banner from a stale state");
  await page.goto(`${URL}/schedules`);
  await until("Pause again", () => page.isVisible("#pause-scheduler"));
  assert.equal(await banner(page), "");
  step("Resume clears the banner, here and on the next pages");

  // A pause made elsewhere shows within the 15 s between reads, and goes
  // the same way.
  await api("POST", "/api/v1/scheduler/pause");
  await until("the banner, without a reload", async () => PAUSED.test(await banner(page)), 20000);
  assert.equal(await page.isVisible("#pause-scheduler"), false);
  await api("POST", "/api/v1/scheduler/resume");
  await until("the banner gone, without a reload", async () => (await banner(page)) === "", 20000);
  assert.equal(await page.isVisible("#pause-scheduler"), true);
  step("a pause and a resume made through the API show within 15 s");

  await b.close();
});
