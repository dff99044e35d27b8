// Gregor console: a small single-page app over the JSON API under /api/:
// it reads the cluster, and (when /api/session allows) creates and deletes
// topics, produces test records and edits topic configs.
// Plain JavaScript, no build step and no external resources. Everything
// the brokers return is put into the page as text (textContent), never as
// HTML, so topic names, keys and values cannot inject markup.
"use strict";

const main = document.getElementById("main");
let timers = []; // the current view's refresh timers, cleared on navigation
let viewToken = 0; // bumps on navigation so late answers are dropped

// el builds an element: el("td", {class: "num"}, "text", childNode...).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function table(id, headers, rows) {
  return el("table", {id},
    el("thead", {}, el("tr", {}, headers.map(h => {
      const [label, cls] = Array.isArray(h) ? h : [h, ""];
      return el("th", {class: cls || null}, label);
    }))),
    el("tbody", {}, rows));
}

function num(v) { return el("td", {class: "num"}, v); }

async function api(path) {
  const resp = await fetch("/api/" + path, {cache: "no-store"});
  const body = await resp.json().catch(() => ({error: resp.status + " " + resp.statusText}));
  if (resp.status === 401 && !loginShown) showLogin(); // no session, or it expired
  if (!resp.ok) throw new Error(body.error || resp.statusText);
  return body;
}

// post sends a JSON body. X-Gregor-Console is the header the console's
// actions require: another site's page cannot send it.
async function post(path, data) {
  const resp = await fetch("/api/" + path, {method: "POST", cache: "no-store",
    headers: {"Content-Type": "application/json", "X-Gregor-Console": "1"}, body: JSON.stringify(data || {})});
  const body = await resp.json().catch(() => ({error: resp.status + " " + resp.statusText}));
  if (resp.status === 401 && path !== "login" && !loginShown) showLogin();
  if (!resp.ok) throw new Error(body.error || resp.statusText);
  return body;
}

// actionForm is a form of an action: fields laid out in a grid, a message
// line for the broker's answer, and submit running act(), which returns
// the success message (or nothing) and throws the refusal.
function actionForm(id, fields, buttons, act) {
  const msg = el("p", {id: id + "-result", hidden: true});
  const form = el("form", {class: "action", id}, fields.flatMap(([label, input]) =>
    [el("label", {for: input.id}, label), input]), el("div", {class: "buttons"}, buttons), msg);
  async function run(e, which) {
    if (e) e.preventDefault();
    msg.hidden = true;
    buttons.forEach(b => { b.disabled = true; });
    try {
      const text = await act(which);
      if (text) { msg.className = "ok"; msg.replaceChildren(...[].concat(text)); msg.hidden = false; }
    } catch (err) {
      msg.className = "error";
      msg.textContent = err.message;
      msg.hidden = false;
    } finally {
      buttons.forEach(b => { b.disabled = false; });
    }
  }
  form.addEventListener("submit", e => run(e, e.submitter ? e.submitter.value : ""));
  return form;
}

// actionsNote says why the page offers no actions (/api/session).
function actionsNote() {
  return el("p", {id: "actions-disabled", class: "muted"}, sessionInfo.actionsDisabled || "Console actions are disabled.");
}

function fmtNum(n) { return n < 0 ? "-" : Number(n).toLocaleString("en-US"); }
function fmtOffset(n) { return n < 0 ? "-" : String(n); }
function fmtBytes(n) {
  if (n < 0) return "-";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + " " + units[i];
}
function fmtRate(n, unit) {
  // At most one decimal, none when it is 0: "1.5k/s", "20M" + unit.
  const short = v => String(Number(v.toFixed(1)));
  if (n >= 1e9) return short(n / 1e9) + "G" + unit;
  if (n >= 1e6) return short(n / 1e6) + "M" + unit;
  if (n >= 1e3) return short(n / 1e3) + "k" + unit;
  return short(n) + unit;
}
// niceScale is a chart's y axis for values up to max: a step of 1, 2 or 5
// times a power of ten, and the top as the first step multiple at or
// above max (at least one step).
function niceScale(max) {
  if (!(max > 0)) return {step: 1, top: 1};
  const raw = max / 4, pow = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / pow;
  const step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * pow;
  return {step, top: Math.max(step, Math.ceil(max / step - 1e-9) * step)};
}
function ago(ms) { return ms < 0 ? "-" : ms < 1000 ? ms + " ms" : (ms / 1000).toFixed(1) + " s"; }
function ids(a) { return a && a.length ? a.join(",") : "-"; }
function topicLink(name) { return el("a", {href: "#/topics/" + encodeURIComponent(name), "data-topic": name}, name); }
function groupLink(name) { return el("a", {href: "#/groups/" + encodeURIComponent(name), "data-group": name}, name); }
function card(label, value, cls) {
  return el("div", {class: "card"}, el("div", {class: "label"}, label), el("div", {class: "value " + (cls || "")}, value));
}

// section is a part of a view that reloads itself: load() fetches, render()
// draws; the DOM is replaced only when the answer changed, so a refresh
// does not disturb what the reader is looking at.
function section(parent, load, render, everyMs) {
  const box = el("div");
  parent.append(box);
  const token = viewToken;
  let last = null;
  async function refresh() {
    let content, key;
    try {
      const data = await load();
      key = JSON.stringify(data);
      if (key === last) return;
      content = render(data);
    } catch (e) {
      key = "error:" + e.message;
      if (key === last) return;
      content = el("p", {class: "error"}, e.message);
    }
    if (token !== viewToken) return;
    last = key;
    box.replaceChildren(content);
  }
  refresh();
  if (everyMs) timers.push(setInterval(refresh, everyMs));
  return refresh;
}

// pagedList is a list the server filters, sorts and pages
// (?q=&sort=&order=&offset=&limit=, lists.go): a filter box, headers that
// sort when clicked (those with a sort key), and a pager. state keeps the
// reader's choices across refreshes and visits; params adds the view's own
// query parameters; pick finds the page in the answer (default: the answer).
function pagedList(opts) {
  const st = opts.state;
  const filter = el("input", {type: "search", id: opts.id + "-filter", placeholder: opts.placeholder || "filter by name", value: st.q || ""});
  let typing = null;
  filter.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => { st.q = filter.value; st.offset = 0; refresh(); }, 250);
  });
  const box = el("div");
  const query = () => new URLSearchParams(Object.assign({q: st.q || "", sort: st.sort, order: st.order, offset: st.offset, limit: st.limit},
    opts.params ? opts.params() : {}));
  const refresh = section(box, () => api(opts.path + "?" + query()), answer => {
    const pg = opts.pick ? opts.pick(answer) : answer;
    const head = el("tr", {}, opts.columns.map(([label, key, cls]) => {
      if (!key) return el("th", {class: cls || null}, label);
      const on = st.sort === key;
      return el("th", {class: (cls || "") + " sortable", "data-sort": key, title: "sort by " + label.toLowerCase(),
        onclick: () => {
          st.order = on && st.order === "asc" ? "desc" : "asc";
          st.sort = key; st.offset = 0; refresh();
        }}, label, on ? (st.order === "desc" ? " ▼" : " ▲") : "");
    }));
    const from = pg.total ? pg.offset + 1 : 0, to = pg.offset + pg.items.length;
    const pager = el("div", {class: "toolbar pager"},
      el("span", {id: opts.id + "-count", class: "muted"}, pg.total ? fmtNum(from) + "–" + fmtNum(to) + " of " + fmtNum(pg.total) : "none"),
      el("button", {id: opts.id + "-prev", disabled: pg.offset <= 0, onclick: () => { st.offset = Math.max(0, pg.offset - pg.limit); refresh(); }}, "‹ Previous"),
      el("button", {id: opts.id + "-next", disabled: to >= pg.total, onclick: () => { st.offset = pg.offset + pg.limit; refresh(); }}, "Next ›"));
    const body = pg.items.length ? el("table", {id: opts.id}, el("thead", {}, head), el("tbody", {}, pg.items.map(opts.row)))
      : el("p", {class: "muted", id: opts.id + "-empty"}, st.q ? "Nothing matches “" + st.q + "”." : opts.empty);
    return el("div", {}, opts.header ? opts.header(answer) : null, body, pager);
  }, opts.everyMs);
  return {filter, box, refresh};
}

function listState(sort) { return {q: "", sort, order: "asc", offset: 0, limit: 50}; }

// ---- Cluster: brokers, quorum, throughput ----

function viewOverview() {
  main.append(el("h1", {}, "Cluster"));
  section(main, () => api("cluster"), c => {
    document.getElementById("cluster-id").textContent = "cluster " + c.clusterId;
    // A fenced broker is registered but not serving: killed, shut down or
    // still catching up.
    const brokers = c.brokers.map(b => el("tr", {"data-broker": b.id, class: b.fenced ? "fenced" : ""},
      el("td", {class: "num"}, el("a", {href: "#/brokers/" + b.id, "data-broker-link": b.id}, b.id)), el("td", {}, b.host + ":" + b.port), el("td", {}, b.rack || "-"),
      el("td", {class: b.fenced ? "bad" : ""}, b.fenced ? "fenced (down)" : "up"),
      num(b.leaders), num(b.replicas),
      el("td", {}, b.id === c.controllerId ? el("span", {class: "tag"}, "controller") : "")));
    const up = c.brokers.filter(b => !b.fenced).length;
    const parts = [
      el("div", {class: "cards"}, card("Cluster id", c.clusterId),
        card("Brokers up", up + " of " + c.brokers.length, up < c.brokers.length ? "bad" : ""),
        card("Active controller", c.controllerId >= 0 ? c.controllerId : "unknown", c.controllerId >= 0 ? "" : "bad")),
      el("h2", {}, "Brokers"),
      table("brokers", [["Id", "num"], "Address", "Rack", "State", ["Leaders", "num"], ["Replicas", "num"], ""], brokers),
      el("h2", {}, "Controller quorum (__cluster_metadata)"),
    ];
    if (c.quorum) {
      const q = c.quorum;
      parts.push(el("div", {class: "cards"}, card("Leader", q.leaderId), card("Epoch", q.leaderEpoch), card("High watermark", fmtNum(q.highWatermark))));
      parts.push(table("quorum", [["Node", "num"], "Role", ["Log end offset", "num"], ["Lag", "num"], ["Last fetch", "num"], ["Last caught up", "num"]],
        q.replicas.map(r => el("tr", {}, num(r.id), el("td", {}, r.role), num(fmtNum(r.logEndOffset)),
          el("td", {class: "num " + (r.lag > 0 ? "warn" : "")}, fmtNum(r.lag)), num(ago(r.lastFetchMsAgo)), num(ago(r.lastCaughtUpMsAgo))))));
    } else {
      parts.push(el("p", {class: "error"}, c.quorumError || "no quorum information"));
    }
    return el("div", {}, parts);
  }, 5000);
  main.append(el("h2", {}, "Throughput"));
  const records = chartBox("Records/s (cluster, growth of end offsets)", [["records/s", "#2f6fde"]]);
  const bytes = chartBox("Bytes/s (this broker)", [["in", "#2e7d32"], ["out", "#b35900"]]);
  main.append(el("div", {class: "charts"}, records.box, bytes.box));
  async function tick() {
    try {
      const t = await api("throughput");
      records.draw(t.samples, [s => s.recordsPerSec], "/s");
      bytes.draw(t.samples, [s => s.bytesInPerSec, s => s.bytesOutPerSec], "B/s");
    } catch (e) { /* the sections above show the error */ }
  }
  tick();
  timers.push(setInterval(tick, 1000));
}

// ---- A broker: its partitions, log dirs and configs ----

const brokerPartitionsState = listState("topic");

function viewBroker(id) {
  main.append(el("h1", {}, "Broker ", el("span", {id: "broker-id"}, id)));
  const path = "brokers/" + encodeURIComponent(id);
  // The broker's facts, log dirs and configs (drawn below the partitions:
  // a long table); the partitions are a paged list of their own (the same
  // endpoint, asked for one page).
  const configsBox = el("div");
  section(main, () => api(path + "?limit=1"), b => {
    const dirs = b.logDirsError ? el("p", {class: "error", id: "broker-logdirs-error"}, "Log dirs unknown: " + b.logDirsError)
      : table("broker-logdirs", ["Path", ["Partitions", "num"], ["Size", "num"], ["Volume usable", "num"], ["Volume total", "num"], "Error"],
        b.logDirs.map(d => el("tr", {"data-dir": d.path}, el("td", {class: "data"}, d.path), num(d.partitions), num(fmtBytes(d.size)),
          num(fmtBytes(d.usableBytes)), num(fmtBytes(d.totalBytes)), el("td", {class: d.error ? "bad" : ""}, d.error || "-"))));
    // Overrides first (set on this broker, then on every broker, then in
    // its properties file), then defaults.
    const rank = c => ({DYNAMIC_BROKER_CONFIG: 0, DYNAMIC_DEFAULT_BROKER_CONFIG: 1, STATIC_BROKER_CONFIG: 2, DEFAULT_CONFIG: 4})[c.source] ?? 3;
    const configs = b.configs.slice().sort((x, y) => rank(x) - rank(y) || x.name.localeCompare(y.name));
    configsBox.replaceChildren(el("h2", {}, "Configs"),
      b.configsError ? el("p", {class: "error", id: "broker-configs-error"}, "Configs unknown: " + b.configsError)
        : table("broker-configs", ["Name", "Value", "Source"], configs.map(c => el("tr", {"data-config": c.name},
          el("td", {}, c.name), el("td", {class: "data"}, c.value), el("td", {class: c.source === "DEFAULT_CONFIG" ? "muted" : ""}, c.source)))));
    return el("div", {},
      el("div", {class: "cards"}, card("Address", b.host + ":" + b.port), card("Rack", b.rack || "-"),
        card("State", b.fenced ? "fenced (down)" : "up", b.fenced ? "bad" : "ok"),
        card("Active controller", b.controller ? "this broker" : b.controllerId >= 0 ? "node " + b.controllerId : "unknown"),
        card("Replicas", fmtNum(b.partitions.total))),
      el("h2", {}, "Log directories"), dirs);
  }, 10000);
  main.append(el("h2", {}, "Partitions"));
  const list = pagedList({id: "broker-partitions", path, state: brokerPartitionsState, everyMs: 10000, placeholder: "filter by topic",
    empty: "The broker hosts no partition.", pick: b => b.partitions,
    columns: [["Topic", "topic"], ["Partition", null, "num"], ["Role", "role"], ["Leader", null, "num"], ["In sync", null], ["Size", "size", "num"]],
    row: p => el("tr", {"data-topic": p.topic, "data-partition": p.partition},
      el("td", {}, topicLink(p.topic)), num(p.partition), el("td", {class: p.role === "leader" ? "ok" : ""}, p.role),
      num(p.leader < 0 ? "none" : p.leader), el("td", {class: p.inSync ? "" : "warn"}, p.offline ? "offline" : p.inSync ? "yes" : "no"),
      num(fmtBytes(p.size)))});
  main.append(el("div", {class: "toolbar"}, list.filter), list.box, configsBox);
}

// chartBox is a line chart on a canvas: series of samples over time, the
// y axis in round steps.
function chartBox(title, series) {
  const canvas = el("canvas", {});
  const box = el("div", {class: "chart"}, el("div", {}, title),
    el("div", {class: "legend"}, series.map(([name, color]) => el("span", {}, el("i", {style: "background:" + color}), name))),
    canvas);
  function draw(samples, getters, unit) {
    const dpr = window.devicePixelRatio || 1;
    const w = canvas.clientWidth || 400, h = canvas.clientHeight || 180;
    canvas.width = w * dpr; canvas.height = h * dpr;
    const g = canvas.getContext("2d");
    g.scale(dpr, dpr);
    g.clearRect(0, 0, w, h);
    const left = 56, right = 8, top = 8, bottom = 20;
    let maxV = 0;
    for (const s of samples) for (const get of getters) { const v = get(s); if (v !== null && v > maxV) maxV = v; }
    const scale = niceScale(maxV);
    maxV = scale.top;
    const t1 = samples.length ? samples[samples.length - 1].t : Date.now();
    const span = 5 * 60 * 1000, t0 = t1 - span;
    const x = t => left + (w - left - right) * (t - t0) / span;
    const y = v => top + (h - top - bottom) * (1 - v / maxV);
    g.font = "11px system-ui, sans-serif";
    g.fillStyle = "#6b7385"; g.strokeStyle = "#dde1e8"; g.lineWidth = 1;
    for (let i = 0; i * scale.step <= maxV * (1 + 1e-9); i++) {
      const v = i * scale.step, yy = Math.round(y(v)) + 0.5;
      g.beginPath(); g.moveTo(left, yy); g.lineTo(w - right, yy); g.stroke();
      g.fillText(fmtRate(v, unit), 2, yy + 4);
    }
    for (let m = 0; m <= 5; m++) {
      const t = t1 - m * 60000;
      g.fillText(m === 0 ? "now" : "-" + m + "m", x(t) - (m === 0 ? 20 : 8), h - 4);
    }
    getters.forEach((get, i) => {
      g.strokeStyle = series[i][1]; g.lineWidth = 1.5; g.beginPath();
      // A sample without a value (not measured: the records rate while
      // nobody watched) is skipped, not a gap: the line joins the
      // measured ones.
      let drawing = false;
      for (const s of samples) {
        const v = get(s);
        if (v === null || v === undefined) continue;
        if (s.t < t0) { drawing = false; continue; }
        if (drawing) g.lineTo(x(s.t), y(v)); else g.moveTo(x(s.t), y(v));
        drawing = true;
      }
      g.stroke();
    });
  }
  return {box, draw};
}

// ---- Topics ----

let showInternal = false; // the topics list's toggle, kept across refreshes
const topicsState = listState("name");

// viewTopics lists a page of the topics: the server names them all from
// Metadata and asks offsets and sizes for the page's topics only, so the
// page stays quick with thousands of topics.
function viewTopics() {
  main.append(el("h1", {}, "Topics"));
  const toggle = el("input", {type: "checkbox", id: "show-internal", checked: showInternal});
  const createBox = el("div", {hidden: true});
  const newTopic = sessionInfo.actions ? el("button", {id: "new-topic", onclick: () => { createBox.hidden = !createBox.hidden; }}, "New topic") : null;
  const list = pagedList({id: "topics", path: "topics", state: topicsState, everyMs: 5000, empty: "No topics yet.",
    params: () => ({internal: showInternal}),
    columns: [["Topic", "name"], ["Partitions", "partitions", "num"], ["Replication", "replicationFactor", "num"], ["Records", null, "num"],
      ["Size", null, "num"], ["Under-replicated", "underReplicated", "num"], ["Offline", "offline", "num"]],
    row: t => el("tr", {"data-topic-row": t.name},
      el("td", {}, topicLink(t.name), t.internal ? el("span", {class: "tag"}, "internal") : null),
      num(t.partitions), num(t.replicationFactor), num(fmtNum(t.records)), num(fmtBytes(t.size)),
      el("td", {class: "num " + (t.underReplicated ? "warn" : "")}, t.underReplicated),
      el("td", {class: "num " + (t.offline ? "bad" : "")}, t.offline))});
  toggle.addEventListener("change", () => { showInternal = toggle.checked; topicsState.offset = 0; list.refresh(); });
  main.append(el("div", {class: "toolbar"}, list.filter, el("label", {}, toggle, " show internal topics"), newTopic));
  if (sessionInfo.actions) {
    createBox.append(createTopicForm());
    main.append(createBox);
  } else {
    main.append(actionsNote());
  }
  main.append(list.box);
}

// createTopicForm creates a topic and opens its page; blank partitions or
// replication factor are the broker's defaults.
function createTopicForm() {
  const name = el("input", {id: "create-name", required: true});
  const partitions = el("input", {id: "create-partitions", inputmode: "numeric", placeholder: "num.partitions"});
  const rf = el("input", {id: "create-rf", inputmode: "numeric", placeholder: "default.replication.factor"});
  const configs = el("textarea", {id: "create-configs", rows: 3, placeholder: "key=value, one a line (optional)"});
  return actionForm("create-topic",
    [["Name", name], ["Partitions", partitions], ["Replication factor", rf], ["Configs", configs]],
    [el("button", {id: "create-submit", type: "submit"}, "Create topic")],
    async () => {
      const t = await post("topics", {name: name.value, partitions: partitions.value, replicationFactor: rf.value, configs: configs.value});
      location.hash = "#/topics/" + encodeURIComponent(t.name);
    });
}

function viewTopic(name) {
  main.append(el("h1", {}, "Topic ", el("span", {id: "topic-name"}, name)));
  const path = "topics/" + encodeURIComponent(name);
  const browse = recordBrowser(name);
  browse.box.hidden = true; // shown once the topic is known to exist
  const actions = sessionInfo.actions ? topicActions(name, browse) : null;
  const refreshTopic = section(main, () => api(path), t => {
    browse.box.hidden = false;
    if (actions) actions.shown();
    const parts = [el("div", {class: "cards"},
      card("Partitions", t.partitions), card("Replication factor", t.replicationFactor),
      card("Records", fmtNum(t.records)), card("Size (one copy)", fmtBytes(t.size)),
      card("Under-replicated", t.underReplicated, t.underReplicated ? "warn" : ""),
      card("Offline", t.offline, t.offline ? "bad" : ""), card("Topic id", t.id))];
    parts.push(el("h2", {}, "Partitions"));
    parts.push(table("topic-partitions", [["Partition", "num"], ["Leader", "num"], ["Epoch", "num"], "Replicas", "ISR",
      ["Start offset", "num"], ["End offset", "num"], ["Size", "num"], ""],
      t.partitionList.map(p => el("tr", {"data-partition": p.partition},
        num(p.partition), el("td", {class: "num " + (p.leader < 0 ? "bad" : "")}, p.leader < 0 ? "none" : p.leader), num(p.leaderEpoch),
        el("td", {}, ids(p.replicas)), el("td", {class: p.isr.length < p.replicas.length ? "warn" : ""}, ids(p.isr)),
        num(fmtOffset(p.startOffset)), num(fmtOffset(p.endOffset)), num(fmtBytes(p.size)),
        el("td", {}, el("a", {href: "#", onclick: e => { e.preventDefault(); browse.show(p.partition, "latest"); }}, "browse"))))));
    parts.push(el("h2", {}, "Consumer groups"));
    parts.push(t.groups.length ? table("topic-groups", ["Group", "State", ["Lag", "num"]],
      t.groups.map(g => el("tr", {}, el("td", {}, groupLink(g.group)), el("td", {}, g.state),
        el("td", {class: "num", "data-group-lag": g.group}, fmtNum(g.lag)))))
      : el("p", {class: "muted"}, "No group has committed offsets on this topic."));
    return el("div", {}, parts);
  }, 5000);
  main.append(browse.box);
  if (actions) main.append(actions.produce);
  else main.append(actionsNote());
  // Configs change rarely and make a long table: below the records, on a
  // slower refresh.
  // A failure is shown once, by the section above.
  const configsBox = el("div");
  main.append(configsBox);
  const refreshConfigs = section(configsBox, () => api(path).then(t => t.configs, () => null), configs => {
    if (!configs) return el("div");
    // Overrides first (the topic's, then the broker's), then defaults.
    const rank = c => c.source === "DYNAMIC_TOPIC_CONFIG" ? 0 : c.source === "DEFAULT_CONFIG" ? 2 : 1;
    configs = configs.slice().sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name));
    const nonDefault = configs.filter(c => c.source !== "DEFAULT_CONFIG");
    return el("div", {}, el("h2", {}, "Configs"),
      el("p", {class: "muted"}, nonDefault.length + " set on the topic or broker, " + (configs.length - nonDefault.length) + " defaults"),
      actions ? actions.editConfig : null,
      table("topic-configs", ["Name", "Value", "Source", ""], configs.map(c => el("tr", {"data-config": c.name},
        el("td", {}, c.name), el("td", {class: "data"}, c.value),
        el("td", {class: c.source === "DEFAULT_CONFIG" ? "muted" : ""}, c.source),
        el("td", {}, actions ? el("a", {href: "#", class: "edit", onclick: e => { e.preventDefault(); actions.edit(c); }}, "edit") : null)))));
  }, 30000);
  if (actions) {
    actions.refreshTopic = refreshTopic;
    actions.refreshConfigs = refreshConfigs;
    main.append(actions.partitions);
    main.append(actions.remove);
  }
}

// topicActions are a topic page's forms: produce a test record, set or
// delete a config, delete the topic (its name typed to confirm). They
// show once the topic is known to exist.
function topicActions(name, browse) {
  const path = "topics/" + encodeURIComponent(name) + "/";
  const a = {refreshTopic: null, refreshConfigs: null}; // the page's sections, redrawn after an action

  const partition = el("input", {id: "produce-partition", inputmode: "numeric", placeholder: "by key, or any"});
  const key = el("input", {id: "produce-key", placeholder: "empty: no key (null)"});
  const value = el("textarea", {id: "produce-value", rows: 3});
  const headers = el("textarea", {id: "produce-headers", rows: 2, placeholder: "key=value, one a line (optional)"});
  a.produce = el("div", {hidden: true}, el("h2", {}, "Produce a test record"), actionForm("produce",
    [["Partition", partition], ["Key", key], ["Value", value], ["Headers", headers]],
    [el("button", {id: "produce-submit", type: "submit"}, "Produce")],
    async () => {
      const r = await post(path + "produce", {partition: partition.value, key: key.value === "" ? null : key.value,
        value: value.value, headers: headers.value});
      if (a.refreshTopic) a.refreshTopic(); // the partition's end offset
      return ["Produced to partition " + r.partition + " at offset " + r.offset + ". ",
        el("a", {href: "#", id: "produce-show", onclick: e => { e.preventDefault(); browse.show(r.partition, String(r.offset)); }}, "show it")];
    }));

  const cfgName = el("input", {id: "config-name", required: true, placeholder: "e.g. retention.ms"});
  const cfgValue = el("input", {id: "config-value"});
  a.editConfig = actionForm("config-edit", [["Config", cfgName], ["Value", cfgValue]],
    [el("button", {id: "config-set", type: "submit", value: "set"}, "Set"),
      el("button", {id: "config-delete", type: "submit", value: "delete", title: "remove the topic's value: back to the broker's"}, "Delete key")],
    async which => {
      const del = which === "delete";
      await post(path + "configs", del ? {name: cfgName.value, delete: true} : {name: cfgName.value, value: cfgValue.value});
      if (a.refreshConfigs) a.refreshConfigs();
      return del ? "Deleted " + cfgName.value + " from the topic's configs." : "Set " + cfgName.value + ".";
    });
  a.edit = c => {
    cfgName.value = c.name;
    cfgValue.value = c.sensitive ? "" : c.value;
    a.editConfig.scrollIntoView();
    cfgValue.focus();
  };

  const confirm = el("input", {id: "delete-confirm", autocomplete: "off", placeholder: name});
  const doDelete = el("button", {id: "delete-submit", type: "submit", class: "danger", disabled: true}, "Delete topic " + name);
  confirm.addEventListener("input", () => { doDelete.disabled = confirm.value !== name; });
  const form = actionForm("delete-topic", [["Type the topic's name to delete it and all its records", confirm]], [doDelete], async () => {
    await post(path + "delete", {confirm: confirm.value});
    location.hash = "#/topics";
  });
  form.hidden = true;
  a.remove = el("div", {hidden: true}, el("h2", {}, "Delete"),
    el("button", {id: "delete-topic-start", class: "danger", onclick: () => { form.hidden = false; confirm.focus(); }}, "Delete topic…"), form);

  const count = el("input", {id: "partitions-count", inputmode: "numeric", required: true, placeholder: "the new partition count"});
  a.partitions = el("div", {hidden: true}, el("h2", {}, "Partitions"), actionForm("add-partitions", [["New partition count", count]],
    [el("button", {id: "partitions-submit", type: "submit"}, "Add partitions")],
    async () => {
      const r = await post(path + "partitions", {count: count.value});
      if (a.refreshTopic) a.refreshTopic();
      return "The topic has " + r.partitions + " partitions.";
    }),
  actionForm("elect-leaders", [],
    [el("button", {id: "elect-preferred", type: "submit", value: "preferred", title: "make each partition's first in-sync replica its leader"}, "Elect preferred leaders"),
      el("button", {id: "elect-unclean", type: "submit", value: "unclean", class: "danger", title: "let an out-of-sync replica lead a leaderless partition: records only the old leader had are lost"}, "Unclean election")],
    async which => {
      const r = await post(path + "elect", {type: which});
      if (a.refreshTopic) a.refreshTopic();
      const counts = {};
      r.partitions.forEach(p => { counts[p.result] = (counts[p.result] || 0) + 1; });
      return el("span", {}, Object.entries(counts).map(([res, n]) => el("div", {class: res === "elected" || res === "not needed" ? "" : "bad"},
        n + " partition" + (n === 1 ? "" : "s") + ": " + res)));
    }));

  a.shown = () => { a.produce.hidden = false; a.partitions.hidden = false; a.remove.hidden = false; };
  return a;
}

// showHex shows text keys, values and headers as the hex of their bytes
// too (binary ones always are); the record tables' toggle.
let showHex = false;

// bytesCell shows a key, value or header value (records.go's bytesView):
// null as null, binary as hex, JSON pretty-printed, text as it is.
function bytesCell(b) {
  if (b === null) return el("span", {class: "muted"}, "null");
  const tags = [b.encoding === "hex" ? el("span", {class: "tag"}, "hex") : null,
    b.truncated ? el("span", {class: "tag"}, "first of " + fmtBytes(b.size)) : null];
  if (b.encoding === "text" && showHex) {
    const hex = Array.from(new TextEncoder().encode(b.data), x => x.toString(16).padStart(2, "0")).join("");
    return el("span", {}, hex, el("span", {class: "tag"}, "hex"), tags[1]);
  }
  if (b.encoding === "text" && !b.truncated && /^\s*[[{]/.test(b.data)) {
    try {
      return el("span", {}, el("pre", {class: "json"}, JSON.stringify(JSON.parse(b.data), null, 2)), el("span", {class: "tag"}, "json"));
    } catch (e) { /* not JSON after all: as text */ }
  }
  return el("span", {}, b.data, tags);
}

function recordsTable(id, records, withPartition) {
  return table(id, [...(withPartition ? [["Partition", "num"]] : []), ["Offset", "num"], "Timestamp", "Key", "Value", "Headers"],
    records.map(rec => el("tr", {"data-offset": rec.offset, "data-partition": rec.partition},
      ...(withPartition ? [num(rec.partition)] : []),
      num(rec.offset), el("td", {}, new Date(rec.timestamp).toISOString()),
      el("td", {class: "data"}, bytesCell(rec.key)), el("td", {class: "data"}, bytesCell(rec.value)),
      el("td", {class: "data"}, rec.headers.map(h => el("div", {}, h.key + ": ", bytesCell(h.value)))))));
}

// hexToggle is the checkbox that redraws the record tables with showHex.
function hexToggle(redraw) {
  const box = el("input", {type: "checkbox", class: "hex-toggle", checked: showHex});
  box.addEventListener("change", () => {
    showHex = box.checked;
    document.querySelectorAll(".hex-toggle").forEach(b => { b.checked = showHex; });
    redraw();
  });
  return el("label", {}, box, " text as hex");
}

// recordBrowser reads a few records of a partition on demand (never on a
// timer: it is the reader's page).
function recordBrowser(topic) {
  const partition = el("input", {type: "number", min: 0, value: 0, id: "browse-partition", style: "width:6em"});
  const offset = el("input", {type: "text", value: "latest", id: "browse-offset", style: "width:8em"});
  const limit = el("input", {type: "number", min: 1, max: 100, value: 20, id: "browse-limit", style: "width:5em"});
  const out = el("div", {id: "browse-out"});
  let last = null; // the last answer, redrawn by the hex toggle
  const search = recordSearch(topic);
  const box = el("div", {},
    el("h2", {}, "Records"),
    el("div", {class: "toolbar"},
      el("label", {}, "partition ", partition), el("label", {}, "from offset ", offset),
      el("label", {}, "count ", limit),
      el("button", {id: "browse-go", onclick: () => load()}, "Read"),
      el("button", {onclick: () => { offset.value = "earliest"; load(); }}, "Earliest"),
      el("button", {onclick: () => { offset.value = "latest"; load(); }}, "Latest"),
      hexToggle(() => { if (last) draw(last); search.redraw(); })),
    out, search.box);
  function draw(r) {
    const next = r.records.length ? r.records[r.records.length - 1].offset + 1 : r.from;
    out.replaceChildren(
      el("p", {class: "muted"}, "Partition " + r.partition + ": offsets " + r.startOffset + " to " + r.endOffset +
        "; showing " + r.records.length + " from " + r.from + ". "),
      r.records.length ? recordsTable("records", r.records, false) : el("p", {class: "muted"}, "No records there."),
      ...(next < r.endOffset ? [el("p", {}, el("button", {onclick: () => { offset.value = String(next); load(); }}, "Next"))] : []));
  }
  async function load() {
    const q = new URLSearchParams({partition: partition.value, offset: offset.value, limit: limit.value});
    out.replaceChildren(el("p", {class: "muted"}, "reading…"));
    try {
      last = await api("topics/" + encodeURIComponent(topic) + "/records?" + q);
      draw(last);
    } catch (e) {
      last = null;
      out.replaceChildren(el("p", {class: "error"}, e.message));
    }
  }
  return {box, show(p, from) { partition.value = p; offset.value = from; load(); box.scrollIntoView(); }};
}

// datetimeMillis reads a datetime-local input as ms since the epoch (the
// browser's time zone), "" when empty.
function datetimeMillis(input) {
  if (!input.value) return "";
  const ms = new Date(input.value).getTime();
  return isNaN(ms) ? input.value : String(ms);
}

// recordSearch searches the topic (search.go): every partition or one, an
// offset or time range, key/value substrings (or regular expressions) and
// a header. The server reads on a budget and says how far it got; Continue
// carries on from there, Download saves the matches as JSON lines.
function recordSearch(topic) {
  const path = "topics/" + encodeURIComponent(topic) + "/records";
  const f = {
    partition: el("input", {id: "search-partition", placeholder: "all", style: "width:5em"}),
    offset: el("input", {id: "search-offset", placeholder: "earliest", style: "width:7em"}),
    endOffset: el("input", {id: "search-end-offset", placeholder: "the end", style: "width:7em"}),
    fromTime: el("input", {id: "search-from-time", type: "datetime-local", step: 1}),
    toTime: el("input", {id: "search-to-time", type: "datetime-local", step: 1}),
    key: el("input", {id: "search-key", placeholder: "contains"}),
    value: el("input", {id: "search-value", placeholder: "contains"}),
    header: el("input", {id: "search-header", placeholder: "name or name=value"}),
    regex: el("input", {id: "search-regex", type: "checkbox"}),
    maxScan: el("input", {id: "search-max-scan", type: "number", min: 1, max: 100000, value: 10000, style: "width:7em"}),
  };
  const out = el("div", {id: "search-out"});
  let state = null; // {params, records, scanned, bytes, total, last}
  function params() {
    const q = {partition: f.partition.value.trim() || "all", offset: f.offset.value.trim(), endOffset: f.endOffset.value.trim(),
      fromTime: datetimeMillis(f.fromTime), toTime: datetimeMillis(f.toTime), key: f.key.value, value: f.value.value,
      header: f.header.value, regex: f.regex.checked ? "true" : "", maxScan: f.maxScan.value, limit: 100};
    for (const k of Object.keys(q)) if (q[k] === "") delete q[k];
    return q;
  }
  async function run(cont) {
    if (!cont) state = {params: params(), records: [], scanned: 0, bytes: 0, total: null, last: null};
    const q = Object.assign({}, state.params, cont ? {cursor: state.last.search.cursor} : {});
    const running = el("p", {class: "muted", id: "search-running"}, "searching…");
    if (cont) out.append(running); else out.replaceChildren(running);
    try {
      const r = await api(path + "?" + new URLSearchParams(q));
      if (state.total === null) state.total = r.search.scanned + r.search.remaining;
      state.scanned += r.search.scanned;
      state.bytes += r.search.scannedBytes;
      state.records = state.records.concat(r.records);
      state.last = r;
      draw();
    } catch (e) {
      out.replaceChildren(el("p", {class: "error", id: "search-error"}, e.message));
    }
  }
  const why = {limit: "100 matches shown", records: "the scan budget of records", bytes: "the scan budget of bytes", time: "the time budget"};
  function draw() {
    if (!state || !state.last) return;
    const s = state.last.search;
    // The download runs the search again from its start, on the largest
    // budget: up to 10,000 matches in up to 100,000 records read.
    const dl = Object.assign({}, state.params, {format: "jsonl", maxScan: 100000});
    delete dl.limit;
    const download = "/api/" + path + "?" + new URLSearchParams(dl);
    out.replaceChildren(
      el("p", {id: "search-progress"}, "Scanned " + fmtNum(state.scanned) + " of " + fmtNum(state.total) + " records (" + fmtBytes(state.bytes) +
        "); found " + fmtNum(state.records.length) + ". ",
        s.done ? "The whole range is read." : "Stopped at " + (why[s.stopped] || s.stopped) + "; " + fmtNum(s.remaining) + " left. ",
        s.done ? null : el("button", {id: "search-continue", onclick: () => run(true)}, "Continue"), " ",
        el("a", {id: "search-download", href: download, download: topic + ".jsonl",
          title: "the search from its start: up to 10,000 matches in up to 100,000 records read"}, "Download matches as JSON lines")),
      state.records.length ? recordsTable("search-results", state.records, true) : el("p", {class: "muted", id: "search-none"}, "No record matched yet."));
  }
  const form = el("form", {class: "search", id: "search-form", onsubmit: e => { e.preventDefault(); run(false); }},
    el("div", {class: "toolbar"},
      el("label", {}, "partition ", f.partition), el("label", {}, "offsets from ", f.offset), el("label", {}, "before ", f.endOffset),
      el("label", {}, "time from ", f.fromTime), el("label", {}, "to ", f.toTime)),
    el("div", {class: "toolbar"},
      el("label", {}, "key ", f.key), el("label", {}, "value ", f.value), el("label", {}, "header ", f.header),
      el("label", {}, f.regex, " key and value are regular expressions"),
      el("label", {}, "read at most ", f.maxScan, " records a step"),
      el("button", {id: "search-submit", type: "submit"}, "Search")));
  const box = el("div", {id: "record-search"}, el("h2", {}, "Search records"), form, out);
  return {box, redraw: draw};
}

// ---- Groups ----

const groupsState = listState("group");
let groupsType = ""; // the groups list's type filter

// viewGroups lists a page of the groups (consumer, classic and share):
// ListGroups names them all, the page's groups are described.
function viewGroups() {
  main.append(el("h1", {}, "Consumer groups"));
  const type = el("select", {id: "groups-type"}, [["", "every type"], ["classic", "classic"], ["consumer", "consumer"], ["share", "share"]]
    .map(([v, label]) => el("option", {value: v, selected: v === groupsType}, label)));
  const list = pagedList({id: "groups", path: "groups", state: groupsState, everyMs: 5000, empty: "No consumer groups.",
    params: () => ({type: groupsType}),
    columns: [["Group", "group"], ["State", "state"], ["Type", "type"], ["Members", null, "num"], ["Lag", null, "num"], ["Coordinator", "coordinator", "num"]],
    row: g => el("tr", {}, el("td", {}, groupLink(g.group)), el("td", {}, g.state),
      el("td", {}, g.type || g.protocolType || "-"), num(g.members),
      el("td", {class: "num", "data-group-lag": g.group}, g.error ? el("span", {class: "bad", title: g.error}, "error") : fmtNum(g.lag)),
      num(g.coordinator))});
  type.addEventListener("change", () => { groupsType = type.value; groupsState.offset = 0; list.refresh(); });
  main.append(el("div", {class: "toolbar"}, list.filter, el("label", {}, "type ", type)), list.box);
}

function viewGroup(name) {
  main.append(el("h1", {}, "Consumer group ", el("span", {id: "group-name"}, name)));
  let actions = null;
  const refresh = section(main, () => api("groups/" + encodeURIComponent(name)), g => {
    // A share group commits no offsets: nothing to reset.
    if (actions) actions.showReset(g.type !== "share");
    return g.type === "share" ? shareGroupView(g) : el("div", {},
    el("div", {class: "cards"}, card("State", g.state), card("Members", g.members.length),
      card("Total lag", fmtNum(g.totalLag), g.totalLag > 0 ? "warn" : "ok"),
      card("Assignor", g.assignor || "-"), card("Coordinator", g.coordinator)),
    el("h2", {}, "Members"),
    membersTable(g),
    el("h2", {}, "Offsets and lag"),
    g.offsets.length ? table("group-offsets", ["Topic", ["Partition", "num"], ["Committed", "num"], ["End offset", "num"], ["Lag", "num"], "Member"],
      g.offsets.map(o => el("tr", {"data-topic": o.topic, "data-partition": o.partition},
        el("td", {}, topicLink(o.topic)), num(o.partition), num(fmtOffset(o.committed)), num(fmtOffset(o.endOffset)),
        el("td", {class: "num lag " + (o.lag > 0 ? "warn" : "")}, fmtOffset(o.lag)),
        el("td", {class: "data"}, o.memberId ? o.clientId + " (" + o.host + ")" : "-"))))
      : el("p", {class: "muted"}, "No committed offsets."));
  }, 5000);
  if (sessionInfo.actions) main.append(actions = groupActions(name, refresh));
  else main.append(actionsNote());
}

// membersTable lists a group's members and the partitions assigned to each.
function membersTable(g) {
  return g.members.length ? table("group-members", ["Member id", "Client id", "Host", "Assigned partitions"],
    g.members.map(m => el("tr", {}, el("td", {class: "data"}, m.memberId, m.instanceId ? el("span", {class: "tag"}, "static " + m.instanceId) : null),
      el("td", {}, m.clientId), el("td", {}, m.host),
      el("td", {}, m.assigned.length ? m.assigned.map(a => el("div", {}, topicLink(a.topic), " " + a.partitions.join(","))) : "-"))))
    : el("p", {class: "muted"}, "The group has no active members.");
}

// shareGroupView is a share group's page (KIP-932): its members, and the
// partitions they read together, each with every member assigned it.
function shareGroupView(g) {
  return el("div", {},
    el("div", {class: "cards"}, card("Type", "share"), card("State", g.state), card("Members", g.members.length),
      card("Assignor", g.assignor || "-"), card("Coordinator", g.coordinator)),
    el("h2", {}, "Members"),
    membersTable(g),
    el("h2", {}, "Partitions"),
    g.sharePartitions && g.sharePartitions.length ? table("share-partitions", ["Topic", ["Partition", "num"], ["Start offset", "num"], ["End offset", "num"], ["Lag", "num"], "Members"],
      g.sharePartitions.map(p => el("tr", {"data-topic": p.topic, "data-partition": p.partition},
        el("td", {}, topicLink(p.topic)), num(p.partition), num(fmtOffset(p.startOffset)), num(fmtOffset(p.endOffset)),
        el("td", {class: "num lag " + (p.lag > 0 ? "warn" : "")}, fmtOffset(p.lag)),
        el("td", {class: "data"}, p.members.length ? p.members.join(", ") : "-"))))
      : el("p", {class: "muted"}, "No partition is assigned."),
    g.shareOffsetsError ? el("p", {class: "muted", id: "share-offsets-error"}, "Start offsets and lag unknown: " + g.shareOffsetsError) : null);
}

// groupActions are a group page's forms (showReset hides the first, for a
// share group): reset its committed offsets (the
// plan first: Preview is a dry run, as kafka-consumer-groups without
// --execute) and delete the group (its id typed to confirm). The broker
// and the tool refuse both while the group has members.
function groupActions(name, refresh) {
  const path = "groups/" + encodeURIComponent(name) + "/";
  const topic = el("input", {id: "reset-topic", placeholder: "empty: every topic with a commit"});
  const to = el("select", {id: "reset-to"}, ["earliest", "latest", "offset", "datetime", "shift"].map(v => el("option", {value: v}, v)));
  const value = el("input", {id: "reset-value", placeholder: "offset, time (RFC 3339 or ms) or shift"});
  const plan = el("div", {id: "reset-plan"});
  const reset = actionForm("reset-offsets", [["Topic", topic], ["Reset to", to], ["Value", value]],
    [el("button", {id: "reset-preview", type: "submit", value: "preview"}, "Preview"),
      el("button", {id: "reset-execute", type: "submit", value: "execute", class: "danger"}, "Reset offsets")],
    async which => {
      const execute = which === "execute";
      const r = await post(path + "reset-offsets", {topic: topic.value, to: to.value, value: value.value, execute});
      plan.replaceChildren(table("reset-offsets-plan", ["Topic", ["Partition", "num"], ["Committed", "num"], ["New offset", "num"]],
        r.offsets.map(o => el("tr", {"data-topic": o.topic, "data-partition": o.partition},
          el("td", {}, o.topic), num(o.partition), num(fmtOffset(o.current)), num(o.new)))));
      if (execute) refresh();
      return execute ? "Committed " + r.offsets.length + " new offsets." : "Dry run: nothing was committed.";
    });
  const confirm = el("input", {id: "group-delete-confirm", autocomplete: "off", placeholder: name});
  const doDelete = el("button", {id: "group-delete-submit", type: "submit", class: "danger", disabled: true}, "Delete group " + name);
  confirm.addEventListener("input", () => { doDelete.disabled = confirm.value !== name; });
  const remove = actionForm("delete-group", [["Type the group's id to delete it and its committed offsets", confirm]], [doDelete], async () => {
    await post(path + "delete", {confirm: confirm.value});
    location.hash = "#/groups";
  });
  const resetPart = el("div", {id: "group-reset"}, el("h2", {}, "Reset offsets"), reset, plan);
  const out = el("div", {}, resetPart, el("h2", {}, "Delete"), remove);
  out.showReset = on => { resetPart.hidden = !on; };
  return out;
}

// ---- Security: ACLs and client quotas, as the visitor may see them ----

function viewSecurity() {
  main.append(el("h1", {}, "Security"));
  section(main, () => api("security"), s => el("div", {},
    el("h2", {}, "ACLs"),
    s.acls.disabled ? el("p", {id: "acls-disabled", class: "muted"}, "No authorizer is configured (authorizer.class.name): every principal may do everything.")
      : s.acls.error ? el("p", {id: "acls-error", class: "error"}, s.acls.error)
      : s.acls.items.length ? table("acls", ["Principal", "Host", "Resource type", "Resource", "Pattern", "Operation", "Permission"],
        s.acls.items.map(a => el("tr", {"data-principal": a.principal},
          el("td", {}, a.principal), el("td", {}, a.host), el("td", {}, a.resourceType), el("td", {class: "data"}, a.resource),
          el("td", {}, a.patternType), el("td", {}, a.operation),
          el("td", {class: a.permission === "DENY" ? "bad" : "ok"}, a.permission))))
      : el("p", {class: "muted"}, "No ACLs."),
    el("h2", {}, "Client quotas"),
    s.quotas.error ? el("p", {id: "quotas-error", class: "error"}, s.quotas.error)
      : s.quotas.items.length ? table("quotas", ["Entity", "Quotas"],
        s.quotas.items.map(q => el("tr", {"data-entity": q.entity}, el("td", {class: "data"}, q.entity),
          el("td", {}, Object.keys(q.values).sort().map(k => k + "=" + q.values[k]).join(", ")))))
      : el("p", {class: "muted"}, "No client quotas.")), 10000);
}

// ---- Login: when the broker listener requires SASL, the console reads
// the cluster as the visitor, who logs in with their own credentials ----

let sessionInfo = {login: false}; // /api/session: must the visitor log in, as whom, with which mechanisms; may the console act
let loginShown = false;

function clearView() {
  timers.forEach(clearInterval);
  timers = [];
  viewToken++;
  main.replaceChildren();
}

function showSession() {
  const box = document.getElementById("session");
  if (!sessionInfo.login || !sessionInfo.user) { box.replaceChildren(); return; }
  box.replaceChildren(el("span", {id: "session-user"}, sessionInfo.user),
    el("button", {id: "logout", onclick: async () => {
      try { await post("logout"); } catch (e) { /* the session is gone either way */ }
      sessionInfo.user = "";
      showSession();
      showLogin();
    }}, "Log out"));
}

function showLogin() {
  clearView();
  loginShown = true;
  sessionInfo.user = "";
  showSession();
  const user = el("input", {id: "login-user", name: "username", autocomplete: "username", required: true});
  const password = el("input", {id: "login-password", name: "password", type: "password", autocomplete: "current-password"});
  const mechanism = el("select", {id: "login-mechanism"}, (sessionInfo.mechanisms || []).map(m => el("option", {value: m}, m)));
  const error = el("p", {id: "login-error", class: "error", hidden: true});
  const form = el("form", {class: "login", id: "login"},
    el("label", {for: "login-user"}, "User"), user,
    el("label", {for: "login-password"}, "Password"), password,
    el("label", {for: "login-mechanism"}, "Mechanism"), mechanism,
    el("button", {id: "login-submit", type: "submit"}, "Log in"), error);
  form.addEventListener("submit", async e => {
    e.preventDefault();
    error.hidden = true;
    try {
      const r = await post("login", {user: user.value, password: password.value, mechanism: mechanism.value});
      sessionInfo.user = r.user;
      loginShown = false;
      showSession();
      route();
    } catch (err) {
      password.value = "";
      error.textContent = err.message;
      error.hidden = false;
    }
  });
  main.append(el("h1", {}, "Log in"),
    el("p", {class: "muted"}, "The broker listener " + (sessionInfo.listener || "") +
      " requires authentication: the console reads the cluster as you, with your permissions."),
    form);
  user.focus();
}

// ---- Routing: #/, #/brokers/ID, #/topics, #/topics/NAME, #/groups, #/groups/NAME, #/security ----

function route() {
  if (sessionInfo.login && !sessionInfo.user) { showLogin(); return; }
  clearView();
  const parts = location.hash.replace(/^#\/?/, "").split("/");
  const [kind, arg] = [parts[0], parts.length > 1 ? decodeURIComponent(parts.slice(1).join("/")) : ""];
  document.querySelectorAll("[data-nav]").forEach(a => a.classList.toggle("active", a.dataset.nav === (kind === "brokers" ? "overview" : kind || "overview")));
  if (kind === "brokers" && arg) viewBroker(arg);
  else if (kind === "topics" && arg) viewTopic(arg);
  else if (kind === "topics") viewTopics();
  else if (kind === "groups" && arg) viewGroup(arg);
  else if (kind === "groups") viewGroups();
  else if (kind === "security") viewSecurity();
  else viewOverview();
}

window.addEventListener("hashchange", route);
fetch("/api/session", {cache: "no-store"}).then(r => r.json()).catch(() => ({login: false})).then(s => {
  sessionInfo = s;
  showSession();
  route();
  if (!s.login || s.user) {
    api("cluster").then(c => { document.getElementById("cluster-id").textContent = "cluster " + c.clusterId; }).catch(() => {});
  }
});
