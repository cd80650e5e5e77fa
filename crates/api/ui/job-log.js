// A job's log on its page: the virtualized viewer over its records, the
// toolbar (search, streams, first error, timestamps, wrap, follow) and its
// keys, the selected line in full, the progress bar, the status line, and
// the live tail while the job runs, batched per animation frame.

import { get, stream, withQuery } from "./api.js";
import { SeqSource, FilterSource } from "./sources.js";
import { Viewer, renderRecord } from "./viewer.js";
import { el, text, when, clock, fail, clear, button } from "./dom.js";

const STREAMS = ["output", "error", "warning", "information", "verbose", "debug", "progress"];

export class JobLog {
  // `job`: as the page was opened with it. The log asks the page whether
  // the job still runs (`running()`), tells it the log's length as records
  // come (`onRecords(n)`, for the header) and hands it the job as it ended
  // (`onEnd(job)`, after its last record). Its elements are the page's to
  // place: `progress`, `toolbar`, `logEl`, `linePanel` and `status`.
  constructor(job, outline, { running, onRecords, onEnd }) {
    this.id = job.id;
    this.outline = outline;
    this.running = running;
    this.onRecords = onRecords;
    this.onEnd = onEnd;
    this.counts = { ...job.log.streams };
    this.lastSeq = job.log.records;
    this.streams = new Set(STREAMS);
    this.search = null; // {q, total, seqs, next, index}
    this.live = null;
    this.inbox = [];
    this.progress = el("div", "progress");
    this.progress.hidden = true;
    this.toolbar = el("div", "toolbar");
    this.logEl = el("div");
    // Wrap: the selected line in full, wrapped, under the log (whose rows
    // stay one fixed-height line each).
    this.linePanel = el("section", "line-panel");
    this.linePanel.id = "line-panel";
    this.linePanel.setAttribute("aria-label", "The selected line in full");
    this.linePanel.hidden = true;
    this.status = el("div", "log-status");
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
  }

  // The live tail: records after what the page was opened with.
  follow() {
    const url = withQuery(`/api/v1/jobs/${this.id}/log/events`, { after_seq: this.lastSeq });
    this.live = stream(url, {
      lastEventId: this.lastSeq,
      onEvent: (type, data) => {
        if (type === "message") {
          this.inbox.push(JSON.parse(data));
          if (this.inbox.length === 1) requestAnimationFrame(() => this.drain());
        } else if (type === "end") {
          this.drain();
          this.onEnd(JSON.parse(data));
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
    this.onRecords(this.lastSeq);
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
      this.filter = new FilterSource(this.id, this.streams, total, this.lastSeq, () => this.viewer.schedule());
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
    const page = await get(`/api/v1/jobs/${this.id}/log`, { after_seq: from, limit: 1, streams: "error" });
    if (page.records.length) this.jumpTo(page.records[0].seq, { highlight: true });
    else this.status.textContent = "no error after this line";
  }

  async runSearch(q) {
    q = q.trim();
    if (!q) return this.clearSearch();
    this.searchInfo.textContent = "searching…";
    const res = await get(`/api/v1/jobs/${this.id}/log/search`, { q, limit: 10000 });
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
      const more = await get(`/api/v1/jobs/${this.id}/log/search`, { q: s.q, after_seq: s.next, limit: 10000 });
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

  // The time zone setting changed: the rows' and the panel's times.
  retime() {
    this.viewer.refresh();
    this.wrapKey = null;
    this.updateWrap();
  }

  destroy() {
    this.live?.close();
    window.removeEventListener("hashchange", this.onHash);
    this.viewer.destroy();
  }
}

function seqFromHash() {
  const m = /^#seq-(\d+)$/.exec(location.hash);
  return m ? Number(m[1]) : null;
}
