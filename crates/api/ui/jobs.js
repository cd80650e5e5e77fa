// The job list: newest first, filtered by state, name, node and time, paged
// by `before_id`, kept current by the `/api/v1/events` feed (it re-reads
// its page when a change concerns it; it never polls).

import { get, post } from "./api.js";
import { el, text, clear, stateBadge, duration, when, relative, can, fail, filterInput, headerRow, tickDurations, tickRelative } from "./dom.js";
import { live } from "./live.js";

const STATES = ["queued", "running", "succeeded", "failed", "cancelled", "timed_out", "interrupted"];
const LIMIT = 50;
// The page is re-read at most this often, however busy the server.
const MIN_REFRESH_MS = 500;

export function jobsPage(main, me) {
  const page = new JobsPage(main, me);
  page.start();
  return page;
}

class JobsPage {
  constructor(main, me) {
    this.main = main;
    this.me = me;
    const q = new URLSearchParams(location.search);
    this.filters = {
      state: new Set((q.get("state") ?? "").split(",").filter((s) => STATES.includes(s))),
      name: q.get("name") ?? "",
      node: q.get("node") ?? "",
      folder: q.get("folder") ?? "",
      since: q.get("since") ?? "",
    };
    this.beforeId = q.get("before_id");
    this.jobs = [];
    document.title = "Jobs · joblog";
    clear(main);
    main.classList.add("jobs-page");
    this.bar = el("div", "filters");
    this.table = el("table", "jobs");
    this.table.id = "jobs";
    this.footer = el("div", "pager");
    this.status = el("div", "log-status");
    main.append(this.bar, this.table, this.footer, this.status);
    this.renderFilters();
  }

  start() {
    this.feed = live({
      every: MIN_REFRESH_MS,
      read: () => this.load(),
      concerns: (change) => {
        const shown = new Set(this.jobs.map((j) => j.id));
        return change.reset || (change.new > 0 && !this.beforeId) || change.changed.some((id) => shown.has(id));
      },
      onState: (s) => {
        this.live = s;
        this.renderStatus();
      },
      tick: () => {
        tickDurations(this.table, this.jobs);
        tickRelative(this.table);
      },
    });
    this.feed.readNow();
  }

  query() {
    const f = this.filters;
    return {
      state: [...f.state].join(","),
      name: f.name,
      node: f.node,
      folder: f.folder,
      since: f.since,
      limit: LIMIT,
      before_id: this.beforeId,
    };
  }

  async load() {
    try {
      const res = await get("/api/v1/jobs", this.query());
      this.jobs = res.jobs;
      this.next = res.next_before_id;
      this.renderTable();
      this.status.classList.remove("error-text");
      this.renderStatus();
    } catch (err) {
      fail(this.status, err);
    }
  }

  renderStatus() {
    if (this.status.classList.contains("error-text")) return;
    const live = this.live === "open" ? "live" : this.live ?? "connecting";
    this.status.textContent = `${this.jobs.length} jobs shown · ${live}`;
  }

  // Filters live in the URL, so a filtered list can be linked to.
  navigate(beforeId) {
    const f = this.filters;
    const q = new URLSearchParams();
    if (f.state.size) q.set("state", [...f.state].join(","));
    for (const k of ["name", "node", "folder", "since"]) if (f[k]) q.set(k, f[k]);
    if (beforeId) q.set("before_id", beforeId);
    const s = q.toString();
    history.replaceState(null, "", s ? `/?${s}` : "/");
    this.beforeId = beforeId ?? null;
    this.feed.readNow();
  }

  renderFilters() {
    clear(this.bar);
    const chips = el("div", "chips");
    chips.id = "state-filter";
    for (const s of STATES) {
      const c = el("button", `chip st-${s}${this.filters.state.has(s) ? " on" : ""}`);
      c.type = "button";
      c.dataset.state = s;
      c.textContent = s.replace("_", " ");
      c.addEventListener("click", () => {
        if (this.filters.state.has(s)) this.filters.state.delete(s);
        else this.filters.state.add(s);
        c.classList.toggle("on", this.filters.state.has(s));
        this.navigate(null);
      });
      chips.append(c);
    }
    const form = el("form", "filter-form");
    const input = (key, placeholder, title, label) =>
      filterInput(form, this.filters, key, placeholder, title, label);
    input("name", "name (backup-*)", "a job name, or a pattern with * and ?", "Job name or pattern");
    input("node", "node", "the node that ran the job", "Node");
    input("folder", "folder", "jobs of one folder", "Folder");
    input("since", "since (24h)", "created since: a duration back (24h, 7d) or an RFC 3339 time", "Created since");
    const go = el("button", "button");
    go.type = "submit";
    go.textContent = "Filter";
    form.append(go);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      for (const k of ["name", "node", "folder", "since"]) this.filters[k] = form.elements[k].value.trim();
      this.navigate(null);
    });
    this.bar.append(text("Jobs", null, "h1"), chips, form);
  }

  renderTable() {
    // Rows new since the last read slide in; the rest stay still.
    const before = this.shown;
    this.shown = new Set(this.jobs.map((j) => j.id));
    this.fresh = (id) => before !== undefined && !before.has(id);
    const t = this.table;
    clear(t);
    const head = el("thead");
    head.append(
      headerRow([
        "state",
        "id",
        "name",
        "node",
        "started",
        "duration",
        "exit",
        { sym: "⚠", name: "warnings" },
        { sym: "✖", name: "errors" },
        { name: "actions" },
      ]),
    );
    const body = el("tbody");
    for (const j of this.jobs) body.append(this.row(j));
    t.append(head, body);
    if (!this.jobs.length) {
      const tr = el("tr");
      const td = text(this.beforeId ? "no older jobs" : "no jobs yet", "muted", "td");
      td.colSpan = 10;
      tr.append(td);
      body.append(tr);
    }
    clear(this.footer);
    if (this.beforeId) {
      const newest = el("button", "button");
      newest.textContent = "« Newest";
      newest.addEventListener("click", () => this.navigate(null));
      this.footer.append(newest);
    }
    if (this.next) {
      const older = el("button", "button");
      older.id = "older";
      older.textContent = "Older »";
      older.addEventListener("click", () => this.navigate(this.next));
      this.footer.append(older);
    }
  }

  row(j) {
    const tr = el("tr", `st-${j.state}`);
    if (this.fresh(j.id)) tr.classList.add("new");
    tr.dataset.id = j.id;
    const link = el("a");
    link.href = `/jobs/${j.id}`;
    link.textContent = j.id;
    const dot = el("td");
    dot.append(stateBadge(j.state, { label: true }));
    const id = el("td", "num");
    id.append(link);
    const name = el("td", "name");
    const nameLink = el("a");
    nameLink.href = `/jobs/${j.id}`;
    nameLink.textContent = j.name ?? (j.command ?? []).join(" ");
    if (!j.name) nameLink.classList.add("muted");
    name.append(nameLink);
    if (j.folder) {
      const f = text(j.folder, "folder-tag");
      f.title = `folder ${j.folder}`;
      name.append(" ", f);
    }
    const streams = j.log?.streams ?? {};
    // A queued job that no up node can take says why where its node
    // will be, small, cut to the column, whole on hover; a queued retry
    // says when it runs.
    const node = text(j.node ?? "", null, "td");
    if (j.state === "queued" && j.waiting_for) {
      node.classList.add("waits");
      node.append(text(`waits: ${j.waiting_for}`, "waiting-for"));
      node.title = `Waiting for: ${j.waiting_for}`;
    } else if (j.state === "queued" && j.run_after) {
      const rel = text(relative(j.run_after), "rel");
      rel.dataset.ts = j.run_after;
      const after = text("runs ", "waiting-for");
      after.append(rel);
      node.append(after);
      node.title = `Runs after ${when(j.run_after)}: the backoff before its next attempt`;
    }
    tr.append(
      dot,
      id,
      name,
      node,
      text(when(j.started_at ?? j.created_at) ?? "", "started", "td"),
      text(duration(j) ?? "", "duration num", "td"),
      text(j.exit_code ?? "", "num", "td"),
      text(streams.warning ?? "", "num warn", "td"),
      text(streams.error ?? "", "num err", "td"),
    );
    const act = el("td");
    if (can(this.me, "operator", j.folder ?? null) && (j.state === "queued" || j.state === "running")) {
      const b = el("button", "button small danger");
      b.type = "button";
      b.textContent = "Cancel";
      b.title = "cancel this job (asks first)";
      // Asked first, in place: a first click arms it for a few seconds,
      // a second one cancels (a list that moves must not cancel by a slip).
      b.addEventListener("click", async (e) => {
        e.stopPropagation();
        if (!b.dataset.armed) {
          b.dataset.armed = "1";
          b.textContent = `Cancel #${j.id}?`;
          b.setAttribute("aria-label", `Confirm: cancel job ${j.id}`);
          setTimeout(() => {
            if (!b.disabled) {
              delete b.dataset.armed;
              b.textContent = "Cancel";
              b.removeAttribute("aria-label");
            }
          }, 5000);
          return;
        }
        b.disabled = true;
        try {
          await post(`/api/v1/jobs/${j.id}/cancel`);
          this.feed.readSoon();
        } catch (err) {
          fail(this.status, err);
        }
      });
      act.append(b);
    }
    tr.append(act);
    tr.addEventListener("click", (e) => {
      if (e.target.closest("a, button")) return;
      location.assign(`/jobs/${j.id}`);
    });
    return tr;
  }

  retime() {
    this.renderTable();
  }

  destroy() {
    this.feed?.close();
  }
}
