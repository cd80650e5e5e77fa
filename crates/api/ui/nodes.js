// The nodes: the servers that run jobs on this store (`GET
// /api/v1/nodes`), one row each: its state as this node judges it, its
// labels, its last heartbeat, its running jobs, version and the names of
// the secrets it holds; the node that answered is marked. Read again when
// the job feed tells of jobs starting or ending (its running count), and
// every few seconds for heartbeats, which the feed does not carry.

import { get } from "./api.js";
import { el, text, clear, fail, link, when, relative, timeCell, tickRelative, headerRow, labelList } from "./dom.js";
import { live } from "./live.js";

// The list is re-read at most this often, however busy the server…
const MIN_REFRESH_MS = 1000;
// …and at least this often, for heartbeats and states.
const EVERY_MS = 10000;

const STATE_HINT = {
  up: "heartbeating",
  stopped: "stopped gracefully",
  lapsed: "silent for longer than the heartbeat timeout: killed, crashed or cut off from the database",
};

export function nodesPage(main) {
  const page = new NodesPage(main);
  page.start();
  return page;
}

class NodesPage {
  constructor(main) {
    this.nodes = [];
    this.readAt = 0;
    document.title = "Nodes · joblog";
    clear(main);
    main.classList.add("nodes-page");
    const head = el("div", "page-head");
    head.append(text("Nodes", null, "h1"));
    this.table = el("table", "jobs nodes");
    this.table.id = "nodes";
    this.status = el("div", "log-status");
    this.status.id = "nodes-status";
    main.append(head, this.table, this.status);
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
    const up = this.nodes.filter((n) => n.state === "up").length;
    const live = this.live === "open" ? "live" : this.live ?? "connecting";
    this.status.textContent = `${this.nodes.length} nodes, ${up} up · lapsed after ${this.timeout} s without a heartbeat · ${live}`;
  }

  render() {
    const t = this.table;
    clear(t);
    const head = el("thead");
    // The last column is where a node's actions (drain) will go.
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
      el("td", "node-actions"),
    );
    return tr;
  }

  retime() {
    this.render();
  }

  destroy() {
    this.feed?.close();
  }
}
