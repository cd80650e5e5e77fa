// With a token configured, the UI without it shows the sign-in form, not
// data, and the token prompt one click away ("Use an API token instead"); a
// token typed there is kept in session storage, sent as a bearer header,
// and never put in a URL; the log's downloads are fetched with it.

import { scenario, browser, submit, finished, api, assert, URL, TOKEN, until, rows } from "./lib.mjs";
import { downloads } from "./download.mjs";

await scenario("token", async (step) => {
  assert.ok(TOKEN, "this scenario needs JOBLOG_TOKEN");
  const { id } = await submit({ name: "secret-work", command: ["echo", "classified output"] });
  await finished(id);
  const b = await browser();
  // The server answers 401 to the UI's first question; the browser logs
  // that as a failed resource, which is expected here.
  const page = await b.newPage();
  const urls = [];
  page.on("request", (r) => urls.push(r.url()));
  await page.goto(`${URL}/jobs/${id}`);
  // The server asks who is there: a name and password first, and a token
  // one click away.
  await until("the sign-in form", () => page.$("#sign-in-form"));
  await page.click("text=Use an API token instead");
  await until("the token prompt", () => page.$("#token-form"));
  const body = await page.textContent("body");
  assert.ok(!body.includes("classified output") && !body.includes("secret-work"), "no data without the token");
  assert.equal(await page.$(".log-rows .row[data-seq]"), null);
  step("without a token: the prompt, no data");
  await page.fill("#token-form input", "jl_wrong-token-wrong-token-wrong-token");
  await page.press("#token-form input", "Enter");
  await until("the refusal", async () => (await page.textContent("#token-form")).includes("refused"));
  step("a wrong token is refused");
  await page.fill("#token-form input", TOKEN);
  await page.press("#token-form input", "Enter");
  await until("the log", async () => (await rows(page)).some((r) => r.text === "classified output"));
  step("with the token: the job's log");
  assert.equal(await page.evaluate(() => sessionStorage.getItem("joblog.token")), TOKEN);
  assert.match(await page.textContent("#who .who-name"), / · admin$/, "the bootstrap token is an admin's");
  assert.ok(await page.$("#forget-token"), "a token is forgotten, not signed out");
  assert.equal(await page.$("#sign-out"), null);
  // The downloads cannot be plain links with a token: fetched with it.
  const { records } = await api("GET", `/api/v1/jobs/${id}/log`);
  await downloads(page, id, records);
  step("with the token, both downloads (text and JSON lines) are fetched with it");
  for (const u of urls) assert.ok(!u.includes(TOKEN), `the token is in a URL: ${u}`);
  // The 401s of the prompt were expected.
  b.problems.splice(0, b.problems.length, ...b.problems.filter((p) => !p.includes("401")));
  await b.close();
});
