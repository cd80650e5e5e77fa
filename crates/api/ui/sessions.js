// Sessions: the browsers a user is signed in from (`GET
// /api/v1/sessions`), one row each: when it started, was last used and
// expires, its address and user agent; this browser's marked. Sign out
// ends one (`DELETE /api/v1/sessions/{id}`); this browser's own signs out
// here, as the top bar's Sign out does. The caller's own to start with; an
// admin shows a user's (`?user=NAME`, the Users page's Sessions button).
// Addresses and user agents go in as text.

import { get, del, sessionEnded } from "./api.js";
import { el, text, clear, fail, can, button, headerRow, timeCell, relative, when } from "./dom.js";

const COLUMNS = 6;

export class SessionsView {
  constructor(me) {
    this.me = me;
    this.admin = can(me, "admin");
    this.sessions = [];
    // Whose sessions are shown: null for the caller's own, else a user's
    // name (admins).
    this.of = null;
    this.root = el("section", "sessions");
    this.root.id = "sessions";
    const head = el("div", "sessions-head");
    // For a non-admin this section is the page, whose h1 says it.
    this.title = text("Your sessions", this.admin ? null : "sr-only", "h2");
    this.title.id = "sessions-title";
    this.title.tabIndex = -1;
    this.mine = button("Show yours", "small", () => this.show(null));
    this.mine.id = "show-my-sessions";
    this.mine.hidden = true;
    head.append(this.title, this.mine);
    this.note = el("div", "action-status");
    this.note.id = "session-action";
    this.note.setAttribute("role", "status");
    this.table = el("table", "jobs sessions");
    this.table.id = "sessions-table";
    this.status = el("div", "log-status");
    this.status.id = "sessions-status";
    this.root.append(head, this.note, this.table, this.status);
  }

  async show(name) {
    this.of = name;
    this.note.textContent = "";
    this.note.classList.remove("error-text");
    await this.read();
    this.root.scrollIntoView({ block: "nearest" });
    this.title.focus();
  }

  async read() {
    const of = this.of;
    // The title changes with the rows, so they never say different things.
    const retitle = () => {
      this.title.textContent = of ? `Sessions of ${of}` : "Your sessions";
      this.mine.hidden = !of;
    };
    if (!of && this.me.via !== "session") {
      retitle();
      // A token (or no token at all) is no session: nothing of its own.
      this.sessions = null;
      clear(this.table);
      this.status.classList.remove("error-text");
      this.status.textContent = this.admin
        ? "You are not signed in with a password here, so you have no session to list. A user's Sessions button lists theirs."
        : "You are not signed in with a password here, so you have no session to list.";
      return;
    }
    try {
      const res = await get("/api/v1/sessions", of ? { user: of } : undefined);
      if (of !== this.of) return;
      retitle();
      this.sessions = res.sessions;
      this.render();
      this.status.classList.remove("error-text");
      this.renderStatus();
    } catch (err) {
      if (of !== this.of) return;
      retitle();
      this.sessions = null;
      clear(this.table);
      fail(this.status, err);
    }
  }

  renderStatus() {
    const n = this.sessions.length;
    const whose = this.of ? `${this.of} has` : "You have";
    this.status.textContent = `${whose} ${n} ${n === 1 ? "session" : "sessions"}. Sign out ends one: that browser must sign in again.`;
  }

  render() {
    const t = this.table;
    clear(t);
    if (!this.sessions) return;
    t.setAttribute("aria-labelledby", "sessions-title");
    const head = el("thead");
    head.append(headerRow(["signed in", "last seen", "expires", "address", "browser", { name: "actions" }]));
    const body = el("tbody");
    for (const s of this.sessions) body.append(this.row(s));
    if (!this.sessions.length) {
      const tr = el("tr");
      const td = text("No session.", "muted", "td");
      td.colSpan = COLUMNS;
      tr.append(td);
      body.append(tr);
    }
    t.append(head, body);
  }

  row(s) {
    const tr = el("tr", s.current ? "current" : "");
    tr.dataset.id = s.id;
    const started = timeCell(s.created_at);
    started.classList.add("started");
    if (s.current) {
      const here = text("this session", "badge here");
      here.title = "the session of this browser";
      started.append(text(" "), here);
    }
    const seen = relativeCell(s.last_seen_at, "last-seen");
    const expires = relativeCell(s.expires_at, "expires");
    const address = text(s.address ?? "", "address", "td");
    // A user agent is long: cut to its column, whole on hover.
    const agent = el("td", "agent muted");
    agent.append(text(s.user_agent ?? "", "cut"));
    if (s.user_agent) agent.title = s.user_agent;
    const actions = el("td", "session-actions");
    const why = s.current ? "sign out here" : "end this session: that browser must sign in again";
    const out = button("Sign out", "small end-session", () => this.end(s, out), why);
    actions.append(out);
    tr.append(started, seen, expires, address, agent, actions);
    return tr;
  }

  async end(s, b) {
    b.disabled = true;
    try {
      await del(`/api/v1/sessions/${encodeURIComponent(s.id)}`);
    } catch (err) {
      b.disabled = false;
      fail(this.note, err);
      return;
    }
    // This browser's own: signed out, as by the top bar's Sign out.
    if (s.current) return sessionEnded();
    this.sessions = this.sessions.filter((x) => x.id !== s.id);
    this.render();
    this.renderStatus();
    this.note.classList.remove("error-text");
    this.note.textContent = `Signed out the session from ${s.address || "an unknown address"}.`;
  }

  retime() {
    this.render();
  }
}

// A time as how far it is ("3 min ago", "in 6 d"), kept current by the
// page's `tickRelative`; the time itself (and as the API gives it) on
// hover.
function relativeCell(ts, cls) {
  const td = el("td", `time ${cls}`);
  if (!ts) return td;
  const rel = text(relative(ts), "rel");
  rel.dataset.ts = ts;
  td.title = `${when(ts)} (${ts})`;
  td.append(rel);
  return td;
}
