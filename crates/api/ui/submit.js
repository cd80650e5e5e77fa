// The submit page: a command or a script, its name, environment, secrets
// (masked inputs, sent once and never shown again), timeout and the
// labels of the node it must run on.

import { post } from "./api.js";
import { el, text, clear, fail, parseLabels, folderInput, fileableFolders } from "./dom.js";

export function submitPage(main, me) {
  document.title = "Submit · joblog";
  clear(main);
  main.classList.add("submit-page");
  const form = el("form", "submit-form");
  form.id = "submit";
  const field = (label, input, hint) => {
    const l = el("label");
    l.append(text(label, "label"), input);
    if (hint) l.append(text(hint, "hint"));
    form.append(l);
    return input;
  };
  const kind = el("select");
  for (const [v, t] of [["script", "Script"], ["command", "Command (one argument per line)"]]) {
    const o = el("option");
    o.value = v;
    o.textContent = t;
    kind.append(o);
  }
  field("Run", kind);
  const body = field("Script", el("textarea"), "run by the shell below; lines of ::warning::, ::group:: … are workflow commands");
  body.name = "body";
  body.rows = 8;
  body.required = true;
  body.spellcheck = false;
  const shell = field("Shell", el("input"), "sh or bash (scripts only)");
  shell.name = "shell";
  shell.value = "sh";
  kind.addEventListener("change", () => {
    body.previousSibling.textContent = kind.value === "script" ? "Script" : "Command";
    shell.disabled = kind.value !== "script";
  });
  const name = field("Name", el("input"), "optional; jobs of one name are grouped by retention and metrics");
  name.name = "name";
  const env = field("Environment", el("textarea"), "NAME=value, one per line");
  env.name = "env";
  env.rows = 3;
  env.spellcheck = false;
  const secrets = el("div", "secrets");
  const addSecret = () => {
    const row = el("div", "secret");
    const k = el("input");
    k.placeholder = "NAME";
    k.setAttribute("aria-label", "Secret name");
    k.className = "secret-name";
    const v = el("input");
    v.type = "password";
    v.autocomplete = "off";
    v.placeholder = "value (masked in the log)";
    v.setAttribute("aria-label", "Secret value");
    v.className = "secret-value";
    row.append(k, v);
    secrets.append(row);
  };
  addSecret();
  const more = el("button", "button small");
  more.type = "button";
  more.textContent = "+ secret";
  more.addEventListener("click", addSecret);
  const sl = el("div", "label-row");
  sl.append(text("Secrets", "label"), secrets, more);
  form.append(sl);
  const timeout = field("Timeout (seconds)", el("input"), "optional");
  timeout.name = "timeout_s";
  timeout.type = "number";
  timeout.min = "0";
  timeout.step = "any";
  const cwd = field("Working directory", el("input"), "optional, absolute");
  cwd.name = "cwd";
  const on = field("Runs on", el("input"), "optional; labels the node that runs it must have, every one: role=db,os=linux");
  on.name = "node_selector";
  on.spellcheck = false;
  const folder = field("Folder", folderInput(me), fileableFolders(me) ? "one of your folders" : "optional; who may see and act on it");
  const go = el("button", "button primary");
  go.type = "submit";
  go.textContent = "Submit job";
  const out = el("p", "form-status");
  form.append(go, out);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    out.textContent = "";
    out.classList.remove("error-text");
    try {
      const req = request({ kind: kind.value, body: body.value, shell: shell.value, name: name.value, env: env.value, timeout: timeout.value, cwd: cwd.value, on: on.value, folder: folder.value, secrets });
      go.disabled = true;
      const job = await post("/api/v1/jobs", req);
      location.assign(`/jobs/${job.id}`);
    } catch (err) {
      go.disabled = false;
      fail(out, err);
    }
  });
  main.append(text("Submit a job", null, "h1"), form);
  return { destroy() {} };
}

// The submission as the API takes it; mistakes the API would refuse are
// caught here with the same words where the form can tell.
function request(f) {
  const req = {};
  if (f.kind === "script") {
    req.script = f.body;
    if (f.shell.trim()) req.shell = f.shell.trim();
  } else {
    req.command = f.body.split("\n").filter((l) => l !== "");
    if (!req.command.length) throw new Error("command: give at least the program to run");
  }
  if (f.name.trim()) req.name = f.name.trim();
  const env = {};
  for (const line of f.env.split("\n")) {
    if (!line.trim()) continue;
    const eq = line.indexOf("=");
    if (eq <= 0) throw new Error(`environment: "${line}" is not NAME=value`);
    env[line.slice(0, eq).trim()] = line.slice(eq + 1);
  }
  if (Object.keys(env).length) req.env = env;
  const secrets = {};
  for (const row of f.secrets.querySelectorAll(".secret")) {
    const k = row.querySelector(".secret-name").value.trim();
    const v = row.querySelector(".secret-value").value;
    if (k) secrets[k] = v;
  }
  if (Object.keys(secrets).length) req.secrets = secrets;
  if (f.timeout.trim()) req.timeout_s = Number(f.timeout);
  if (f.cwd.trim()) req.cwd = f.cwd.trim();
  const selector = parseLabels(f.on);
  if (Object.keys(selector).length) req.node_selector = selector;
  if (f.folder.trim()) req.folder = f.folder.trim();
  return req;
}
