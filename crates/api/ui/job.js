// A job's page: its header (state, timings, cancel, rerun), details and
// result, a progress bar, and its log in the virtualized viewer — live
// through the SSE tail while it runs.

import { get, post, stream, token, withQuery, blob } from "./api.js";
import { SeqSource, FilterSource } from "./sources.js";
import { Viewer, renderRecord } from "./viewer.js";
import { ResultView } from "./result.js";
import { el, text, stateBadge, duration, when, clock, can, fail, clear, button } from "./dom.js";

const STREAMS = ["output", "error", "warning", "information", "verbose", "debug", "progress"];

// What a job's page needs: the job and its log's outline (groups, first
// error, progress), asked for together.
export function prefetchJob(id) {
  const job = get(`/api/v1/jobs/${id}`);
  const outline = get(`/api/v1/jobs/${id}/log/outline`);
  outline.catch(() => {});
  return { job, outline };
}

const NO_OUTLINE = { groups: [], first_error_seq: null, first_warning_seq: null, progress: null };

export async function jobPage(main, id, me, early) {
  const { job: jobP, outline: outlineP } = early ?? prefetchJob(id);
  const job = await jobP;
  // The outline reads the whole log. Only groups change what the first
  // screen shows (they fold), and groups are information records: without
  // any, the page draws at once and takes the outline when it comes.
  const waits = (job.log.streams.information ?? 0) > 0;
  const page = new JobPage(main, job, waits ? await outlineP : NO_OUTLINE, me);
  page.start();
  if (!waits) outlineP.then((o) => page.applyOutline(o)).catch((err) => fail(page.status, err));
  return page;
}

class JobPage {
  constructor(main, job, outline, me) {
    this.main = main;
    this.job = job;
    this.outline = outline;
    this.me = me;
    this.counts = { ...job.log.streams };
    this.lastSeq = job.log.records;
    this.streams = new Set(STREAMS);
    this.search = null; // {q, total, seqs, next, index}
    this.live = null;
    this.inbox = [];
    document.title = `${job.name ?? "job"} #${job.id} · joblog`;
    clear(main);
    main.classList.add("job-page");
    this.header = el("section", "job-head");
    this.progress = el("div", "progress");
    this.progress.hidden = true;
    this.details = el("details", "job-details");
    this.toolbar = el("div", "toolbar");
    this.logEl = el("div");
    // Wrap: the selected line in full, wrapped, under the log (whose rows
    // stay one fixed-height line each).
    this.linePanel = el("section", "line-panel");
    this.linePanel.id = "line-panel";
    this.linePanel.setAttribute("aria-label", "The selected line in full");
    this.linePanel.hidden = true;
    this.status = el("div", "log-status");
    main.append(this.header, this.progress, this.details, this.toolbar, this.logEl, this.linePanel, this.status);
    this.renderHeader();
    this.renderDetails();
    this.renderToolbar();
    this.viewer = new Viewer(this.logEl, {
      onRowClick: (seq, e) => this.rowClick(seq, e),
      onScrollState: (s) => this.scrollState(s),
    });
    const groups = (outline.groups ?? []).map((g) => ({ ...g, folded: g.end_seq !== null }));
    this.seqSource = new SeqSource(job.id, this.lastSeq, groups, () => this.viewer.schedule());
    this.viewer.setSource(this.seqSource);
    if (outline.progress) this.showProgress(outline.progress);
  }

  // The outline that came after the first draw (a log without groups).
  applyOutline(outline) {
    this.outline = outline;
    for (const g of outline.groups ?? []) {
      if (!this.seqSource.groupAt(g.seq)) this.seqSource.addGroup({ ...g, folded: false });
    }
    this.seqSource.refold();
    const first = document.getElementById("first-error");
    if (first) first.disabled = !outline.first_error_seq;
    if (outline.progress && this.progress.hidden) this.showProgress(outline.progress);
    this.viewer.refresh();
  }

  running() {
    return this.job.state === "running" || this.job.state === "queued";
  }

  start() {
    const target = seqFromHash();
    if (target) this.jumpTo(target, { highlight: true });
    else if (this.running()) this.viewer.toEnd();
    else this.viewer.toStart();
    if (this.running()) this.follow();
    this.onHash = () => {
      const s = seqFromHash();
      if (s) this.jumpTo(s, { highlight: true });
    };
    window.addEventListener("hashchange", this.onHash);
    this.ticker = setInterval(() => this.running() && this.renderHeader(), 1000);
  }

  // The live tail: records after what the page was opened with.
  follow() {
    const url = withQuery(`/api/v1/jobs/${this.job.id}/log/events`, { after_seq: this.lastSeq });
    this.live = stream(url, {
      lastEventId: this.lastSeq,
      onEvent: (type, data) => {
        if (type === "message") {
          this.inbox.push(JSON.parse(data));
          if (this.inbox.length === 1) requestAnimationFrame(() => this.drain());
        } else if (type === "end") {
          this.drain();
          this.job = JSON.parse(data);
          this.renderHeader();
          this.renderDetails();
        }
      },
      onState: (s) => this.setLive(s),
    });
  }

  // Applies the records that came since the last frame, in one go.
  drain() {
    const batch = this.inbox;
    if (!batch.length) return;
    this.inbox = [];
    for (const r of batch) {
      if (r.seq <= this.lastSeq) continue;
      this.lastSeq = r.seq;
      this.counts[r.stream] = (this.counts[r.stream] ?? 0) + 1;
      this.liveGroup(r);
      if (r.stream === "progress") this.showProgress(r);
      // The first error that arrives live enables "First error" at once.
      if (r.stream === "error" && !this.outline.first_error_seq) {
        this.outline.first_error_seq = r.seq;
        const first = document.getElementById("first-error");
        if (first) first.disabled = false;
      }
    }
    this.seqSource.append(batch);
    if (this.filter) this.filter.append(batch);
    this.job.log.records = this.lastSeq;
    this.viewer.schedule();
  }

  liveGroup(r) {
    const src = this.seqSource;
    const open = src.groups.findLast((g) => g.end_seq === null);
    if (r.fields?.group === "start") {
      if (open) open.end_seq = r.seq - 1;
      src.addGroup({ seq: r.seq, end_seq: null, title: r.message, errors: 0, warnings: 0, folded: false });
    } else if (r.fields?.group === "end") {
      if (open) open.end_seq = r.seq;
    } else if (open && r.stream === "error") open.errors++;
    else if (open && r.stream === "warning") open.warnings++;
  }

  showProgress(r) {
    this.progress.hidden = false;
    clear(this.progress);
    const pct = Number(r.fields?.percent);
    const bar = el("div", "bar");
    const fill = el("div", "fill");
    if (Number.isFinite(pct)) fill.style.width = `${Math.max(0, Math.min(100, pct))}%`;
    else bar.classList.add("indeterminate");
    bar.append(fill);
    const label = el("span", "progress-label");
    label.textContent = `${Number.isFinite(pct) ? pct + "% " : ""}${r.message}`;
    this.progress.append(bar, label);
  }

  renderHeader() {
    const j = this.job;
    clear(this.header);
    const title = el("h1");
    title.append(stateBadge(j.state, { label: true }), text(` ${j.name ?? "(unnamed)"} `), text(`#${j.id}`, "muted"));
    const facts = el("div", "head-facts");
    const fact = (k, v) => {
      if (v === null || v === undefined || v === "") return;
      const f = el("span", "fact");
      f.append(text(k, "k"), text(` ${v}`));
      facts.append(f);
    };
    fact("state", j.state);
    fact("exit", j.exit_code);
    fact("node", j.node);
    fact("created", when(j.created_at));
    if (j.state === "queued") fact("runs after", when(j.run_after));
    fact("started", when(j.started_at));
    fact("finished", when(j.finished_at));
    fact("duration", duration(j));
    fact("records", j.log.records.toLocaleString());
    if (j.log.truncated) fact("truncated", "yes — the middle of the log was dropped (see its marker record)");
    const actions = el("div", "actions");
    if (can(this.me, "operator") && this.running()) {
      actions.append(button("Cancel", "danger", () => this.cancel()));
    }
    if (can(this.me, "operator") && !this.running()) {
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
    if (j.schedule_id) {
      const a = el("a");
      a.href = `/schedules/${j.schedule_id}`;
      a.textContent = `#${j.schedule_id}`;
      const fire = j.fire_time ? `fire of ${when(j.fire_time)}` : "run now";
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

  renderToolbar() {
    const t = this.toolbar;
    clear(t);
    const form = el("form", "search");
    this.searchInput = el("input");
    this.searchInput.type = "search";
    this.searchInput.placeholder = "Search the log  (/)";
    this.searchInput.id = "search";
    this.searchInput.setAttribute("aria-label", "Search the log");
    this.searchInfo = text("", "search-info");
    this.searchInfo.id = "search-info";
    form.append(
      this.searchInput,
      button("↑", "small", () => this.nextMatch(-1), "previous match (N)"),
      button("↓", "small", () => this.nextMatch(1), "next match (n)"),
      this.searchInfo,
    );
    // Enter searches; Enter again on the same words goes to the next
    // match (Shift+Enter: the previous one), as in a browser's find.
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const q = this.searchInput.value.trim();
      const again = this.search && q && this.search.q === q;
      const done = again ? this.nextMatch(this.shiftEnter ? -1 : 1) : this.runSearch(q);
      done.catch((err) => fail(this.status, err));
    });
    this.searchInput.addEventListener("keydown", (e) => {
      if (e.key === "Enter") this.shiftEnter = e.shiftKey;
    });
    const firstError = button("First error", null, () => this.firstError(), "jump to the first error (e: next error)");
    firstError.id = "first-error";
    firstError.disabled = !this.outline.first_error_seq;
    const chips = el("div", "chips");
    chips.id = "streams";
    for (const s of STREAMS) {
      const c = el("button", `chip s-${s} on`);
      c.type = "button";
      c.dataset.stream = s;
      c.textContent = s;
      c.title = `show or hide ${s} records`;
      c.addEventListener("click", () => this.toggleStream(s, c));
      chips.append(c);
    }
    const ts = button("Timestamps", "toggle", () => this.toggleTimestamps(), "show each record's time (t)");
    ts.id = "timestamps";
    ts.setAttribute("aria-pressed", "false");
    const wrap = button("Wrap", "toggle", () => this.toggleWrap(), "show the selected line in full, wrapped, under the log (w; j/k: next/previous line)");
    wrap.id = "wrap";
    wrap.setAttribute("aria-pressed", "false");
    wrap.setAttribute("aria-controls", "line-panel");
    this.followButton = button("↓ Follow", "toggle", () => this.viewer.toEnd(), "follow the end of the log (f)");
    this.followButton.id = "follow";
    t.append(
      form,
      firstError,
      chips,
      ts,
      wrap,
      button("Start", "small", () => this.viewer.toStart(), "first line (g)"),
      button("End", "small", () => this.viewer.toEnd(), "last line (G)"),
      this.followButton,
    );
  }

  toggleTimestamps() {
    const on = this.logEl.classList.toggle("show-ts");
    const b = document.getElementById("timestamps");
    b.classList.toggle("on", on);
    b.setAttribute("aria-pressed", String(on));
  }

  toggleWrap() {
    this.wrapOn = !this.wrapOn;
    const b = document.getElementById("wrap");
    b.classList.toggle("on", this.wrapOn);
    b.setAttribute("aria-pressed", String(this.wrapOn));
    this.linePanel.hidden = !this.wrapOn;
    this.wrapKey = null;
    this.updateWrap();
  }

  // The selected line: the highlighted one (clicked, linked, an error),
  // else the current search match, else the first line in view.
  selectedSeq() {
    return this.viewer.highlight ?? this.viewer.current ?? this.viewer.seqOfRow(this.topRow ?? 0);
  }

  select(seq) {
    this.viewer.highlight = seq;
    this.viewer.refresh();
    this.updateWrap();
  }

  // j / k: the next / previous line becomes the selected one, kept in view.
  moveSelection(dir) {
    const v = this.viewer;
    // Nothing selected yet: the first line in view is.
    const picked = v.highlight ?? v.current;
    let row = picked === null ? null : v.rowOfSeq(picked);
    if (row === null) {
      row = this.topRow ?? 0;
      dir = 0;
    }
    const next = Math.max(0, Math.min(row + dir, (v.source?.count() ?? 1) - 1));
    const seq = v.seqOfRow(next);
    if (seq === null) return;
    this.select(seq);
    v.scrollToRow(next);
  }

  // Draws the selected line in the panel when it (or its record) changed.
  updateWrap() {
    if (!this.wrapOn) return;
    const seq = this.selectedSeq();
    const rec = seq ? this.seqSource.bySeq(seq) : null;
    const key = rec ? `${seq}|${this.viewer.mark ?? ""}|${when(rec.ts)}` : `?${seq}`;
    if (key === this.wrapKey) return;
    this.wrapKey = key;
    const p = this.linePanel;
    clear(p);
    if (!rec) {
      p.append(text(seq ? `line ${seq} …` : "Select a line (a click, or j / k) to see it in full.", "muted"));
      return;
    }
    const head = el("div", "line-head");
    const ln = text(`line ${rec.seq}`, null, "a");
    ln.href = `#seq-${rec.seq}`;
    head.append(ln, text(` · ${rec.stream} · ${clock(rec.ts)} · ${rec.message.length.toLocaleString()} characters`));
    const body = el("div", `line-text s-${rec.stream}`);
    const tx = el("span", "tx");
    renderRecord(tx, rec, this.viewer.mark);
    body.append(tx);
    p.append(head, body);
  }

  toggleStream(s, chip) {
    if (this.streams.has(s)) this.streams.delete(s);
    else this.streams.add(s);
    chip.classList.toggle("on", this.streams.has(s));
    this.applyFilter();
  }

  applyFilter() {
    if (this.streams.size === STREAMS.length) {
      this.filter = null;
      this.viewer.setSource(this.seqSource);
    } else {
      const total = [...this.streams].reduce((n, s) => n + (this.counts[s] ?? 0), 0);
      this.filter = new FilterSource(this.job.id, this.streams, total, this.lastSeq, () => this.viewer.schedule());
      this.viewer.setSource(this.filter);
    }
    this.viewer.refresh();
    this.viewer.toStart();
  }

  clearFilter() {
    if (!this.filter) return;
    this.streams = new Set(STREAMS);
    for (const c of this.toolbar.querySelectorAll(".chip")) c.classList.add("on");
    this.filter = null;
    this.viewer.setSource(this.seqSource);
    this.viewer.refresh();
  }

  // Shows `seq` in the whole log: unfolds the group hiding it, and clears a
  // stream filter (a filtered view cannot place a seq without reading
  // everything before it).
  jumpTo(seq, { highlight } = {}) {
    if (seq < 1 || seq > this.lastSeq) {
      this.status.textContent = `line ${seq} is not in this log (it has ${this.lastSeq} lines)`;
      return;
    }
    this.clearFilter();
    const src = this.seqSource;
    const g = src.foldOf(seq);
    if (g) {
      g.folded = false;
      src.refold();
    }
    if (highlight) this.viewer.highlight = seq;
    this.viewer.refresh();
    this.viewer.scrollToRow(src.rowOf(seq), { force: true });
  }

  rowClick(seq, e) {
    const g = this.seqSource.groupAt(seq);
    if (g && !this.filter && (e.target.closest(".fold") || e.target.closest(".tx"))) {
      g.folded = !g.folded;
      this.seqSource.refold();
      this.viewer.refresh();
      return;
    }
    // A click selects the line (highlighted; shown in full under Wrap).
    this.select(seq);
  }

  async firstError() {
    if (this.outline.first_error_seq) this.jumpTo(this.outline.first_error_seq, { highlight: true });
  }

  // The next error after the line in view (or after the highlighted one).
  async nextError() {
    const from = this.viewer.highlight ?? this.seqSource.seqAt(this.topRow ?? 0);
    const page = await get(`/api/v1/jobs/${this.job.id}/log`, { after_seq: from, limit: 1, streams: "error" });
    if (page.records.length) this.jumpTo(page.records[0].seq, { highlight: true });
    else this.status.textContent = "no error after this line";
  }

  async runSearch(q) {
    q = q.trim();
    if (!q) return this.clearSearch();
    this.searchInfo.textContent = "searching…";
    const res = await get(`/api/v1/jobs/${this.job.id}/log/search`, { q, limit: 10000 });
    this.search = { q, total: res.total, seqs: res.seqs, next: res.next_after_seq, index: -1 };
    this.viewer.mark = q.toLowerCase();
    this.viewer.refresh();
    if (res.total === 0) {
      this.searchInfo.textContent = "no matches";
      return;
    }
    await this.nextMatch(1);
  }

  async nextMatch(dir) {
    const s = this.search;
    if (!s || s.total === 0) return;
    let i = s.index + dir;
    if (i >= s.seqs.length && s.next !== null) {
      const more = await get(`/api/v1/jobs/${this.job.id}/log/search`, { q: s.q, after_seq: s.next, limit: 10000 });
      s.seqs = s.seqs.concat(more.seqs);
      s.next = more.next_after_seq;
    }
    if (i >= s.seqs.length) i = 0;
    if (i < 0) i = s.seqs.length - 1;
    s.index = i;
    const seq = s.seqs[i];
    this.viewer.current = seq;
    this.searchInfo.textContent = `${i + 1} of ${s.total.toLocaleString()}`;
    this.jumpTo(seq);
  }

  clearSearch() {
    this.search = null;
    this.viewer.mark = null;
    this.viewer.current = null;
    this.viewer.highlight = null;
    this.searchInput.value = "";
    this.searchInfo.textContent = "";
    this.viewer.refresh();
  }

  scrollState({ top, count, following }) {
    this.topRow = top;
    this.updateWrap();
    this.followButton.classList.toggle("on", following);
    const live = this.running() ? (this.liveState === "open" ? " · live" : ` · ${this.liveState ?? "connecting"}`) : "";
    const seq = this.filter ? null : this.seqSource.seqAt(top);
    this.status.textContent = `${count.toLocaleString()} rows${seq ? ` · line ${seq.toLocaleString()} at the top` : ""}${live}${
      following ? " · following" : ""
    }`;
  }

  setLive(state) {
    this.liveState = state;
    this.viewer.schedule();
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
  // prefilled), in the page; one without reruns at once.
  rerun() {
    const names = this.job.secret_names ?? [];
    if (!names.length) return this.sendRerun({});
    if (this.header.querySelector(".rerun-secrets")) return;
    const form = el("form", "rerun-secrets");
    form.append(text("Its secrets are not kept: give them again to rerun. ", "muted"));
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
      this.sendRerun({ secrets });
    });
    this.header.append(form);
    inputs[0].focus();
  }

  async sendRerun(body) {
    try {
      const job = await post(`/api/v1/jobs/${this.job.id}/rerun`, body);
      location.assign(`/jobs/${job.id}`);
    } catch (err) {
      fail(this.status, err);
    }
  }

  key(e) {
    const k = e.key;
    if (k === "/") {
      e.preventDefault();
      this.searchInput.focus();
    } else if (k === "n") this.nextMatch(1);
    else if (k === "N") this.nextMatch(-1);
    else if (k === "e") this.nextError().catch((err) => fail(this.status, err));
    else if (k === "g") this.viewer.toStart();
    else if (k === "G") this.viewer.toEnd();
    else if (k === "f") {
      if (this.viewer.following) this.viewer.setFollowing(false);
      else this.viewer.toEnd();
    } else if (k === "t") this.toggleTimestamps();
    else if (k === "w") this.toggleWrap();
    else if (k === "j") this.moveSelection(1);
    else if (k === "k") this.moveSelection(-1);
    else if (k === "Escape") this.clearSearch();
    else return false;
    return true;
  }

  // The time zone setting changed: every time shown is drawn again (the
  // details only in words if a result is open, which they hold).
  retime() {
    this.renderHeader();
    if (!this.result) this.renderDetails();
    else if (this.fireText && this.job.fire_time) {
      this.fireText.textContent = ` · fire of ${when(this.job.fire_time)} · attempt ${this.job.attempt}`;
    }
    this.viewer.refresh();
    this.wrapKey = null;
    this.updateWrap();
  }

  destroy() {
    this.live?.close();
    clearInterval(this.ticker);
    window.removeEventListener("hashchange", this.onHash);
    this.viewer.destroy();
    this.closeResult();
  }
}

function seqFromHash() {
  const m = /^#seq-(\d+)$/.exec(location.hash);
  return m ? Number(m[1]) : null;
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

function wrap(tag, child) {
  const e = el(tag);
  e.append(child);
  return e;
}

function quote(arg) {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, "'\\''")}'`;
}
