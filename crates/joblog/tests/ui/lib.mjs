// Shared by the browser scenarios: the server under test (from the
// environment the Rust test sets), its API, and a headless Debian chromium.

import { chromium } from "playwright-core";
import AxeBuilder from "@axe-core/playwright";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";

export const URL = process.env.JOBLOG_URL;
export const TOKEN = process.env.JOBLOG_TOKEN || null;
export const SHOTS = process.env.JOBLOG_SCREENSHOTS;
assert.ok(URL, "JOBLOG_URL names the server under test");
if (SHOTS) mkdirSync(SHOTS, { recursive: true });

export { assert };

export async function api(method, path, body) {
  const headers = { "Content-Type": "application/json" };
  if (TOKEN) headers.Authorization = `Bearer ${TOKEN}`;
  const res = await fetch(URL + path, { method, headers, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

export const submit = (body) => api("POST", "/api/v1/jobs", body);
export const job = (id) => api("GET", `/api/v1/jobs/${id}`);

export async function finished(id, timeoutMs = 120000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const j = await job(id);
    if (j.state !== "queued" && j.state !== "running") return j;
    if (Date.now() > end) throw new Error(`job ${id} did not finish: ${JSON.stringify(j)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// A browser page that fails the scenario on any script error or dialog
// (a dialog would mean job output ran as code).
// `options` go to the browser context (a `timezoneId`, a `colorScheme`).
export async function browser(options = {}) {
  const b = await chromium.launch({
    executablePath: process.env.JOBLOG_CHROMIUM || "/usr/bin/chromium",
    // Root in a container has no user namespaces for chromium's sandbox.
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
  const context = await b.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true, ...options });
  // Working on the UI: JOBLOG_UI_FROM=crates/api/ui serves its files from
  // that directory instead of the binary's, so a change needs no rebuild.
  // The pages themselves still come from the server, which writes into
  // index.html what each page loads (crates/api/src/ui.rs).
  const from = process.env.JOBLOG_UI_FROM;
  if (from) {
    await context.route(/\/ui\/[\w.-]+$/, (route) => {
      const name = new globalThis.URL(route.request().url()).pathname.slice(4);
      const type = name.endsWith(".css") ? "text/css; charset=utf-8" : "text/javascript; charset=utf-8";
      route.fulfill({ path: `${from}/${name}`, contentType: type }).catch(() => {});
    });
  }
  const problems = [];
  const newPage = async () => {
    const page = await context.newPage();
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("dialog", (d) => {
      problems.push(`a dialog opened: ${d.type()} ${d.message()}`);
      d.dismiss().catch(() => {});
    });
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(`console error: ${m.text()}`);
    });
    return page;
  };
  return {
    newPage,
    problems,
    async close() {
      await b.close();
      assert.deepEqual(problems, [], "the browser reported problems");
    },
  };
}

export async function shot(page, name) {
  if (SHOTS) await page.screenshot({ path: `${SHOTS}/${name}.png` });
}

// Rows of the log viewer in the DOM, and the seqs they show.
export async function rows(page) {
  return page.$$eval(".log-rows .row:not([hidden])", (rs) =>
    rs.map((r) => ({ seq: Number(r.dataset.seq || 0), text: r.querySelector(".tx").textContent, cls: r.className })),
  );
}

export async function visibleSeqs(page) {
  return page.evaluate(() => {
    const box = document.querySelector(".log-scroll").getBoundingClientRect();
    return [...document.querySelectorAll(".log-rows .row:not([hidden])")]
      .filter((r) => {
        const b = r.getBoundingClientRect();
        return b.bottom > box.top && b.top < box.bottom;
      })
      .map((r) => Number(r.dataset.seq || 0));
  });
}

export async function until(what, fn, timeoutMs = 15000) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${last})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Runs a scenario, printing one line per step so a failure says where.
export async function scenario(name, body) {
  const started = Date.now();
  try {
    await body((step) => console.log(`[${name}] ${step}`));
    console.log(`[${name}] passed in ${Date.now() - started} ms`);
  } catch (e) {
    console.error(`[${name}] FAILED: ${e.stack ?? e}`);
    process.exit(1);
  }
}

// axe's serious and critical findings on the page as it is, in both
// colour schemes, and those of the rules in `also` whatever their impact;
// each as `name (scheme): rule [impact] help: where`.
export async function axe(page, name, also = []) {
  const found = [];
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme });
    const res = await new AxeBuilder({ page }).analyze();
    for (const v of res.violations) {
      if (v.impact === "serious" || v.impact === "critical" || also.includes(v.id)) {
        const where = v.nodes.slice(0, 3).map((n) => n.target.join(" "));
        found.push(`${name} (${scheme}): ${v.id} [${v.impact}] ${v.help}: ${where.join(", ")}`);
      }
    }
  }
  await page.emulateMedia({ colorScheme: "light" });
  return found;
}
