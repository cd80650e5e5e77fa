// A job's page: its header (state, timings, the labels its node must
// have and, while queued, why it waits; cancel, rerun, downloads),
// details and result, the notifications sent of its end (deliveries.js),
// over its log (job-log.js), which is live through the SSE tail while the
// job runs.

import { get, post, token, blob } from "./api.js";
import { ResultView } from "./result.js";
import { JobLog } from "./job-log.js";
import { JobNotifications } from "./deliveries.js";
import { el, text, stateBadge, duration, when, can, fail, clear, button, labelList, timeCell } from "./dom.js";
import { live } from "./live.js";
import { paramsForm, paramValues } from "./params-form.js";

// What a job's page needs: the job, its log's outline (groups, first
// error, progress) and the notifications sent of its end, asked for
// together, and before the page is drawn (app.js): a refusal is the
// page's to show, if it is drawn at all.
export function prefetchJob({ id }) {
  const job = get(`/api/v1/jobs/${id}`);
  const outline = get(`/api/v1/jobs/${id}/log/outline`);
  const notifications = get(`/api/v1/jobs/${id}/notifications`);
  for (const p of [job, outline, notifications]) p.catch(() => {});
  return { job, outline, notifications };
}

const NO_OUTLINE = { groups: [], first_error_seq: null, first_warning_seq: null, progress: null };
// A queued job that waits for a node is read again this often: nodes
// coming up or going are not in the job feed.
const WAITING_REREAD_MS = 10000;

export async function jobPage(main, me, params, early) {
  const { job: jobP, outline: outlineP, notifications: sentP } = early ?? prefetchJob(params);
  const job = await jobP;
  // The outline reads the whole log. Only groups change what the first
  // screen shows (they fold), and groups are information records: without
  // any, the page draws at once and takes the outline when it comes.
  const waits = (job.log.streams.information ?? 0) > 0;
  // An ended job's notifications are drawn with the page (nothing moves
  // when they come); a running job has none until it ends.
  const ended = job.state !== "running" && job.state !== "queued";
  const sent = ended ? await sentP.catch(() => null) : { deliveries: [] };
  const page = new JobPage(main, job, waits ? await outlineP : NO_OUTLINE, me, sent);
  page.start();
  if (!waits) outlineP.then((o) => page.log.applyOutline(o)).catch((err) => fail(page.status, err));
  return page;
}

class JobPage {
  constructor(main, job, outline, me, sent) {
    this.job = job;
    this.me = me;
    document.title = `${job.name ?? "job"} #${job.id} · joblog`;
    clear(main);
    main.classList.add("job-page");
    this.header = el("section", "job-head");
    this.details = el("details", "job-details");
    this.log = new JobLog(job, outline, {
      running: () => this.running(),
      onRecords: (n) => {
        this.job.log.records = n;
      },
      onEnd: (ended) => {
        this.stopWatching();
        this.job = ended;
        this.renderHeader();
        this.renderDetails();
        // Its end queued a delivery for each rule it matched.
        this.sent.load();
      },
    });
    this.sent = new JobNotifications(job.id, me);
    if (sent) this.sent.show(sent.deliveries);
    else this.sent.load();
    const log = this.log;
    // The page's errors are told in the log's status line, under the log.
    this.status = log.status;
    main.append(this.header, log.progress, this.details, this.sent.section, log.toolbar, log.logEl, log.linePanel, log.status);
    this.renderHeader();
    this.renderDetails();
  }

  start() {
    this.log.start();
    this.ticker = setInterval(() => this.running() && this.renderHeader(), 1000);
    if (this.job.state === "queued") this.watchQueue();
  }

  // While queued, the job is read again when the job feed says it changed
  // (a node took it, it was cancelled), and now and then while it waits
  // for a node with its labels, so "Waiting for" goes when one comes up.
  // Once it runs, its log's live tail tells of its end.
  watchQueue() {
    this.readAt = Date.now();
    this.queue = live({
      every: 1000,
      read: () => this.reread(),
      concerns: (change) => change.reset || change.changed.includes(this.job.id),
      tick: () => {
        if (this.job.waiting_for && Date.now() - this.readAt > WAITING_REREAD_MS) this.queue?.readSoon();
      },
    });
  }

  stopWatching() {
    this.queue?.close();
    this.queue = null;
  }

  async reread() {
    this.readAt = Date.now();
    try {
      const job = await get(`/api/v1/jobs/${this.job.id}`);
      // The log's end came first: it has the last word.
      if (this.job.state !== "queued") return;
      job.log.records = Math.max(job.log.records, this.job.log.records);
      this.job = job;
      if (job.state !== "queued") this.stopWatching();
      this.renderHeader();
    } catch (err) {
      fail(this.status, err);
    }
  }

  running() {
    return this.job.state === "running" || this.job.state === "queued";
  }

  renderHeader() {
    const j = this.job;
    clear(this.header);
    const title = el("h1");
    title.append(stateBadge(j.state, { label: true }), text(` ${j.name ?? "(unnamed)"} `), text(`#${j.id}`, "muted"));
    const facts = el("div", "head-facts");
    const fact = (k, v) => {
      if (v === null || v === undefined || v === "") return null;
      const f = el("span", "fact");
      f.append(text(k, "k"), text(" "), v instanceof Node ? v : text(String(v)));
      facts.append(f);
      return f;
    };
    fact("state", j.state);
    fact("exit", j.exit_code);
    fact("node", j.node);
    fact("folder", j.folder);
    if (Object.keys(j.node_selector ?? {}).length) {
      const on = fact("runs on", labelList(j.node_selector));
      on.id = "runs-on";
      on.title = "the labels the node that runs it must have";
    }
    fact("created", when(j.created_at));
    fact("started", when(j.started_at));
    fact("finished", when(j.finished_at));
    fact("duration", duration(j));
    fact("records", j.log.records.toLocaleString());
    if (j.log.truncated) fact("truncated", "yes — the middle of the log was dropped (see its marker record)");
    const actions = el("div", "actions");
    if (can(this.me, "operator", j.folder ?? null) && this.running()) {
      actions.append(button("Cancel", "danger", () => this.cancel()));
    }
    if (can(this.me, "operator", j.folder ?? null) && !this.running()) {
      actions.append(button("Rerun", null, () => this.rerun()));
    }
    const dl = downloadLink("Download log", `/api/v1/jobs/${j.id}/log/text`, `job-${j.id}.log`, this.status);
    dl.id = "download";
    dl.title = "the log as plain text, one line per record";
    // Structured: one JSON record a line, as the API gives them (seq,
    // time, stream, message, fields), for tools.
    const jsonl = downloadLink(
      "Download JSON lines",
      `/api/v1/jobs/${j.id}/log/text?format=jsonl`,
      `job-${j.id}.jsonl`,
      this.status,
    );
    jsonl.id = "download-jsonl";
    jsonl.title = "every record as a JSON object, one a line: seq, time, stream, message, fields";
    actions.append(dl, jsonl);
    this.header.append(title, actions, facts);
    // Why a queued job has not started: no up node has its labels, or a
    // retry's backoff.
    if (j.state === "queued" && j.waiting_for) {
      this.header.append(notice("waiting-for", "Waiting for", text(j.waiting_for)));
    }
    if (j.state === "queued" && j.run_after) {
      const at = timeCell(j.run_after, "span");
      this.header.append(notice("runs-after", "Runs after", at, " · the backoff before its next attempt"));
    }
  }

  renderDetails() {
    const j = this.job;
    this.closeResult();
    this.fireText = null;
    clear(this.details);
    const sum = el("summary");
    sum.textContent = "Details";
    this.details.append(sum);
    const dl = el("dl", "facts");
    const row = (k, v) => dl.append(text(k, null, "dt"), v instanceof Node ? wrap("dd", v) : text(v, null, "dd"));
    const cmd = el("code");
    cmd.textContent = (j.command ?? []).map(quote).join(" ");
    row("command", cmd);
    if (j.script !== undefined && j.script !== null) {
      const pre = el("pre", "script");
      pre.textContent = j.script;
      // A long line scrolls it: the keyboard must reach it too.
      pre.tabIndex = 0;
      row(`script (${j.shell ?? "sh"})`, pre);
    }
    if (j.cwd) row("working directory", j.cwd);
    if (j.timeout_s) row("timeout", `${j.timeout_s} s`);
    const env = Object.entries(j.env ?? {});
    if (env.length) {
      const list = el("ul", "env");
      for (const [k, v] of env) list.append(text(`${k}=${v}`, null, "li"));
      row("environment", list);
    }
    if ((j.secret_names ?? []).length) {
      row("secrets", `${j.secret_names.join(", ")} (values are never shown)`);
    }
    if (j.params) row("parameters", paramValues(j.params));
    if (j.schedule_id) {
      const a = el("a");
      a.href = `/schedules/${j.schedule_id}`;
      a.textContent = `#${j.schedule_id}`;
      const fire = j.fire_time ? `fire of ${when(j.fire_time)}` : j.triggered_by ? "triggered" : "run now";
      const what = wrap("span", a);
      what.append(text(` · ${fire} · attempt ${j.attempt}`));
      this.fireText = what.lastChild;
      row("schedule", what);
    }
    if (j.rerun_of) {
      const a = el("a");
      a.href = `/jobs/${j.rerun_of}`;
      a.textContent = `#${j.rerun_of}`;
      row("rerun of", a);
    }
    if (j.triggered_by) {
      const a = el("a");
      a.href = `/jobs/${j.triggered_by}`;
      a.textContent = `#${j.triggered_by}`;
      a.id = "triggered-by";
      row("triggered by", a);
    }
    const result = el("div", "result");
    if (j.result) {
      // Read only when asked: a result can be tens of MB.
      const label = `Show result (${j.result.bytes.toLocaleString()} bytes)`;
      const show = button(label, null, () => {
        const open = !this.result;
        this.closeResult();
        if (open) this.result = new ResultView(result, j.id);
        show.textContent = open ? "Hide result" : label;
        show.setAttribute("aria-expanded", String(open));
      });
      show.id = "show-result";
      show.setAttribute("aria-expanded", "false");
      const status = el("span", "result-status");
      const download = downloadLink("Download result", `/api/v1/jobs/${j.id}/result`, `job-${j.id}-result.json`, status);
      download.id = "download-result";
      const actions = el("div", "result-actions");
      actions.append(show, download, status);
      result.append(actions);
    } else result.append(text("none", "muted"));
    row("result", result);
    this.details.append(dl);
  }

  // The viewer's worker holds the parsed result: let it go with the view.
  closeResult() {
    this.result?.close();
    this.result = null;
  }

  async cancel() {
    try {
      await post(`/api/v1/jobs/${this.job.id}/cancel`);
      this.job = await get(`/api/v1/jobs/${this.job.id}`);
      this.renderHeader();
    } catch (err) {
      fail(this.status, err);
    }
  }

  // A job with secrets asks for their values first (never kept, so never
  // prefilled), in the page, and one with parameters shows them (the
  // values it ran with, secret ones asked again); one without either
  // reruns at once.
  rerun() {
    const names = this.job.secret_names ?? [];
    const schema = this.job.params_schema;
    if (!names.length && !schema) return this.sendRerun({});
    if (this.header.querySelector(".rerun-secrets")) return;
    const params = schema ? paramsForm(schema, this.job.params ?? {}, "rerun-param") : null;
    const form = params ? params.form : el("form", "rerun-secrets");
    form.classList.add("rerun-secrets");
    this.refusedParam = params ? params.refused : () => false;
    if (params) form.prepend(text("Rerun with these parameters (secret ones are not kept: give them again). ", "muted full"));
    else form.append(text("Its secrets are not kept: give them again to rerun. ", "muted"));
    const inputs = names.map((name) => {
      const label = el("label");
      const input = el("input");
      input.type = "password";
      input.autocomplete = "off";
      input.name = name;
      input.required = true;
      label.append(text(`${name} `), input);
      form.append(label, text(" "));
      return input;
    });
    const go = el("button", "button");
    go.type = "submit";
    go.textContent = "Rerun with these";
    go.id = "rerun-with-secrets";
    const keep = button("Keep", null, () => form.remove());
    form.append(go, text(" "), keep);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const secrets = Object.fromEntries(inputs.map((i) => [i.name, i.value]));
      this.sendRerun(params ? { secrets, params: params.values() } : { secrets });
    });
    this.header.append(form);
    form.querySelector("input, select, textarea")?.focus();
  }

  async sendRerun(body) {
    try {
      const job = await post(`/api/v1/jobs/${this.job.id}/rerun`, body);
      location.assign(`/jobs/${job.id}`);
    } catch (err) {
      if (!this.refusedParam?.(err)) fail(this.status, err);
    }
  }

  key(e) {
    return this.log.key(e);
  }

  // The time zone setting changed: every time shown is drawn again (the
  // details only in words if a result is open, which they hold).
  retime() {
    this.renderHeader();
    if (!this.result) this.renderDetails();
    else if (this.fireText && this.job.fire_time) {
      this.fireText.textContent = ` · fire of ${when(this.job.fire_time)} · attempt ${this.job.attempt}`;
    }
    this.log.retime();
    this.sent.render();
  }

  destroy() {
    this.stopWatching();
    this.log.destroy();
    this.sent.destroy();
    clearInterval(this.ticker);
    this.closeResult();
  }
}

// A link that saves `path` as `name`. A link cannot carry the bearer
// token: with one, the body is fetched and saved from memory.
function downloadLink(label, path, name, errors) {
  const a = el("a", "button");
  a.textContent = label;
  a.href = path;
  a.download = name;
  a.addEventListener("click", (e) => {
    if (!token()) return;
    e.preventDefault();
    save(path, name).catch((err) => fail(errors, err));
  });
  return a;
}

async function save(path, name) {
  const url = URL.createObjectURL(await blob(path));
  const a = el("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// A line of the header that says why a queued job waits.
function notice(id, label, what, hint) {
  const p = el("p", "waiting");
  p.id = id;
  p.append(text(label, "k"), text(" "), what);
  if (hint) p.append(text(hint, "muted"));
  return p;
}

function wrap(tag, child) {
  const e = el(tag);
  e.append(child);
  return e;
}

function quote(arg) {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, "'\\''")}'`;
}
