// Browser measurements for docs/benchmarks.md (not a test; nothing here
// is asserted). Against a running server:
//
//   node crates/joblog/tests/ui/measure.mjs http://127.0.0.1:7878 [runs]
//
// 1. A 1,000,000-record log: time from navigation to its first screen,
//    from pressing G to its last line on screen, and from clicking "First
//    error" to that line (the log's last) on screen, median of `runs`.
// 2. A job writing 10,000 lines/s for 10 s, followed live: the longest
//    animation frame (Long Animation Frames API) and the number over
//    50 ms and 100 ms while following.

import { chromium } from "playwright-core";

const URL = process.argv[2] ?? "http://127.0.0.1:7878";
const RUNS = Number(process.argv[3] ?? 5);

async function api(method, path, body) {
  const res = await fetch(URL + path, {
    method,
    headers: { "Content-Type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function finished(id) {
  for (;;) {
    const j = await api("GET", `/api/v1/jobs/${id}`);
    if (j.state !== "queued" && j.state !== "running") return j;
    await new Promise((r) => setTimeout(r, 200));
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const visible = (page, seq) =>
  page.waitForFunction((seq) => {
    const box = document.querySelector(".log-scroll")?.getBoundingClientRect();
    if (!box) return false;
    return [...document.querySelectorAll(`.log-rows .row[data-seq='${seq}']:not([hidden])`)].some((r) => {
      const b = r.getBoundingClientRect();
      return b.bottom > box.top && b.top < box.bottom;
    });
  }, seq, { polling: "raf", timeout: 60000 });

const browser = await chromium.launch({
  executablePath: process.env.JOBLOG_CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-dev-shm-usage"],
});
const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });

const N = 1_000_000;
// Its one error is its last record: "First error" is the worst case.
const { id } = await api("POST", "/api/v1/jobs", {
  name: "measure-million",
  script: `seq 1 ${N - 1}; echo '::error::the only error'`,
});
await finished(id);
const open = [];
const end = [];
const firstError = [];
for (let i = 0; i < RUNS; i++) {
  const page = await context.newPage();
  let t = performance.now();
  await page.goto(`${URL}/jobs/${id}`);
  await visible(page, 1);
  open.push(performance.now() - t);
  await page.click(".log-scroll");
  t = performance.now();
  await page.keyboard.press("G");
  await visible(page, N);
  end.push(performance.now() - t);
  await page.keyboard.press("g");
  await visible(page, 1);
  t = performance.now();
  await page.click("#first-error");
  await visible(page, N);
  firstError.push(performance.now() - t);
  await page.close();
}
console.log(`1M-record log: first screen median ${median(open).toFixed(0)} ms (${open.map((x) => x.toFixed(0)).join(", ")})`);
console.log(`1M-record log: "First error" (the last line) median ${median(firstError).toFixed(0)} ms (${firstError.map((x) => x.toFixed(0)).join(", ")})`);
console.log(`1M-record log: G to the last line median ${median(end).toFixed(0)} ms (${end.map((x) => x.toFixed(0)).join(", ")})`);

// Following 10,000 lines/s: 50 bursts of 200 lines every 20 ms = 10 s.
const script = "i=0; while [ $i -lt 500 ]; do i=$((i+1)); seq -f \"burst $i line %.0f\" 1 200; sleep 0.02; done";
const page = await context.newPage();
const live = await api("POST", "/api/v1/jobs", { name: "measure-firehose", script });
await page.goto(`${URL}/jobs/${live.id}`);
await page.evaluate(() => {
  window.frames_ = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.frames_.push(e.duration);
  }).observe({ type: "long-animation-frame", buffered: false });
});
const t0 = performance.now();
const done = await finished(live.id);
const followed = performance.now() - t0;
await page.waitForTimeout(500);
const frames = await page.evaluate(() => window.frames_);
const following = await page.evaluate(() => document.querySelector(".log-status").textContent);
console.log(
  `10k lines/s (${done.log.records} records in ${(followed / 1000).toFixed(1)} s): ` +
    `long frames (>50 ms) ${frames.filter((d) => d > 50).length}, over 100 ms ${frames.filter((d) => d > 100).length}, ` +
    `longest ${frames.length ? Math.max(...frames).toFixed(0) : 0} ms; status: ${following}`,
);
await browser.close();
