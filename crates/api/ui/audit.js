// The audit trail (admins): who changed what, when and from where, newest
// first, filtered by actor, action and job id (kept in the URL), paged back
// by `before`. Every value goes in as text: actors, actions and details
// come from token names and requests.

import { get } from "./api.js";
import { el, text, clear, when, fail, filterInput, headerRow } from "./dom.js";

const LIMIT = 50;
// An id above any entry's: the page below it is the newest.
const NEWEST = "9223372036854775807";
const FILTERS = ["actor", "action", "job_id"];

export function auditPage(main) {
  const page = new AuditPage(main);
  page.load();
  return page;
}

class AuditPage {
  constructor(main) {
    const q = new URLSearchParams(location.search);
    this.filters = Object.fromEntries(FILTERS.map((k) => [k, q.get(k) ?? ""]));
    this.before = q.get("before");
    this.entries = [];
    document.title = "Audit · joblog";
    clear(main);
    main.classList.add("audit-page");
    this.bar = el("div", "filters");
    this.table = el("table", "jobs audit");
    this.table.id = "audit";
    this.footer = el("div", "pager");
    this.status = el("div", "log-status");
    main.append(this.bar, this.table, this.footer, this.status);
    this.renderFilters();
  }

  async load() {
    try {
      const res = await get("/api/v1/audit", {
        ...this.filters,
        before: this.before ?? NEWEST,
        limit: LIMIT,
      });
      // A page comes oldest first; the newest is shown on top.
      this.entries = res.entries.slice().reverse();
      this.next = res.next_before;
      this.renderTable();
      this.status.classList.remove("error-text");
      this.status.textContent = `${this.entries.length} entries shown`;
    } catch (err) {
      clear(this.table);
      clear(this.footer);
      fail(this.status, err);
    }
  }

  // Filters and the page live in the URL, so a view can be linked to.
  navigate(before) {
    const q = new URLSearchParams();
    for (const k of FILTERS) if (this.filters[k]) q.set(k, this.filters[k]);
    if (before) q.set("before", before);
    const s = q.toString();
    history.replaceState(null, "", s ? `/audit?${s}` : "/audit");
    this.before = before ?? null;
    this.load();
  }

  renderFilters() {
    clear(this.bar);
    const form = el("form", "filter-form");
    form.id = "audit-filter";
    const input = (key, placeholder, title, label) =>
      filterInput(form, this.filters, key, placeholder, title, label);
    input("actor", "actor", "who acted, exactly: a token's name, bootstrap, anonymous or system", "Actor");
    input("action", "action", "what was done, exactly: job.submitted, job.cancelled, token.created …", "Action");
    input("job_id", "job id", "entries about this job", "Job id").inputMode = "numeric";
    const go = el("button", "button");
    go.type = "submit";
    go.textContent = "Filter";
    form.append(go);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      for (const k of FILTERS) this.filters[k] = form.elements[k].value.trim();
      this.navigate(null);
    });
    this.bar.append(text("Audit trail", null, "h1"), form);
  }

  renderTable() {
    const t = this.table;
    clear(t);
    const head = el("thead");
    head.append(headerRow(["time", "actor", "action", "job", "from", "request id", "detail"]));
    const body = el("tbody");
    for (const e of this.entries) body.append(this.row(e));
    if (!this.entries.length) {
      const tr = el("tr");
      const td = text(this.before ? "no older entries" : "no entries", "muted", "td");
      td.colSpan = 7;
      tr.append(td);
      body.append(tr);
    }
    t.append(head, body);
    clear(this.footer);
    if (this.before) {
      const newest = el("button", "button");
      newest.id = "newest";
      newest.textContent = "« Newest";
      newest.addEventListener("click", () => this.navigate(null));
      this.footer.append(newest);
    }
    if (this.next) {
      const older = el("button", "button");
      older.id = "older";
      older.textContent = "Older »";
      older.addEventListener("click", () => this.navigate(String(this.next)));
      this.footer.append(older);
    }
  }

  retime() {
    this.renderTable();
  }

  row(e) {
    const tr = el("tr");
    tr.dataset.id = e.id;
    const at = text(when(e.at) ?? "", null, "td");
    at.title = e.at;
    const job = el("td", "num");
    if (e.job_id !== null && e.job_id !== undefined) {
      const link = el("a");
      link.href = `/jobs/${e.job_id}`;
      link.textContent = e.job_id;
      job.append(link);
    }
    const keys = Object.keys(e.detail ?? {});
    // A cell cut by the table's width shows its whole text on hover.
    const cell = (value, cls) => {
      const td = text(value, cls, "td");
      td.title = value;
      return td;
    };
    tr.append(
      at,
      cell(e.actor, "actor"),
      cell(e.action, "action"),
      job,
      cell(e.remote ?? "", "muted"),
      cell(e.request_id ?? "", "muted"),
      cell(keys.length ? JSON.stringify(e.detail) : "", "detail"),
    );
    return tr;
  }
}
