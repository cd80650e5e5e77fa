// A person limited to a folder. The server has a bootstrap token
// (JOBLOG_TOKEN), with which the scenario makes fay, an operator in folder
// team-a and nothing elsewhere, and a job in team-a and one in team-b. Signed
// in, fay's header says her folder; the job list holds team-a's job only,
// tagged with its folder, and stays so while team-b's jobs come and go (the
// feed neither counts nor names them). Team-b's job by its address is "no
// job with id N", and its log, search and result answer 404 to her
// session; her own job's page has Rerun. The submit form offers her folder
// only, and the job it makes is in it.

import { scenario, browser, shot, assert, URL, TOKEN, until, api, submit, finished, axe } from "./lib.mjs";

const PASSWORD = "correct horse battery";

await scenario("folders", async (step) => {
  assert.ok(TOKEN, "this scenario needs JOBLOG_TOKEN (the bootstrap token)");
  await api("POST", "/api/v1/users", { name: "fay", password: PASSWORD, role: "viewer", folders: { "team-a": "operator" } });
  const mine = await submit({ name: "ours", command: ["echo", "team-a output"], folder: "team-a" });
  const theirs = await submit({ name: "theirs", command: ["echo", "team-b secret"], folder: "team-b" });
  await finished(mine.id);
  await finished(theirs.id);
  const found = [];

  const b = await browser();
  const page = await b.newPage();
  await page.goto(`${URL}/`);
  await until("the sign-in form", () => page.$("#sign-in-form"));
  await page.fill("#sign-in-form input[name=name]", "fay");
  await page.fill("#sign-in-form input[name=password]", PASSWORD);
  await page.click("#sign-in-form button[type=submit]");
  await until("her job in the list", () => page.$(`#jobs tbody tr[data-id='${mine.id}']`));
  // The page asked who she was before she signed in: that 401 is expected.
  b.problems.splice(0, b.problems.length, ...b.problems.filter((p) => !/status of 401/.test(p)));
  assert.equal(await page.textContent("#who .who-name"), "fay · team-a: operator");
  assert.equal(await page.$(`#jobs tbody tr[data-id='${theirs.id}']`), null, "another folder's job is not listed");
  assert.equal(await page.textContent(`#jobs tbody tr[data-id='${mine.id}'] .folder-tag`), "team-a");
  assert.ok(await page.isVisible("nav a[href='/submit']"), "an operator in a folder submits");
  assert.ok(await page.isHidden("nav a[href='/users']"));
  await shot(page, "folders-list");
  found.push(...(await axe(page, "a folder's job list")));
  step("signed in: her folder in the header, team-a's job listed with its folder, team-b's not");

  // The feed: team-b's new job never shows, team-a's does.
  const hidden = await submit({ name: "theirs-again", command: ["true"], folder: "team-b" });
  const shown = await submit({ name: "ours-again", command: ["true"], folder: "team-a" });
  await until("team-a's new job in the list", () => page.$(`#jobs tbody tr[data-id='${shown.id}']`));
  await finished(hidden.id);
  await finished(shown.id);
  await page.waitForTimeout(600);
  assert.equal(await page.$(`#jobs tbody tr[data-id='${hidden.id}']`), null, "team-b's new job stays out");
  step("a new job of team-a appears by the feed; team-b's never does");

  // Another folder's job by address, log, search and result: not found.
  await page.goto(`${URL}/jobs/${theirs.id}`);
  await until("the not-found page", async () => (await page.textContent("main")).includes(`no job with id ${theirs.id}`));
  assert.ok(!(await page.textContent("body")).includes("team-b secret"));
  await shot(page, "folders-other-job");
  const statuses = await page.evaluate(async (id) => {
    const out = [];
    for (const path of ["log/text", "log/search?q=secret", "log", "result", "log/outline"]) {
      out.push((await fetch(`/api/v1/jobs/${id}/${path}`)).status);
    }
    return out;
  }, theirs.id);
  assert.deepEqual(statuses, [404, 404, 404, 404, 404]);
  // Those 404s, and the page's own, are what this step asked for.
  b.problems.splice(0, b.problems.length, ...b.problems.filter((p) => !/status of 404/.test(p)));
  step("team-b's job by its address, log, search, result and outline: 404, nothing of it shown");

  await page.goto(`${URL}/jobs/${mine.id}`);
  await until("her job's log", async () => (await page.textContent("main")).includes("team-a output"));
  assert.ok(await page.$("button:has-text('Rerun')"), "an operator in its folder reruns it");
  step("her own job: its log and Rerun");

  await page.goto(`${URL}/submit`);
  await until("the submit form", () => page.$("#submit"));
  const options = await page.$$eval("#submit select[name=folder] option", (os) => os.map((o) => o.value));
  assert.deepEqual(options, ["team-a"], "her folder is the one choice");
  await page.fill("#submit textarea[name=body]", "echo from the form");
  await shot(page, "folders-submit");
  found.push(...(await axe(page, "the submit form of a folder's operator")));
  await page.click("#submit button[type=submit]");
  await until("the new job's page", () => /\/jobs\/\d+$/.test(new globalThis.URL(page.url()).pathname));
  const made = Number(new globalThis.URL(page.url()).pathname.split("/").pop());
  await finished(made);
  assert.equal((await api("GET", `/api/v1/jobs/${made}`)).folder, "team-a");
  step("the submit form offers her folder only, and its job is in it");

  assert.deepEqual(found, [], "accessibility findings");
  await b.close();
});
