// quarry's page: sessions, search, transcripts and a query console over the server's own API.
// No dependencies and no network beyond this server: every request goes to /api/ with the
// sign-in cookie (never a token in a URL). Texts are put in the page as text, never as HTML.
"use strict";

const $ = (sel) => document.querySelector(sel);

// h("div", {class: "x", onclick: f}, child, "text", ...): an element; null children are skipped.
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

// A request to the API; the answer's JSON, or an Error carrying the error body.
async function api(path, options = {}) {
  const init = { method: options.method || "GET", headers: { Accept: "application/json" } };
  if (options.body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(options.body);
  }
  if (options.token) init.headers.Authorization = "Bearer " + options.token;
  const response = await fetch(path, init);
  const text = await response.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (_) { body = { message: text }; }
  if (!response.ok) {
    const e = new Error((body && body.message) || response.statusText);
    e.status = response.status;
    e.body = body;
    throw e;
  }
  return body;
}

function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") u.set(k, v);
  return u.toString();
}

function when(ms) {
  if (ms === null || ms === undefined) return "";
  const d = new Date(typeof ms === "number" ? ms : Date.parse(ms));
  return isNaN(d) ? String(ms) : d.toISOString().slice(0, 16).replace("T", " ");
}

function money(x) {
  return x === null || x === undefined ? "" : "$" + Number(x).toFixed(2);
}

// `target`'s children become `nodes` (nested arrays flattened, null skipped).
function show(target, nodes) {
  target.replaceChildren(...[].concat(nodes).flat(Infinity).filter((n) => n !== null && n !== undefined));
}

// A panel part that loads on its own: a loading line, then what `fill` returns, or the error.
function loader(target, fill) {
  target.replaceChildren(h("p", { class: "loading", text: "Loading…" }));
  return fill()
    .then((nodes) => show(target, nodes))
    .catch((e) => {
      if (e.status === 401) return signedOut();
      target.replaceChildren(errorView(e));
    });
}

// `target`'s children become what `fill` returns, with no loading line in between (a view
// refreshed in place while it is read); a failure leaves what was there.
function refresh(target, fill) {
  return fill().then((nodes) => show(target, nodes)).catch((e) => {
    if (e.status === 401) signedOut();
  });
}

// --- Live -----------------------------------------------------------------------------------

// What the archive's writers commit is announced on GET /api/live (server-sent events, in the
// caller's scope); the view on screen sets `onLive` to refresh what it shows in place.
let live = null;
let onLive = null;

function startLive() {
  stopLive();
  live = new EventSource("/api/live");
  live.addEventListener("changes", (e) => {
    const changes = JSON.parse(e.data);
    if (onLive) onLive(changes);
  });
  live.addEventListener("end", stopLive);
}

function stopLive() {
  if (live) live.close();
  live = null;
}

// Whether `changes` touch the session `id` (or ask every view to read afresh).
function touches(changes, id) {
  return changes.reload || changes.sessions.some((s) => s.session_id === id);
}

function errorView(e, onCorrection) {
  const body = e.body || {};
  const out = h("div", { class: "error-box" }, h("p", { class: "error", text: body.message || e.message }));
  if (body.rendered) out.append(h("pre", { class: "rendered", text: body.rendered }));
  for (const d of body.diagnostics || []) {
    for (const hint of d.hints || []) out.append(h("p", { class: "meta", text: "help: " + hint }));
  }
  const fix = (body.diagnostics || []).find((d) => d.correction);
  if (fix && onCorrection) {
    out.append(h("div", { class: "row" }, h("span", { class: "meta", text: "Did you mean " }),
      h("code", { text: fix.correction }),
      h("button", { type: "button", class: "plain", id: "apply-correction",
        onclick: () => onCorrection(fix.correction) }, "Apply correction")));
  }
  return out;
}

// The route: #/sessions, #/search?q=…, #/session/ID[/MESSAGE], #/dashboard?since=…&until=…&tz=…,
// #/console[?q=…&tz=…].
// Each part is decoded on its own: ids hold slashes (`…/agent-a1`), encoded in links.
function route() {
  const hash = location.hash.slice(1) || "/sessions";
  const cut = hash.indexOf("?");
  const path = cut < 0 ? hash : hash.slice(0, cut);
  const params = new URLSearchParams(cut < 0 ? "" : hash.slice(cut + 1));
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { name: parts[0] || "sessions", rest: parts.slice(1), params };
}

function go(hash) {
  if (location.hash === hash) render(); else location.hash = hash;
}

function sessionLink(id, message) {
  return "#/session/" + encodeURIComponent(id) + (message ? "/" + encodeURIComponent(message) : "");
}

async function start() {
  $("#sign-in-form").addEventListener("submit", signIn);
  $("#sign-out").addEventListener("click", signOut);
  window.addEventListener("hashchange", render);
  try {
    const me = await api("/api/session");
    signedIn(me);
  } catch (_) {
    signedOut();
  }
}

async function signIn(event) {
  event.preventDefault();
  const token = $("#token").value.trim();
  const error = $("#sign-in-error");
  error.hidden = true;
  try {
    const me = await api("/api/session", { method: "POST", token });
    $("#token").value = "";
    signedIn(me);
  } catch (e) {
    error.textContent = (e.body && e.body.message) || e.message;
    error.hidden = false;
  }
}

async function signOut() {
  try { await api("/api/session", { method: "DELETE" }); } catch (_) { /* signed out anyway */ }
  signedOut();
}

function signedIn(me) {
  $("#sign-in").hidden = true;
  $("#nav").hidden = false;
  $("#sign-out").hidden = false;
  $("#view").hidden = false;
  $("#who").textContent = me.who + " · scope " + me.scope;
  startLive();
  render();
}

function signedOut() {
  stopLive();
  onLive = null;
  $("#sign-in").hidden = false;
  $("#nav").hidden = true;
  $("#sign-out").hidden = true;
  $("#view").hidden = true;
  $("#who").textContent = "";
}

function render() {
  const r = route();
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("on", a.dataset.tab === r.name);
  const view = $("#view");
  onLive = null;
  if (r.name === "search") return searchView(view, r.params);
  if (r.name === "session" && r.rest[0]) return transcriptView(view, r.rest[0], r.rest[1]);
  if (r.name === "dashboard") return dashboardView(view, r.params);
  if (r.name === "console") return consoleView(view, r.params);
  return sessionsView(view, r.params);
}

// --- Sessions -------------------------------------------------------------------------------

// The language predicate of a filter form's fields (`field:value`, quoted when needed).
function predicate(fields) {
  const quote = (v) => (/^[\w.\-/@:]+$/.test(v) ? v : '"' + v.replace(/"/g, '\\"') + '"');
  return Object.entries(fields)
    .filter(([, v]) => v)
    .map(([k, v]) => k + ":" + quote(v))
    .join(" AND ");
}

function filterForm(fields, values, onSubmit) {
  const inputs = {};
  const form = h("form", { class: "filters" },
    fields.map(([name, label, type]) => {
      inputs[name] = h("input", { name, type: type || "text", value: values.get(name) || "" });
      return h("label", {}, label, inputs[name]);
    }),
    h("button", { type: "submit" }, "Apply"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const out = {};
    for (const [name, input] of Object.entries(inputs)) out[name] = input.value.trim();
    onSubmit(out);
  });
  return form;
}

const SESSION_FILTERS = [["repo", "Repository"], ["origin", "Origin"], ["model", "Model"],
  ["tool", "Tool"], ["since", "Since", "date"], ["until", "Until", "date"]];

function sessionsView(view, params) {
  const filters = {};
  for (const [name] of SESSION_FILTERS) filters[name] = params.get(name) || "";
  const where = predicate(filters);
  const expression = "sessions" + (where ? " where " + where : "") + " | sort by time desc";
  const list = h("div", { id: "sessions-list" });
  view.replaceChildren(
    h("h1", {}, "Sessions"),
    filterForm(SESSION_FILTERS, params, (f) => go("#/sessions?" + qs(f))),
    list);
  const fill = async (cursor) => {
    const answer = await api("/api/query-units?" + qs({ expression, limit: 50, cursor }));
    const names = answer.columns.map((c) => c.name);
    const get = (row, name) => row[names.indexOf(name)];
    const items = answer.rows.map((row) => h("li", {},
      h("a", { href: sessionLink(get(row, "session_id")), class: "session-link" },
        get(row, "title") || get(row, "session_id")),
      h("div", { class: "meta" },
        h("span", {}, get(row, "origin")),
        get(row, "repo") && h("span", {}, get(row, "repo")),
        get(row, "machine") && h("span", {}, get(row, "machine")),
        h("span", {}, when(get(row, "created_at"))),
        h("span", {}, get(row, "message_count") + " messages"),
        get(row, "cost_usd") !== null && h("span", {}, money(get(row, "cost_usd"))))));
    const more = h("div", {});
    if (answer.next_cursor) {
      more.append(h("button", { type: "button", class: "plain",
        onclick: () => page(answer.next_cursor, more) }, "More"));
    }
    return [h("ul", { class: "list" }, items),
      items.length ? null : h("p", { class: "meta", text: "No sessions." }), more];
  };
  const page = (cursor, into) => loader(into, () => fill(cursor));
  page(null, list);
  // A session written to, or a new one: the first page read again in place.
  onLive = () => refresh(list, () => fill(null));
}

// --- Search ---------------------------------------------------------------------------------

// A snippet with its matched terms (between « and ») marked.
function snippet(text) {
  const out = h("div", { class: "snippet" });
  text.split(/(«[^»]*»)/).forEach((part) => {
    if (part.startsWith("«") && part.endsWith("»")) out.append(h("mark", { text: part.slice(1, -1) }));
    else if (part) out.append(part);
  });
  return out;
}

function searchView(view, params) {
  const q = params.get("q") || "";
  const filters = {};
  for (const [name] of SESSION_FILTERS) filters[name] = params.get(name) || "";
  const where = predicate(filters);
  const box = h("input", { id: "search-box", type: "search", value: q, placeholder: "Search the archive" });
  const form = h("form", { class: "row", id: "search-form" }, box, h("button", { type: "submit" }, "Search"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    go("#/search?" + qs({ ...filters, q: box.value.trim() }));
  });
  const facets = h("div", { class: "facets", id: "facets" });
  const hits = h("div", { id: "hits" });
  view.replaceChildren(h("h1", {}, "Search"), form,
    filterForm(SESSION_FILTERS, params, (f) => go("#/search?" + qs({ ...f, q }))), facets, hits);
  if (!q) {
    hits.replaceChildren(h("p", { class: "meta", text: "Ranked full-text search over every message the scope sees." }));
    return;
  }
  loader(facets, async () => {
    const f = await api("/api/facets?" + qs({ q, where, families: "origin,repo,model,tool" }));
    return Object.entries(f.scoped || {}).map(([family, values]) => [
      h("h3", { text: family }),
      h("div", { class: "chips" }, values.slice(0, 8).map((v) => h("button", {
        type: "button", class: "chip",
        onclick: () => go("#/search?" + qs({ ...filters, [family]: v.value === null ? "" : v.value, q })),
      }, (v.value === null ? "(none)" : v.value) + " " + v.count))),
    ]);
  });
  const page = (cursor, into) => loader(into, async () => {
    const answer = await api("/api/search?" + qs({ q, where, limit: 20, cursor }));
    const items = answer.hits.map((hit) => h("li", { class: "hit" },
      h("a", { href: sessionLink(hit.session.session_id, hit.match.message_id), class: "hit-link" },
        hit.session.title || hit.session.session_id),
      snippet(hit.match.snippet || ""),
      h("div", { class: "meta" },
        h("span", {}, hit.session.origin),
        hit.session.repo && h("span", {}, hit.session.repo),
        h("span", {}, "lane " + hit.match.retrieval_lane),
        h("span", {}, hit.match.score_kind + " " + Number(hit.match.score).toFixed(3)))));
    const more = h("div", {});
    if (answer.next_cursor) {
      more.append(h("button", { type: "button", class: "plain", onclick: () => page(answer.next_cursor, more) }, "More"));
    }
    return [h("ul", { class: "list", id: "hit-list" }, items),
      items.length ? null : h("p", { class: "meta", id: "no-hits", text: "No matches in this scope." }), more];
  });
  page(null, hits);
}

// --- Transcripts ----------------------------------------------------------------------------

function blockView(block) {
  const kind = block.type;
  if (kind === "text") return h("pre", { class: "text", text: block.text });
  if (kind === "thinking") return h("details", { class: "thinking" }, h("summary", {}, "thinking"), h("pre", { text: block.text }));
  if (kind === "tool_use" || kind === "tool_result") {
    const label = (kind === "tool_use" ? "call " : "result ") + (block.tool_name || "") +
      (block.tool_command ? ": " + block.tool_command.slice(0, 80) : block.tool_path ? ": " + block.tool_path : "") +
      (block.is_error ? " (error)" : "");
    const out = [h("details", { class: kind }, h("summary", {}, label), h("pre", { text: block.text }))];
    if (block.subagent) out.push(subagentView(block.subagent));
    return out;
  }
  return h("details", {}, h("summary", {}, kind), h("pre", { text: block.text }));
}

function subagentView(sub) {
  const title = "subagent " + (sub.child_session_id || sub.delegation_id);
  const details = h("details", { class: "subagent", "data-child": sub.child_session_id || "" },
    h("summary", {}, title),
    sub.instruction && h("pre", { class: "meta", text: sub.instruction }),
    sub.child_session_id && h("a", { href: sessionLink(sub.child_session_id) }, "open on its own"));
  if (sub.transcript) details.append(h("div", {}, messagesView(sub.transcript, null)));
  else if (sub.omitted) details.append(h("p", { class: "meta", text: "not shown: " + JSON.stringify(sub.omitted) }));
  return details;
}

function messagesView(t, focus) {
  const out = [];
  for (const c of t.compactions || []) {
    out.push(h("div", { class: "compaction" }, "Context compacted " + when(c.time),
      h("details", {}, h("summary", {}, "summary"), h("pre", { text: c.summary }))));
  }
  for (const m of t.messages) {
    const link = sessionLink(t.session.session_id, m.message_id);
    out.push(h("article", { class: "message " + m.role + (m.message_id === focus ? " focus" : ""),
      id: "m-" + m.message_id, "data-ref": "message:" + m.message_id },
      h("div", { class: "head" }, h("a", { href: link, text: m.role + " " + when(m.time) }),
        m.model ? " · " + m.model : ""),
      m.blocks.map(blockView)));
  }
  return out;
}

// A lineage trace: the ancestors, the session itself, and its descendants as a tree.
function lineageView(trace) {
  const item = (record, here) => {
    const s = record.header;
    return h("li", {}, here ? h("strong", { text: s.title || s.session_id })
      : h("a", { href: sessionLink(s.session_id), text: s.title || s.session_id }),
      h("span", { class: "meta", text: " " + s.origin + (s.branch_type ? " · " + s.branch_type : "") }));
  };
  const tree = (nodes) => h("ul", {}, nodes.map((n) => {
    const li = item(n.session, false);
    if (n.descendants.length) li.append(tree(n.descendants));
    return li;
  }));
  const self = item(trace.target, true);
  if (trace.descendants.length) self.append(tree(trace.descendants));
  let top = h("ul", {}, self);
  for (const a of [...trace.ancestors].reverse()) {
    const li = item(a, false);
    li.append(top);
    top = h("ul", {}, li);
  }
  return [top, trace.complete ? null : h("p", { class: "meta", text: "The archive does not hold every session of this lineage." })];
}

function transcriptView(view, id, focus) {
  const head = h("div", { id: "transcript-head" });
  const usage = h("div", { id: "transcript-usage" });
  const lineage = h("div", { class: "lineage", id: "lineage" });
  const body = h("div", { id: "transcript" });
  view.replaceChildren(head, usage, h("details", {}, h("summary", {}, "Lineage"), lineage), body);
  const usageFill = async () => {
    const sql = "SELECT COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(cost_usd) FROM usage " +
      "WHERE session_id = '" + id.replace(/'/g, "''") + "'";
    const answer = await api("/api/query", { method: "POST", body: { sql } });
    const row = answer.rows[0] || [];
    return h("p", { class: "meta" }, h("span", {}, row[0] + " billed responses"),
      h("span", {}, (row[1] || 0) + " in"), h("span", {}, (row[2] || 0) + " out"),
      h("span", {}, money(row[3])));
  };
  loader(usage, usageFill);
  loader(lineage, async () => lineageView(await api("/api/read?" + qs({ ref: "session:" + id, lineage: "true" }))));
  // The last page read (where new messages appear): read again in place when the session grows.
  let last = null;
  const fill = async (cursor, into, first) => {
    const t = await api("/api/read?" + qs({ ref: "session:" + id, limit: 500, cursor }));
    if (!t.next_cursor) last = { cursor, into, first };
    if (first) {
      const s = t.session;
      head.replaceChildren(h("h1", { text: s.title || s.session_id }),
        h("p", { class: "meta" }, h("span", {}, s.origin), s.repo && h("span", {}, s.repo),
          s.model && h("span", {}, s.model), h("span", {}, when(s.created_at)),
          h("span", {}, s.message_count + " messages")));
    }
    const more = h("div", {});
    if (t.next_cursor) more.append(h("button", { type: "button", class: "plain", onclick: () => page(t.next_cursor, more, false) }, "More"));
    const nodes = messagesView(t, focus);
    if (focus && !t.messages.some((m) => m.message_id === focus) && t.next_cursor) {
      setTimeout(() => page(t.next_cursor, more, false), 0);
    }
    return [...nodes, more];
  };
  const page = (cursor, into, first) => loader(into, () => fill(cursor, into, first)).then(() => {
    const target = focus && document.getElementById("m-" + focus);
    if (target) target.scrollIntoView({ block: "center" });
  });
  page(null, body, true);
  onLive = (changes) => {
    if (!last || !touches(changes, id)) return;
    // Following the end: stay at the end as it grows.
    const atEnd = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 40;
    const { cursor, into, first } = last;
    refresh(into, () => fill(cursor, into, first)).then(() => {
      if (atEnd) window.scrollTo(0, document.documentElement.scrollHeight);
    });
    refresh(usage, usageFill);
  };
}

// --- Dashboard ------------------------------------------------------------------------------

const BROWSER_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";

// A day as YYYY-MM-DD, in the browser's zone.
function isoDay(d) {
  const pad = (n) => String(n).padStart(2, "0");
  return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate());
}

// A table cell as a person reads it: whole numbers with separators, others to 4 decimals.
function cell(v) {
  if (v === null || v === undefined) return "";
  if (typeof v === "number") return Number.isInteger(v) ? v.toLocaleString("en-US") : String(Number(v.toFixed(4)));
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}

// The server's SVG (texts escaped there) as a node of this document; as a second guard, nothing
// in it may run or reach out: no script, no foreign object, no event or link attribute.
function svgNode(text) {
  const parsed = new DOMParser().parseFromString(text, "text/html");
  const svg = parsed.body.firstElementChild;
  if (!svg || svg.localName !== "svg") return null;
  for (const el of [svg, ...svg.querySelectorAll("*")]) {
    if (["script", "foreignobject", "iframe", "a", "image", "use"].includes(el.localName.toLowerCase())) { el.remove(); continue; }
    for (const attr of [...el.attributes]) {
      if (/^on/i.test(attr.name) || /href$/i.test(attr.name) || attr.name === "style") el.removeAttribute(attr.name);
    }
  }
  return document.importNode(svg, true);
}

function panelView(p, tz) {
  return [
    p.figures.length ? h("div", { class: "figures" }, p.figures.map((f) => h("div", {
      class: "figure", id: p.id + "-" + f.id, "data-value": JSON.stringify(f.value) },
    h("b", { text: f.text }), f.label))) : null,
    // On a narrow screen a chart keeps a readable size and scrolls sideways within its panel.
    p.charts.map((c) => h("div", { class: "chart-wrap" }, svgNode(c.svg))),
    p.note && h("p", { class: "meta", text: p.note }),
    h("details", { class: "panel-table" }, h("summary", {}, "Table (" + p.rows.length + " rows)"),
      h("div", { class: "table-wrap" }, h("table", {},
        h("thead", {}, h("tr", {}, p.columns.map((c) => h("th", { text: c })))),
        h("tbody", {}, p.rows.map((row) => h("tr", {}, row.map((v) => h("td", {
          class: typeof v === "number" ? "n" : null, text: cell(v) })))))))),
    h("div", { class: "row query-row" }, h("code", { class: "query", text: p.query }),
      h("button", { type: "button", class: "plain open-console",
        onclick: () => go("#/console?" + qs({ q: p.query, tz })) }, "Open in console")),
  ];
}

function dashboardView(view, params) {
  const until = params.get("until") || isoDay(new Date());
  const since = params.get("since") || isoDay(new Date(Date.parse(until + "T12:00:00") - 29 * 86400000));
  const tz = params.get("tz") || BROWSER_ZONE;
  const inputs = {
    since: h("input", { name: "since", type: "date", value: since, required: true }),
    until: h("input", { name: "until", type: "date", value: until, required: true }),
    tz: h("input", { name: "tz", type: "text", value: tz, list: "zones", required: true }),
  };
  const form = h("form", { class: "filters", id: "dashboard-form" },
    h("label", {}, "From", inputs.since), h("label", {}, "Through", inputs.until),
    h("label", {}, "Zone", inputs.tz),
    h("datalist", { id: "zones" }, [...new Set([BROWSER_ZONE, "UTC", "local"])].map((z) => h("option", { value: z }))),
    h("button", { type: "submit" }, "Apply"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    go("#/dashboard?" + qs({ since: inputs.since.value, until: inputs.until.value, tz: inputs.tz.value.trim() }));
  });
  const grid = h("div", { class: "dashboard", id: "dashboard" });
  view.replaceChildren(h("h1", {}, "Dashboard"), form,
    h("p", { class: "meta", text: "Every number is exact over the rows your scope sees, " + since + " through " + until +
      ", days in " + tz + ". Each panel shows the query it ran." }), grid);
  loader(grid, async () => {
    const list = await api("/api/dashboard");
    const parts = {};
    const boxes = list.panels.map((panel) => {
      const body = h("div", {}, h("p", { class: "loading", text: "Loading…" }));
      const box = h("section", { class: "dash-panel", id: "panel-" + panel.id }, h("h2", { text: panel.title }), body);
      parts[panel.id] = { body, box };
      return box;
    });
    streamPanels({ since, until, tz }, parts);
    // New committed turns: the panels (their totals first) answered again in place, at most
    // every five seconds.
    let waiting = false;
    if (document.body.contains(grid)) onLive = () => {
      if (waiting) return;
      waiting = true;
      setTimeout(() => {
        waiting = false;
        if (document.body.contains(grid)) streamPanels({ since, until, tz }, parts);
      }, 5000);
    };
    return boxes;
  });
}

// Every panel in one streamed answer (a JSON line per panel, in the order they are ready), each
// drawn as its line comes: none waits on another.
async function streamPanels(params, parts) {
  const done = (id, nodes) => {
    const part = parts[id];
    if (!part) return;
    show(part.body, nodes);
    part.box.dataset.rendered = "true";
    part.box.dataset.at = String(Math.round(performance.now())); // ms after navigation (benches/web_page.cjs)
  };
  try {
    const response = await fetch("/api/dashboard/all?" + qs(params), { headers: { Accept: "application/x-ndjson" } });
    if (!response.ok) {
      if (response.status === 401) return signedOut();
      let body = null;
      try { body = await response.json(); } catch (_) { /* not JSON */ }
      const e = { body, message: response.statusText };
      for (const id of Object.keys(parts)) done(id, errorView(e));
      return;
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffered = "";
    for (;;) {
      const { value, done: ended } = await reader.read();
      if (value) buffered += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, cut);
        buffered = buffered.slice(cut + 1);
        if (!line.trim()) continue;
        const answer = JSON.parse(line);
        done(answer.id, answer.error ? errorView({ body: answer.error, message: answer.error.message })
          : panelView(answer.panel, params.tz));
      }
      if (ended) break;
    }
  } catch (e) {
    for (const [id, part] of Object.entries(parts)) if (!part.box.dataset.rendered) done(id, errorView(e));
  }
  for (const [id, part] of Object.entries(parts)) {
    if (!part.box.dataset.rendered) done(id, h("p", { class: "error", text: "No answer: the response ended early." }));
  }
}

// --- Console --------------------------------------------------------------------------------

const EXPORTS = [["CSV", "text/csv", "csv"], ["Parquet", "application/vnd.apache.parquet", "parquet"],
  ["Arrow", "application/vnd.apache.arrow.stream", "arrows"]];

function consoleView(view, params) {
  const text = h("textarea", { id: "console-text", spellcheck: "false" }, params.get("q") || "messages | group by role | agg count");
  // A query opened from a dashboard panel runs in that panel's zone.
  const tz = params.get("tz") || null;
  const help = h("details", { class: "meta" }, h("summary", {}, "Help"),
    h("p", {}, "The quarry language: UNIT where PREDICATES | stages, e.g. ",
      h("code", { text: "messages where role:assistant | group by session.repo | agg count, p90:word_count" }),
      ". SQL: one read-only SELECT over the tables your scope has (see /api/tables). ",
      "Answers are exact; a capped page says so and offers the next one."));
  const language = h("select", { id: "console-language" }, h("option", { value: "quarry" }, "quarry language"),
    h("option", { value: "sql" }, "SQL"));
  const out = h("div", { id: "console-out" });
  const request = (limit, cursor, offset) => language.value === "sql"
    ? { path: "/api/query", body: { sql: text.value, limit, offset } }
    : { path: "/api/query-units", body: { expression: text.value, limit, cursor, tz: tz || undefined } };
  const run = (cursor, offset) => loader(out, async () => {
    let answer;
    try {
      const r = request(100, cursor, offset);
      answer = await api(r.path, { method: "POST", body: r.body });
    } catch (e) {
      if (e.status === 400) return errorView(e, (fixed) => { text.value = fixed; run(null, 0); });
      throw e;
    }
    const names = answer.columns.map((c) => (typeof c === "string" ? c : c.name));
    const table = h("div", { class: "table-wrap" }, h("table", { id: "console-table" },
      h("thead", {}, h("tr", {}, names.map((n) => h("th", { text: n })))),
      h("tbody", {}, answer.rows.map((row) => h("tr", {}, row.map((v) => h("td", {
        text: v === null ? "" : typeof v === "object" ? JSON.stringify(v) : String(v) })))))));
    const next = language.value === "sql"
      ? (answer.truncated ? () => run(null, (offset || 0) + answer.rows.length) : null)
      : (answer.next_cursor ? () => run(answer.next_cursor, 0) : null);
    return [h("p", { class: "meta", text: answer.rows.length + " rows" + (answer.exact === false ? " (not exact)" : "") }),
      table, next && h("button", { type: "button", class: "plain", onclick: next }, "Next page")];
  });
  const exportLinks = h("div", { class: "row" }, h("span", { class: "meta", text: "Export the whole answer:" }),
    EXPORTS.map(([label, accept, ext]) => h("button", { type: "button", class: "plain",
      onclick: () => download(request(null, null, 0), accept, "quarry-answer." + ext) }, label)));
  const zoneNote = tz ? h("p", { class: "meta", id: "console-zone", text: "Days and time buckets in " + tz + "." }) : "";
  view.replaceChildren(h("h1", {}, "Console"), zoneNote,
    h("div", { class: "row" }, language, h("button", { type: "button", id: "console-run", onclick: () => run(null, 0) }, "Run")),
    text, help, exportLinks, out);
}

// Fetches an answer in another format (the sign-in cookie goes with it) and saves it.
async function download(r, accept, name) {
  const response = await fetch(r.path, { method: "POST", headers: { Accept: accept, "Content-Type": "application/json" },
    body: JSON.stringify(r.body) });
  if (!response.ok) return alert((await response.text()).slice(0, 500));
  const url = URL.createObjectURL(await response.blob());
  const a = h("a", { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

start();
