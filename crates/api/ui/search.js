// The Search page: every job's log searched for a text (or a regular
// expression), newest job first, through `GET /api/v1/search`. Pages are
// asked for one after another and their hits drawn as they come, grouped by
// job, each line a link to itself in its job's log (`/jobs/ID#seq-N`) with
// its neighbours a click away; Stop ends a long search. The query and its
// filters live in the URL, so a search can be linked to. Every message goes
// in as text, drawn as the log viewer draws it (ansi.js).

import { render } from "./ansi.js";
import { get, withQuery } from "./api.js";
import { el, text, clear, when, fail, filterInput, button, link } from "./dom.js";

const FILTERS = ["q", "name", "state", "node", "since", "until", "streams"];
// Hits per request, and how many the page shows before it asks to go on.
const PAGE = 100;
const SHOWN = 500;
// Lines shown before and after a hit when its context is opened.
const CONTEXT = 3;

export function searchPage(main) {
  const page = new SearchPage(main);
  if (page.filters.q) page.start();
  return page;
}

class SearchPage {
  constructor(main) {
    const q = new URLSearchParams(location.search);
    this.filters = Object.fromEntries(FILTERS.map((k) => [k, q.get(k) ?? ""]));
    this.regex = q.get("regex") === "true";
    this.controller = null;
    document.title = "Search · joblog";
    clear(main);
    main.classList.add("search-page");
    this.bar = el("div", "filters");
    this.status = el("div", "log-status");
    this.status.id = "search-status";
    this.status.setAttribute("role", "status");
    this.results = el("div", "search-results");
    this.results.id = "search-results";
    this.footer = el("div", "pager");
    main.append(this.bar, this.status, this.results, this.footer);
    this.renderForm();
  }

  renderForm() {
    const form = el("form", "filter-form search-form");
    form.id = "search-form";
    form.setAttribute("role", "search");
    const input = (key, placeholder, title, label) =>
      filterInput(form, this.filters, key, placeholder, title, label);
    const q = input("q", "text to find", "a text anywhere in a line, ASCII letters in either case", "Text to find");
    q.classList.add("search-q");
    q.required = true;
    const regex = el("input");
    regex.type = "checkbox";
    regex.name = "regex";
    regex.id = "search-regex";
    regex.checked = this.regex;
    // The box inside its label: one item of the form's row, clickable
    // by its word.
    const regexLabel = el("label", "check");
    regexLabel.title = "the text is a regular expression (RE2 syntax), case-insensitive unless it starts with (?-i)";
    regexLabel.append(regex, " regex");
    form.append(regexLabel);
    input("name", "job name", "a job's name, or a pattern: backup*", "Job name");
    input("state", "states", "comma-separated: failed,timed_out", "States");
    input("since", "since", "jobs created since: 30d, 24h, 2026-11-01", "Since");
    input("until", "until", "jobs created before: 7d, 2026-11-08", "Until");
    input("node", "node", "jobs run on this node", "Node");
    input("streams", "streams", "lines of these streams: error,warning", "Streams");
    const go = el("button", "button primary");
    go.type = "submit";
    go.textContent = "Search";
    this.stopButton = button("Stop", null, () => this.stop("stopped"));
    this.stopButton.id = "search-stop";
    this.stopButton.type = "button";
    this.stopButton.hidden = true;
    form.append(go, this.stopButton);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      for (const k of FILTERS) this.filters[k] = form.elements[k].value.trim();
      this.regex = regex.checked;
      const params = { ...this.filters };
      if (this.regex) params.regex = "true";
      history.replaceState(null, "", withQuery("/search", params));
      this.start();
    });
    this.bar.append(text("Search every job's log", null, "h1"), form);
    this.form = form;
  }

  // A new search: the old one (if any) stops, its results go.
  start() {
    this.stop(null);
    clear(this.results);
    clear(this.footer);
    this.status.classList.remove("error-text");
    this.groups = new Map();
    this.hits = 0;
    this.scanned = { jobs: 0, segments: 0, skipped_by_index: 0, unreadable: 0 };
    this.controller = new AbortController();
    this.run(null, this.controller);
  }

  // Asks for pages until the search ends, is stopped, or has shown
  // SHOWN more lines (then a button goes on from where it was).
  async run(cursor, controller) {
    this.stopButton.hidden = false;
    const target = this.hits + SHOWN;
    const params = { ...this.filters, limit: PAGE };
    if (this.regex) params.regex = "true";
    try {
      for (;;) {
        if (cursor) params.cursor = cursor;
        this.say(`searching… ${this.summary()}`);
        const res = await get("/api/v1/search", params, controller.signal);
        if (controller.signal.aborted) return;
        for (const h of res.hits) this.add(h);
        for (const k of Object.keys(this.scanned)) this.scanned[k] += res.scanned[k] ?? 0;
        cursor = res.next_cursor;
        if (!cursor) {
          this.finish(`${count(this.hits, "line")} in ${count(res.jobs_matched, "job")}. ${this.scannedText()}.`);
          return;
        }
        if (this.hits >= target) {
          this.finish(`${this.summary()}. More may follow.`);
          const more = button("Search on", null, () => {
            clear(this.footer);
            this.controller = new AbortController();
            this.run(cursor, this.controller);
          });
          more.id = "search-more";
          this.footer.append(more);
          return;
        }
      }
    } catch (err) {
      if (controller.signal.aborted) return;
      this.stopButton.hidden = true;
      fail(this.status, err);
    }
  }

  summary() {
    return `${count(this.hits, "line")} in ${count(this.groups.size, "job")} so far. ${this.scannedText()}`;
  }

  scannedText() {
    const s = this.scanned;
    const unreadable = s.unreadable ? `, ${s.unreadable} unreadable (see the server's error log)` : "";
    return `${count(s.segments, "sealed segment")} read, ${s.skipped_by_index} skipped by their index${unreadable}`;
  }

  say(message) {
    this.status.classList.remove("error-text");
    this.status.textContent = message;
  }

  finish(message) {
    this.stopButton.hidden = true;
    this.controller = null;
    this.say(message);
  }

  stop(why) {
    if (!this.controller) return;
    this.controller.abort();
    this.controller = null;
    this.stopButton.hidden = true;
    if (why) this.say(`Stopped: ${this.summary()}.`);
  }

  // A hit, under its job's heading (made when the job's first hit comes).
  add(h) {
    let group = this.groups.get(h.job_id);
    if (!group) {
      const section = el("section", "search-job");
      section.dataset.job = h.job_id;
      const head = el("h2");
      head.append(link(`/jobs/${h.job_id}`, `#${h.job_id}`), " ", text(h.job_name ?? "(no name)", h.job_name ? null : "muted"));
      const list = el("ol", "search-hits");
      section.append(head, list);
      this.results.append(section);
      group = list;
      this.groups.set(h.job_id, list);
    }
    group.append(this.hitItem(h));
    this.hits++;
  }

  hitItem(h) {
    const li = el("li", "search-hit");
    li.dataset.seq = h.seq;
    const row = el("div", `hit-row s-${h.stream}`);
    const seq = link(`/jobs/${h.job_id}#seq-${h.seq}`, String(h.seq), "ln");
    seq.title = "this line in its job's log";
    const at = text(when(h.ts, { ms: true }) ?? "", "muted hit-ts");
    at.title = h.ts;
    const stream = text(h.stream, "hit-stream");
    const msg = el("span", "msg");
    this.highlight(msg, h.message);
    const ctx = button("context", "small", () => this.context(li, h, ctx), "the lines around this one");
    ctx.setAttribute("aria-expanded", "false");
    row.append(seq, at, stream, msg, ctx);
    li.append(row);
    return li;
  }

  // The message as the log viewer draws it (colours, controls as
  // visible symbols), the literal searched for marked. A regular
  // expression's matches are not marked: JavaScript's engine is not the
  // server's.
  highlight(into, message) {
    const q = this.filters.q;
    render(into, message, this.regex || !q ? null : q.toLowerCase());
  }

  // The lines around a hit, read from its job's log, shown under it.
  async context(li, h, toggle) {
    const open = li.querySelector(".hit-context");
    if (open) {
      open.remove();
      toggle.setAttribute("aria-expanded", "false");
      return;
    }
    toggle.setAttribute("aria-expanded", "true");
    const box = el("ol", "hit-context");
    li.append(box);
    try {
      const after = Math.max(0, h.seq - CONTEXT - 1);
      const res = await get(`/api/v1/jobs/${h.job_id}/log`, { after_seq: after, limit: 2 * CONTEXT + 1 });
      for (const r of res.records) {
        const line = el("li", r.seq === h.seq ? "ctx-line ctx-hit" : "ctx-line");
        const msg = el("span", "msg");
        render(msg, r.message, null);
        line.append(link(`/jobs/${h.job_id}#seq-${r.seq}`, String(r.seq), "ln"), msg);
        box.append(line);
      }
    } catch (err) {
      fail(box, err);
    }
  }

  retime() {
    for (const t of this.results.querySelectorAll(".hit-ts")) {
      t.textContent = when(t.title, { ms: true }) ?? "";
    }
  }

  destroy() {
    this.stop(null);
  }
}

// "1 job", "2 jobs", "0 jobs".
function count(n, noun) {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}
