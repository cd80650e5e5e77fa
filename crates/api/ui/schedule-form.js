// The schedule form, for a new schedule (`/schedules/new`, POSTed whole)
// and to edit one (prefilled, PATCHing only the fields that changed, so
// fields the form does not show, such as a concurrency key, stay). It
// starts on a cron expression or after another schedule (a trigger). A
// refusal is shown beside the button in the API's words, and the field it
// names is marked.

import { get, post, patch } from "./api.js";
import { el, text, clear, fail, can, button, formFields, endStates, parseLabels, labelText } from "./dom.js";

export function newSchedulePage(main, me) {
  document.title = "New schedule · joblog";
  clear(main);
  main.classList.add("schedule-page");
  main.append(text("New schedule", null, "h1"));
  if (!can(me, "operator")) {
    main.append(text("Not allowed: making a schedule needs an operator token.", "error-text", "p"));
    return { destroy() {} };
  }
  main.append(
    scheduleForm(null, {
      onSaved: (s) => location.assign(`/schedules/${s.id}`),
    }),
  );
  return { destroy() {} };
}

// `schedule`: the one to edit, or null for a new one. `onSaved(s)` gets
// the schedule the server answered with.
export function scheduleForm(schedule, { onSaved, onCancel }) {
  const form = el("form", "schedule-form");
  form.id = "schedule-form";
  form.noValidate = true; // the API's checks, in its words
  const { field, input } = formFields(form);
  const select = (name, options) => {
    const s = el("select");
    s.name = name;
    for (const [v, t] of options) {
      const o = text(t, null, "option");
      o.value = v;
      s.append(o);
    }
    return s;
  };

  field("Name", input("name"), "its runs are jobs of this name");
  const start = field("Starts", select("start", [["cron", "on a cron expression"], ["after", "after another schedule"], ["demand", "only when run (a saved job)"]]));
  const cron = field("Cron", input("cron"), "min hour day month weekday; 6 fields: seconds first (*/10 * * * * *); @hourly, @daily …", "wide2");
  const zone = field("Time zone", input("timezone"), "IANA name, such as Europe/Berlin");
  zone.setAttribute("list", "time-zones");
  form.append(zoneList());
  const after = field("After", select("after", []), "when a job of it ends (its last attempt)", "wide2");
  const states = endStates(input, "after.states", "after-states", "On", ["succeeded"]);
  form.append(states);
  afterChoices(after, schedule);
  const showStart = () => {
    const byCron = start.value === "cron";
    const byTrigger = start.value === "after";
    // A trigger is never late: missed is cron's alone.
    for (const f of [cron, zone, missed]) f.parentElement.hidden = !byCron;
    after.parentElement.hidden = !byTrigger;
    states.hidden = !byTrigger;
  };
  start.addEventListener("change", showStart);
  const kind = field("Run", select("kind", [["script", "Script"], ["command", "Command (one argument per line)"]]));
  const shell = field("Shell", input("shell"), "sh or bash (scripts only)");
  field("Timeout (s)", input("timeout_s", "number"), "optional").step = "any";
  field("Working directory", input("cwd"), "optional, absolute");
  field("Folder", input("folder"), "who may see and act on it and its runs; empty: none");
  field("Runs on", input("node_selector"), "labels the node that runs each run must have, every one: role=db,os=linux; empty: any node", "wide2");
  const body = field("Script", el("textarea"), null, "full");
  body.name = "body";
  body.rows = 4;
  body.spellcheck = false;
  const showKind = () => {
    body.previousSibling.textContent = kind.value === "script" ? "Script" : "Command";
    shell.disabled = kind.value !== "script";
  };
  kind.addEventListener("change", showKind);
  const env = field("Environment", el("textarea"), "NAME=value, one per line", "wide2");
  env.name = "env";
  env.rows = 2;
  env.spellcheck = false;
  field("Secrets", input("secrets"), "names, comma-separated; each node gives JOBLOG_SECRET_<NAME>");
  const enabled = input("enabled", "checkbox");
  const en = el("label", "check");
  en.append(enabled, text("Enabled", "label"));
  form.append(en);
  field("Overlap", select("overlap", [["skip", "skip"], ["queue", "queue"], ["allow", "allow"]]), "a fire while the last run runs: skip it, queue it or run beside");
  const missed = field("Missed", select("missed", [["skip", "skip"], ["one", "one"], ["all", "all"]]), "fires missed while no node ran: none, one, or all of them");
  field("Attempts", input("retries.attempts", "number"), "runs in all, 1: no retry");
  field("Backoff (s)", input("retries.backoff_s", "number"), "before the 2nd attempt, doubled after").step = "any";

  fill(form, schedule);
  showKind();
  showStart();

  const actions = el("div", "form-actions full");
  const go = el("button", "button primary");
  go.type = "submit";
  go.textContent = schedule ? "Save changes" : "Create schedule";
  actions.append(go);
  if (onCancel) actions.append(button("Cancel", null, onCancel));
  const out = el("span", "form-status");
  out.id = "form-status";
  out.setAttribute("role", "status");
  actions.append(out);
  form.append(actions);

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    out.textContent = "";
    out.classList.remove("error-text");
    for (const m of form.querySelectorAll(".invalid")) {
      m.classList.remove("invalid");
      m.removeAttribute("aria-invalid");
    }
    try {
      const whole = read(form);
      const body = schedule ? changes(schedule, whole) : created(whole);
      if (schedule && !Object.keys(body).length) {
        out.textContent = "Nothing changed.";
        return;
      }
      go.disabled = true;
      const saved = schedule
        ? await patch(`/api/v1/schedules/${schedule.id}`, body)
        : await post("/api/v1/schedules", body);
      go.disabled = false;
      onSaved(saved);
    } catch (err) {
      go.disabled = false;
      fail(out, err);
      mark(form, err);
    }
  });
  return form;
}

// The schedules it may run after (not itself), by name; the one it runs
// after chosen. Filled when read; a schedule beyond the first 1000 is
// still shown when it is the one chosen.
async function afterChoices(select, schedule) {
  const chosen = schedule?.after?.schedule_id;
  const pick = text("choose a schedule", null, "option");
  pick.value = "";
  select.append(pick);
  let listed = [];
  try {
    listed = (await get("/api/v1/schedules?limit=1000")).schedules;
  } catch {
    // The form still saves; the API names a schedule that does not exist.
  }
  for (const s of listed) {
    if (s.id === schedule?.id) continue;
    const o = text(s.name, null, "option");
    o.value = String(s.id);
    select.append(o);
  }
  if (chosen && !listed.some((s) => s.id === chosen)) {
    const o = text(`#${chosen}`, null, "option");
    o.value = String(chosen);
    select.append(o);
  }
  if (chosen) select.value = String(chosen);
}

// The browser's own list of zones as suggestions (no data shipped).
function zoneList() {
  const list = el("datalist");
  list.id = "time-zones";
  const zones = Intl.supportedValuesOf?.("timeZone") ?? [];
  for (const z of ["UTC", ...zones.filter((z) => z !== "UTC")]) {
    const o = el("option");
    o.value = z;
    list.append(o);
  }
  return list;
}

function fill(form, s) {
  const f = form.elements;
  const local = Intl.DateTimeFormat().resolvedOptions().timeZone;
  f.timezone.placeholder = local && local !== "UTC" ? `UTC (here: ${local})` : "UTC";
  if (!s) {
    f.timezone.value = "UTC";
    f.shell.value = "sh";
    f["retries.attempts"].value = "1";
    f["retries.backoff_s"].value = "0";
    f.enabled.checked = true;
    return;
  }
  f.name.value = s.name;
  f.start.value = s.after ? "after" : s.cron ? "cron" : "demand";
  f.cron.value = s.cron ?? "";
  f.timezone.value = s.timezone;
  if (s.after) {
    for (const box of form.querySelectorAll('[name="after.states"]')) box.checked = s.after.states.includes(box.value);
  }
  const script = s.script !== undefined && s.script !== null;
  f.kind.value = script ? "script" : "command";
  f.body.value = script ? s.script : s.command.join("\n");
  f.shell.value = s.shell ?? "sh";
  f.env.value = Object.entries(s.env ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join("\n");
  f.secrets.value = (s.secrets ?? []).join(", ");
  f.node_selector.value = labelText(s.node_selector);
  f.folder.value = s.folder ?? "";
  f.timeout_s.value = s.timeout_s ?? "";
  f.cwd.value = s.cwd ?? "";
  f.overlap.value = s.overlap;
  f.missed.value = s.missed;
  f["retries.attempts"].value = s.retries.attempts;
  f["retries.backoff_s"].value = s.retries.backoff_s;
  f.enabled.checked = s.enabled;
}

// Every field of the form as the API names it; empty optional ones null.
// Mistakes the API would refuse are caught here in the same words where
// the form can tell.
function read(form) {
  const f = form.elements;
  const opt = (v) => (v.trim() === "" ? null : v.trim());
  const num = (name) => {
    const raw = f[name].value.trim();
    if (raw === "") return null;
    const n = Number(raw);
    if (!Number.isFinite(n)) throw invalid(name, `${JSON.stringify(raw)} is not a number`);
    return n;
  };
  const r = {
    name: f.name.value.trim(),
    cron: null,
    after: null,
    timezone: opt(f.timezone.value) ?? "UTC",
  };
  if (f.start.value === "cron") r.cron = f.cron.value.trim();
  else if (f.start.value === "after") {
    const states = [...form.querySelectorAll('[name="after.states"]:checked')].map((b) => b.value);
    if (!f.after.value) throw invalid("after", "choose the schedule it runs after");
    if (!states.length) throw invalid("after.states", "tick at least one state of its jobs' ends");
    r.after = { schedule_id: Number(f.after.value), states };
  }
  if (f.kind.value === "script") {
    r.script = f.body.value;
    r.shell = opt(f.shell.value) ?? "sh";
  } else {
    r.command = f.body.value.split("\n").filter((l) => l !== "");
    if (!r.command.length) throw invalid("command", "give at least the program to run");
  }
  const env = {};
  for (const line of f.env.value.split("\n")) {
    if (!line.trim()) continue;
    const eq = line.indexOf("=");
    if (eq <= 0) throw invalid("env", `${JSON.stringify(line)} is not NAME=value`);
    env[line.slice(0, eq).trim()] = line.slice(eq + 1);
  }
  r.env = sorted(env);
  r.secrets = [...new Set(f.secrets.value.split(",").map((s) => s.trim()).filter(Boolean))].sort();
  r.node_selector = parseLabels(f.node_selector.value);
  r.folder = opt(f.folder.value);
  r.timeout_s = num("timeout_s");
  r.cwd = opt(f.cwd.value);
  r.overlap = f.overlap.value;
  r.missed = f.missed.value;
  r.retries = { attempts: num("retries.attempts") ?? 1, backoff_s: num("retries.backoff_s") ?? 0 };
  r.enabled = f.enabled.checked;
  return r;
}

// A new schedule: what was given (the API's defaults for the rest).
function created(whole) {
  const body = {};
  for (const [k, v] of Object.entries(whole)) {
    const empty = (k === "env" || k === "node_selector") && !Object.keys(v).length;
    if (v === null || (Array.isArray(v) && !v.length) || empty) continue;
    body[k] = v;
  }
  return body;
}

// An edit: the fields that differ from the schedule's. A script and its
// shell go together; a command replaces a script and the other way round.
function changes(s, whole) {
  const was = {
    name: s.name,
    cron: s.cron ?? null,
    after: s.after ?? null,
    timezone: s.timezone,
    env: sorted(s.env ?? {}),
    secrets: [...(s.secrets ?? [])].sort(),
    // Cleared: {}, which the API takes for none.
    node_selector: sorted(s.node_selector ?? {}),
    folder: s.folder ?? null,
    timeout_s: s.timeout_s ?? null,
    cwd: s.cwd ?? null,
    overlap: s.overlap,
    missed: s.missed,
    retries: { attempts: s.retries.attempts, backoff_s: s.retries.backoff_s },
    enabled: s.enabled,
  };
  const body = {};
  for (const [k, v] of Object.entries(was)) {
    if (JSON.stringify(whole[k]) !== JSON.stringify(v)) body[k] = whole[k];
  }
  const wasScript = s.script !== undefined && s.script !== null;
  if ("script" in whole) {
    if (!wasScript || whole.script !== s.script || whole.shell !== (s.shell ?? "sh")) {
      body.script = whole.script;
      body.shell = whole.shell;
    }
  } else if (wasScript || JSON.stringify(whole.command) !== JSON.stringify(s.command)) {
    body.command = whole.command;
  }
  return body;
}

function sorted(obj) {
  return Object.fromEntries(Object.entries(obj).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function invalid(field, message) {
  const e = new Error(`${field}: ${message}`);
  e.field = field;
  return e;
}

// Marks the input of the field an error names (`cron: …`,
// `retries.attempts: …`; a taken name is the name's).
function mark(form, err) {
  let name = err.field ?? /^([a-z_.]+): /.exec(err.message ?? "")?.[1];
  if (err.code === "schedule_exists") name = "name";
  if (name === "command" || name === "script") name = "body";
  // The boxes of the states: their fieldset is marked.
  const input = name === "after.states" ? form.querySelector("#after-states") : name && form.elements[name];
  if (input instanceof HTMLElement) {
    input.classList.add("invalid");
    input.setAttribute("aria-invalid", "true");
    input.focus();
  }
}
