// Wrap: a line longer than the log is wide is clipped in its row (rows
// stay one fixed-height line, the list virtualized); the Wrap toggle (or
// w) shows the selected line in full, wrapped, in a panel under the log.
// A click selects a line, j / k the next / previous one.

import { scenario, browser, submit, finished, api, shot, assert, URL, until } from "./lib.mjs";

const SCRIPT = [
  "echo first",
  "echo \"long: $(seq -f 'word%04g' -s ' ' 1 600) THE-END\"",
  "echo '::warning file=a.py::after the long one'",
  "seq -f 'filler %g' 1 200",
].join("\n");

await scenario("wrap", async (step) => {
  const { id } = await submit({ name: "wrap", script: SCRIPT });
  await finished(id);
  const long = (await api("GET", `/api/v1/jobs/${id}/log?after_seq=1&limit=1`)).records[0].message;
  assert.ok(long.length > 5000 && long.endsWith("THE-END"), "a line of over 5,000 characters");
  const b = await browser();
  const page = await b.newPage();
  await page.goto(`${URL}/jobs/${id}`);
  await until("the long line", () => page.$(".row[data-seq='2']"));

  // Clipped in its row: its end is past the log's right edge.
  const clipped = await page.evaluate(() => {
    const box = document.querySelector(".log-scroll").getBoundingClientRect();
    const tx = document.querySelector(".row[data-seq='2'] .tx").getBoundingClientRect();
    return tx.right > box.right;
  });
  assert.ok(clipped, "the long line runs past the log's edge");
  assert.equal(await page.isHidden("#line-panel"), true);
  const heights = () => page.$$eval(".log-rows .row:not([hidden])", (rs) => [...new Set(rs.map((r) => r.offsetHeight))]);
  assert.deepEqual(await heights(), [18]);

  // w: the panel opens on the first line in view; a click selects the long one.
  await page.keyboard.press("w");
  await until("the panel", () => page.isVisible("#line-panel"));
  assert.equal(await page.getAttribute("#wrap", "aria-pressed"), "true");
  assert.match(await page.textContent("#line-panel .line-head"), /^line 1 · output/);
  await page.click(".row[data-seq='2'] .tx", { position: { x: 20, y: 5 } });
  await until("line 2 in the panel", async () => /^line 2 /.test(await page.textContent("#line-panel .line-head")));
  assert.equal(await page.textContent("#line-panel .line-text"), long, "the whole line");
  const wrapped = await page.$eval("#line-panel .line-text", (t) => ({
    fits: t.scrollWidth <= t.clientWidth + 1,
    lines: Math.round(t.getBoundingClientRect().height / parseFloat(getComputedStyle(t).lineHeight || "15")),
    height: t.getBoundingClientRect().height,
  }));
  assert.ok(wrapped.fits, "the panel wraps: nothing past its right edge");
  assert.ok(wrapped.height > 5 * 15, `the line takes several lines in the panel (${wrapped.height} px)`);
  await until("the selected line highlighted", async () => (await page.$eval(".row.hl", (r) => r.dataset.seq)) === "2");
  assert.deepEqual(await heights(), [18], "the rows keep their fixed height");
  await shot(page, "job-wrap");
  step(`a ${long.length}-character line is clipped in its row and shown whole, wrapped, in the panel`);

  // The keyboard: j / k move the selection, w closes.
  await page.keyboard.press("j");
  await until("line 3 in the panel", async () => /^line 3 · warning/.test(await page.textContent("#line-panel .line-head")));
  assert.equal(await page.textContent("#line-panel .line-text"), "after the long one file=a.py");
  await until("line 3 highlighted", async () => (await page.$eval(".row.hl", (r) => r.dataset.seq)) === "3");
  await page.keyboard.press("k");
  await until("line 2 again", async () => /^line 2 /.test(await page.textContent("#line-panel .line-head")));
  // Far down with j: the selection stays in view.
  for (let i = 0; i < 60; i++) await page.keyboard.press("j");
  await until("line 62 in the panel", async () => /^line 62 /.test(await page.textContent("#line-panel .line-head")));
  await until("line 62 highlighted", async () => (await page.$eval(".row.hl", (r) => r.dataset.seq)) === "62");
  const inView = await page.evaluate(() => {
    const box = document.querySelector(".log-scroll").getBoundingClientRect();
    const r = document.querySelector(".row.hl").getBoundingClientRect();
    return r.top >= box.top && r.bottom <= box.bottom;
  });
  assert.ok(inView, "the selected line is scrolled into view");
  await page.keyboard.press("w");
  await until("the panel closed", () => page.isHidden("#line-panel"));
  assert.equal(await page.getAttribute("#wrap", "aria-pressed"), "false");
  await page.click("#wrap");
  await until("the panel again", () => page.isVisible("#line-panel"));
  assert.match(await page.textContent("#line-panel .line-head"), /^line 62 /);
  step("w toggles the panel, j / k select the next / previous line and keep it in view");
  await b.close();
});
