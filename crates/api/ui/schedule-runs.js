// A schedule's runs (its history): the jobs it made, newest first, from
// `GET /api/v1/jobs?schedule_id=N`, paged back by `before_id`.

import { get } from "./api.js";
import { el, text, clear, stateBadge, duration, when, fail, link, timeCell, button, headerRow, tickDurations } from "./dom.js";

const LIMIT = 25;

export class ScheduleRuns {
  constructor(where, scheduleId) {
    this.scheduleId = scheduleId;
    this.beforeId = null;
    this.jobs = [];
    this.table = el("table", "jobs runs");
    this.table.id = "runs";
    this.footer = el("div", "pager");
    this.status = el("div", "log-status");
    where.append(this.table, this.footer, this.status);
  }

  // Whether a change the job feed tells of shows here.
  concerns(change) {
    if (change.reset || (change.new > 0 && this.beforeId === null)) return true;
    const shown = new Set(this.jobs.map((j) => j.id));
    return change.changed.some((id) => shown.has(id));
  }

  async load() {
    try {
      const res = await get("/api/v1/jobs", { schedule_id: this.scheduleId, limit: LIMIT, before_id: this.beforeId });
      this.jobs = res.jobs;
      this.next = res.next_before_id;
      this.render();
      this.status.classList.remove("error-text");
      this.status.textContent = `${this.jobs.length} runs shown`;
    } catch (err) {
      fail(this.status, err);
    }
  }

  page(beforeId) {
    this.beforeId = beforeId;
    this.load();
  }

  render() {
    const t = this.table;
    clear(t);
    const head = el("thead");
    head.append(headerRow([{ name: "state mark" }, "job", "state", "fire time", "attempt", "started", "duration", "exit"]));
    const body = el("tbody");
    for (const j of this.jobs) body.append(row(j));
    if (!this.jobs.length) {
      const tr = el("tr");
      const td = text(this.beforeId ? "no older runs" : "no runs yet", "muted", "td");
      td.colSpan = 8;
      tr.append(td);
      body.append(tr);
    }
    t.append(head, body);
    clear(this.footer);
    if (this.beforeId !== null) {
      const newest = button("« Newest", null, () => this.page(null));
      newest.id = "runs-newest";
      this.footer.append(newest);
    }
    if (this.next) {
      const older = button("Older »", null, () => this.page(this.next));
      older.id = "runs-older";
      this.footer.append(older);
    }
  }

  tick() {
    tickDurations(this.table, this.jobs);
  }
}

function row(j) {
  const tr = el("tr", `st-${j.state}`);
  tr.dataset.id = j.id;
  const dot = el("td");
  dot.append(stateBadge(j.state));
  const id = el("td", "num");
  id.append(link(`/jobs/${j.id}`, `#${j.id}`));
  const fire = j.fire_time ? timeCell(j.fire_time) : text("run now", "muted", "td");
  fire.classList.add("fire-time");
  const started = text(when(j.started_at) ?? "", null, "td");
  if (j.started_at) started.title = j.started_at;
  tr.append(
    dot,
    id,
    text(j.state, `run-state st-${j.state}`, "td"),
    fire,
    text(j.attempt ?? "", "num", "td"),
    started,
    text(duration(j) ?? "", "duration num", "td"),
    text(j.exit_code ?? "", "num", "td"),
  );
  tr.addEventListener("click", (e) => {
    if (e.target.closest("a, button")) return;
    location.assign(`/jobs/${j.id}`);
  });
  return tr;
}
