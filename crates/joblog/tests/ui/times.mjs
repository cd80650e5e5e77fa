// Times: every time the UI shows says its zone, and one setting of the top
// bar (local or UTC, remembered in localStorage) chooses it for all of
// them: the job list, a job's header, the log's timestamps, the schedules'
// next fires and the audit trail. The browser runs in Europe/Berlin
// (+01:00 in November), so local and UTC differ by an hour.

import { scenario, browser, submit, finished, api, assert, URL, until } from "./lib.mjs";

const ZONED = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d{3})?) (UTC|[+-]\d\d:\d\d)$/;

// The instant a shown time names ("2026-11-25 04:10:05 +01:00").
function instant(shown) {
  const m = ZONED.exec(shown.trim());
  assert.ok(m, `"${shown}" is a time with its zone`);
  return new Date(`${m[1]}T${m[2]}${m[3] === "UTC" ? "Z" : m[3]}`).getTime();
}

// A record's time of day as the log shows it in UTC or at +01:00.
const clock = (ts, offsetH) => {
  const d = new Date(new Date(ts).getTime() + offsetH * 3600_000);
  return `${d.toISOString().slice(11, 23)} ${offsetH ? "+01:00" : "UTC"}`;
};

await scenario("times", async (step) => {
  const { id } = await submit({ name: "times", script: "echo one; echo two" });
  const job = await finished(id);
  const record = (await api("GET", `/api/v1/jobs/${id}/log?limit=1`)).records[0];
  const schedule = await api("POST", "/api/v1/schedules", { name: `zoned-${Date.now()}`, cron: "30 2 * * *", timezone: "America/New_York", command: ["true"] });
  const started = Math.floor(new Date(job.started_at).getTime() / 1000) * 1000;

  const b = await browser({ timezoneId: "Europe/Berlin" });
  const page = await b.newPage();
  await page.goto(`${URL}/`);
  const cell = `#jobs tr[data-id='${id}'] td.started`;
  await until("the job's row", () => page.$(cell));
  assert.equal(await page.inputValue("#time-zone"), "local", "local unless told");
  const local = await page.textContent(cell);
  assert.match(local, / \+01:00$/, "a local time says its offset");
  assert.equal(instant(local), started);
  await page.selectOption("#time-zone", "utc");
  await until("the list in UTC", async () => (await page.textContent(cell)).endsWith(" UTC"));
  const inUtc = await page.textContent(cell);
  assert.equal(instant(inUtc), started, "the same instant");
  assert.notEqual(inUtc.slice(11, 13), local.slice(11, 13), "an hour apart");
  step(`the list's time changed from ${local} to ${inUtc}`);

  // Remembered: a page opened afterwards shows UTC.
  await page.goto(`${URL}/jobs/${id}`);
  await until("the log", () => page.$(".row[data-seq='1']"));
  assert.equal(await page.inputValue("#time-zone"), "utc", "the setting is remembered");
  await page.click("#timestamps");
  const ts = () => page.textContent(".row[data-seq='1'] .ts");
  assert.equal(await ts(), clock(record.ts, 0));
  assert.match(await page.textContent(".head-facts"), /started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
  await page.selectOption("#time-zone", "local");
  await until("the log in local time", async () => (await ts()) === clock(record.ts, 1));
  assert.match(await page.textContent(".head-facts"), /started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+01:00/);
  assert.match(await page.getAttribute(".row[data-seq='1'] .ts", "title"), ZONED);
  step(`the log's timestamp changed from ${clock(record.ts, 0)} to ${clock(record.ts, 1)}, the header with it`);

  // The schedules: next fires in the chosen zone, and in the schedule's own.
  await page.goto(`${URL}/schedules`);
  const next = `#schedules tr[data-id='${schedule.id}'] td.next-fire`;
  await until("the schedule's row", () => page.$(next));
  assert.match(await page.textContent(next), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+01:00 in /);
  await page.goto(`${URL}/schedules/${schedule.id}`);
  await until("its next fires", () => page.$("#next-fires li"));
  const fire = await page.textContent("#next-fires li");
  assert.match(fire, /^\d{4}-\d\d-\d\d 08:30:00 \+01:00 in .* 02:30:00 America\/New_York$/, fire);
  await page.selectOption("#time-zone", "utc");
  await until("next fires in UTC", async () => / 07:30:00 UTC in /.test(await page.textContent("#next-fires li")));
  step("a schedule's next fires say their zone, and the schedule's own zone's wall clock");

  // The audit trail.
  await page.goto(`${URL}/audit`);
  await until("an entry", () => page.$("#audit tbody tr[data-id]"));
  assert.match(await page.textContent("#audit tbody tr[data-id] td"), / UTC$/);
  await page.selectOption("#time-zone", "local");
  await until("the audit in local time", async () => / \+01:00$/.test(await page.textContent("#audit tbody tr[data-id] td")));
  step("the audit trail's times follow the setting");
  await b.close();
});
