// The schedules list: one dense row per schedule (when it fires next, how
// its last run went, its policies), by id, "More" reading the next page by
// `after_id`. Kept current by the job feed (a fire makes a job) and by its
// next fires passing; it never polls. Admins may pause the scheduler here
// (the shell's banner then says so, and resumes it).

import { get, post } from "./api.js";
import { el, text, clear, stateBadge, can, fail, link, when, relative, timeCell, tickRelative, headerRow, button } from "./dom.js";
import { live } from "./live.js";
import { onScheduler, setScheduler } from "./scheduler.js";

const LIMIT = 50;
// The list is re-read at most this often, however busy the server.
const MIN_REFRESH_MS = 1000;

export function schedulesPage(main, me) {
  const page = new SchedulesPage(main, me);
  page.start();
  return page;
}

class SchedulesPage {
  constructor(main, me) {
    this.me = me;
    this.schedules = [];
    this.want = LIMIT;
    document.title = "Schedules · joblog";
    clear(main);
    main.classList.add("schedules-page");
    const head = el("div", "page-head");
    head.append(text("Schedules", null, "h1"));
    if (can(me, "operator")) {
      const add = link("/schedules/new", "New schedule", "button primary");
      add.id = "new-schedule";
      head.append(add);
    }
    // Shown while the scheduler runs (the banner has Resume while it is
    // paused). Its room is kept until the state is known, so the list does
    // not move when it comes.
    if (can(me, "admin")) {
      this.pause = button("Pause scheduler", "reserved", () => this.confirmPause(), "no schedule fires on any node until it is resumed; Run now still works");
      this.pause.id = "pause-scheduler";
      head.append(this.pause);
    }
    this.note = el("div", "action-status");
    this.note.id = "schedules-action";
    this.note.setAttribute("role", "status");
    this.table = el("table", "jobs schedules");
    this.table.id = "schedules";
    this.footer = el("div", "pager");
    this.status = el("div", "log-status");
    main.append(head, this.note, this.table, this.footer, this.status);
  }

  // Asked in the page, not in a dialog.
  confirmPause() {
    const q = el("span", "confirm");
    q.append(text("Pause the scheduler? No schedule fires on any node until it is resumed (Run now still works); then the fires missed meanwhile follow each schedule's missed policy. "));
    const yes = button("Pause scheduler", "danger", async () => {
      yes.disabled = true;
      try {
        setScheduler(await post("/api/v1/scheduler/pause"));
        this.say("");
      } catch (err) {
        fail(this.note, err);
      }
    });
    yes.id = "confirm-pause";
    const no = button("Keep firing", null, () => this.say(""));
    q.append(yes, text(" "), no);
    this.say(q);
    yes.focus();
  }

  say(what) {
    clear(this.note);
    this.note.classList.remove("error-text");
    if (what) this.note.append(what instanceof Node ? what : text(what));
  }

  start() {
    this.unfollow = onScheduler((s) => {
      if (!this.pause) return;
      this.pause.classList.remove("reserved");
      this.pause.hidden = s.paused;
      if (s.paused && this.note.querySelector(".confirm")) this.say("");
    });
    this.feed = live({
      every: MIN_REFRESH_MS,
      read: () => this.load(),
      concerns: (change) => {
        const shown = new Set(this.schedules.map((s) => s.last_run?.job_id));
        return change.reset || change.new > 0 || change.changed.some((id) => shown.has(id));
      },
      onState: (s) => {
        this.live = s;
        this.renderStatus();
      },
      // A next fire that has passed is read again: a skipped fire makes no
      // job, so the feed would not say.
      tick: () => {
        tickRelative(this.table);
        const now = Date.now();
        const passed = this.schedules.some((s) => s.next_fire && new Date(s.next_fire).getTime() < now - 1000);
        if (passed) this.feed.readSoon();
      },
    });
    this.feed.readNow();
  }

  // Reads the first `want` schedules again: the pages "More" has shown.
  async load() {
    try {
      const all = [];
      let after = 0;
      let next = null;
      do {
        const res = await get("/api/v1/schedules", { after_id: after, limit: Math.min(1000, this.want - all.length) });
        all.push(...res.schedules);
        next = res.next_after_id;
        after = next;
      } while (next !== null && all.length < this.want);
      this.schedules = all;
      this.next = next;
      this.render();
      this.status.classList.remove("error-text");
      this.renderStatus();
    } catch (err) {
      fail(this.status, err);
    }
  }

  renderStatus() {
    if (this.status.classList.contains("error-text")) return;
    const live = this.live === "open" ? "live" : this.live ?? "connecting";
    this.status.textContent = `${this.schedules.length} schedules shown · ${live}`;
  }

  render() {
    const t = this.table;
    clear(t);
    const head = el("thead");
    head.append(headerRow(["name", "when", "status", "next fire", "last run", "policies"]));
    const body = el("tbody");
    const names = new Map(this.schedules.map((s) => [s.id, s.name]));
    for (const s of this.schedules) body.append(row(s, names));
    if (!this.schedules.length) {
      const tr = el("tr");
      const td = text("no schedules yet", "muted", "td");
      td.colSpan = 6;
      tr.append(td);
      body.append(tr);
    }
    t.append(head, body);
    clear(this.footer);
    if (this.next !== null && this.next !== undefined) {
      const more = el("button", "button");
      more.id = "more";
      more.textContent = "More »";
      more.addEventListener("click", () => {
        this.want += LIMIT;
        this.feed.readNow();
      });
      this.footer.append(more);
    }
  }

  retime() {
    this.render();
  }

  destroy() {
    this.feed?.close();
    this.unfollow?.();
  }
}

// `names`: each listed schedule's name by id, for a trigger's.
function row(s, names) {
  const tr = el("tr", s.enabled ? "" : "disabled");
  tr.dataset.id = s.id;
  const name = el("td", "name");
  name.append(link(`/schedules/${s.id}`, s.name));
  name.title = s.name;
  const cron = el("td", "cron");
  if (s.after) {
    const id = s.after.schedule_id;
    cron.append(text("after ", "muted"), link(`/schedules/${id}`, names.get(id) ?? `#${id}`), text(` on ${s.after.states.join(", ")}`, "muted"));
  } else if (s.cron) cron.append(text(s.cron, null, "code"), text(` ${s.timezone}`, "muted"));
  else cron.append(text("on demand", "muted"));
  const next = s.next_fire ? timeCell(s.next_fire) : text(s.after && s.enabled ? "on its trigger" : s.cron || s.after ? "—" : "when run", "muted", "td");
  next.classList.add("next-fire");
  const last = el("td", "last-run");
  const r = s.last_run;
  if (r) {
    // When it ended (or was queued, if still waiting): relative here, the
    // time on hover.
    const at = r.finished_at ?? r.created_at;
    const ago = text(relative(at), "rel muted");
    ago.dataset.ts = at;
    ago.title = `${when(at)} (${at})`;
    last.append(stateBadge(r.state), text(" "), link(`/jobs/${r.job_id}`, `#${r.job_id}`), text(` ${r.state} `, `run-state st-${r.state}`), ago);
  } else last.append(text("never", "muted"));
  tr.append(
    name,
    cron,
    text(s.enabled ? "enabled" : "disabled", s.enabled ? "enabled" : "muted", "td"),
    next,
    last,
    text(policies(s), "policies", "td"),
  );
  tr.addEventListener("click", (e) => {
    if (e.target.closest("a, button")) return;
    location.assign(`/schedules/${s.id}`);
  });
  return tr;
}

// "overlap skip · missed one · 3 attempts, 30 s backoff · 2 skipped".
export function policies(s) {
  const parts = [`overlap ${s.overlap}`, `missed ${s.missed}`];
  const a = s.retries?.attempts ?? 1;
  parts.push(a > 1 ? `${a} attempts, backoff ${s.retries.backoff_s} s` : "no retry");
  if (s.skipped_fires) parts.push(`${s.skipped_fires} skipped`);
  return parts.join(" · ");
}
