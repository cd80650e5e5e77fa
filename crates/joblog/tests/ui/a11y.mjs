// Accessibility: axe-core on every page of the UI (the job list, a job's
// page, submit, the schedules, a schedule's page, the schedule form, the
// audit trail, the notification rules, the nodes, the users), in the light and the dark colour scheme, finds no serious
// or critical violation — contrast (stream chips, primary buttons),
// labels, and besides every page has an h1 and no table header is empty.
// At a phone's width (390 px) the pages do not shift once drawn: the
// cumulative layout shift (layout-shift entries, buffered) stays below
// 0.1, the header keeping room for what whoami fills in.

import AxeBuilder from "@axe-core/playwright";
import { scenario, browser, submit, finished, api, shot, assert, URL, until } from "./lib.mjs";

const SCRIPT = [
  "echo '::group::Setup'",
  "echo 'setting up'",
  "echo '::endgroup::'",
  "echo plain output",
  "echo '::warning file=a.py,line=3::check this'",
  "echo '::notice::for your information'",
  "echo '::debug::details'",
  "echo '::error::it broke'",
  "echo '::progress percent=50::half way'",
  "echo to stderr >&2",
  "exit 3",
].join("\n");

// Rules every page passes whatever their impact: a page names itself in
// an h1, every input has a label, every table header has a name.
const ALWAYS = ["page-has-heading-one", "label", "empty-table-header"];

await scenario("a11y", async (step) => {
  const { id } = await submit({ name: "a11y", script: SCRIPT });
  await submit({ name: "a11y-ok", command: ["true"] });
  await finished(id);
  const schedule = await api("POST", "/api/v1/schedules", {
    name: `nightly-${Date.now()}`,
    cron: "30 2 * * *",
    timezone: "Europe/Berlin",
    script: "echo hi",
  });
  await api("POST", `/api/v1/schedules/${schedule.id}/run`);

  const pages = [
    ["jobs", "/", "#jobs tbody tr[data-id]"],
    ["job", `/jobs/${id}`, ".row[data-seq='4']"],
    ["submit", "/submit", "#submit"],
    ["schedules", "/schedules", "#schedules tbody tr[data-id]"],
    ["schedule", `/schedules/${schedule.id}`, "#runs tbody tr[data-id]"],
    ["schedule-new", "/schedules/new", "#schedule-form"],
    ["audit", "/audit", "#audit tbody tr"],
    ["notifications", "/notifications", "#rules-status:not(:empty)"],
    ["nodes", "/nodes", "#nodes tbody tr[data-name]"],
    // No token here: the anonymous admin sees the users (none yet) and is
    // told it has no session of its own. users.mjs runs axe on the page
    // with users and sessions.
    ["users", "/users", "#users-status:not(:empty)"],
  ];

  const b = await browser();
  const page = await b.newPage();
  const problems = [];
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const [name, path, ready] of pages) {
      await page.goto(URL + path);
      await until(`${name} drawn`, () => page.$(ready));
      // The job page with its toggles on: chips and buttons that are on.
      if (name === "job") {
        await page.click("#timestamps");
        await page.click(".job-details summary");
      }
      const res = await new AxeBuilder({ page }).analyze();
      for (const v of res.violations) {
        if (v.impact === "serious" || v.impact === "critical" || ALWAYS.includes(v.id)) {
          const where = v.nodes.slice(0, 3).map((n) => `${n.target.join(" ")}: ${n.failureSummary?.split("\n").slice(1).join(" ")}`);
          problems.push(`${name} (${scheme}): ${v.id} [${v.impact}] ${v.help}\n    ${where.join("\n    ")}`);
        }
      }
      const h1s = await page.$$eval("h1", (h) => h.length);
      if (h1s !== 1) problems.push(`${name} (${scheme}): ${h1s} h1 elements, not one`);
      if (name === "job" && scheme === "dark") await shot(page, "job-dark");
    }
    step(`axe on ${pages.length} pages, ${scheme} scheme`);
  }
  assert.deepEqual(problems, [], `axe found:\n${problems.join("\n")}`);
  step("no serious or critical violation, an h1 on every page, no unlabelled input or empty header");

  // Layout shift at a phone's width, measured from the navigation on.
  const phone = await b.newPage();
  await phone.setViewportSize({ width: 390, height: 844 });
  await phone.addInitScript(() => {
    window.__cls = 0;
    window.__shifts = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        if (e.hadRecentInput) continue;
        window.__cls += e.value;
        window.__shifts.push({
          value: e.value,
          sources: (e.sources ?? []).map((s) => `${s.node?.nodeName ?? "?"}.${s.node?.className ?? ""}#${s.node?.id ?? ""}`),
        });
      }
    }).observe({ type: "layout-shift", buffered: true });
  });
  const shifted = [];
  for (const [name, path, ready] of pages) {
    await phone.goto(URL + path);
    await until(`${name} drawn`, () => phone.$(ready));
    // Whatever comes late (the outline, a live feed's first answer).
    await phone.waitForTimeout(700);
    const { cls, shifts } = await phone.evaluate(() => ({ cls: window.__cls, shifts: window.__shifts }));
    if (cls >= 0.1) shifted.push(`${name}: cumulative layout shift ${cls.toFixed(3)} at 390 px: ${JSON.stringify(shifts)}`);
    step(`${name}: layout shift ${cls.toFixed(3)} at 390 px`);
  }
  assert.deepEqual(shifted, [], "layout shifts of 0.1 or more");
  await shot(phone, "audit-phone");
  await b.close();
});
