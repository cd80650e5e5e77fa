// A job's result as a tree that opens one node at a time. A worker
// (result-worker.js) parses and keeps the value, so a result of tens of MB
// neither freezes the page nor floods it: the page holds only the rows
// opened, 200 at a time, each built from text nodes — a result is job
// output and may hold HTML.

import { arrayBuffer, ApiError } from "./api.js";
import { el, text } from "./dom.js";

const PAGE = 200;
// A string shown whole goes in as text nodes of at most this many
// characters: no single node of megabytes for the browser to lay out.
const CHUNK = 10000;

export class ResultView {
  constructor(parent, jobId) {
    this.el = el("div", "result-view");
    this.el.id = "result-view";
    parent.append(this.el);
    this.asked = new Map();
    this.next = 0;
    this.worker = null;
    this.status("Fetching the result…");
    this.load(jobId).catch((err) => this.failed(err));
  }

  async load(jobId) {
    const body = await arrayBuffer(`/api/v1/jobs/${jobId}/result`);
    if (this.closed) return;
    this.status(`Parsing ${body.byteLength.toLocaleString()} bytes…`);
    this.worker = new Worker("/ui/result-worker.js", { type: "module" });
    this.worker.onmessage = ({ data }) => {
      const p = this.asked.get(data.id);
      this.asked.delete(data.id);
      if (data.error === undefined) p?.resolve(data);
      else p?.reject(new Error(data.error));
    };
    this.worker.onerror = (e) => {
      e.preventDefault();
      this.failed(new Error("the viewer's worker failed"));
    };
    // Transferred, not copied: the page keeps no second copy of the body.
    const { root } = await this.ask({ op: "load", buffer: body }, [body]);
    const tree = el("ul", "rv-tree");
    tree.addEventListener("keydown", (e) => arrows(e, tree));
    const node = this.node(root, []);
    node.classList.add("rv-root");
    tree.append(node);
    this.el.replaceChildren(tree);
  }

  ask(msg, transfer = []) {
    return new Promise((resolve, reject) => {
      const id = ++this.next;
      this.asked.set(id, { resolve, reject });
      this.worker.postMessage({ ...msg, id }, transfer);
    });
  }

  status(msg) {
    this.el.replaceChildren(text(msg, "muted"));
  }

  // Any failure replaces the tree with what went wrong.
  failed(err) {
    if (this.closed) return;
    console.warn(err);
    this.close({ keep: true });
    let msg = err?.message ?? String(err);
    if (err instanceof ApiError) msg = err.status === 403 ? `not allowed: ${msg}` : `${msg} (${err.code})`;
    const p = text(`The result cannot be shown: ${msg}`, "error-text", "p");
    p.setAttribute("role", "alert");
    this.el.replaceChildren(p);
  }

  close({ keep } = {}) {
    this.closed = true;
    this.worker?.terminate();
    this.asked.clear();
    if (!keep) this.el.remove();
  }

  // One row: `"key": value`, a container as a button that opens it.
  node(s, path) {
    const li = el("li", "rv-node");
    const container = s.kind === "object" || s.kind === "array";
    const row = el(container && s.count ? "button" : "div", "rv-row");
    if (s.key !== null) row.append(text(String(s.key), "rv-key"), ": ");
    if (container) {
      const [o, c, unit] = s.kind === "array" ? ["[", "]", "item"] : ["{", "}", "key"];
      const size = `${s.count.toLocaleString()} ${unit}${s.count === 1 ? "" : "s"}`;
      row.append(text(s.count ? `${o}…${c} ${size}` : `${o}${c}`, "rv-size"));
      if (s.count) {
        row.type = "button";
        row.setAttribute("aria-expanded", "false");
        row.append(text(s.preview, "rv-preview"));
        row.addEventListener("click", () => this.toggle(li, row, path));
      }
    } else {
      const value = text(s.preview, `rv-val rv-${s.kind}`);
      row.append(value);
      if (s.length) {
        const all = el("button", "button small rv-all");
        all.type = "button";
        all.textContent = `show all ${s.length.toLocaleString()} characters`;
        all.addEventListener("click", () => {
          all.disabled = true;
          this.ask({ op: "string", path })
            .then(({ value: whole }) => {
              value.replaceChildren(...chunks(JSON.stringify(whole)));
              all.remove();
            })
            .catch((err) => this.failed(err));
        });
        row.append(" ", all);
      }
    }
    li.append(row);
    return li;
  }

  // Opens a node with its first page of children, or closes it (its rows
  // leave the DOM).
  toggle(li, row, path) {
    const open = li.querySelector(":scope > ul");
    row.setAttribute("aria-expanded", String(!open));
    if (open) return open.remove();
    const list = el("ul");
    li.append(list);
    this.page(list, path, 0, null).catch((err) => this.failed(err));
  }

  // Appends the children from `offset` on, and a "more" button (the same
  // one, kept where the keyboard is) while some remain.
  async page(list, path, offset, more) {
    const { total, items } = await this.ask({ op: "children", path, offset, limit: PAGE });
    const rows = items.map((s, i) => this.node(s, [...path, offset + i]));
    const shown = offset + items.length;
    if (more) more.before(...rows);
    else list.append(...rows);
    if (shown >= total) return more?.remove();
    if (!more) {
      more = el("li");
      more.append(el("button", "button small rv-more"));
      list.append(more);
    }
    const b = more.firstChild;
    b.type = "button";
    b.textContent = `${Math.min(PAGE, total - shown).toLocaleString()} more of ${total.toLocaleString()}`;
    b.onclick = () => {
      b.onclick = null;
      this.page(list, path, shown, more).catch((err) => this.failed(err));
    };
  }
}

// Text nodes of at most CHUNK characters, never splitting a surrogate
// pair.
function chunks(s) {
  const out = [];
  for (let i = 0; i < s.length; ) {
    let end = Math.min(s.length, i + CHUNK);
    const c = s.charCodeAt(end - 1);
    if (end < s.length && c >= 0xd800 && c < 0xdc00) end--;
    out.push(document.createTextNode(s.slice(i, end)));
    i = end;
  }
  return out;
}

// ↑ and ↓ move between the tree's buttons, as Tab and Shift-Tab do.
function arrows(e, tree) {
  if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
  const all = [...tree.querySelectorAll("button:not(:disabled)")];
  const next = all[all.indexOf(document.activeElement) + (e.key === "ArrowDown" ? 1 : -1)];
  if (!next) return;
  e.preventDefault();
  next.focus();
}
