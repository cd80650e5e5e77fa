// The submit page: a script with a name, an environment variable and a
// secret becomes a job; its page shows the output, the secret masked, and
// the secret's name (never its value) in the details.

import { scenario, browser, rows, shot, assert, URL, until, job } from "./lib.mjs";

await scenario("submit", async (step) => {
  const b = await browser();
  const page = await b.newPage();
  await page.goto(`${URL}/submit`);
  await page.fill("textarea[name=body]", 'echo "hello $GREETING"\necho "the secret is $API_KEY"\necho \'::set-result::{"count": 42, "items": ["a"]}\'');
  await page.fill("input[name=name]", "from-the-form");
  await page.fill("textarea[name=env]", "GREETING=world");
  await page.fill(".secret-name", "API_KEY");
  await page.fill(".secret-value", "s3cr3t-value-42");
  assert.equal(await page.getAttribute(".secret-value", "type"), "password");
  await shot(page, "submit");
  await Promise.all([page.waitForURL(/\/jobs\/\d+$/), page.click("#submit button[type=submit]")]);
  step("the form submitted a job and opened its page");
  await until("its output", async () => (await rows(page)).some((r) => r.text === "hello world"));
  const texts = (await rows(page)).map((r) => r.text);
  assert.ok(texts.includes("the secret is ***"), `masked: ${JSON.stringify(texts)}`);
  await page.click(".job-details summary");
  const details = await page.textContent(".job-details");
  assert.match(details, /API_KEY/);
  assert.ok(!details.includes("s3cr3t-value-42"), "the secret's value is never shown");
  assert.ok(!(await page.textContent("body")).includes("s3cr3t-value-42"));
  step("output shown, the secret masked and named but never shown");

  // The result is read only when asked, then shown as a tree (result.mjs
  // tries the tree at length).
  const asked = [];
  page.on("request", (r) => r.url().endsWith("/result") && asked.push(r.url()));
  await until("the finished job", async () => (await page.textContent(".job-head")).includes("succeeded"));
  await until("the result button", () => page.$("#show-result"));
  assert.deepEqual(asked, [], "the result is not read before it is asked for");
  await page.click("#show-result");
  await page.click(".rv-root > .rv-row");
  await until("the result's keys", async () => (await page.$$(".rv-root > ul > li")).length === 2);
  const shown = await page.$$eval(".rv-root .rv-row", (rs) =>
    rs.map((r) => [...r.querySelectorAll(".rv-key, .rv-size, .rv-val, .rv-preview")].map((e) => e.textContent).join(" ")),
  );
  assert.deepEqual(shown, ['{…} 2 keys {"count":42,"items":[…]}', '"count" 42', '"items" […] 1 item ["a"]']);
  assert.equal(asked.length, 1);
  step("the result, fetched when asked and shown as a tree");

  // Rerun asks for the secrets again (never prefilled), then reruns.
  const jobOf = (url) => Number(/\/jobs\/(\d+)/.exec(url)?.[1]);
  const original = jobOf(page.url());
  await page.click("text=Rerun");
  await until("the secrets' prompt", () => page.$(".rerun-secrets input[name=API_KEY]"));
  assert.equal(await page.inputValue(".rerun-secrets input[name=API_KEY]"), "", "never prefilled");
  assert.equal(await page.getAttribute(".rerun-secrets input[name=API_KEY]", "type"), "password");
  await page.fill(".rerun-secrets input[name=API_KEY]", "another-s3cr3t-43");
  await page.click("#rerun-with-secrets");
  await until("the rerun's page", async () => jobOf(page.url()) > original);
  const rerunId = jobOf(page.url());
  const rerun = await job(rerunId);
  assert.equal(rerun.rerun_of, original);
  assert.deepEqual(rerun.secret_names, ["API_KEY"]);
  await until("the rerun's masked secret", async () =>
    (await rows(page)).some((r) => r.text === "the secret is ***"));
  assert.ok(!(await page.textContent("main")).includes("another-s3cr3t-43"), "the value is never shown");
  step("Rerun asks for the job's secrets again, then reruns it");

  // A refused submission says why, in the API's words.
  await page.goto(`${URL}/submit`);
  await page.selectOption("#submit select", "command");
  await page.fill("textarea[name=body]", "true");
  await page.fill("input[name=timeout_s]", "0");
  await page.click("#submit button[type=submit]");
  await until("the refusal", async () => /timeout_s/.test(await page.textContent(".form-status")));
  step("a bad field is refused with the API's message naming it");
  b.problems.splice(0, b.problems.length, ...b.problems.filter((p) => !p.includes("400")));
  await b.close();
});
