// The form a saved job's parameters make: one field per parameter, as its
// schema says (a list for enum, a box for a boolean, a number field with
// its bounds, a text area for multiline, a password field for a secret).
// Descriptions and choices go in as text. The browser checks nothing: the
// API's message goes beside the field it names.

import { el, text } from "./dom.js";

// `schema` is the API's params; `values` prefill (a secret never is);
// `id` prefixes the fields' ids. Returns the form, `values()` to read the
// fields as the API takes them, and `refused(err)`, which puts an API
// refusal beside its field and says whether it found one.
export function paramsForm(schema, values = {}, id = "param") {
  const form = el("form", "params-form");
  form.noValidate = true;
  const required = new Set(schema?.required ?? []);
  const fields = [];
  for (const [name, p] of Object.entries(schema?.properties ?? {})) {
    const input = fieldFor(p, name in values && !p.secret ? values[name] : p.default);
    input.id = `${id}-${name}`;
    input.name = name;
    const label = el("label", p.type === "boolean" ? "param check" : "param");
    label.htmlFor = input.id;
    label.append(text(name, "label"));
    if (required.has(name)) label.append(text(" required", "muted"));
    const wrapper = el("div", "param-field");
    const said = text("", "field-error", "span");
    said.id = `${input.id}-error`;
    said.setAttribute("role", "status");
    input.setAttribute("aria-describedby", said.id);
    if (p.type === "boolean") label.prepend(input);
    wrapper.append(label);
    if (p.type !== "boolean") wrapper.append(input);
    if (p.description) wrapper.append(text(p.description, "hint", "p"));
    const bounds = boundsOf(p);
    if (bounds) wrapper.append(text(bounds, "hint", "p"));
    wrapper.append(said);
    form.append(wrapper);
    fields.push({ name, p, input, said });
  }
  const read = () => {
    const out = {};
    for (const { name, p, input } of fields) {
      const v = valueOf(p, input);
      if (v !== undefined) out[name] = v;
    }
    return out;
  };
  const refused = (err) => {
    for (const f of fields) {
      f.said.textContent = "";
      f.input.removeAttribute("aria-invalid");
      f.input.classList.remove("invalid");
    }
    const m = /^params\.([A-Za-z0-9_]+): (.*)$/s.exec(err?.message ?? "");
    const f = m && fields.find((x) => x.name === m[1]);
    if (!f) return false;
    f.said.textContent = m[2];
    f.input.classList.add("invalid");
    f.input.setAttribute("aria-invalid", "true");
    f.input.focus();
    return true;
  };
  return { form, values: read, refused };
}

function fieldFor(p, value) {
  if (Array.isArray(p.enum)) {
    const select = el("select");
    const none = el("option");
    none.value = "";
    none.textContent = p.default === undefined ? "(choose)" : `(default: ${show(p.default)})`;
    select.append(none);
    for (const choice of p.enum) {
      const o = el("option");
      o.value = JSON.stringify(choice);
      o.textContent = show(choice);
      if (value !== undefined && JSON.stringify(value) === o.value) o.selected = true;
      select.append(o);
    }
    return select;
  }
  if (p.type === "boolean") {
    const box = el("input");
    box.type = "checkbox";
    box.checked = value === true;
    return box;
  }
  if (p.format === "multiline" && !p.secret) {
    const area = el("textarea");
    area.rows = 4;
    area.spellcheck = false;
    if (typeof value === "string") area.value = value;
    return area;
  }
  const input = el("input");
  input.spellcheck = false;
  if (p.secret) {
    input.type = "password";
    input.autocomplete = "off";
    return input;
  }
  if (p.type === "integer" || p.type === "number") {
    input.type = "number";
    input.step = p.type === "integer" ? "1" : "any";
    if (p.minimum !== undefined) input.min = String(p.minimum);
    if (p.maximum !== undefined) input.max = String(p.maximum);
  } else input.type = "text";
  if (value !== undefined && value !== null) input.value = String(value);
  return input;
}

// What a field holds, as the API takes it: an empty field is not given
// (the default, if any, fills it); a number that does not read as one is
// sent as typed, for the API to say what is wrong.
function valueOf(p, input) {
  if (input.tagName === "SELECT") return input.value === "" ? undefined : JSON.parse(input.value);
  if (p.type === "boolean") return input.checked;
  if (input.value === "") return undefined;
  if (p.type === "integer" || p.type === "number") {
    const n = Number(input.value);
    return Number.isFinite(n) ? n : input.value;
  }
  return input.value;
}

function boundsOf(p) {
  const parts = [];
  if (p.minimum !== undefined && p.maximum !== undefined) parts.push(`${p.minimum} to ${p.maximum}`);
  else if (p.minimum !== undefined) parts.push(`at least ${p.minimum}`);
  else if (p.maximum !== undefined) parts.push(`at most ${p.maximum}`);
  if (p.minLength !== undefined || p.maxLength !== undefined) {
    parts.push(`${p.minLength ?? 0} to ${p.maxLength ?? "any number of"} characters`);
  }
  if (p.pattern) parts.push(`matching ${p.pattern}`);
  if (p.secret) parts.push("secret: masked in the log, never stored");
  return parts.join(" · ");
}

function show(v) {
  return typeof v === "string" ? v : JSON.stringify(v);
}

// A schedule's parameters, one line each: `env: string, one of prod,
// staging, required`.
export function paramsSummary(schema, fromResult = {}) {
  const list = el("ul", "env params");
  list.id = "params";
  const required = new Set(schema?.required ?? []);
  for (const [name, p] of Object.entries(schema?.properties ?? {})) {
    const parts = [p.type];
    if (Array.isArray(p.enum)) parts.push(`one of ${p.enum.map(show).join(", ")}`);
    if (p.default !== undefined) parts.push(`default ${show(p.default)}`);
    if (p.secret) parts.push("secret");
    if (required.has(name)) parts.push("required");
    if (fromResult[name] !== undefined) parts.push(`from the result at ${fromResult[name]}`);
    list.append(text(`${name}: ${parts.join(", ")}`, null, "li"));
  }
  return list;
}

// The values a job ran with, one line each; a secret one by name only.
export function paramValues(values) {
  const list = el("ul", "env params");
  list.id = "param-values";
  for (const [name, v] of Object.entries(values ?? {})) {
    list.append(text(v === null ? `${name} (secret, never kept)` : `${name} = ${show(v)}`, null, "li"));
  }
  return list;
}
