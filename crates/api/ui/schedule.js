// A schedule's page: its header (Run now, Enable/Disable, Edit, Delete
// for operators), its definition, its next fires, the edit form in place
// of the definition, and its runs. Kept current by the job feed.

import { get, patch, del, post } from "./api.js";
import { el, text, clear, stateBadge, can, fail, link, button, timeCell, tickRelative, zoneMode, labelList } from "./dom.js";
import { scheduleForm } from "./schedule-form.js";
import { paramsForm, paramsSummary } from "./params-form.js";
import { ScheduleRuns } from "./schedule-runs.js";
import { policies } from "./schedules.js";
import { live } from "./live.js";

const MIN_REFRESH_MS = 1000;

// "backup on succeeded, failed", the schedule a link to its page.
function afterLink(after, name) {
  const span = el("span");
  span.append(link(`/schedules/${after.schedule_id}`, name ?? `#${after.schedule_id}`), text(` on ${after.states.join(", ")}`));
  return span;
}

export async function schedulePage(main, me, { id }) {
  const schedule = await get(`/api/v1/schedules/${id}`);
  const page = new SchedulePage(main, schedule, me);
  page.start();
  return page;
}

class SchedulePage {
  constructor(main, schedule, me) {
    this.s = schedule;
    this.me = me;
    this.editing = false;
    clear(main);
    main.classList.add("schedule-page");
    this.header = el("section", "job-head schedule-head");
    this.title = el("h1");
    this.actions = this.makeActions();
    this.facts = el("div", "head-facts");
    this.header.append(this.title, this.actions, this.facts);
    this.note = el("div", "action-status");
    this.note.id = "action-status";
    this.body = el("div", "schedule-body");
    const runs = el("section", "schedule-runs");
    runs.append(text("Runs", null, "h2"));
    main.append(this.header, this.note, this.body, runs);
    this.runs = new ScheduleRuns(runs, schedule.id);
    this.render();
  }

  // The name of the schedule it runs after (its id alone if it is gone).
  async nameAfter() {
    const id = this.s.after?.schedule_id;
    if (!id || this.afterFor === id) return;
    try {
      this.afterName = (await get(`/api/v1/schedules/${id}`)).name;
    } catch {
      this.afterName = null;
    }
    this.afterFor = id;
  }

  start() {
    this.nameAfter().then(() => this.renderHeader());
    this.runs.load();
    this.feed = live({
      every: MIN_REFRESH_MS,
      read: () => this.reload(),
      concerns: (change) => this.runs.concerns(change),
      // A next fire that has passed is read again: a skipped fire makes no
      // job, so the feed would not say.
      tick: () => {
        tickRelative(this.header);
        tickRelative(this.body);
        tickRelative(this.runs.table);
        this.runs.tick();
        const next = this.s.next_fire && new Date(this.s.next_fire).getTime();
        if (next && next < Date.now() - 1000) this.feed.readSoon();
      },
      // The schedule was read just now, to draw the page.
      since: Date.now(),
    });
  }

  async reload() {
    try {
      this.s = await get(`/api/v1/schedules/${this.s.id}`);
      await this.nameAfter();
      // An open form keeps what is being typed; the rest follows.
      this.renderHeader();
      if (!this.editing) this.renderBody();
    } catch (err) {
      fail(this.note, err);
    }
    await this.runs.load();
  }

  render() {
    document.title = `${this.s.name} · schedules · joblog`;
    this.renderHeader();
    this.renderBody();
  }

  // Buttons are made once (a re-read does not take them from under the
  // pointer or the focus); the title and facts follow the schedule.
  makeActions() {
    const actions = el("div", "actions");
    if (!can(this.me, "operator", this.s?.folder ?? null)) return actions;
    const run = button("Run now", "primary", () => this.runNow(run), "queue a run now, outside its fires");
    run.id = "run-now";
    this.toggle = button("", null, () => this.setEnabled(!this.s.enabled, this.toggle));
    this.toggle.id = "toggle-enabled";
    this.editButton = button("Edit", null, () => this.edit());
    this.editButton.id = "edit";
    const remove = button("Delete", "danger", () => this.confirmDelete());
    remove.id = "delete";
    actions.append(run, this.toggle, this.editButton, remove);
    return actions;
  }

  renderHeader() {
    const s = this.s;
    clear(this.title);
    this.title.append(text(s.enabled ? "enabled" : "disabled", `badge ${s.enabled ? "on" : "off"}`), text(` ${s.name} `), text(`#${s.id}`, "muted"));
    if (this.toggle) {
      this.toggle.textContent = s.enabled ? "Disable" : "Enable";
      this.toggle.title = s.enabled ? "stop its fires (Run now still works)" : "fire again from its next time";
      this.editButton.disabled = this.editing;
    }
    const facts = this.facts;
    clear(facts);
    const fact = (k, v) => {
      const f = el("span", "fact");
      f.append(text(k, "k"), text(" "), v instanceof Node ? v : text(v));
      facts.append(f);
      return f;
    };
    if (s.after) fact("runs after", afterLink(s.after, this.afterName)).id = "runs-after";
    else if (s.cron) {
      fact("cron", text(s.cron, null, "code"));
      fact("zone", s.timezone);
    } else fact("runs", "on demand: when someone runs it").id = "on-demand";
    const none = !s.enabled ? "— (disabled)" : s.after ? "on its trigger" : s.cron ? "never" : "when run";
    const next = fact("next fire", s.next_fire ? timeCell(s.next_fire, "span") : text(none, "muted"));
    next.id = "next-fire";
    const r = s.last_run;
    if (r) {
      const last = el("span");
      last.append(stateBadge(r.state), text(" "), link(`/jobs/${r.job_id}`, `#${r.job_id}`), text(` ${r.state} `), timeCell(r.finished_at ?? r.created_at, "span"));
      fact("last run", last).id = "last-run";
    } else fact("last run", text("never", "muted")).id = "last-run";
    if (s.folder) fact("folder", s.folder).id = "folder";
    fact("policies", policies(s));
  }

  // The definition is drawn again only when it changed (a re-read keeps
  // a selection in it); the next fires every time.
  renderBody() {
    const drawn = this.body.querySelector("#definition");
    const key = `${this.s.updated_at} ${this.s.skipped_fires} ${zoneMode()}`;
    const def = drawn && drawn.dataset.key === key ? drawn : this.definition(key);
    clear(this.body);
    this.body.append(def, this.fires());
  }

  definition(key) {
    const s = this.s;
    const def = el("section", "job-details definition");
    def.dataset.key = key;
    def.id = "definition";
    def.append(text("Definition", null, "h2"));
    const dl = el("dl", "facts");
    const row = (k, v) => {
      const dd = el("dd");
      dd.append(v instanceof Node ? v : text(v));
      dl.append(text(k, null, "dt"), dd);
    };
    if (s.script !== undefined && s.script !== null) {
      const pre = text(s.script, "script", "pre");
      // A long line scrolls it: the keyboard must reach it too.
      pre.tabIndex = 0;
      row(`script (${s.shell ?? "sh"})`, pre);
    } else row("command", text(s.command.map(quote).join(" "), null, "code"));
    const env = Object.entries(s.env ?? {});
    if (env.length) {
      const list = el("ul", "env");
      for (const [k, v] of env) list.append(text(`${k}=${v}`, null, "li"));
      row("environment", list);
    }
    if (s.secrets?.length) row("secrets", `${s.secrets.join(", ")} (names; each node gives the values)`);
    if (Object.keys(s.params?.properties ?? {}).length) row("parameters", paramsSummary(s.params, s.params_from_result));
    const on = labelList(s.node_selector, "any node");
    on.id = "runs-on";
    row("runs on", on);
    if (s.timeout_s) row("timeout", `${s.timeout_s} s`);
    if (s.cwd) row("working directory", s.cwd);
    if (s.concurrency_key) row("concurrency", `${s.concurrency_key} (at most ${s.max_concurrent ?? 1} at once)`);
    row("overlap", `${s.overlap} — ${OVERLAP[s.overlap] ?? ""}`);
    row("missed", `${s.missed} — ${MISSED[s.missed] ?? ""}`);
    const a = s.retries.attempts;
    row("retries", a > 1 ? `${a} attempts in all, ${s.retries.backoff_s} s before the 2nd, doubled after` : "none (1 attempt)");
    const followers = el("ul", "followers");
    followers.id = "followers";
    for (const f of s.followers ?? []) {
      const li = el("li");
      li.append(link(`/schedules/${f.schedule_id}`, f.name), text(` on ${f.states.join(", ")}`, "muted"));
      followers.append(li);
    }
    row("then runs", s.followers?.length ? followers : text("nothing runs after it", "muted"));
    row("skipped fires", String(s.skipped_fires));
    row("created", timeCell(s.created_at, "span"));
    row("updated", timeCell(s.updated_at, "span"));
    def.append(dl);
    return def;
  }

  fires() {
    const s = this.s;
    const fires = el("section", "fires");
    fires.id = "next-fires";
    fires.append(text("Next fires", null, "h2"));
    if (s.next_fires.length) {
      // The wall clock of the schedule's own zone too, when the times
      // shown are in another.
      const here = zoneMode() === "utc" ? "UTC" : Intl.DateTimeFormat().resolvedOptions().timeZone;
      const list = el("ol", "fire-list");
      for (const f of s.next_fires) {
        const li = timeCell(f, "li");
        if (s.timezone !== here) li.append(text(` · ${inZone(f, s.timezone)} ${s.timezone}`, "zone muted"));
        list.append(li);
      }
      fires.append(list);
    } else {
      const why = !s.enabled ? "none: it is disabled" : s.after ? "none: it runs when a job of the schedule it follows ends" : "none: it never fires again";
      fires.append(text(why, "muted", "p"));
    }
    return fires;
  }

  edit() {
    this.editing = true;
    clear(this.body);
    this.body.append(
      scheduleForm(this.s, {
        onSaved: (saved) => {
          this.s = saved;
          this.editing = false;
          this.render();
          say(this.note, "Saved.");
        },
        onCancel: () => {
          this.editing = false;
          this.render();
        },
      }),
    );
    this.renderHeader();
    this.body.querySelector("input")?.focus();
  }

  // A saved job with parameters asks for them first, in a form made from
  // its schema (defaults prefilled, secrets never); one without runs at once.
  runNow(b) {
    if (!Object.keys(this.s.params?.properties ?? {}).length) return this.sendRun(b, undefined);
    const open = this.header.querySelector(".run-params");
    if (open) return open.querySelector("input, select, textarea")?.focus();
    const { form, values, refused } = paramsForm(this.s.params, {}, "param");
    form.classList.add("run-params");
    form.setAttribute("aria-label", `Parameters of ${this.s.name}`);
    const actions = el("div", "form-actions");
    const go = el("button", "button primary");
    go.type = "submit";
    go.textContent = "Run with these";
    go.id = "run-with-params";
    actions.append(go, button("Cancel", null, () => form.remove()));
    form.append(actions);
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      if (await this.sendRun(go, { params: values() }, refused)) form.remove();
    });
    this.header.append(form);
    form.querySelector("input, select, textarea")?.focus();
  }

  async sendRun(b, body, refused = () => false) {
    b.disabled = true;
    try {
      const job = await post(`/api/v1/schedules/${this.s.id}/run`, body);
      const msg = el("span");
      msg.append(text("Queued "), link(`/jobs/${job.id}`, `job #${job.id}`), text("."));
      say(this.note, msg);
      this.feed.readSoon();
      return true;
    } catch (err) {
      if (!refused(err)) fail(this.note, err);
      else clear(this.note);
      return false;
    } finally {
      b.disabled = false;
    }
  }

  async setEnabled(on, b) {
    b.disabled = true;
    try {
      this.s = await patch(`/api/v1/schedules/${this.s.id}`, { enabled: on });
      this.renderHeader();
      if (!this.editing) this.renderBody();
      const back = this.s.cron ? "it fires again from the next time its cron names" : this.s.after ? "it runs again after the schedule it follows" : "Run now runs it, as before";
      say(this.note, on ? `Enabled: ${back}.` : "Disabled: it does not fire until enabled.");
    } catch (err) {
      fail(this.note, err);
    } finally {
      b.disabled = false;
    }
  }

  // Asked in the page, not in a dialog: its runs stay, it stops firing.
  confirmDelete() {
    const q = el("span", "confirm");
    q.append(text(`Delete the schedule "${this.s.name}"? Its runs stay as jobs. `));
    const yes = button("Delete schedule", "danger", async () => {
      yes.disabled = true;
      try {
        await del(`/api/v1/schedules/${this.s.id}`);
        location.assign("/schedules");
      } catch (err) {
        fail(this.note, err);
      }
    });
    yes.id = "confirm-delete";
    const no = button("Keep", null, () => say(this.note, ""));
    q.append(yes, text(" "), no);
    say(this.note, q);
    yes.focus();
  }

  // The time zone setting changed.
  retime() {
    if (!this.editing) this.render();
    else this.renderHeader();
    this.runs.render();
  }

  destroy() {
    this.feed?.close();
  }
}

const OVERLAP = {
  skip: "a fire while the last run runs makes no job",
  queue: "a fire while the last run runs waits for it",
  allow: "runs may overlap",
};
const MISSED = {
  skip: "fires missed while no node ran are dropped",
  one: "one run for the fires missed while no node ran",
  all: "a run for each fire missed while no node ran (up to 100)",
};

function say(where, what) {
  clear(where);
  where.classList.remove("error-text");
  if (what) where.append(what instanceof Node ? what : text(what));
}

// "2026-11-25 02:30" as the wall clock in `zone` reads it.
function inZone(ts, zone) {
  try {
    const parts = new Intl.DateTimeFormat("en-GB", {
      timeZone: zone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
    }).formatToParts(new Date(ts));
    const p = Object.fromEntries(parts.map((x) => [x.type, x.value]));
    return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`;
  } catch {
    return "";
  }
}

function quote(arg) {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`;
}
