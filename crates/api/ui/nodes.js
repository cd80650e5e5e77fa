// The nodes: the servers that run jobs on this store (`GET
// /api/v1/nodes`), one row each: its state as this node judges it, its
// labels, its last heartbeat, its running jobs, version and the names of
// the secrets it holds; the node that answered is marked. Admins drain a
// node (asked first, in the page) and undrain it. Read again when the job
// feed tells of jobs starting or ending (its running count), and every few
// seconds for heartbeats and drains, which the feed does not carry.

import { get, post } from "./api.js";
import { el, text, clear, fail, link, when, relative, timeCell, tickRelative, headerRow, labelList, button, can } from "./dom.js";
import { live } from "./live.js";

// The list is re-read at most this often, however busy the server…
const MIN_REFRESH_MS = 1000;
// …and at least this often, for heartbeats and states.
const EVERY_MS = 10000;

const STATE_HINT = {
  up: "heartbeating",
  stopped: "stopped gracefully",
  lapsed: "silent for longer than the heartbeat timeout: killed, crashed or cut off from the database",
  draining: "asked to drain: it takes no new job and fires no schedule; its running jobs go on",
  drained: "drained: it takes no job and fires no schedule until undrained",
};

export function nodesPage(main, me) {
  const page = new NodesPage(main, me);
  page.start();
  return page;
}

class NodesPage {
  constructor(main, me) {
    this.me = me;
    this.nodes = [];
    this.readAt = 0;
    document.title = "Nodes · joblog";
    clear(main);
    main.classList.add("nodes-page");
    const head = el("div", "page-head");
    head.append(text("Nodes", null, "h1"));
    // A drain's question, and what came of a drain or undrain.
    this.note = el("div", "action-status");
    this.note.id = "node-action";
    this.note.setAttribute("role", "status");
    this.table = el("table", "jobs nodes");
    this.table.id = "nodes";
    this.status = el("div", "log-status");
    this.status.id = "nodes-status";
    main.append(head, this.note, this.table, this.status);
  }

  start() {
    this.feed = live({
      every: MIN_REFRESH_MS,
      read: () => this.load(),
      // Jobs that start or end change a running count.
      concerns: (change) => change.reset || change.changed.length > 0,
      onState: (s) => {
        this.live = s;
        this.renderStatus();
      },
      tick: () => {
        tickRelative(this.table);
        if (Date.now() - this.readAt > EVERY_MS) this.feed.readSoon();
      },
    });
    this.feed.readNow();
  }

  async load() {
    this.readAt = Date.now();
    try {
      const res = await get("/api/v1/nodes");
      this.nodes = res.nodes;
      this.thisNode = res.this_node;
      this.timeout = res.heartbeat_timeout_s;
      this.render();
      this.status.classList.remove("error-text");
      this.renderStatus();
    } catch (err) {
      fail(this.status, err);
    }
  }

  renderStatus() {
    if (this.status.classList.contains("error-text") || this.timeout === undefined) return;
    const count = (state) => this.nodes.filter((n) => n.state === state).length;
    const states = [`${count("up")} up`];
    for (const s of ["draining", "drained"]) if (count(s)) states.push(`${count(s)} ${s}`);
    const live = this.live === "open" ? "live" : this.live ?? "connecting";
    this.status.textContent = `${this.nodes.length} nodes, ${states.join(", ")} · lapsed after ${this.timeout} s without a heartbeat · ${live}`;
  }

  render() {
    const t = this.table;
    clear(t);
    const head = el("thead");
    head.append(headerRow(["state", "node", "labels", "last heartbeat", "started", "running", "version", "secrets", { name: "actions" }]));
    const body = el("tbody");
    for (const n of this.nodes) body.append(this.row(n));
    if (!this.nodes.length) {
      const tr = el("tr");
      const td = text("no nodes yet", "muted", "td");
      td.colSpan = 9;
      tr.append(td);
      body.append(tr);
    }
    t.append(head, body);
  }

  row(n) {
    const tr = el("tr", `ns-${n.state}`);
    tr.dataset.name = n.name;
    const here = n.name === this.thisNode;
    if (here) tr.classList.add("here");
    const state = el("td");
    const dot = text(n.state, `state ns-${n.state}`);
    dot.setAttribute("aria-hidden", "true");
    const badge = el("span", "state-badge");
    badge.append(dot, text(n.state, `state-label ns-${n.state}`));
    state.append(badge);
    state.title = n.state === "stopped" && n.stopped_at ? `stopped at ${when(n.stopped_at)}` : STATE_HINT[n.state] ?? n.state;
    if (n.drain_at) state.title += ` (asked to drain at ${when(n.drain_at)})`;
    // Its name leads to the jobs it ran.
    const name = el("td", "name");
    name.append(link(`/?node=${encodeURIComponent(n.name)}`, n.name));
    name.title = `${n.name}: its jobs`;
    if (here) {
      const mark = text("this node", "badge here");
      mark.title = "the node that answered this page";
      name.append(text(" "), mark);
    }
    const labels = el("td", "node-labels");
    labels.append(labelList(n.labels, "none"));
    const started = el("td", "time started");
    const since = text(relative(n.started_at), "rel muted");
    since.dataset.ts = n.started_at;
    started.title = `${when(n.started_at)} (${n.started_at})`;
    started.append(since);
    const running = el("td", "num running");
    if (n.running_jobs > 0) {
      running.append(link(`/?state=running&node=${encodeURIComponent(n.name)}`, String(n.running_jobs)));
    } else running.textContent = "0";
    const secrets = text((n.secret_names ?? []).join(", "), "secrets", "td");
    if (n.secret_names?.length) secrets.title = "the JOBLOG_SECRET_<NAME> variables it held when it started (names; never values)";
    const heartbeat = timeCell(n.heartbeat_at);
    heartbeat.classList.add("heartbeat");
    tr.append(
      state,
      name,
      labels,
      heartbeat,
      started,
      running,
      text(n.version ?? "", "muted", "td"),
      secrets,
      this.actions(n),
    );
    return tr;
  }

  // Admins: Drain for an up node, Undrain for one asked to drain (in
  // whatever state: a drained node that restarts stays drained).
  actions(n) {
    const td = el("td", "node-actions");
    if (!can(this.me, "admin")) return td;
    if (n.drain_at) {
      const b = button("Undrain", "small undrain", () => this.setDrain(n, false, b), `asked to drain at ${when(n.drain_at)}: let it take jobs and fire schedules again`);
      td.append(b);
    } else if (n.state === "up") {
      const b = button("Drain", "small drain", () => this.confirmDrain(n), "take no new job and fire no schedule; its running jobs go on to their end");
      td.append(b);
    }
    return td;
  }

  // Asked in the page, not in a dialog.
  confirmDrain(n) {
    const q = el("span", "confirm");
    const k = n.running_jobs;
    const running = !k ? " (it runs none now)" : k === 1 ? "; its running job goes on to its end" : `; its ${k} running jobs go on to their end`;
    q.append(text(`Drain ${n.name}? It takes no new job and fires no schedule${running}. `));
    const yes = button("Drain node", "danger", () => this.setDrain(n, true, yes));
    yes.id = "confirm-drain";
    const no = button("Don't drain", null, () => this.say(""));
    q.append(yes, text(" "), no);
    this.say(q);
    yes.focus();
  }

  async setDrain(n, drain, b) {
    b.disabled = true;
    try {
      const node = await post(`/api/v1/nodes/${encodeURIComponent(n.name)}/${drain ? "drain" : "undrain"}`);
      this.nodes = this.nodes.map((m) => (m.name === node.name ? node : m));
      this.render();
      this.renderStatus();
      // (Its state changes on: the table follows it, this stays true.)
      this.say(drain ? `Draining ${node.name}: it takes no new job, and shows drained once none of its jobs runs.` : `${node.name} takes jobs again.`);
    } catch (err) {
      b.disabled = false;
      fail(this.note, err);
    }
  }

  say(what) {
    clear(this.note);
    this.note.classList.remove("error-text");
    if (what) this.note.append(what instanceof Node ? what : text(what));
  }

  retime() {
    this.render();
  }

  destroy() {
    this.feed?.close();
  }
}
