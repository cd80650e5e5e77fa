// Notifications sent: a delivery's state and how its tries went, as the
// Notifications page shows a rule's last ones and a job's page shows its
// own (`GET /api/v1/jobs/{id}/notifications`). Errors and answers come
// from receivers: they go in as text.

import { get } from "./api.js";
import { el, text, clear, when, link, headerRow, can } from "./dom.js";

// "delivered", "pending", "failed", in words and in colour.
export function deliveryState(d) {
  return text(d.state, `dl-state dl-${d.state}`);
}

// How its tries went: "1 attempt · HTTP 200".
export function outcome(d) {
  const parts = [`${d.attempts} ${d.attempts === 1 ? "attempt" : "attempts"}`];
  if (d.last_status !== null && d.last_status !== undefined) parts.push(`HTTP ${d.last_status}`);
  return parts.join(" · ");
}

// An error as the UI shows it: a URL in it (an HTTP client names the one
// it failed to reach) cut to its scheme and host, as a rule's target is:
// a web hook's path and query are often its credential.
export function redact(message) {
  return (message ?? "").replace(/\b(https?:\/\/[^\s/?#)]+)[/?#][^\s)]*/gi, "$1/…");
}

function errorCell(d, tag) {
  const message = redact(d.last_error);
  const e = text(message, "dl-error", tag);
  if (message) e.title = message;
  return e;
}

// A rule's deliveries as a table, each naming its job; the last error cut
// to its column (whole on hover).
export function deliveryTable(deliveries) {
  const t = el("table", "jobs deliveries");
  const head = el("thead");
  head.append(headerRow(["state", "job", "tries", "last error", "queued"]));
  const body = el("tbody");
  for (const d of deliveries) {
    const tr = el("tr");
    tr.dataset.id = d.id;
    const what = el("td", "num");
    what.append(link(`/jobs/${d.job_id}`, `#${d.job_id}`));
    const at = text(when(d.created_at) ?? "", "muted", "td");
    at.title = d.created_at;
    const state = el("td");
    state.append(deliveryState(d));
    tr.append(state, what, text(outcome(d), null, "td"), errorCell(d, "td"), at);
    body.append(tr);
  }
  t.append(head, body);
  return t;
}

// Reads again while a delivery is pending: when the earliest is due, but
// no sooner than 1 s, 2 s, 4 s, 8 s, then 15 s after the last read that
// still found one pending (a sender may be late, or down), and never more
// than 15 s after. One never tried is due now; a tried one at its
// `next_try_at`, which is also the end of a sender's lease while one is
// sending it (two minutes off): hence the 15 s.
// `read()` reads and calls `after(deliveries)` again.
const LONGEST = 15000;

export class Recheck {
  constructor(read) {
    this.read = read;
    this.timer = null;
    this.rounds = 0;
  }

  // After a read: every delivery shown now.
  after(deliveries) {
    clearTimeout(this.timer);
    this.timer = null;
    const now = Date.now();
    const due = deliveries
      .filter((d) => d.state === "pending")
      .map((d) => (d.attempts ? new Date(d.next_try_at).getTime() || now : now));
    if (!due.length) {
      this.rounds = 0;
      return;
    }
    const floor = Math.min(1000 * 2 ** this.rounds, LONGEST);
    const wait = Math.min(Math.max(Math.min(...due) - now + 500, floor), LONGEST);
    this.rounds += 1;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.read();
    }, wait);
  }

  stop() {
    clearTimeout(this.timer);
    this.timer = null;
  }
}

// A job's page: what was sent of its end, under its header. Hidden while
// there is nothing (a running job, or no rule matched).
export class JobNotifications {
  constructor(jobId, me) {
    this.jobId = jobId;
    this.me = me;
    this.section = el("section", "job-notifications");
    this.section.id = "job-notifications";
    this.section.hidden = true;
    this.deliveries = [];
    this.recheck = new Recheck(() => this.load());
  }

  async load() {
    try {
      const res = await get(`/api/v1/jobs/${this.jobId}/notifications`);
      this.show(res.deliveries);
    } catch (err) {
      // Not worth a broken page: a note in place of the list.
      clear(this.section);
      this.section.hidden = false;
      this.section.append(text("Notifications", null, "h2"), text(`could not be read: ${err.message}`, "error-text"));
    }
  }

  show(deliveries) {
    this.deliveries = deliveries;
    this.recheck.after(deliveries);
    this.render();
  }

  render() {
    const s = this.section;
    clear(s);
    s.hidden = !this.deliveries.length;
    if (!this.deliveries.length) return;
    s.append(text("Notifications", null, "h2"));
    const list = el("ul", "job-deliveries");
    for (const d of this.deliveries) {
      const li = el("li");
      li.dataset.id = d.id;
      li.dataset.state = d.state;
      // Rules are an admin's to read: others get the id only.
      const rule = can(this.me, "admin") ? link(`/notifications#rule-${d.rule_id}`, `rule #${d.rule_id}`) : text(`rule #${d.rule_id}`);
      li.append(rule, text(" "), deliveryState(d), text(` · ${outcome(d)}`, "muted"));
      const at = d.delivered_at ?? d.next_try_at;
      if (at) {
        const t = text(` · ${d.delivered_at ? "" : "next try "}${when(at)}`, "muted");
        t.title = at;
        li.append(t);
      }
      if (d.last_error) li.append(text(" · "), errorCell(d, "span"));
      list.append(li);
    }
    s.append(list);
  }

  destroy() {
    this.recheck.stop();
  }
}
