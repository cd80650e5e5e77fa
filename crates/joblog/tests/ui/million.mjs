// A 1,000,000-record log opens at its start, reaches its last line, and
// never has more than a few hundred rows in the DOM while it is scrolled.
// The times are printed (measured, never asserted: see
// docs/benchmarks.md for the measurement on a release build).

import { scenario, browser, submit, finished, visibleSeqs, shot, assert, URL, until } from "./lib.mjs";

const N = 1_000_000;
const MAX_ROWS = 400;

await scenario("million", async (step) => {
  const { id } = await submit({ name: "million", command: ["seq", "1", String(N)] });
  const done = await finished(id, 300000);
  assert.equal(done.log.records, N);
  const b = await browser();
  const page = await b.newPage();
  const domRows = () => page.$$eval(".log-rows .row", (r) => r.length);
  let t = Date.now();
  await page.goto(`${URL}/jobs/${id}`);
  await until("the first screen", async () => (await visibleSeqs(page))[0] === 1, 30000);
  const open = Date.now() - t;
  assert.equal((await page.textContent(".row[data-seq='1'] .tx")), "1");
  step(`first screen in ${open} ms`);
  await shot(page, "job-million");

  t = Date.now();
  await page.click(".log-scroll");
  await page.keyboard.press("G");
  await until("the last line", async () => (await visibleSeqs(page)).includes(N), 30000);
  const end = Date.now() - t;
  assert.equal(await page.textContent(`.row[data-seq='${N}'] .tx`), String(N));
  step(`last line (G) in ${end} ms`);

  // Scrolled across the whole log: the DOM holds a bounded window.
  let most = await domRows();
  for (const f of [0.9, 0.5, 0.123, 0.77, 0.01, 0.999, 0.3333]) {
    await page.$eval(".log-scroll", (s, f) => (s.scrollTop = f * (s.scrollHeight - s.clientHeight)), f);
    const expect = Math.round(f * N);
    // Drawn on the next frame: wait for the rows of the new position.
    const v = await until(`rows near ${expect}`, async () => {
      const v = await visibleSeqs(page);
      return v.length > 10 && v.every((s) => s > 0) && Math.abs(v[0] - expect) < N / 100 && v;
    }, 30000);
    assert.ok(v.length > 10);
    most = Math.max(most, await domRows());
  }
  for (let i = 0; i < 40; i++) await page.mouse.wheel(0, 2000);
  most = Math.max(most, await domRows());
  assert.ok(most <= MAX_ROWS, `${most} rows in the DOM`);
  step(`at most ${most} rows in the DOM while scrolling`);
  await b.close();
  console.log(JSON.stringify({ million: { open_ms: open, end_ms: end, max_dom_rows: most } }));
});
