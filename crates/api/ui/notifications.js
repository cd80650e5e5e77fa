// The notification rules (admins): each rule's conditions and target (a
// web hook as its scheme and host only: its path is often its
// credential), its last deliveries, Send test, Enable/Disable and Delete;
// and a form to add one. A refusal is shown beside the form's button in
// the API's words, which name the field, and that field is marked. Rule
// names, patterns, addresses and receivers' errors go in as text.

import { get, post, patch, del, ApiError } from "./api.js";
import { el, text, clear, fail, can, button, link, formFields, endStates, END_STATES, addForm } from "./dom.js";
import { deliveryTable, Recheck, redact } from "./deliveries.js";

// What a new rule tells of unless changed: the ways a job goes wrong.
const DEFAULT_STATES = ["failed", "timed_out", "interrupted"];
// A rule's deliveries shown: its newest.
const SHOWN = 5;

export function notificationsPage(main, me) {
  document.title = "Notifications · joblog";
  clear(main);
  main.classList.add("notifications-page");
  const head = el("div", "page-head");
  head.append(text("Notifications", null, "h1"));
  main.append(head);
  if (!can(me, "admin")) {
    main.append(refusal(me.role));
    return { destroy() {} };
  }
  const page = new NotificationsPage(main);
  page.load();
  return page;
}

// Rules are an admin's to read (a web hook's URL is often its credential).
function refusal(role) {
  const p = el("p", "error-text");
  p.id = "not-allowed";
  const whose = role ? `this token is ${role === "operator" ? "an" : "a"} ${role}'s` : "this token is not an administrator's";
  p.textContent = `Not allowed: notification rules are an administrator's to read and change, and ${whose}. What was sent of a job is shown on the job's page.`;
  return p;
}

class NotificationsPage {
  constructor(main) {
    this.main = main;
    this.views = new Map();
    this.list = el("div", "rules");
    this.list.id = "rules";
    this.status = el("div", "log-status");
    this.status.id = "rules-status";
    const add = el("section", "add-rule");
    add.append(text("Add a rule", null, "h2"), ruleForm((rule) => this.added(rule)));
    main.append(this.list, this.status, add);
    this.recheck = new Recheck(() => this.load());
    this.reads = 0;
    this.done = "";
  }

  // Reads the rules and each one's last deliveries; a read overtaken by a
  // later one is dropped.
  async load() {
    const read = ++this.reads;
    try {
      const res = await get("/api/v1/notifications", { limit: 1000 });
      const shown = await Promise.all(
        res.rules.map(async (r) => [r, (await get(`/api/v1/notifications/${r.id}/deliveries`, { limit: SHOWN })).deliveries]),
      );
      if (read !== this.reads) return;
      this.render(shown);
      this.land();
      this.status.classList.remove("error-text");
      const count = `${shown.length} ${shown.length === 1 ? "rule" : "rules"}`;
      this.status.textContent = this.done ? `${this.done} · ${count}` : count;
      this.recheck.after(shown.flatMap(([, d]) => d));
    } catch (err) {
      if (read !== this.reads) return;
      if (err instanceof ApiError && err.status === 403) {
        // The role changed since whoami said admin.
        this.recheck.stop();
        clear(this.main);
        this.main.append(text("Notifications", null, "h1"), refusal(null));
        return;
      }
      fail(this.status, err);
    }
  }

  // Opened at a rule (`/notifications#rule-3`, a job's page links so):
  // it is drawn only now, after the browser looked for it.
  land() {
    if (this.landed) return;
    this.landed = true;
    const view = this.views.get(Number(/^#rule-(\d+)$/.exec(location.hash)?.[1]));
    if (view) {
      view.root.scrollIntoView();
      view.title.focus();
    }
  }

  // After a rule went: said in the page's status line.
  async deleted(name) {
    this.done = `Deleted the rule "${name}"`;
    await this.load();
    this.done = "";
  }

  // Each rule's view is kept from one read to the next, in its place, with
  // its buttons and what they said: a re-read takes nothing from under the
  // pointer or the focus. (Rules come by id, so a new one goes last.)
  render(shown) {
    const ids = new Set(shown.map(([r]) => r.id));
    for (const [id, view] of this.views) {
      if (!ids.has(id)) {
        view.root.remove();
        this.views.delete(id);
      }
    }
    for (const [rule, deliveries] of shown) {
      let view = this.views.get(rule.id);
      if (!view) {
        view = new RuleView(this);
        this.views.set(rule.id, view);
      }
      view.update(rule, deliveries);
      if (view.root.parentNode !== this.list) this.list.append(view.root);
    }
    const none = this.list.querySelector("#no-rules");
    if (shown.length) none?.remove();
    else if (!none) {
      const p = text("No rules yet: add one below to be told when jobs end.", "muted", "p");
      p.id = "no-rules";
      this.list.append(p);
    }
  }

  async added(rule) {
    await this.load();
    const view = this.views.get(rule.id);
    if (view) {
      view.say(`Added. Send test to try it.`);
      view.title.focus();
    }
  }

  retime() {
    for (const view of this.views.values()) view.renderDeliveries();
  }

  destroy() {
    this.recheck.stop();
  }
}

class RuleView {
  constructor(page) {
    this.page = page;
    this.root = el("article", "rule");
    this.title = el("h2");
    // Focused after the rule is added, so a screen reader reads it.
    this.title.tabIndex = -1;
    const test = button("Send test", "primary", () => this.test(test), "send a notification now, of the newest job it would tell of");
    test.classList.add("send-test");
    this.toggle = button("", "toggle-enabled", () => this.setEnabled(this.toggle));
    const remove = button("Delete", "danger delete", () => this.confirmDelete());
    const actions = el("div", "actions");
    actions.append(test, this.toggle, remove);
    const head = el("div", "rule-head");
    head.append(this.title, actions);
    this.facts = el("div", "head-facts");
    this.note = el("div", "action-status");
    this.note.setAttribute("role", "status");
    this.deliveries = el("div", "rule-deliveries");
    this.root.append(head, this.facts, this.note, this.deliveries);
  }

  update(rule, deliveries) {
    this.rule = rule;
    this.shown = deliveries;
    this.root.id = `rule-${rule.id}`;
    this.root.dataset.id = rule.id;
    this.root.classList.toggle("disabled", !rule.enabled);
    clear(this.title);
    this.title.append(text(rule.enabled ? "enabled" : "disabled", `badge ${rule.enabled ? "on" : "off"}`), text(` ${rule.name} `), text(`#${rule.id}`, "muted"));
    this.toggle.textContent = rule.enabled ? "Disable" : "Enable";
    this.toggle.title = rule.enabled ? "send nothing for the jobs that end until enabled" : "send again for the jobs that end from now on";
    clear(this.facts);
    const fact = (k, v, cls) => {
      const f = el("span", `fact ${cls}`);
      f.append(text(k, "k"), text(` ${v}`));
      this.facts.append(f);
    };
    const w = rule.when;
    // In the order of the form's boxes (the server keeps them sorted by name).
    const states = [...w.states].sort((x, y) => END_STATES.indexOf(x) - END_STATES.indexOf(y));
    fact("when", states.map((s) => s.replace("_", " ")).join(", "), "states");
    fact("jobs", w.name ?? "any", "pattern");
    if (w.schedule_id) fact("schedule", `#${w.schedule_id}`, "schedule");
    fact("to", target(rule), "target");
    this.renderDeliveries();
  }

  renderDeliveries() {
    clear(this.deliveries);
    if (!this.shown.length) {
      this.deliveries.append(text("Nothing sent yet.", "muted", "p"));
      return;
    }
    const t = deliveryTable(this.shown);
    t.setAttribute("aria-label", `The last deliveries of ${this.rule.name}`);
    this.deliveries.append(t);
  }

  say(what, error = false) {
    clear(this.note);
    this.note.classList.toggle("error-text", error);
    if (what) this.note.append(what instanceof Node ? what : text(what));
  }

  async test(b) {
    b.disabled = true;
    this.say("Sending…");
    try {
      const r = await post(`/api/v1/notifications/${this.rule.id}/test`, {});
      const msg = el("span", r.delivered ? "test-result test-ok" : "test-result error-text");
      const status = r.status !== null && r.status !== undefined ? ` (HTTP ${r.status})` : "";
      msg.append(text(r.delivered ? `Test delivered${status}` : `Test not delivered${status}`));
      if (r.error) msg.append(text(`: ${redact(r.error)}`));
      if (r.job_id !== null && r.job_id !== undefined) msg.append(text(", telling of "), link(`/jobs/${r.job_id}`, `job #${r.job_id}`));
      else msg.append(text(", telling of an example job"));
      msg.append(text("."));
      this.say(msg);
    } catch (err) {
      this.say("");
      fail(this.note, err);
    } finally {
      b.disabled = false;
    }
  }

  async setEnabled(b) {
    b.disabled = true;
    const on = !this.rule.enabled;
    try {
      const rule = await patch(`/api/v1/notifications/${this.rule.id}`, { enabled: on });
      this.update(rule, this.shown);
      this.say(on ? "Enabled: the jobs that end from now on are told of." : "Disabled: nothing is sent until it is enabled.");
    } catch (err) {
      fail(this.note, err);
    } finally {
      b.disabled = false;
    }
  }

  // Asked in the page, not in a dialog.
  confirmDelete() {
    const q = el("span", "confirm");
    q.append(text(`Delete the rule "${this.rule.name}" and its deliveries? `));
    const yes = button("Delete rule", "danger confirm-delete", async () => {
      yes.disabled = true;
      try {
        await del(`/api/v1/notifications/${this.rule.id}`);
        await this.page.deleted(this.rule.name);
      } catch (err) {
        fail(this.note, err);
      }
    });
    const no = button("Keep", null, () => this.say(""));
    q.append(yes, text(" "), no);
    this.say(q);
    yes.focus();
  }
}

// Where a rule sends: a web hook's scheme and host (its path and query
// are often its credential, so never shown), or the e-mail addresses.
export function target(rule) {
  if (rule.webhook) {
    let where;
    try {
      const u = new URL(rule.webhook.url);
      const more = u.pathname !== "/" || u.search ? "…" : "";
      where = `${u.protocol}//${u.host}/${more}`;
    } catch {
      where = "(a web hook)";
    }
    return `web hook ${where} (${rule.webhook.format ?? "json"})`;
  }
  if (rule.email) return `e-mail ${rule.email.to.join(", ")}`;
  return "nowhere";
}

// The form that adds a rule. `onAdded(rule)` gets the rule the server
// answered with.
function ruleForm(onAdded) {
  const form = el("form", "schedule-form rule-form");
  form.id = "rule-form";
  form.noValidate = true; // the API's checks, in its words
  const { field, input } = formFields(form);
  field("Name", input("name"), "unique; the metrics and the audit trail name the rule by it");
  field("Job name", input("when.name"), "a name or a pattern with * and ? (backup*); empty: any job");
  form.append(endStates(input, "when.states", "rule-states", "When a job ends", DEFAULT_STATES));
  const kind = el("select");
  kind.name = "kind";
  for (const [v, t] of [["webhook", "a web hook"], ["email", "e-mail"]]) {
    const o = text(t, null, "option");
    o.value = v;
    kind.append(o);
  }
  field("Send to", kind);
  const url = field("Web hook URL", input("webhook.url", "url"), "http or https; its path is never shown again here", "wide2");
  url.placeholder = "https://hooks.example.com/…";
  const format = el("select");
  format.name = "webhook.format";
  for (const [v, t] of [["json", "JSON"], ["slack", "Slack"], ["teams", "Teams"]]) {
    const o = text(t, null, "option");
    o.value = v;
    format.append(o);
  }
  field("Format", format);
  const to = field("E-mail addresses", input("email.to"), "comma-separated; the server needs notify.smtp_url", "wide2");
  const showKind = () => {
    const hook = kind.value === "webhook";
    for (const [i, on] of [[url, hook], [format, hook], [to, !hook]]) {
      i.disabled = !on;
      i.closest("label").hidden = !on;
    }
  };
  kind.addEventListener("change", showKind);
  showKind();

  addForm(
    form,
    "Add rule",
    "rule-form-status",
    async () => {
      const rule = await post("/api/v1/notifications", read(form));
      form.reset();
      showKind();
      await onAdded(rule);
      return `Added the rule "${rule.name}".`;
    },
    (err) => fieldOf(form, err),
  );
  return form;
}

// The rule as the API takes it; empty optional fields left out.
function read(form) {
  const f = form.elements;
  const when = { states: [...form.querySelectorAll('[name="when.states"]:checked')].map((b) => b.value) };
  const pattern = f["when.name"].value.trim();
  if (pattern) when.name = pattern;
  const rule = { name: f.name.value.trim(), when };
  if (f.kind.value === "webhook") {
    rule.webhook = { url: f["webhook.url"].value.trim(), format: f["webhook.format"].value };
  } else {
    rule.email = { to: f["email.to"].value.split(/[\s,;]+/).filter(Boolean) };
  }
  return rule;
}

// The field an error names (`when.states: …`, `webhook.url: …`; a taken
// name is the name's). The states' checkboxes are marked here, as their
// box: there is no one field to return.
function fieldOf(form, err) {
  let name = /^([a-z_.]+)[:[]/.exec(err.message ?? "")?.[1];
  if (err.code === "rule_exists") name = "name";
  if (name === "webhook" || name?.startsWith("webhook.")) name = name === "webhook.format" ? name : "webhook.url";
  if (name?.startsWith("email")) name = "email.to";
  if (name?.startsWith("when.states")) {
    const boxes = form.querySelector("#rule-states");
    boxes.classList.add("invalid");
    for (const b of boxes.querySelectorAll("input")) b.setAttribute("aria-invalid", "true");
    boxes.querySelector("input").focus();
    return null;
  }
  return name ? form.elements[name] : null;
}
