// The log viewer's tools on a 100,000-line log: groups fold, timestamps,
// server-side search with next/previous, the stream filter, the first
// error, #seq-N links and the download.

import { scenario, browser, submit, finished, api, rows, visibleSeqs, shot, assert, URL, until } from "./lib.mjs";
import { readFileSync } from "node:fs";

const SCRIPT = [
  "echo '::group::Setup'",
  "seq -f 'setup %.0f' 1 50",
  "echo '::endgroup::'",
  "echo '::warning file=a.py,line=3::check this'",
  "seq -f 'line %.0f' 1 50000",
  "echo 'needle alpha'",
  "echo '::error::first failure'",
  "echo '::progress percent=60::Copying'",
  "seq -f 'more %.0f' 1 49942",
  "echo 'NEEDLE beta'",
  "echo 'x needle gamma' >&2",
].join("\n");

await scenario("log", async (step) => {
  const { id } = await submit({ name: "features", script: SCRIPT });
  const done = await finished(id);
  const n = done.log.records;
  assert.equal(n, 100000);
  const firstError = (await api("GET", `/api/v1/jobs/${id}/log?streams=error&limit=1`)).records[0].seq;
  const b = await browser();
  const page = await b.newPage();
  await page.goto(`${URL}/jobs/${id}`);
  await until("the first rows", async () => (await visibleSeqs(page)).includes(53));

  // Groups: folded at first, a click unfolds.
  let seqs = await visibleSeqs(page);
  assert.deepEqual(seqs.slice(0, 3), [1, 53, 54], "the Setup group is folded");
  const header = (await rows(page)).find((r) => r.seq === 1);
  assert.match(header.text, /Setup 51 lines/);
  await page.click(".row[data-seq='1'] .tx");
  await until("the group unfolded", async () => (await visibleSeqs(page)).slice(0, 3).join() === "1,2,3");
  step("a ::group:: is folded, and unfolds on a click");
  await page.click(".row[data-seq='1'] .tx");
  await until("the group folded again", async () => (await visibleSeqs(page))[1] === 53);

  // Timestamps.
  const tsShown = () => page.$eval(".row[data-seq='53'] .ts", (e) => getComputedStyle(e).display !== "none");
  assert.equal(await tsShown(), false);
  await page.click("#timestamps");
  assert.equal(await tsShown(), true);
  assert.match(await page.textContent(".row[data-seq='53'] .ts"), /^\d\d:\d\d:\d\d\.\d{3} (UTC|[+-]\d\d:\d\d)$/);
  await page.keyboard.press("t");
  assert.equal(await tsShown(), false);
  step("timestamps toggle (button and t)");

  // The warning's fields are shown.
  const warning = (await rows(page)).find((r) => r.seq === 53);
  assert.match(warning.cls, /s-warning/);
  assert.match(warning.text, /check this file=a\.py line=3/);
  step("a ::warning's file and line are shown");

  // Search, done by the server.
  const searched = page.waitForResponse((r) => r.url().includes("/log/search?") && r.url().includes("q=needle"));
  await page.fill("#search", "needle");
  await page.press("#search", "Enter");
  assert.equal((await searched).status(), 200);
  await until("the first match", async () => (await page.textContent("#search-info")) === "1 of 3");
  const alpha = (await api("GET", `/api/v1/jobs/${id}/log/search?q=needle`)).seqs;
  assert.equal(alpha.length, 3);
  const current = () => page.$eval(".row.cur", (r) => Number(r.dataset.seq)).catch(() => null);
  await until("match 1 in view", async () => (await current()) === alpha[0]);
  assert.equal(await page.textContent(`.row[data-seq='${alpha[0]}'] mark`), "needle");
  await page.click("body");
  await page.keyboard.press("n");
  await until("match 2", async () => (await current()) === alpha[1]);
  assert.equal(await page.textContent("#search-info"), "2 of 3");
  assert.equal(await page.textContent(`.row[data-seq='${alpha[1]}'] mark`), "NEEDLE", "case-insensitive");
  await page.keyboard.press("n");
  await until("match 3", async () => (await current()) === alpha[2]);
  await page.keyboard.press("N");
  await until("back to match 2", async () => (await current()) === alpha[1]);
  // Enter again in the box goes on to the next match (Shift+Enter back),
  // as a browser's find does; it does not start over.
  await page.focus("#search");
  await page.press("#search", "Enter");
  await until("Enter: match 3", async () => (await current()) === alpha[2]);
  await page.press("#search", "Shift+Enter");
  await until("Shift+Enter: match 2", async () => (await current()) === alpha[1]);
  step("server-side search: 3 matches, n/N and Enter/Shift+Enter move between them");
  await shot(page, "job-search");
  await page.keyboard.press("Escape");

  // The stream filter.
  await page.click("#streams .chip[data-stream='output']");
  await until("output hidden", async () => {
    const r = (await rows(page)).filter((x) => x.seq);
    return r.length > 0 && r.every((x) => !/s-output/.test(x.cls));
  });
  const filtered = (await rows(page)).filter((x) => x.seq).map((x) => x.seq);
  assert.deepEqual(filtered.slice(0, 3), [1, 52, 53], "the group's start and end, then the warning");
  assert.ok(filtered.includes(firstError), "the error is among the rows");
  await page.click("#streams .chip[data-stream='output']");
  await until("all streams again", async () => (await visibleSeqs(page)).includes(54));
  step("the stream filter hides and shows output");

  // First error.
  await page.click("#first-error");
  await until("the first error highlighted", async () =>
    (await page.$eval(".row.hl", (r) => Number(r.dataset.seq)).catch(() => null)) === firstError,
  );
  assert.ok((await visibleSeqs(page)).includes(firstError));
  step("“First error” jumps to it");

  // A link to a line, opened fresh.
  const target = 77777;
  const linked = await b.newPage();
  await linked.goto(`${URL}/jobs/${id}#seq-${target}`);
  await until("the linked line in view", async () => (await visibleSeqs(linked)).includes(target));
  assert.equal(await linked.$eval(".row.hl", (r) => Number(r.dataset.seq)), target);
  // A line number is itself such a link.
  const other = target + 3;
  await linked.click(`.row[data-seq='${other}'] a.ln`);
  await until("the clicked line highlighted", async () =>
    (await linked.$eval(".row.hl", (r) => Number(r.dataset.seq)).catch(() => null)) === other,
  );
  assert.equal(new globalThis.URL(linked.url()).hash, `#seq-${other}`);
  step("#seq-N opens at that line, highlighted; line numbers link there");

  // Download.
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#download")]);
  const text = readFileSync(await download.path(), "utf8");
  // One line per record, each ended by a newline (::endgroup:: is empty).
  assert.ok(text.endsWith("\n"));
  const lines = text.slice(0, -1).split("\n");
  assert.equal(lines.length, n, "one line per record");
  assert.ok(text.includes("needle alpha"));
  step(`the download holds all ${n} lines`);
  await b.close();
});
