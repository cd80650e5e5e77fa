// The log viewer: a virtualized list of fixed-height rows over a source
// (sources.js). Only the rows in view (plus a margin) exist in the DOM,
// whatever the log's length; a spacer gives the scrollbar the log's
// height. Rows are built from text nodes and spans (ansi.js), never from
// HTML.

import { render } from "./ansi.js";
import { el, clock, when } from "./dom.js";

// Browsers cap an element's height (Firefox near 17.9 million px); past
// this the scroll position maps to rows proportionally.
const MAX_HEIGHT = 15_000_000;
const OVERSCAN = 30;
// Must match `.row` in style.css.
const ROW_HEIGHT = 18;

const MARKERS = {
  output: "O",
  error: "E",
  warning: "W",
  information: "I",
  verbose: "V",
  debug: "D",
  progress: "P",
};

export class Viewer {
  constructor(root, { onRowClick, onScrollState }) {
    this.root = root;
    this.onRowClick = onRowClick;
    this.onScrollState = onScrollState;
    root.classList.add("log");
    this.scroller = el("div", "log-scroll");
    this.scroller.tabIndex = 0;
    this.spacer = el("div", "log-spacer");
    this.rows = el("div", "log-rows");
    this.scroller.append(this.spacer, this.rows);
    root.append(this.scroller);
    this.source = null;
    this.pool = [];
    this.following = false;
    this.expectTop = null;
    this.highlight = null; // seq
    this.current = null; // seq of the current search match
    this.mark = null; // lower-case search text
    this.pending = false;
    // Fixed by the style sheet (.row), so geometry needs no measuring.
    this.rowHeight = ROW_HEIGHT;
    this.scroller.addEventListener("scroll", () => this.onScroll(), { passive: true });
    this.scroller.addEventListener("wheel", (e) => {
      if (e.deltaY < 0) this.setFollowing(false);
    }, { passive: true });
    this.rows.addEventListener("click", (e) => this.click(e));
    this.resize = new ResizeObserver(() => this.schedule());
    this.resize.observe(this.scroller);
  }

  setSource(source) {
    this.source = source;
    this.schedule();
  }

  destroy() {
    this.resize.disconnect();
  }

  schedule() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.draw();
    });
  }

  // Geometry of the scroll area for the current row count.
  geometry() {
    const n = this.source ? this.source.count() : 0;
    const h = this.rowHeight;
    const view = this.scroller.clientHeight;
    const full = n * h;
    const height = Math.min(full, MAX_HEIGHT);
    const scaled = full > MAX_HEIGHT;
    return { n, h, view, height, scaled };
  }

  // The (fractional) row at the top of the view.
  topRow(g) {
    const top = this.scroller.scrollTop;
    if (!g.scaled) return top / g.h;
    const range = g.height - g.view;
    const rows = g.n - g.view / g.h;
    return range > 0 ? (top / range) * rows : 0;
  }

  scrollTopFor(row, g) {
    if (!g.scaled) return row * g.h;
    const rows = g.n - g.view / g.h;
    return rows > 0 ? (row / rows) * (g.height - g.view) : 0;
  }

  setScrollTop(top) {
    // The spacer may not have its height yet (a jump before the first draw).
    this.sizeSpacer(this.geometry());
    const max = Math.max(0, this.spacer.offsetHeight - this.scroller.clientHeight);
    const t = Math.max(0, Math.min(max, Math.round(top)));
    this.expectTop = t;
    this.scroller.scrollTop = t;
  }

  sizeSpacer(g) {
    if (this.spacer.style.height !== `${g.height}px`) this.spacer.style.height = `${g.height}px`;
  }

  draw() {
    if (!this.source) return;
    const g = this.geometry();
    this.sizeSpacer(g);
    if (this.following) this.setScrollTop(g.height);
    const top = this.topRow(g);
    const first = Math.max(0, Math.floor(top) - OVERSCAN);
    const visible = Math.ceil(g.view / g.h) + 1;
    const last = Math.min(g.n - 1, Math.floor(top) + visible + OVERSCAN);
    // The block of rows sits where its first row belongs in view.
    this.first = first;
    const offset = this.scroller.scrollTop - (top - first) * g.h;
    this.rows.style.transform = `translateY(${Math.max(0, offset)}px)`;
    const count = Math.max(0, last - first + 1);
    while (this.pool.length < count) {
      const row = newRow();
      this.pool.push(row);
      this.rows.append(row.el);
    }
    for (let i = 0; i < this.pool.length; i++) {
      const row = this.pool[i];
      if (i >= count) {
        if (!row.el.hidden) row.el.hidden = true;
        continue;
      }
      row.el.hidden = false;
      this.fill(row, first + i);
    }
    // Keep the pool from holding more than a screenful's worth of spares.
    while (this.pool.length > count + 2 * OVERSCAN) this.pool.pop().el.remove();
    this.onScrollState?.({ top: Math.floor(top), count: g.n, following: this.following });
  }

  fill(row, index) {
    const src = this.source;
    const rec = src.record(index);
    const seq = rec ? rec.seq : src.seqAt ? src.seqAt(index) : null;
    const group = rec && src.groupAt ? src.groupAt(rec.seq) : null;
    const key = rec
      ? `${rec.seq}|${group ? (group.folded ? "f" : "u") + (group.end_seq ?? "") : ""}|${this.mark ?? ""}|${
          this.highlight === rec.seq ? "h" : ""
        }${this.current === rec.seq ? "c" : ""}`
      : `?${index}`;
    if (row.key === key) return;
    row.key = key;
    const { el: r, ln, ts, mk, tx } = row;
    r.className = "row";
    tx.textContent = "";
    if (!rec) {
      delete r.dataset.seq;
      ln.textContent = seq ?? "";
      ln.removeAttribute("href");
      ts.textContent = "";
      mk.textContent = "";
      r.classList.add("loading");
      tx.textContent = "…";
      return;
    }
    r.dataset.seq = rec.seq;
    r.classList.add(`s-${rec.stream}`);
    if (this.highlight === rec.seq) r.classList.add("hl");
    if (this.current === rec.seq) r.classList.add("cur");
    ln.textContent = rec.seq;
    ln.href = `#seq-${rec.seq}`;
    ts.textContent = clock(rec.ts);
    ts.title = when(rec.ts, { ms: true });
    mk.textContent = MARKERS[rec.stream] ?? "?";
    mk.title = rec.stream;
    if (group) {
      r.classList.add("group", group.folded ? "folded" : "open");
      const toggle = el("span", "fold");
      toggle.textContent = group.folded ? "▸ " : "▾ ";
      tx.append(toggle);
      render(tx, rec.message, this.mark);
      const end = group.end_seq ?? src.records;
      const info = el("span", "group-info");
      info.textContent = ` ${Math.max(0, end - group.seq)} lines`;
      tx.append(info);
      if (group.errors > 0) {
        const e = el("span", "group-errors");
        e.textContent = ` ✖ ${group.errors}`;
        e.title = `${group.errors} error records in this group`;
        tx.append(e);
      }
      return;
    }
    if (rec.fields?.group === "end") {
      r.classList.add("group-end");
    }
    renderRecord(tx, rec, this.mark);
  }

  click(e) {
    const rowEl = e.target.closest(".row");
    if (!rowEl || !rowEl.dataset.seq) return;
    const seq = Number(rowEl.dataset.seq);
    if (e.target.closest("a.ln")) return; // the link changes the hash
    this.onRowClick?.(seq, e);
  }

  onScroll() {
    const top = this.scroller.scrollTop;
    if (this.expectTop !== null && Math.abs(top - this.expectTop) <= 1) {
      this.expectTop = null;
    } else {
      this.expectTop = null;
      const atEnd = top + this.scroller.clientHeight >= this.spacer.offsetHeight - 2;
      if (this.following !== atEnd) this.setFollowing(atEnd);
    }
    this.schedule();
  }

  setFollowing(on) {
    if (this.following === on) return;
    this.following = on;
    this.schedule();
  }

  // Puts `row` in view: near the top third, unless already visible.
  scrollToRow(row, { force } = {}) {
    const g = this.geometry();
    const top = this.topRow(g);
    const visible = g.view / g.h;
    if (!force && row >= top && row < top + visible - 1) return;
    this.setFollowing(false);
    this.setScrollTop(this.scrollTopFor(Math.max(0, row - Math.floor(visible / 3)), g));
    this.schedule();
  }

  toStart() {
    this.setFollowing(false);
    this.setScrollTop(0);
    this.schedule();
  }

  toEnd() {
    const g = this.geometry();
    this.setScrollTop(g.height);
    this.setFollowing(true);
    this.schedule();
  }

  // The row showing `seq`, if it is drawn (the rows in view and a margin).
  rowOfSeq(seq) {
    const i = this.pool.findIndex((r) => !r.el.hidden && r.el.dataset.seq === String(seq));
    return i < 0 ? null : this.first + i;
  }

  // The seq of `row`, if known (loaded, or a whole log's row).
  seqOfRow(row) {
    if (!this.source || row < 0 || row >= this.source.count()) return null;
    return this.source.record(row)?.seq ?? this.source.seqAt?.(row) ?? null;
  }

  // Forces every row to be rebuilt (marks, folds and highlights changed).
  refresh() {
    for (const r of this.pool) r.key = null;
    this.schedule();
  }
}

// A record's text as a row shows it (and the wrapped line panel): a
// progress record's percentage, the message with its ANSI styles, the
// workflow command's fields. Text nodes and spans only.
export function renderRecord(tx, rec, mark) {
  if (rec.stream === "progress" && rec.fields?.percent !== undefined) {
    const p = el("span", "pct");
    p.textContent = `${rec.fields.percent}% `;
    tx.append(p);
  }
  render(tx, rec.message, mark);
  if (rec.fields) {
    for (const [k, v] of Object.entries(rec.fields)) {
      if (k === "group" || (k === "percent" && rec.stream === "progress")) continue;
      const f = el("span", "field");
      f.textContent = `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`;
      tx.append(" ", f);
    }
  }
}

function newRow() {
  const r = el("div", "row");
  const ln = el("a", "ln");
  const ts = el("span", "ts");
  const mk = el("span", "mk");
  const tx = el("span", "tx");
  r.append(ln, ts, mk, tx);
  return { el: r, ln, ts, mk, tx, key: null };
}
