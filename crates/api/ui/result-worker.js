// The result viewer's worker (result.js): parses a job's result off the
// page's thread — tens of MB of JSON would freeze the page for seconds —
// keeps the tree, and answers the page's questions about one node at a
// time with small summaries, so the page never holds the whole value.
//
// Messages in: {id, op: "load", buffer} (the fetched body, transferred),
// {id, op: "children", path, offset, limit}, {id, op: "string", path}, a
// path being child indices from the root (a key can be megabytes long).
// Each is answered with {id, ...} or {id, error}.

const PREVIEW = 80; // characters of a collapsed container's preview
const CUT = 1000; // characters of a string shown before "show all"
const KEY = 200; // characters of a key shown

let root;

const ops = {
  load({ buffer }) {
    const text = new TextDecoder().decode(buffer);
    try {
      root = JSON.parse(text);
    } catch (err) {
      throw new Error(`the result is not valid JSON (${err.message})`);
    }
    keyOrder(text);
    return { root: summary(null, root) };
  },
  children({ path, offset, limit }) {
    const v = at(path);
    const keys = Array.isArray(v) ? null : keysOf(v);
    const total = keys ? keys.length : v.length;
    const items = [];
    for (let i = offset; i < Math.min(total, offset + limit); i++) {
      items.push(keys ? summary(keys[i], v[keys[i]]) : summary(i, v[i]));
    }
    return { total, items };
  },
  string({ path }) {
    return { value: at(path) };
  },
};

self.onmessage = ({ data }) => {
  let reply;
  try {
    reply = ops[data.op](data);
  } catch (err) {
    reply = { error: err?.message ?? String(err) };
  }
  self.postMessage({ id: data.id, ...reply });
};

function at(path) {
  let v = root;
  for (const i of path) {
    if (v === null || typeof v !== "object") throw new Error("no such node in the result");
    v = Array.isArray(v) ? v[i] : v[keysOf(v)[i]];
  }
  return v;
}

// What the page shows of one value: its key (as JSON, cut), kind, size,
// and a line of JSON short enough for one row.
function summary(key, v) {
  const s = { key: typeof key === "string" ? JSON.stringify(cut(key, KEY)) + (key.length > KEY ? "…" : "") : key };
  if (Array.isArray(v)) return { ...s, kind: "array", count: v.length, preview: preview(v) };
  if (v !== null && typeof v === "object") return { ...s, kind: "object", count: keysOf(v).length, preview: preview(v) };
  if (typeof v === "string" && v.length > CUT) {
    return { ...s, kind: "string", preview: JSON.stringify(cut(v, CUT)), length: v.length };
  }
  return { ...s, kind: v === null ? "null" : typeof v, preview: JSON.stringify(v) };
}

// `{"host":"web-01","ms":12.5,…}`: the first entries, compact, cut at
// PREVIEW characters.
function preview(v) {
  const array = Array.isArray(v);
  const keys = array ? null : keysOf(v);
  const n = array ? v.length : keys.length;
  let s = array ? "[" : "{";
  let i = 0;
  for (; i < n && s.length < PREVIEW; i++) {
    const x = array ? v[i] : v[keys[i]];
    const inner = x === null || typeof x !== "object" ? JSON.stringify(typeof x === "string" ? cut(x, PREVIEW) : x) : Array.isArray(x) ? "[…]" : "{…}";
    s += (i ? "," : "") + (array ? "" : JSON.stringify(cut(keys[i], PREVIEW)) + ":") + inner;
  }
  return i < n || s.length > PREVIEW ? cut(s, PREVIEW) + "…" : s + (array ? "]" : "}");
}

// The first `n` UTF-16 units of `s`, without splitting a surrogate pair.
function cut(s, n) {
  if (s.length <= n) return s;
  const c = s.charCodeAt(n - 1);
  return s.slice(0, c >= 0xd800 && c < 0xdc00 ? n - 1 : n);
}

// An object's keys in the job's order, listed once (a big object is asked
// for page after page). JavaScript lists integer-like keys ("10", "404")
// first, in numeric order, whatever the order the job wrote: for objects
// that have such keys, keyOrder() reads the job's order back from the
// text.
const keyLists = new WeakMap();

function keysOf(o) {
  let keys = keyLists.get(o);
  if (!keys) keyLists.set(o, (keys = Object.keys(o)));
  return keys;
}

const INDEX = /^(0|[1-9]\d*)$/;

// Most results have no integer-like key and cost one walk of the tree;
// otherwise the text is scanned, parsing keys only inside the containers
// that lead to such an object.
function keyOrder(text) {
  const marked = new WeakSet();
  const mark = (v) => {
    if (v === null || typeof v !== "object") return false;
    let found = false;
    if (Array.isArray(v)) {
      for (const x of v) found = mark(x) || found;
    } else {
      let first = true;
      for (const k in v) {
        found = mark(v[k]) || (first && INDEX.test(k)) || found;
        first = false;
      }
    }
    if (found) marked.add(v);
    return found;
  };
  if (!mark(root)) return;
  let i = 0;
  const ws = () => {
    while (text[i] === " " || text[i] === "\n" || text[i] === "\r" || text[i] === "\t") i++;
  };
  const string = () => {
    const start = i++;
    while (text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    return text.slice(start, ++i);
  };
  // Moves past the value at `i`, which JSON.parse made into `v` (or
  // undefined, where nothing below needs reordering).
  const walk = (v) => {
    ws();
    const open = text[i];
    if (open === '"') return void string();
    if (open !== "{" && open !== "[") {
      while (i < text.length && !",]} \t\n\r".includes(text[i])) i++;
      return;
    }
    const deep = marked.has(v);
    const keys = [];
    i++;
    for (let n = 0; ws(), text[i] !== "}" && text[i] !== "]"; n++) {
      if (text[i] === ",") i++, ws();
      if (open === "[") {
        walk(deep ? v[n] : undefined);
        continue;
      }
      const k = string();
      if (deep) keys.push(JSON.parse(k));
      ws();
      i++; // the colon
      walk(deep ? v[keys[keys.length - 1]] : undefined);
    }
    i++;
    // A repeated key keeps its first place (and its last value), as with
    // JSON.parse.
    if (deep && open === "{") keyLists.set(v, [...new Set(keys)]);
  };
  walk(root);
}
