// A saved job's parameters in the browser. A saved job is made through
// the API with every kind of parameter, and a hostile description and
// enum values (markup, a script tag): Run now opens a form made from the
// schema (a list for the enum, a box for the boolean, a number field with
// its bounds, a text area for multiline, a password field for the secret)
// with the hostile text shown as text and no element made of it. A value
// the API refuses gets its message beside the field it names, and no job;
// good values run, and the job's page shows them (the secret by name).
// Rerun asks for the secret again, with the other values prefilled.

import { scenario, browser, shot, assert, URL, api, finished, until, axe } from "./lib.mjs";

const HOSTILE = `<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>`;

await scenario("params", async (step) => {
  const s = await api("POST", "/api/v1/schedules", {
    name: "restore-db",
    script: 'echo "restore $JOBLOG_PARAM_DB to $JOBLOG_PARAM_HOST keep=$JOBLOG_PARAM_KEEP dry=$JOBLOG_PARAM_DRY_RUN with $JOBLOG_PARAM_TOKEN"',
    params: {
      properties: {
        db: { type: "string", enum: ["sales", HOSTILE], description: `the database ${HOSTILE}` },
        host: { type: "string", pattern: "^db[0-9]+$", description: "a database host" },
        keep: { type: "integer", minimum: 1, maximum: 30, default: 7 },
        dry_run: { type: "boolean", default: false },
        notes: { type: "string", format: "multiline" },
        token: { type: "string", secret: true },
      },
      required: ["db", "host", "token"],
    },
  });
  const b = await browser();
  const page = await b.newPage();
  await page.goto(`${URL}/schedules/${s.id}`);
  await until("the parameters in the definition", () => page.$("#definition #params"));
  assert.match(await page.textContent("#params"), /keep: integer, default 7/);
  await page.click("#run-now");
  await until("the parameters form", () => page.$("form.run-params"));
  assert.equal(await page.evaluate(() => document.querySelector("#param-db").tagName), "SELECT");
  assert.equal(await page.getAttribute("#param-dry_run", "type"), "checkbox");
  assert.equal(await page.getAttribute("#param-keep", "type"), "number");
  assert.equal(await page.getAttribute("#param-keep", "min"), "1");
  assert.equal(await page.getAttribute("#param-keep", "max"), "30");
  assert.equal(await page.inputValue("#param-keep"), "7", "the default prefilled");
  assert.equal(await page.evaluate(() => document.querySelector("#param-notes").tagName), "TEXTAREA");
  assert.equal(await page.getAttribute("#param-token", "type"), "password");
  // The hostile text is text: no image, no script, nothing ran.
  const options = await page.$$eval("#param-db option", (os) => os.map((o) => o.textContent));
  assert.ok(options.includes(HOSTILE), `the enum value shown as it is: ${options}`);
  assert.match(await page.textContent("form.run-params"), /the database <img src=x/);
  assert.equal(await page.$("form.run-params img, form.run-params script"), null);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  await shot(page, "params-form");
  const found = await axe(page, "a saved job's parameters form");
  assert.deepEqual(found, [], found.join("\n"));
  step("Run now opened a form made from the schema; hostile text is text; axe finds nothing");

  // A refused value: the API's message beside its field, no job.
  await page.selectOption("#param-db", { label: "sales" });
  await page.fill("#param-host", "web1");
  await page.fill("#param-token", "tok-5e3d-secret");
  await page.click("#run-with-params");
  await until("the message beside the host", async () => (await page.textContent("#param-host-error")).length > 0);
  assert.match(await page.textContent("#param-host-error"), /does not match/);
  assert.equal(await page.getAttribute("#param-host", "aria-invalid"), "true");
  const none = await api("GET", `/api/v1/jobs?schedule_id=${s.id}`);
  assert.equal(none.jobs.length, 0, "no job for a refused run");
  await shot(page, "params-refused");
  step("a refused host: the API's message beside the field, and no job");

  await page.fill("#param-host", "db7");
  await page.fill("#param-keep", "3");
  await page.check("#param-dry_run");
  await page.fill("#param-notes", "line one\nline 'two' $HOME");
  await page.click("#run-with-params");
  await until("the queued job's link", () => page.$("#action-status a[href^='/jobs/']"));
  assert.equal(await page.$("form.run-params"), null, "the form closes");
  const jobId = Number((await page.getAttribute("#action-status a", "href")).split("/").pop());
  const job = await finished(jobId);
  assert.equal(job.state, "succeeded");
  assert.deepEqual(job.params, { db: "sales", host: "db7", keep: 3, dry_run: true, notes: "line one\nline 'two' $HOME", token: null });
  await page.goto(`${URL}/jobs/${jobId}`);
  await until("its log", () => page.$("text=restore sales to db7"));
  assert.match(await page.textContent("body"), /restore sales to db7 keep=3 dry=true with \*\*\*/);
  assert.ok(!(await page.textContent("body")).includes("tok-5e3d-secret"), "the secret is never shown");
  await page.click("summary:has-text('Details')");
  assert.match(await page.textContent("#param-values"), /token \(secret, never kept\)/);
  assert.match(await page.textContent("#param-values"), /host = db7/);
  step("good values ran; the job's page shows them, the secret masked and by name");

  // Rerun: the values it ran with, the secret asked again.
  await page.click("button:has-text('Rerun')");
  await until("the rerun form", () => page.$("form.rerun-secrets"));
  assert.equal(await page.inputValue("#rerun-param-host"), "db7");
  assert.equal(await page.inputValue("#rerun-param-keep"), "3");
  assert.equal(await page.inputValue("#rerun-param-token"), "", "a secret is never prefilled");
  await page.click("#rerun-with-secrets");
  await until("the message beside the token", async () => (await page.textContent("#rerun-param-token-error")).length > 0);
  assert.match(await page.textContent("#rerun-param-token-error"), /give it again/);
  await page.fill("#rerun-param-token", "tok-again");
  await page.fill("#rerun-param-keep", "5");
  await page.click("#rerun-with-secrets");
  await page.waitForURL((u) => u.pathname !== `/jobs/${jobId}` && u.pathname.startsWith("/jobs/"));
  const again = await finished(Number(new globalThis.URL(page.url()).pathname.split("/").pop()));
  assert.equal(again.rerun_of, jobId);
  assert.deepEqual(again.params, { ...job.params, keep: 5 });
  step("Rerun kept the values, asked for the secret again and ran with the change");
  // The refusals the scenario asked for are the only errors.
  b.problems.splice(0, b.problems.length, ...b.problems.filter((p) => !/status of 400/.test(p)));
  await b.close();
});
