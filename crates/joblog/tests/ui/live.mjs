// Live: the job list shows a job as soon as it is submitted and when it
// finishes, without reloading; a running job's lines reach its page
// within a second of being written.

import { scenario, browser, submit, job, shot, assert, URL, until } from "./lib.mjs";

await scenario("live", async (step) => {
  const b = await browser();
  const list = await b.newPage();
  await list.goto(`${URL}/`);
  await until("the list's live feed", async () => (await list.textContent(".log-status"))?.includes("live"));
  // The job waits for a file before it starts writing, so the test knows
  // the page is open first; then each line carries when it was written.
  const go = `/tmp/joblog-ui-go-${process.pid}`;
  const script = [
    `while [ ! -e ${go} ]; do sleep 0.05; done`,
    "i=0",
    "while [ $i -lt 20 ]; do i=$((i+1)); echo \"tick $i $(date +%s%3N)\"; sleep 0.1; done",
    "echo 'a first error, written live' >&2",
    "echo '::warning file=a.py,line=3::almost done'",
    `rm -f ${go}`,
  ].join("\n");
  const { id } = await submit({ name: "live-ticks", script });
  await until("the new job in the list", () => list.$(`tr[data-id='${id}']`), 5000);
  step("a submitted job appears in the open list");
  const page = await b.newPage();
  await page.goto(`${URL}/jobs/${id}`);
  await until("the job running", async () => (await job(id)).state === "running");
  await until("the page's live tail", async () => (await page.textContent(".log-status")).includes("live"));
  // The page records when each tick row first appears.
  await page.evaluate(() => {
    window.seen = {};
    new MutationObserver(() => {
      for (const r of document.querySelectorAll(".log-rows .row")) {
        const m = /^tick (\d+) (\d+)$/.exec(r.querySelector(".tx").textContent);
        if (m && !(m[1] in window.seen)) window.seen[m[1]] = Date.now() - Number(m[2]);
      }
    }).observe(document.querySelector(".log-rows"), { subtree: true, childList: true, characterData: true });
  });
  const { writeFileSync } = await import("node:fs");
  writeFileSync(go, "");
  await until("all 20 ticks on the page", async () => Object.keys(await page.evaluate(() => window.seen)).length === 20, 20000);
  const late = await page.evaluate(() => window.seen);
  const worst = Math.max(...Object.values(late));
  console.log(`[live] written → shown: worst ${worst} ms over 20 lines`);
  assert.ok(worst <= 1000, `a line took ${worst} ms to appear: ${JSON.stringify(late)}`);
  step("each line appeared within 1 s of being written");
  await shot(page, "job-live");
  await until("the job's end on its page", async () => (await page.textContent(".job-head")).includes("succeeded"), 20000);
  step("the page shows the job's end");
  // No error when the page opened: "First error" was disabled; the error
  // that came live enables it, without a reload, and it jumps there.
  await until("First error enabled", async () => !(await page.$eval("#first-error", (b) => b.disabled)), 5000);
  await page.click("#first-error");
  await until("the error in view", async () =>
    (await page.$$eval(".log-rows .row", (rs) => rs.map((r) => r.textContent))).some((t) => t.includes("a first error, written live")));
  step("an error that arrived live enables First error");
  await until(
    "the finished state in the list",
    async () => (await list.getAttribute(`tr[data-id='${id}']`, "class")).split(" ").includes("st-succeeded"),
    5000,
  );
  const warnings = await list.textContent(`tr[data-id='${id}'] td.warn`);
  assert.equal(warnings, "1");
  step("the list shows it finished, with its warning count, without a reload");
  await shot(list, "jobs");
  // Cancel in the list asks first: one click arms it, the second cancels.
  const { id: sleeper } = await submit({ name: "to-cancel", command: ["sleep", "60"] });
  await until("the sleeper running", async () => (await job(sleeper)).state === "running");
  const cancel = `tr[data-id='${sleeper}'] button.danger`;
  // Once the list shows it running, nothing redraws its row in between.
  await until(
    "the sleeper running in the list",
    async () => ((await list.getAttribute(`tr[data-id='${sleeper}']`, "class")) ?? "").split(" ").includes("st-running"),
    5000,
  );
  await list.click(cancel);
  await until("the question", async () => (await list.textContent(cancel)) === `Cancel #${sleeper}?`);
  await new Promise((r) => setTimeout(r, 500));
  assert.equal((await job(sleeper)).state, "running", "one click cancelled the job");
  await list.click(cancel);
  await until("the sleeper cancelled", async () => (await job(sleeper)).state === "cancelled");
  step("Cancel in the list asks first, then cancels");
  // The state is said in words beside its dot, each with a style of its own.
  await until("the cancelled state in words", async () =>
    (await list.textContent(`tr[data-id='${sleeper}'] .state-label`)) === "cancelled");
  assert.equal(await list.textContent(`tr[data-id='${id}'] .state-label`), "succeeded");
  step("the list says each job's state in words");
  // On a phone (390 px) the list fits: nothing scrolls sideways, and each
  // row shows its name, state, id and start.
  await list.setViewportSize({ width: 390, height: 800 });
  await until("the narrow layout", async () =>
    (await list.evaluate(() => document.documentElement.scrollWidth)) <= 390);
  for (const part of [".name", ".state-label", "td.num a"]) {
    const box = await list.locator(`tr[data-id='${id}'] ${part}`).first().boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= 390, `${part} out of view at 390 px: ${JSON.stringify(box)}`);
  }
  await shot(list, "jobs-phone");
  step("on a 390 px screen the list fits and shows name, state and id");
  await b.close();
});
