// Where the log viewer's rows come from. A row is one record; a source
// maps row numbers to records, fetching pages of them by seq range from the
// API as rows are asked for and keeping only a bounded cache. Nothing here
// touches the DOM.
//
// - `SeqSource`: the whole log. Seqs are gap-free from 1, so row r is seq
//   r + 1 — except inside folded groups, whose rows are hidden (a sorted
//   list of folds maps rows to seqs by binary search).
// - `FilterSource`: only some streams. Row numbers are positions among
//   the matching records, which only the records themselves reveal, so
//   pages are chained: each is read after the last seq of the page before
//   it (or before the first seq of the page after it, from the end).

import { get } from "./api.js";

export const PAGE = 500;
const MAX_PAGES = 80;
// The API bounds a page in records and in bytes; a short page before the
// end is continued.
const API_MAX = 10000;

class PageCache {
  constructor() {
    this.pages = new Map();
  }
  get(k) {
    const p = this.pages.get(k);
    if (p) {
      // Most recently used last, for eviction.
      this.pages.delete(k);
      this.pages.set(k, p);
    }
    return p;
  }
  set(k, p) {
    this.pages.delete(k);
    this.pages.set(k, p);
    while (this.pages.size > MAX_PAGES) {
      const oldest = this.pages.keys().next().value;
      this.pages.delete(oldest);
    }
  }
  clear() {
    this.pages.clear();
  }
}

// Reads `n` records of `streams` after `after` (forward) or before
// `before` (backward), continuing short pages. Resolves to the records in
// seq order.
async function readRange(jobId, { after, before, n, streams }) {
  const path = `/api/v1/jobs/${jobId}/log`;
  let out = [];
  while (out.length < n) {
    const limit = Math.min(API_MAX, n - out.length);
    if (before !== undefined) {
      const page = await get(path, { before_seq: before, limit, streams });
      out = page.records.concat(out);
      if (page.next_before_seq === null || page.records.length === 0) break;
      before = page.records[0].seq;
    } else {
      const page = await get(path, { after_seq: after, limit, streams });
      out = out.concat(page.records);
      if (page.next_after_seq === null || page.records.length === 0 || page.records.length >= limit)
        break;
      after = page.records[page.records.length - 1].seq;
    }
  }
  return out;
}

export class SeqSource {
  constructor(jobId, records, groups, onChange) {
    this.jobId = jobId;
    this.records = records; // the last committed seq
    this.groups = groups; // [{seq, end_seq, title, errors, warnings, folded}]
    this.onChange = onChange;
    this.cache = new PageCache();
    this.loading = new Set();
    this.groupBySeq = new Map(groups.map((g) => [g.seq, g]));
    this.refold();
  }

  groupAt(seq) {
    return this.groupBySeq.get(seq);
  }

  // A group that started live.
  addGroup(g) {
    this.groups.push(g);
    this.groupBySeq.set(g.seq, g);
  }

  // Rebuilds the fold list from the groups marked folded.
  refold() {
    const folds = [];
    let hidden = 0;
    for (const g of this.groups) {
      if (!g.folded) continue;
      const first = g.seq + 1;
      const last = g.end_seq ?? this.records;
      if (last < first) continue;
      folds.push({ first, last, len: last - first + 1, before: hidden, rowStart: first - 1 - hidden, group: g });
      hidden += last - first + 1;
    }
    this.folds = folds;
    this.hidden = hidden;
  }

  count() {
    return Math.max(0, this.records - this.hidden);
  }

  seqAt(row) {
    const f = this.folds;
    let lo = 0;
    let hi = f.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (f[mid].rowStart <= row) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (found < 0) return row + 1;
    return row + 1 + f[found].before + f[found].len;
  }

  // The row showing `seq`: its own, or its folded group's header.
  rowOf(seq) {
    const f = this.folds;
    let lo = 0;
    let hi = f.length - 1;
    let hidden = 0;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (f[mid].last < seq) {
        hidden = f[mid].before + f[mid].len;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    const at = f[lo];
    if (at && at.first <= seq && seq <= at.last) return at.first - 2 - at.before;
    return seq - 1 - hidden;
  }

  // The folded group hiding `seq`, if any.
  foldOf(seq) {
    return this.groups.find((g) => g.folded && g.seq < seq && seq <= (g.end_seq ?? this.records));
  }

  record(row) {
    const seq = this.seqAt(row);
    return this.bySeq(seq);
  }

  bySeq(seq) {
    const k = Math.floor((seq - 1) / PAGE);
    const page = this.cache.get(k);
    if (page) {
      const r = page[(seq - 1) % PAGE];
      if (r) return r;
    }
    this.load(k);
    return undefined;
  }

  load(k) {
    if (this.loading.has(k) || k * PAGE >= this.records) return;
    this.loading.add(k);
    readRange(this.jobId, { after: k * PAGE, n: PAGE })
      .then((records) => {
        const page = this.cache.get(k) ?? new Array(PAGE);
        for (const r of records) {
          const off = r.seq - 1 - k * PAGE;
          if (off >= 0 && off < PAGE) page[off] = r;
        }
        this.cache.set(k, page);
      })
      .catch((e) => console.warn("log page", k, e))
      .finally(() => {
        this.loading.delete(k);
        this.onChange();
      });
  }

  // Records that arrived live (in seq order, after `this.records`).
  append(records) {
    for (const r of records) {
      if (r.seq <= this.records) continue;
      const k = Math.floor((r.seq - 1) / PAGE);
      let page = this.cache.pages.get(k);
      if (!page) {
        // Only a page that starts here is whole; an earlier page's
        // missing part is read when shown.
        if ((r.seq - 1) % PAGE !== 0) {
          this.records = r.seq;
          continue;
        }
        page = new Array(PAGE);
        this.cache.set(k, page);
      }
      page[(r.seq - 1) % PAGE] = r;
      this.records = r.seq;
    }
    if (this.folds.length) this.refold();
  }

  reset() {
    this.cache.clear();
  }
}

export class FilterSource {
  constructor(jobId, streams, total, lastSeq, onChange) {
    this.jobId = jobId;
    this.streams = streams; // a Set of stream names
    this.param = [...streams].join(",");
    this.total = total;
    this.lastSeq = lastSeq;
    this.onChange = onChange;
    this.chunks = new Map(); // chunk index -> records
    this.loading = false;
    this.wanted = new Set();
  }

  count() {
    return this.total;
  }

  chunkCount() {
    return Math.ceil(this.total / PAGE);
  }

  record(row) {
    const c = Math.floor(row / PAGE);
    const chunk = this.chunks.get(c);
    const r = chunk?.[row - c * PAGE];
    if (r) return r;
    this.wanted.add(c);
    this.pump();
    return undefined;
  }

  // Loads one chunk towards what is wanted, from whichever loaded
  // neighbour is nearest; rows far from any are reached page by page.
  pump() {
    if (this.loading || this.wanted.size === 0) return;
    const c = this.wanted.values().next().value;
    this.wanted.delete(c);
    if (this.chunks.has(c)) return this.pump();
    const last = this.chunkCount() - 1;
    let below = -1;
    let above = Infinity;
    for (const k of this.chunks.keys()) {
      if (k < c && k > below && this.chunks.get(k).length === PAGE) below = k;
      if (k > c && k < above) above = k;
    }
    // Which chunk to read next, and from what.
    let step;
    const fromStart = c - (below + 1);
    const fromEnd = (above === Infinity ? last + 1 : above) - c;
    if (c === 0 || below === c - 1) step = { k: c, after: c === 0 ? 0 : this.chunks.get(c - 1).at(-1).seq };
    else if (above === c + 1) step = { k: c, before: this.chunks.get(c + 1)[0].seq };
    else if (c === last) step = { k: c, before: this.lastSeq + 1 };
    else if (fromEnd < fromStart && above !== Infinity) step = { k: above - 1, before: this.chunks.get(above)[0].seq };
    else if (fromEnd < fromStart) step = { k: last, before: this.lastSeq + 1 };
    else step = { k: below + 1, after: below < 0 ? 0 : this.chunks.get(below).at(-1).seq };
    const size = step.k === last ? this.total - last * PAGE : PAGE;
    if (step.k !== c) this.wanted.add(c);
    this.loading = true;
    readRange(this.jobId, { after: step.after, before: step.before, n: size, streams: this.param })
      .then((records) => this.chunks.set(step.k, records))
      .catch((e) => console.warn("filtered page", step, e))
      .finally(() => {
        this.loading = false;
        this.onChange();
        this.pump();
      });
  }

  append(records) {
    for (const r of records) {
      if (r.seq <= this.lastSeq) continue;
      this.lastSeq = r.seq;
      if (!this.streams.has(r.stream)) continue;
      const row = this.total++;
      const c = Math.floor(row / PAGE);
      const chunk = this.chunks.get(c);
      if (chunk && chunk.length === row - c * PAGE) chunk.push(r);
      else if (!chunk && row % PAGE === 0) this.chunks.set(c, [r]);
    }
  }

  reset() {
    this.chunks.clear();
  }
}
