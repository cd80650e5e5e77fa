// Nodes and where jobs run. The server under test (db-1: role=db,
// os=linux, a secret DB_PASSWORD) follows gpu-1 (role=gpu), stopped on the
// same data directory with a job asking for role=gpu still queued
// (JOBLOG_WAITING_JOB). The Nodes page lists both with their labels, db-1
// marked as the node that answered; the waiting job says why in the list
// and prominently on its page; a job submitted to run on role=db shows
// "runs on" and runs there, after refusals of bad selectors in the API's
// words; a schedule's form sets, shows and clears its selector; a queued
// retry shows when it runs. An admin drains db-1 from the page (asked
// first): draining while a job runs, drained once it ends, and a job
// submitted meanwhile stays queued until Undrain, then runs there; a viewer
// gets no button. axe runs on the new and changed pages.

import { scenario, browser, shot, assert, URL, until, api, finished, axe } from "./lib.mjs";

// Beside the serious and critical findings, axe holds these pages to:
const AXE_ALSO = ["label", "empty-table-header"];

const WAITING = Number(process.env.JOBLOG_WAITING_JOB);
assert.ok(WAITING > 0, "JOBLOG_WAITING_JOB names the job that waits for a role=gpu node");

// The Nodes table as shown.
async function nodes(page) {
  return page.$$eval("#nodes tbody tr[data-name]", (trs) =>
    trs.map((tr) => ({
      name: tr.dataset.name,
      state: tr.children[0].querySelector(".state-label").textContent,
      node: tr.children[1].textContent,
      labels: [...tr.children[2].querySelectorAll(".lbl")].map((l) => l.textContent),
      labelsText: tr.children[2].textContent,
      heartbeat: tr.children[3].textContent,
      heartbeatAt: tr.children[3].title,
      running: tr.children[5].textContent,
      version: tr.children[6].textContent,
      secrets: tr.children[7].textContent,
      actions: tr.children[8].childElementCount,
    })),
  );
}


await scenario("nodes", async (step) => {
  const b = await browser();
  const page = await b.newPage();
  const found = [];

  // The Nodes page, from the top bar.
  await page.goto(`${URL}/`);
  await Promise.all([page.waitForURL(/\/nodes$/), page.click("nav a[href='/nodes']")]);
  await until("both nodes", async () => (await nodes(page)).length === 2);
  const [db, gpu] = await nodes(page);
  assert.equal(db.name, "db-1");
  assert.equal(db.state, "up");
  assert.deepEqual(db.labels, ["os=linux", "role=db"]);
  assert.match(db.node, /^db-1 this node$/, "the answering node is marked");
  assert.equal(db.secrets, "DB_PASSWORD");
  assert.match(db.heartbeat, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (UTC|[+-]\d\d:\d\d) (now|\d+ s ago)$/, db.heartbeat);
  assert.ok(!Number.isNaN(Date.parse(db.heartbeatAt)), "the heartbeat as the API gives it, on hover");
  assert.equal(db.running, "0");
  assert.match(db.version, /^\d+\.\d+\.\d+/);
  assert.equal(gpu.name, "gpu-1");
  assert.equal(gpu.state, "stopped");
  assert.deepEqual(gpu.labels, ["role=gpu"]);
  assert.equal(gpu.node, "gpu-1", "only the answering node is marked");
  assert.equal(gpu.secrets, "");
  assert.deepEqual([db.actions, gpu.actions], [1, 0], "Drain for the up node, nothing for the stopped one");
  assert.deepEqual(await page.$$eval("#nodes button", (bs) => bs.map((b) => b.textContent)), ["Drain"]);
  assert.ok(!(await page.textContent("body")).includes("not-shown-42"), "a secret's value is never shown");
  assert.match(await page.textContent("#nodes-status"), /2 nodes, 1 up · lapsed after 30 s without a heartbeat/);
  assert.equal(await page.getAttribute("#nodes tr[data-name='db-1'] td.name a", "href"), "/?node=db-1");
  await shot(page, "nodes");
  found.push(...(await axe(page, "nodes", AXE_ALSO)));
  step("the Nodes page: state, labels, heartbeat, secrets' names, the answering node marked");

  // The waiting job: small in the list, prominent on its page.
  await page.goto(`${URL}/`);
  const row = `#jobs tr[data-id='${WAITING}']`;
  await until("the waiting job's row", () => page.$(`${row} .waiting-for`));
  assert.equal(await page.textContent(`${row} .waiting-for`), "waits: no up node has labels role=gpu");
  assert.equal(await page.getAttribute(`${row} td.waits`, "title"), "Waiting for: no up node has labels role=gpu");
  await page.goto(`${URL}/jobs/${WAITING}`);
  await until("its notice", () => page.$("#waiting-for"));
  assert.equal(await page.textContent("#waiting-for"), "Waiting for no up node has labels role=gpu");
  assert.equal(await page.textContent("#runs-on"), "runs on role=gpu");
  assert.equal(await page.$("#runs-after"), null, "no backoff");
  await shot(page, "job-waiting");
  found.push(...(await axe(page, "a waiting job", AXE_ALSO)));
  step("a job no up node can take says why: in the list, and on its page with its selector");

  // Submit with a selector: bad ones refused in the API's (or its text
  // form's) words, then one this node has.
  await page.goto(`${URL}/submit`);
  await page.fill("textarea[name=body]", "echo on the db node");
  await page.fill("input[name=name]", "on-db");
  const refused = async (selector, message) => {
    await page.fill("input[name=node_selector]", selector);
    await page.click("#submit button[type=submit]");
    await until(`the refusal of ${selector}`, async () => message.test(await page.textContent(".form-status")));
    assert.match(page.url(), /\/submit$/);
  };
  await refused("role=d b", /^Error: node_selector: the value of role: "d b" must be 1 to 63 of ASCII letters/);
  await refused("role", /^Error: node_selector: "role" is not key=value$/);
  await refused("role=db,role=web", /^Error: node_selector: "role" is given twice \("db" and "web"\)$/);
  await refused("role=gpu", /^Error: node_selector: role=gpu asks for labels this server lacks/);
  await page.$eval(".form-status", (e) => e.scrollIntoView({ block: "center" }));
  await shot(page, "submit-runs-on-refused");
  step("bad selectors are refused, naming node_selector");
  await page.fill("input[name=node_selector]", " role=db , os=linux ");
  await Promise.all([page.waitForURL(/\/jobs\/\d+$/), page.click("#submit button[type=submit]")]);
  const ranId = Number(/\/jobs\/(\d+)$/.exec(page.url())[1]);
  const ran = await finished(ranId);
  assert.deepEqual(ran.node_selector, { os: "linux", role: "db" });
  assert.equal(ran.node, "db-1");
  assert.equal(ran.state, "succeeded");
  await until("its end on the page", async () => (await page.textContent(".job-head")).includes("succeeded"));
  assert.equal(await page.textContent("#runs-on"), "runs on os=linux role=db");
  assert.deepEqual(await page.$$eval("#runs-on .lbl", (ls) => ls.map((l) => l.textContent)), ["os=linux", "role=db"]);
  assert.equal(await page.$("#waiting-for"), null);
  await shot(page, "job-runs-on");
  step("a job submitted to run on role=db,os=linux shows it and ran on db-1");
  b.problems.splice(0, b.problems.length, ...b.problems.filter((p) => !p.includes("400")));

  // A schedule's selector: set by the form, shown, cleared by Edit.
  await page.goto(`${URL}/schedules/new`);
  const f = (name) => `#schedule-form [name="${name}"]`;
  await until("the form", () => page.$("#schedule-form"));
  await page.fill(f("name"), "db-vacuum");
  await page.fill(f("cron"), "0 3 * * *");
  await page.fill(f("body"), "echo vacuum");
  await page.fill(f("node_selector"), "role=db");
  await Promise.all([page.waitForURL(/\/schedules\/\d+$/), page.click("#schedule-form button[type=submit]")]);
  const sid = Number(/\/schedules\/(\d+)$/.exec(page.url())[1]);
  assert.deepEqual((await api("GET", `/api/v1/schedules/${sid}`)).node_selector, { role: "db" });
  await until("its definition", () => page.$("#definition #runs-on"));
  assert.equal(await page.textContent("#runs-on"), "role=db");
  found.push(...(await axe(page, "a schedule with a selector", AXE_ALSO)));
  await page.click("#edit");
  await until("the edit form", () => page.$("#schedule-form"));
  assert.equal(await page.inputValue(f("node_selector")), "role=db", "the form shows its selector");
  await page.fill(f("node_selector"), "role=");
  await page.click("#schedule-form button[type=submit]");
  await until("the refusal", async () => /node_selector/.test(await page.textContent("#form-status")));
  assert.match(await page.textContent("#form-status"), /^Error: node_selector: the value of role: "" must be/);
  assert.ok(await page.$eval(f("node_selector"), (i) => i.classList.contains("invalid")), "the field is marked");
  const edits = [];
  page.on("request", (r) => r.method() === "PATCH" && edits.push(r.postDataJSON()));
  await page.fill(f("node_selector"), "");
  await page.click("#schedule-form button[type=submit]");
  await until("saved", async () => (await page.textContent("#action-status")) === "Saved.");
  assert.deepEqual(edits.at(-1), { node_selector: {} }, "only the selector is sent, cleared");
  assert.deepEqual((await api("GET", `/api/v1/schedules/${sid}`)).node_selector, {});
  assert.equal(await page.textContent("#runs-on"), "any node");
  step("a schedule's selector: set by the form, shown, refused in the API's words, cleared by Edit");
  b.problems.splice(0, b.problems.length, ...b.problems.filter((p) => !p.includes("400")));

  // A queued retry says when it runs.
  const flaky = await api("POST", "/api/v1/schedules", {
    name: "flaky-retry",
    cron: "0 3 * * *",
    command: ["false"],
    retries: { attempts: 2, backoff_s: 600 },
  });
  const first = await api("POST", `/api/v1/schedules/${flaky.id}/run`);
  await finished(first.id);
  const retry = await until("the queued retry", async () =>
    (await api("GET", `/api/v1/jobs?schedule_id=${flaky.id}&state=queued`)).jobs.find((j) => j.attempt === 2));
  assert.ok(retry.run_after, JSON.stringify(retry));
  await page.goto(`${URL}/jobs/${retry.id}`);
  await until("its backoff", () => page.$("#runs-after"));
  assert.match(
    await page.textContent("#runs-after"),
    /^Runs after \d{4}-\d\d-\d\d \d\d:\d\d:\d\d (UTC|[+-]\d\d:\d\d) in (9|10) min · the backoff before its next attempt$/,
  );
  assert.equal(await page.getAttribute("#runs-after .time", "title"), retry.run_after);
  assert.equal(await page.$("#waiting-for"), null, "it waits for no node");
  step("a queued retry shows when it runs");

  // The waiting job's page follows it: cancelled, it waits no more.
  await page.goto(`${URL}/jobs/${WAITING}`);
  await until("its notice", () => page.$("#waiting-for"));
  await api("POST", `/api/v1/jobs/${WAITING}/cancel`);
  await until("its end on the page", async () => (await page.textContent(".job-head h1")).includes("cancelled"));
  assert.equal(await page.$("#waiting-for"), null);
  step("the waiting job's page follows it to its end");

  // Drain db-1 while a job runs there: asked first, then draining.
  const long = await api("POST", "/api/v1/jobs", { name: "long", command: ["sleep", "600"] });
  await until("the long job running", async () => (await api("GET", `/api/v1/jobs/${long.id}`)).state === "running");
  await page.goto(`${URL}/nodes`);
  const dbRow = "#nodes tr[data-name='db-1']";
  await until("db-1 running a job", async () => (await nodes(page))[0]?.running === "1");
  await page.click(`${dbRow} button.drain`);
  await until("the question", () => page.$("#confirm-drain"));
  assert.equal(
    await page.textContent("#node-action .confirm"),
    "Drain db-1? It takes no new job and fires no schedule; its running job goes on to its end. Drain node Don't drain",
  );
  await page.click("#node-action button:not(#confirm-drain)");
  assert.equal(await page.$("#confirm-drain"), null, "Don't drain keeps it up");
  assert.equal((await nodes(page))[0].state, "up");
  await page.click(`${dbRow} button.drain`);
  await page.click("#confirm-drain");
  await until("db-1 draining", async () => (await nodes(page))[0].state === "draining");
  assert.equal(await page.textContent("#node-action"), "Draining db-1: it takes no new job, and shows drained once none of its jobs runs.");
  assert.deepEqual(await page.$$eval("#nodes button", (bs) => bs.map((b) => b.textContent)), ["Undrain"]);
  const drained = (await api("GET", "/api/v1/nodes")).nodes.find((n) => n.name === "db-1");
  assert.equal(drained.state, "draining");
  assert.ok(drained.drain_at, JSON.stringify(drained));
  assert.match(await page.getAttribute(`${dbRow} td:first-child`, "title"), /^asked to drain: .* \(asked to drain at \d{4}-/);
  await shot(page, "nodes-draining");
  found.push(...(await axe(page, "nodes, one draining", AXE_ALSO)));
  step("Drain asks first, then db-1 is draining while its job runs");

  // A job submitted meanwhile waits; the long one ends: drained.
  const held = await api("POST", "/api/v1/jobs", { name: "held", command: ["echo", "ran after undrain"], node_selector: { role: "db" } });
  await api("POST", `/api/v1/jobs/${long.id}/cancel`);
  await until("db-1 drained", async () => (await nodes(page))[0].state === "drained");
  assert.match(await page.textContent("#nodes-status"), /^2 nodes, 0 up, 1 drained · /);
  await new Promise((r) => setTimeout(r, 1500));
  const waits = await api("GET", `/api/v1/jobs/${held.id}`);
  assert.equal(waits.state, "queued", "a drained node takes no job");
  assert.equal(waits.waiting_for, "no up node has labels role=db");
  await shot(page, "nodes-drained");
  found.push(...(await axe(page, "nodes, one drained", AXE_ALSO)));
  step("a job submitted to the drained node stays queued; db-1 drained once its job ended");

  // A viewer sees the states and no button.
  const viewer = (await api("POST", "/api/v1/tokens", { name: "nodes-viewer", role: "viewer" })).token;
  const as = await b.newPage();
  await as.addInitScript((t) => sessionStorage.setItem("joblog.token", t), viewer);
  await as.goto(`${URL}/nodes`);
  await until("the viewer's nodes", async () => (await nodes(as)).length === 2);
  assert.equal((await nodes(as))[0].state, "drained");
  assert.equal(await as.$("#nodes button"), null, "no Drain or Undrain for a viewer");
  await as.close();
  step("a viewer sees db-1 drained, and no button");

  // Undrain: it takes jobs again, and the held job runs there.
  await page.click(`${dbRow} button.undrain`);
  await until("db-1 up", async () => (await nodes(page))[0].state === "up");
  assert.equal(await page.textContent("#node-action"), "db-1 takes jobs again.");
  const ranAfter = await finished(held.id);
  assert.equal(ranAfter.state, "succeeded");
  assert.equal(ranAfter.node, "db-1");
  assert.equal((await api("GET", "/api/v1/nodes")).nodes.find((n) => n.name === "db-1").drain_at, null);
  step("Undrain: db-1 up again, and the held job ran there");

  assert.deepEqual(found, [], `axe found:\n${found.join("\n")}`);
  await b.close();
});
