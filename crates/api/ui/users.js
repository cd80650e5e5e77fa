// The people who sign in (admins: `GET /api/v1/users`), one row each: name,
// role (a select that changes it), whether disabled, when made and last
// signed in; Disable/Enable, Reset password (a form in the page, under the
// row), Sessions (theirs, listed below) and Delete (asked in the page
// first); and a form to add one. Under them, the caller's own sessions
// (sessions.js): the whole page for a viewer or an operator, whom a
// session's name in the top bar leads here. Names go in as text.

import { get, post, patch, del, ApiError } from "./api.js";
import { el, text, clear, fail, can, button, formFields, headerRow, timeCell, tickRelative, addForm } from "./dom.js";
import { SessionsView } from "./sessions.js";

const ROLES = ["viewer", "operator", "admin"];
const ROLE_HINT = {
  viewer: "reads jobs, logs, schedules and nodes",
  operator: "also submits, cancels and reruns jobs and runs schedules",
  admin: "also manages users, notifications, nodes and the scheduler",
};
const USER_COLUMNS = 6;

export function usersPage(main, me) {
  const page = new UsersPage(main, me);
  page.load();
  return page;
}

const a = (role) => (role === "viewer" ? "a" : "an");
const path = (name) => `/api/v1/users/${encodeURIComponent(name)}`;

class UsersPage {
  constructor(main, me) {
    this.me = me;
    this.admin = can(me, "admin");
    this.users = [];
    document.title = `${this.admin ? "Users" : "Your sessions"} · joblog`;
    clear(main);
    main.classList.add("users-page");
    const head = el("div", "page-head");
    head.append(text(this.admin ? "Users" : "Your sessions", null, "h1"));
    // Everything else is drawn at once, when the first reads are in, so
    // nothing moves under the reader (a table filling in above a form).
    this.loading = text("Loading…", "muted", "p");
    main.append(head, this.loading);
    this.parts = [];
    if (this.admin) this.buildUsers();
    this.sessions = new SessionsView(me);
    this.parts.push(this.sessions.root);
    this.ticker = setInterval(() => tickRelative(main), 1000);
  }

  buildUsers() {
    // What came of an action, or its refusal.
    this.note = el("div", "action-status");
    this.note.id = "user-action";
    this.note.setAttribute("role", "status");
    this.table = el("table", "jobs users");
    this.table.id = "users";
    this.status = el("div", "log-status");
    this.status.id = "users-status";
    const add = el("section", "add-user");
    add.append(text("Add a user", null, "h2"), userForm((user) => this.added(user)));
    this.parts.push(this.note, this.table, this.status, add);
  }

  async load() {
    await Promise.all([this.readUsers(), this.sessions.read()]);
    if (this.loading.isConnected) this.loading.replaceWith(...this.parts);
    // `/users#sessions` (the top bar's name): drawn only now.
    if (location.hash === "#sessions") this.sessions.root.scrollIntoView();
  }

  async readUsers() {
    if (!this.admin) return;
    try {
      const res = await get("/api/v1/users");
      this.users = res.users;
      this.renderUsers();
      this.status.classList.remove("error-text");
      this.renderStatus();
    } catch (err) {
      clear(this.table);
      fail(this.status, err);
    }
  }

  renderStatus() {
    const n = this.users.length;
    const off = this.users.filter((u) => u.disabled).length;
    this.status.textContent = `${n} ${n === 1 ? "user" : "users"}${off ? `, ${off} disabled` : ""}`;
  }

  renderUsers() {
    const t = this.table;
    clear(t);
    const head = el("thead");
    head.append(headerRow(["name", "role", "status", "created", "last sign-in", { name: "actions" }]));
    const body = el("tbody");
    for (const u of this.users) body.append(this.row(u));
    if (!this.users.length) {
      const tr = el("tr");
      const td = text("No users yet: add one below.", "muted", "td");
      td.colSpan = USER_COLUMNS;
      tr.append(td);
      body.append(tr);
    }
    t.append(head, body);
  }

  // The caller's own row: no Disable or Delete, nor a role change, which
  // would lock them out of this page (another admin does it).
  isSelf(u) {
    return this.me.via === "session" && u.name === this.me.name;
  }

  row(u) {
    const tr = el("tr", u.disabled ? "disabled" : "");
    tr.dataset.name = u.name;
    const self = this.isSelf(u);
    const name = el("td", "name");
    name.append(text(u.name));
    if (self) {
      const you = text("you", "badge here");
      you.title = "the user signed in here";
      name.append(text(" "), you);
    }
    if (u.single_sign_on) {
      const sso = text("single sign-on", "badge sso");
      sso.title = "signs in through the OpenID provider; their role is set again from their groups at each sign-in";
      name.append(text(" "), sso);
    }
    const role = el("td", "role");
    const select = el("select", "role-select");
    select.name = "role";
    select.setAttribute("aria-label", `Role of ${u.name}`);
    for (const r of ROLES) {
      const o = text(r, null, "option");
      o.value = r;
      o.title = ROLE_HINT[r];
      select.append(o);
    }
    select.value = u.role;
    if (self) {
      select.disabled = true;
      select.title = "your own role is changed by another admin";
    } else {
      select.title = ROLE_HINT[u.role];
      select.addEventListener("change", () => this.setRole(u, select));
    }
    role.append(select);
    // Limited to folders: the role above is theirs outside them.
    if (u.folders) {
      const f = text(`in ${Object.entries(u.folders).map(([k, r]) => `${k}: ${r}`).join(", ")}`, "muted folders");
      f.title = "limited to these folders (set with joblog user set --folder, or PATCH /api/v1/users)";
      role.append(" ", f);
    }
    const status = el("td", "user-status");
    status.append(text(u.disabled ? "disabled" : "active", `badge ${u.disabled ? "off" : "on"}`));
    const created = timeCell(u.created_at);
    created.classList.add("created");
    const last = u.last_sign_in_at ? timeCell(u.last_sign_in_at) : text("never", "time muted", "td");
    last.classList.add("last-sign-in");
    tr.append(name, role, status, created, last, this.actions(u, self));
    return tr;
  }

  actions(u, self) {
    const td = el("td", "user-actions");
    if (!self) {
      const toggle = button(
        u.disabled ? "Enable" : "Disable",
        "small toggle-disabled",
        () => this.setDisabled(u, toggle),
        u.disabled ? "let them sign in again" : "keep the user, but let them not sign in until enabled",
      );
      td.append(toggle);
    }
    // A single sign-on user's password is the provider's.
    if (!u.single_sign_on) {
      td.append(button("Reset password", "small reset-password", () => this.askPassword(u), "give them a new password"));
    }
    td.append(
      button("Sessions", "small show-sessions", () => this.sessions.show(u.name), `list ${u.name}'s sessions, to sign them out`),
    );
    if (!self) td.append(button("Delete", "small danger delete-user", () => this.confirmDelete(u)));
    return td;
  }

  // A question or form about one user, in a row of its own under theirs;
  // one at a time.
  under(u, content) {
    this.closeUnder();
    const tr = el("tr", "user-extra");
    tr.dataset.for = u.name;
    const td = el("td");
    td.colSpan = USER_COLUMNS;
    td.append(content);
    tr.append(td);
    const row = [...this.table.querySelectorAll("tbody tr[data-name]")].find((r) => r.dataset.name === u.name);
    row?.after(tr);
    return tr;
  }

  closeUnder() {
    for (const tr of this.table.querySelectorAll("tr.user-extra")) tr.remove();
  }

  // The answer of a change: its row drawn again, the others as they were.
  replace(user) {
    this.users = this.users.map((u) => (u.name === user.name ? user : u));
    this.renderUsers();
    this.renderStatus();
  }

  say(what) {
    clear(this.note);
    this.note.classList.remove("error-text");
    if (what) this.note.append(what instanceof Node ? what : text(what));
  }

  async setRole(u, select) {
    const role = select.value;
    select.disabled = true;
    try {
      const user = await patch(path(u.name), { role });
      this.replace(user);
      this.say(`${user.name} is now ${a(user.role)} ${user.role}.`);
    } catch (err) {
      select.value = u.role;
      select.disabled = false;
      fail(this.note, err);
    }
  }

  async setDisabled(u, b) {
    b.disabled = true;
    try {
      const user = await patch(path(u.name), { disabled: !u.disabled });
      this.replace(user);
      this.say(user.disabled ? `Disabled ${user.name}: they cannot sign in until enabled.` : `Enabled ${user.name}: they can sign in again.`);
    } catch (err) {
      b.disabled = false;
      fail(this.note, err);
    }
  }

  // A new password, asked in the page (a dialog is no place for one).
  askPassword(u) {
    const form = el("form", "inline-form reset-password-form");
    form.id = "reset-password-form";
    form.noValidate = true; // the API's checks, in its words
    const { field, input } = formFields(form);
    const pw = field(`New password for ${u.name}`, input("new-password", "password"), "at least 12 characters");
    pw.autocomplete = "new-password";
    const go = el("button", "button primary");
    go.type = "submit";
    go.textContent = "Set password";
    const cancel = button("Cancel", null, () => {
      this.closeUnder();
      this.focusRow(u, "button.reset-password");
    });
    const out = el("span", "form-status");
    out.id = "reset-password-status";
    out.setAttribute("role", "status");
    const actions = el("div", "form-actions");
    actions.append(go, cancel, out);
    form.append(actions);
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      out.textContent = "";
      out.classList.remove("error-text");
      go.disabled = true;
      try {
        const user = await patch(path(u.name), { password: pw.value });
        this.replace(user);
        this.say(`Set a new password for ${user.name}.`);
        this.focusRow(user, "button.reset-password");
      } catch (err) {
        go.disabled = false;
        fail(out, err);
        pw.classList.add("invalid");
        pw.setAttribute("aria-invalid", "true");
        pw.focus();
      }
    });
    this.say("");
    this.under(u, form);
    pw.focus();
  }

  // Asked in the page, not in a dialog.
  confirmDelete(u) {
    const q = el("span", "confirm");
    q.append(text(`Delete the user ${u.name}? They can no longer sign in. `));
    const yes = button("Delete user", "danger", async () => {
      yes.disabled = true;
      try {
        await del(path(u.name));
      } catch (err) {
        yes.disabled = false;
        fail(this.note, err);
        return;
      }
      this.users = this.users.filter((x) => x.name !== u.name);
      this.renderUsers();
      this.renderStatus();
      this.say(`Deleted the user ${u.name}.`);
      // Their sessions went with them: the list below is yours again.
      if (this.sessions.of === u.name) {
        this.sessions.of = null;
        this.sessions.read();
      }
    });
    yes.id = "confirm-delete-user";
    const no = button("Keep", null, () => {
      this.closeUnder();
      this.focusRow(u, "button.delete-user");
    });
    no.id = "keep-user";
    q.append(yes, text(" "), no);
    this.say("");
    this.under(u, q);
    yes.focus();
  }

  focusRow(u, selector) {
    const row = [...this.table.querySelectorAll("tbody tr[data-name]")].find((r) => r.dataset.name === u.name);
    row?.querySelector(selector)?.focus();
  }

  async added(user) {
    this.users = [...this.users.filter((u) => u.name !== user.name), user].sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
    this.renderUsers();
    this.renderStatus();
    this.say(`Added ${user.name}, ${a(user.role)} ${user.role}.`);
  }

  retime() {
    if (this.admin) this.renderUsers();
    this.sessions.retime();
  }

  destroy() {
    clearInterval(this.ticker);
  }
}

// The form that adds a user. `onAdded(user)` gets the user the server
// answered with.
function userForm(onAdded) {
  const form = el("form", "schedule-form user-form");
  form.id = "user-form";
  form.noValidate = true; // the API's checks, in its words
  const { field, input } = formFields(form);
  const name = field("Name", input("name"), "what they sign in with");
  name.autocomplete = "off";
  name.autocapitalize = "none";
  const pw = field("Password", input("password", "password"), "at least 12 characters; give it to them yourself");
  pw.autocomplete = "new-password";
  const role = el("select");
  role.name = "role";
  for (const r of ROLES) {
    const o = text(r, null, "option");
    o.value = r;
    role.append(o);
  }
  field("Role", role, "viewer reads; operator also runs jobs; admin also manages");
  addForm(
    form,
    "Add user",
    "user-form-status",
    async () => {
      const user = await post("/api/v1/users", { name: name.value.trim(), password: pw.value, role: role.value });
      form.reset();
      await onAdded(user);
      return `Added ${user.name}.`;
    },
    (err) => form.elements.namedItem(fieldOf(err)),
  );
  return form;
}

// The field an error names (`password must be at least 12 characters`,
// `name: …`; a taken name is the name's).
function fieldOf(err) {
  if (err instanceof ApiError && err.code === "user_exists") return "name";
  return /^(name|password|role)\b/.exec(err.message ?? "")?.[1] ?? "";
}
