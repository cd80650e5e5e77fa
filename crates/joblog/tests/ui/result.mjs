// The result viewer: a 32 MB result (380,001 items) opens as a collapsed
// tree parsed by a worker, node by node, 200 rows at a time, as text; a
// small one keeps the job's key order and cuts a long string until asked;
// the download is the server's bytes; failures are said in place of the
// tree. The time from the click to the root row and the longest main-
// thread task are printed, never asserted (see docs/benchmarks.md).

import { scenario, browser, submit, finished, shot, assert, URL, until } from "./lib.mjs";
import { readFileSync } from "node:fs";

const ITEMS = 380_000;
const ITEM = '{"host":"web-01","state":"ok","ms":12.5,"note":"<img src=x onerror=window.__pwned=1>"}';
// `yes` ends each copy with a newline; the last item, 0, closes the array.
const BIG = `{ printf '['; yes '${ITEM},' | head -n ${ITEMS}; printf '0]'; } > "$JOBLOG_RESULT"`;
const BIG_BYTES = 1 + ITEMS * (ITEM.length + 2) + 2;

const LONG = "0123456789".repeat(500) + "END";
// Written as text: a JavaScript object would put "10" and "2" first.
const SMALL_JSON = `{"zeta":1,"10":"ten","alpha":{"b":true,"2":null,"a":[1,2.5,"x"]},"long":${JSON.stringify(LONG)},"empty":{},"list":[],"html":"<b>bold</b><img src=x onerror=window.__pwned=2>"}`;
// The long string is made by the shell, to keep the job's command short.
const SMALL = [
  `long="$(printf '0123456789%.0s' $(seq 500))END"`,
  `printf '${SMALL_JSON.replace(JSON.stringify(LONG), '"%s"')}' "$long" > "$JOBLOG_RESULT"`,
].join("\n");

// A number as the page writes it.
const fmt = (page, n) => page.evaluate((n) => n.toLocaleString(), n);

// Every element of the view, and the longest text node of the page.
const census = (page) =>
  page.evaluate(() => {
    const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    let longest = 0;
    while (walk.nextNode()) longest = Math.max(longest, walk.currentNode.length);
    return { elements: document.querySelectorAll("#result-view *").length, longest };
  });

// The rows directly under an open node: [key, the rest of the row].
const children = (page, node) =>
  page.$$eval(`${node} > ul > li.rv-node > .rv-row`, (rs) =>
    rs.map((r) => [r.querySelector(".rv-key")?.textContent ?? null, r.querySelector(".rv-val, .rv-size").textContent]),
  );

await scenario("result", async (step) => {
  const big = await finished((await submit({ name: "big-result", script: BIG })).id, 300000);
  const small = await finished((await submit({ name: "small-result", script: SMALL })).id);
  assert.equal(big.state, "succeeded", JSON.stringify(big));
  assert.equal(big.result?.bytes, BIG_BYTES, "the big result as written");
  assert.equal(small.result?.bytes, Buffer.byteLength(SMALL_JSON));
  step(`a result of ${BIG_BYTES.toLocaleString("en-US")} bytes (${(BIG_BYTES / 2 ** 20).toFixed(1)} MiB)`);

  const b = await browser();
  const page = await b.newPage();
  const asked = [];
  page.on("request", (r) => r.url().endsWith("/result") && asked.push(r.url()));
  const workers = [];
  page.on("worker", (w) => workers.push(w.url()));
  await page.goto(`${URL}/jobs/${big.id}`);
  await page.click(".job-details summary");
  const show = await until("the result button", () => page.$("#show-result"));
  assert.equal((await show.textContent()).replace(/\D/g, ""), String(BIG_BYTES), "the button gives the size");
  await page.waitForTimeout(300);
  assert.deepEqual(asked, [], "the result is not read before it is asked for");

  // Timed in the page, from the click to the first frame with the root
  // row, and the longest task of the page's thread meanwhile.
  await page.evaluate(() => {
    window.__longest = 0;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.__longest = Math.max(window.__longest, e.duration);
    }).observe({ type: "longtask" });
    const button = document.getElementById("show-result");
    button.addEventListener("click", () => (window.__clicked = performance.now()), { once: true });
    new MutationObserver((_, seen) => {
      if (!document.querySelector(".rv-root")) return;
      seen.disconnect();
      requestAnimationFrame(() => (window.__root = performance.now() - window.__clicked));
    }).observe(document.body, { childList: true, subtree: true });
  });
  await page.click("#show-result");
  await page.waitForSelector(".rv-root", { timeout: 120000 });
  await page.waitForTimeout(300); // a long task is reported after it ends
  // Of which the request (Resource Timing: the request sent to its body's
  // last byte).
  const [rootMs, longest, fetchMs] = (
    await page.evaluate(() => {
      const r = performance.getEntriesByType("resource").find((e) => e.name.endsWith("/result"));
      return [window.__root, window.__longest, r.responseEnd - r.startTime];
    })
  ).map(Math.round);
  assert.equal(asked.length, 1, "read once");
  assert.ok(workers.some((u) => u.endsWith("/ui/result-worker.js")), `parsed by the worker (workers: ${workers})`);
  const root = await page.textContent(".rv-root > .rv-row");
  assert.ok(root.startsWith(`[…] ${await fmt(page, ITEMS + 1)} items`), root);
  assert.equal(await page.getAttribute(".rv-root > .rv-row", "aria-expanded"), "false", "shown collapsed");
  step(`the root row says ${root.split("]")[0]}] ${ITEMS + 1} items, ${rootMs} ms after the click (the request: ${fetchMs} ms)`);

  await page.click(".rv-root > .rv-row");
  await until("200 rows", async () => (await children(page, ".rv-root")).length === 200);
  let c = await census(page);
  assert.ok(c.elements < 2000, `${c.elements} elements in the view`);
  assert.ok(c.longest < 10_000, `a text node of ${c.longest} characters`);
  const rows = await children(page, ".rv-root");
  assert.deepEqual(rows[0], ["0", "{…} 4 keys"]);
  assert.deepEqual(rows[199], ["199", "{…} 4 keys"]);
  assert.equal(await page.textContent(".rv-more"), `200 more of ${await fmt(page, ITEMS + 1)}`);
  step(`opened: 200 rows and a "more" button, ${c.elements} elements, the longest text node ${c.longest} characters`);
  await shot(page, "job-result-big");

  await page.click(".rv-more");
  await until("400 rows", async () => (await children(page, ".rv-root")).length === 400);
  assert.deepEqual((await children(page, ".rv-root"))[399], ["399", "{…} 4 keys"]);
  assert.equal(await page.textContent(".rv-more"), `200 more of ${await fmt(page, ITEMS + 1)}`);
  step("“more” adds the next 200");

  const item = ".rv-root > ul > li:nth-child(2)";
  await page.click(`${item} > .rv-row`);
  await until("item 1's keys", async () => (await children(page, item)).length === 4);
  assert.deepEqual(await children(page, item), [
    ['"host"', '"web-01"'],
    ['"state"', '"ok"'],
    ['"ms"', "12.5"],
    ['"note"', '"<img src=x onerror=window.__pwned=1>"'],
  ]);
  assert.deepEqual(await page.$$eval("#result-view img, #result-view b", (e) => e.length), 0, "no element from the result");
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  step("an item opens with its keys in order, the HTML in it shown as text");

  // The keyboard: ↓ from the root goes to the first item, Enter opens it.
  await page.focus(".rv-root > .rv-row");
  await page.keyboard.press("ArrowDown");
  const focused = () => page.evaluate(() => document.activeElement.closest("li")?.querySelector(":scope > .rv-row > .rv-key")?.textContent);
  assert.equal(await focused(), "0", "↓ went to item 0");
  await page.keyboard.press("Enter");
  await until("item 0 open", async () => (await children(page, ".rv-root > ul > li:nth-child(1)")).length === 4);
  step("↓ and Enter move through and open the tree");
  c = await census(page);
  assert.ok(c.longest < 10_000, `a text node of ${c.longest} characters`);

  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#download-result")]);
  assert.equal(download.suggestedFilename(), `job-${big.id}-result.json`);
  const saved = readFileSync(await download.path());
  assert.equal(saved.length, BIG_BYTES, "the download is the whole result");
  assert.ok(saved.subarray(0, 9).toString() === '[{"host":' && saved.subarray(-3).toString() === "\n0]");
  step("“Download result” saves the server's bytes");

  await page.click("#show-result");
  assert.equal(await page.$("#result-view"), null, "hidden again");
  assert.equal((await page.textContent("#show-result")).replace(/\D/g, ""), String(BIG_BYTES));
  await page.close();

  // The small result: the job's key order, a long string cut until asked.
  const p2 = await b.newPage();
  await p2.goto(`${URL}/jobs/${small.id}`);
  await p2.click(".job-details summary");
  await p2.click("#show-result");
  await p2.click(".rv-root > .rv-row");
  await until("its keys", async () => (await children(p2, ".rv-root")).length === 7);
  assert.deepEqual(await children(p2, ".rv-root"), [
    ['"zeta"', "1"],
    ['"10"', '"ten"'],
    ['"alpha"', "{…} 3 keys"],
    ['"long"', JSON.stringify(LONG.slice(0, 1000))],
    ['"empty"', "{}"],
    ['"list"', "[]"],
    ['"html"', '"<b>bold</b><img src=x onerror=window.__pwned=2>"'],
  ]);
  const alpha = ".rv-root > ul > li:nth-child(3)";
  await p2.click(`${alpha} > .rv-row`);
  await until("alpha's keys", async () => (await children(p2, alpha)).length === 3);
  assert.deepEqual(await children(p2, alpha), [
    ['"b"', "true"],
    ['"2"', "null"],
    ['"a"', "[…] 3 items"],
  ]);
  step("keys in the job's order, integer-like ones too");
  const long = ".rv-root > ul > li:nth-child(4)";
  assert.equal(await p2.textContent(`${long} .rv-all`), `show all ${await fmt(p2, LONG.length)} characters`);
  await shot(p2, "job-result");
  await p2.click(`${long} .rv-all`);
  await until("the whole string", async () => (await p2.textContent(`${long} .rv-val`)) === JSON.stringify(LONG));
  assert.equal(await p2.$(`${long} .rv-all`), null);
  assert.equal(await p2.evaluate(() => window.__pwned), undefined);
  assert.equal(await p2.$$eval("#result-view img, #result-view b", (e) => e.length), 0);
  step("a long string is cut at 1,000 characters and shown whole when asked");

  // Failures, answered in the server's place: said where the tree was.
  const failures = [
    [500, { error: { code: "result_damaged", message: "the stored result of job 2 is damaged" } }, /damaged \(result_damaged\)/],
    [404, { error: { code: "result_not_found", message: "job 2 has no result" } }, /no result \(result_not_found\)/],
    [200, "<html>not JSON</html>", /not valid JSON/],
  ];
  for (const [status, body, expect] of failures) {
    await p2.route(`**/api/v1/jobs/${small.id}/result`, (r) =>
      r.fulfill({ status, contentType: "application/json", body: typeof body === "string" ? body : JSON.stringify(body) }),
    );
    await p2.click("#show-result"); // hide
    await p2.click("#show-result");
    const said = await until(`the ${status} said`, async () => {
      const e = await p2.$("#result-view .error-text");
      return e && e.textContent();
    });
    assert.match(said, expect);
    assert.equal(await p2.$("#result-view .rv-tree"), null, "no tree");
    await p2.unroute(`**/api/v1/jobs/${small.id}/result`);
  }
  step("a 500 result_damaged, a 404 and a body that is not JSON are each said in place of the tree");
  // The browser's own note of each refused request; anything else fails.
  b.problems.splice(0, b.problems.length, ...b.problems.filter((p) => !/status of (500|404)/.test(p)));
  await b.close();
  console.log(JSON.stringify({ result: { bytes: BIG_BYTES, items: ITEMS + 1, click_to_root_ms: rootMs, request_ms: fetchMs, longest_task_ms: longest } }));
});
