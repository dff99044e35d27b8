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

// ---- Cluster: brokers, quorum, throughput ----

function viewOverview() {
  main.append(el("h1", {}, "Cluster"));
  section(main, () => api("cluster"), c => {
    document.getElementById("cluster-id").textContent = "cluster " + c.clusterId;
    // A fenced broker is registered but not serving: killed, shut down or
    // still catching up.
    const brokers = c.brokers.map(b => el("tr", {"data-broker": b.id, class: b.fenced ? "fenced" : ""},
      num(b.id), el("td", {}, b.host + ":" + b.port), el("td", {}, b.rack || "-"),
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

function viewTopics() {
  main.append(el("h1", {}, "Topics"));
  const toggle = el("input", {type: "checkbox", id: "show-internal", checked: showInternal});
  toggle.addEventListener("change", () => { showInternal = toggle.checked; route(); });
  const createBox = el("div", {hidden: true});
  const newTopic = sessionInfo.actions ? el("button", {id: "new-topic", onclick: () => { createBox.hidden = !createBox.hidden; }}, "New topic") : null;
  main.append(el("div", {class: "toolbar"}, el("label", {}, toggle, " show internal topics"), newTopic));
  if (sessionInfo.actions) {
    createBox.append(createTopicForm());
    main.append(createBox);
  } else {
    main.append(actionsNote());
  }
  section(main, () => api("topics"), topics => {
    const rows = topics.filter(t => showInternal || !t.internal).map(t => el("tr", {},
      el("td", {}, topicLink(t.name), t.internal ? el("span", {class: "tag"}, "internal") : null),
      num(t.partitions), num(t.replicationFactor), num(fmtNum(t.records)), num(fmtBytes(t.size)),
      el("td", {class: "num " + (t.underReplicated ? "warn" : "")}, t.underReplicated),
      el("td", {class: "num " + (t.offline ? "bad" : "")}, t.offline)));
    if (!rows.length) return el("p", {class: "muted"}, "No topics yet.");
    return table("topics", ["Topic", ["Partitions", "num"], ["Replication", "num"], ["Records", "num"], ["Size", "num"],
      ["Under-replicated", "num"], ["Offline", "num"]], rows);
  }, 5000);
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

// recordBrowser reads a few records of a partition on demand (never on a
// timer: it is the reader's page).
function recordBrowser(topic) {
  const partition = el("input", {type: "number", min: 0, value: 0, id: "browse-partition", style: "width:6em"});
  const offset = el("input", {type: "text", value: "latest", id: "browse-offset", style: "width:8em"});
  const limit = el("input", {type: "number", min: 1, max: 100, value: 20, id: "browse-limit", style: "width:5em"});
  const out = el("div", {id: "browse-out"});
  const box = el("div", {},
    el("h2", {}, "Records"),
    el("div", {class: "toolbar"},
      el("label", {}, "partition ", partition), el("label", {}, "from offset ", offset),
      el("label", {}, "count ", limit),
      el("button", {id: "browse-go", onclick: () => load()}, "Read"),
      el("button", {onclick: () => { offset.value = "earliest"; load(); }}, "Earliest"),
      el("button", {onclick: () => { offset.value = "latest"; load(); }}, "Latest")),
    out);
  function bytes(b) {
    if (b === null) return el("span", {class: "muted"}, "null");
    return el("span", {}, b.data, b.encoding === "hex" ? el("span", {class: "tag"}, "hex") : null,
      b.truncated ? el("span", {class: "tag"}, "first of " + fmtBytes(b.size)) : null);
  }
  async function load() {
    const q = new URLSearchParams({partition: partition.value, offset: offset.value, limit: limit.value});
    out.replaceChildren(el("p", {class: "muted"}, "reading…"));
    try {
      const r = await api("topics/" + encodeURIComponent(topic) + "/records?" + q);
      const rows = r.records.map(rec => el("tr", {"data-offset": rec.offset},
        num(rec.offset), el("td", {}, new Date(rec.timestamp).toISOString()),
        el("td", {class: "data"}, bytes(rec.key)), el("td", {class: "data"}, bytes(rec.value)),
        el("td", {class: "data"}, rec.headers.map(h => el("div", {}, h.key + ": ", bytes(h.value))))));
      const next = r.records.length ? r.records[r.records.length - 1].offset + 1 : r.from;
      out.replaceChildren(
        el("p", {class: "muted"}, "Partition " + r.partition + ": offsets " + r.startOffset + " to " + r.endOffset +
          "; showing " + r.records.length + " from " + r.from + ". "),
        rows.length ? table("records", [["Offset", "num"], "Timestamp", "Key", "Value", "Headers"], rows) : el("p", {class: "muted"}, "No records there."),
        ...(next < r.endOffset ? [el("p", {}, el("button", {onclick: () => { offset.value = String(next); load(); }}, "Next"))] : []));
    } catch (e) {
      out.replaceChildren(el("p", {class: "error"}, e.message));
    }
  }
  return {box, show(p, from) { partition.value = p; offset.value = from; load(); box.scrollIntoView(); }};
}

// ---- Groups ----

function viewGroups() {
  main.append(el("h1", {}, "Consumer groups"));
  section(main, () => api("groups"), groups => {
    if (!groups.length) return el("p", {class: "muted"}, "No consumer groups.");
    return table("groups", ["Group", "State", "Type", ["Members", "num"], ["Lag", "num"], ["Coordinator", "num"]],
      groups.map(g => el("tr", {}, el("td", {}, groupLink(g.group)), el("td", {}, g.state),
        el("td", {}, g.type || g.protocolType || "-"), num(g.members),
        el("td", {class: "num", "data-group-lag": g.group}, g.error ? el("span", {class: "bad", title: g.error}, "error") : fmtNum(g.lag)),
        num(g.coordinator))));
  }, 5000);
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

// ---- Routing: #/, #/topics, #/topics/NAME, #/groups, #/groups/NAME, #/security ----

function route() {
  if (sessionInfo.login && !sessionInfo.user) { showLogin(); return; }
  clearView();
  const parts = location.hash.replace(/^#\/?/, "").split("/");
  const [kind, arg] = [parts[0], parts.length > 1 ? decodeURIComponent(parts.slice(1).join("/")) : ""];
  document.querySelectorAll("[data-nav]").forEach(a => a.classList.toggle("active", a.dataset.nav === (kind || "overview")));
  if (kind === "topics" && arg) viewTopic(arg);
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
