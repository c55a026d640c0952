// quarry's web page in a real browser: headless Chromium (Debian's package) driven by
// playwright-core from the npm registry (it downloads no browser). It builds a two-owner archive
// from the real corpus, serves it, signs in on the page with a reader token and checks what a
// person does there against the HTTP API and SQLite (the sqlite3 CLI on the archive file):
//
//   node tests/clients/web_client.cjs --modules "$(benches/tools.sh web)" \
//       --quarry target/debug/quarry --corpus ../shared/corpus [--screenshots docs/web]
//
// Exits non-zero on the first failed check, naming it.
"use strict";

const { execFileSync, spawn } = require("node:child_process");
const fs = require("node:fs");
const net = require("node:net");
const os = require("node:os");
const path = require("node:path");

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
const { chromium } = require(path.join(args.modules, "playwright-core"));

function check(condition, what) {
  if (!condition) {
    console.error("FAILED: " + what);
    process.exit(1);
  }
  console.log("ok: " + what);
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), "quarry-web-"));
const archive = path.join(work, "archive.db");
const tokens = path.join(work, "tokens.toml");
const quarry = (...a) => execFileSync(args.quarry, ["--archive", archive, ...a], { encoding: "utf8" });
const sql = (statement) => execFileSync("sqlite3", ["-json", archive, statement], { encoding: "utf8" });
const rows = (statement) => JSON.parse(sql(statement) || "[]");

// alice owns the sessions with subagents; bob owns another project.
const corpus = args.corpus;
quarry("ingest", "--no-progress", "--owner", "alice",
  path.join(corpus, "claude-code/marot-spotter"), path.join(corpus, "claude-code/d-kimuson-claude-code-viewer"));
quarry("ingest", "--no-progress", "--owner", "bob", path.join(corpus, "claude-code/chiphuyen-sniffly"));
fs.writeFileSync(path.join(work, "scopes.toml"), '[scope.alice]\nowner = "alice"\n');
const token = (name, scope) => quarry("token", "add", name, "--scope", scope, "--tokens", tokens).trim().split("\n").pop().trim();
const readerToken = token("alice-browser", "alice");
const adminToken = token("admin-check", "admin");

// A Claude Code session of alice's being written now, in a folder the server watches: one
// committed turn to begin with; more are appended while the page is open.
const liveFolder = path.join(work, "live");
fs.mkdirSync(liveFolder);
const liveId = "11fe0000-0000-4000-8000-00000000cafe";
// A session file a turn at a time: a prompt and its answer (a billed response).
function writer(file, sessionId) {
  let parent = null;
  let turns = 0;
  return (prompt, answer) => {
    const at = (s) => new Date(Date.now() + s * 1000).toISOString();
    const n = ++turns;
    const common = (uuid, second) => ({ parentUuid: parent, isSidechain: false, userType: "external",
      cwd: "/home/live", sessionId, version: "2.1.38", uuid, timestamp: at(second) });
    const user = { ...common(`${sessionId}-u${n}`, 0), type: "user", message: { role: "user", content: prompt } };
    parent = user.uuid;
    const reply = { ...common(`${sessionId}-a${n}`, 1), type: "assistant", message: { model: "claude-opus-4-6",
      id: `msg_${sessionId}_${n}`, type: "message", role: "assistant", content: [{ type: "text", text: answer }],
      usage: { input_tokens: 10, output_tokens: 5 } }, requestId: `req_${sessionId}_${n}` };
    parent = reply.uuid;
    fs.appendFileSync(file, JSON.stringify(user) + "\n" + JSON.stringify(reply) + "\n");
  };
}
const appendTurn = writer(path.join(liveFolder, liveId + ".jsonl"), liveId);
appendTurn("start the live check", "started");

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

let page = null;

async function main() {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = spawn(args.quarry, ["--archive", archive, "--tz", "UTC", "serve", "--listen", `127.0.0.1:${port}`,
    "--tokens", tokens, "--watch-path", liveFolder, "--watch-owner", "alice"], { stdio: ["ignore", "ignore", "pipe"] });
  let serverLog = "";
  server.stderr.on("data", (d) => { serverLog += d; });
  for (let i = 0; i < 100; i++) {
    try { if ((await fetch(base + "/healthz")).ok) break; } catch (_) { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  const apiAs = async (tok, p) => (await fetch(base + p, { headers: { Authorization: "Bearer " + tok } })).json();

  // The served page names no external host.
  for (const asset of ["/", "/assets/app.js", "/assets/app.css"]) {
    const text = await (await fetch(base + asset)).text();
    check(text.length > 100 && !/(https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}/i.test(text.replace(/http:\/\/127\.0\.0\.1/g, "")),
      `${asset} names no external host`);
  }

  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  const requested = [];
  page.on("request", (r) => requested.push(r.url()));
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));

  // Sign in with the reader token.
  await page.goto(base + "/");
  await page.fill("#token", readerToken);
  await page.click("#sign-in-form button");
  await page.waitForFunction(() => document.querySelector("#who").textContent.includes("alice"));
  check(true, "signed in with a reader token");
  const cookies = await context.cookies();
  const cookie = cookies.find((c) => c.name === "quarry_session");
  check(cookie && cookie.httpOnly && cookie.sameSite === "Strict", "the sign-in is an HttpOnly, SameSite=Strict cookie");

  // A phrase of one of alice's user messages, searched on the page and through the API.
  const [{ text: prompt }] = rows(`SELECT m.text FROM messages m JOIN sessions s USING (session_id)
    WHERE s.owner = 'alice' AND m.role = 'user' AND m.material_origin = 'human' AND length(m.text) > 80
    ORDER BY m.message_id LIMIT 1`);
  const phrase = prompt.split(/\s+/).filter((w) => /^[A-Za-z]{5,}$/.test(w)).slice(0, 3).join(" ");
  check(phrase.split(" ").length === 3, `a phrase from the corpus: "${phrase}"`);
  await page.goto(base + "/#/search?q=" + encodeURIComponent(phrase));
  await page.waitForSelector("#hit-list li");
  const first = await page.$eval("#hit-list li", (li) => ({
    href: li.querySelector("a").getAttribute("href"),
    snippet: li.querySelector(".snippet").textContent,
    marked: [...li.querySelectorAll(".snippet mark")].map((m) => m.textContent),
  }));
  const api = await apiAs(readerToken, "/api/search?" + new URLSearchParams({ q: phrase, limit: "20" }));
  const top = api.hits[0];
  check(first.href === `#/session/${encodeURIComponent(top.session.session_id)}/${encodeURIComponent(top.match.message_id)}`,
    `the first hit opens ${top.session.session_id} at its message, as /api/search ranks it`);
  check(first.snippet === top.match.snippet.replace(/[«»]/g, ""), "the first hit's snippet is /api/search's");
  check(first.marked.length > 0, `matched terms are highlighted: ${first.marked.join(", ")}`);

  // The hit opens the transcript at the matching message.
  await page.click("#hit-list li a");
  const target = `#transcript > article[data-ref="message:${top.match.message_id}"]`;
  await page.waitForSelector(target, { state: "attached" });
  const shown = await page.$eval(target, (a) => ({ focus: a.classList.contains("focus"),
    inView: a.getBoundingClientRect().top < window.innerHeight && a.getBoundingClientRect().bottom > 0,
    copies: document.querySelectorAll(`article[data-ref="${a.dataset.ref}"]`).length }));
  check(shown.focus && shown.inView, `the transcript opens scrolled to the matching message, in focus (${JSON.stringify(shown)})`);

  // A session that delegates: its subagents nested at the delegating call, openable.
  const delegated = rows(`SELECT d.parent_session_id AS parent, d.child_session_id AS child FROM delegations d
    JOIN sessions p ON p.session_id = d.parent_session_id JOIN sessions c ON c.session_id = d.child_session_id
    WHERE p.owner = 'alice' ORDER BY d.delegation_id LIMIT 1`)[0];
  check(delegated, "the corpus has a session of alice's that delegates to a subagent it holds");
  await page.goto(base + "/#/session/" + encodeURIComponent(delegated.parent));
  const nested = `details.subagent[data-child="${delegated.child}"]`;
  await page.waitForSelector(nested, { state: "attached" });
  const inCall = await page.$eval(nested, (d) => !!d.closest("article.message"));
  check(inCall, "the subagent is nested inside the message that delegates to it");
  await page.click(`${nested} > summary`);
  const childMessages = await page.$$eval(`${nested} article.message`, (a) => a.length);
  const [{ n }] = rows(`SELECT count(*) AS n FROM messages WHERE session_id = '${delegated.child.replace(/'/g, "''")}'`);
  check(childMessages > 0 && childMessages <= n, `the opened subagent shows its transcript (${childMessages} of ${n} messages)`);

  // The console: a query with a typo, the offered correction applied.
  await page.goto(base + "/#/console");
  await page.fill("#console-text", "messages | group by rol | agg count");
  await page.click("#console-run");
  await page.waitForSelector("#apply-correction");
  check(await page.$eval("pre.rendered", (p) => p.textContent.includes("rol")), "the diagnostic is drawn with its caret");
  await page.click("#apply-correction");
  await page.waitForSelector("#console-table");
  const corrected = await page.$eval("#console-text", (t) => t.value);
  const tableRows = await page.$$eval("#console-table tbody tr", (r) => r.map((tr) => [...tr.children].map((td) => td.textContent)));
  const roles = rows(`SELECT m.role AS role, count(*) AS n FROM messages m JOIN sessions s USING (session_id)
    WHERE s.owner = 'alice' AND NOT m.hidden GROUP BY m.role ORDER BY n DESC, role`);
  check(corrected.includes("group by role"), `the correction was applied: ${corrected}`);
  check(JSON.stringify(tableRows) === JSON.stringify(roles.map((r) => [r.role, String(r.n)])),
    "the corrected query's table is alice's messages by role, as SQLite counts them");

  // Its export: the whole answer as CSV, fetched with the cookie and saved by the browser.
  const [download] = await Promise.all([page.waitForEvent("download"),
    page.click("text=CSV")]);
  const csv = fs.readFileSync(await download.path(), "utf8").trim().split("\n");
  check(JSON.stringify(csv.slice(1).map((l) => l.split(","))) === JSON.stringify(roles.map((r) => [r.role, String(r.n)])),
    `the CSV export (${download.suggestedFilename()}) holds the same rows`);

  // A phrase only bob's sessions hold: the admin finds it, alice's page finds nothing.
  const bobWords = rows(`SELECT m.text FROM messages m JOIN sessions s USING (session_id)
    WHERE s.owner = 'bob' AND m.role = 'user' AND length(m.text) > 40 ORDER BY m.message_id LIMIT 50`)
    .flatMap((r) => r.text.split(/\s+/)).filter((w) => /^[A-Za-z]{7,}$/.test(w));
  const unique = bobWords.find((w) => rows(`SELECT count(*) AS n FROM blocks b JOIN sessions s USING (session_id)
    WHERE s.owner = 'alice' AND lower(b.text) LIKE '%${w.toLowerCase()}%'`)[0].n === 0);
  check(unique, `a word only bob's sessions hold: ${unique}`);
  const adminHits = (await apiAs(adminToken, "/api/search?" + new URLSearchParams({ q: unique }))).hits.length;
  check(adminHits > 0, `the admin finds "${unique}" (${adminHits} sessions)`);
  await page.goto(base + "/#/search?q=" + encodeURIComponent(unique));
  await page.waitForSelector("#no-hits");
  check((await page.$$("#hit-list li")).length === 0, `alice's page finds nothing for "${unique}"`);

  // The dashboard: a range of days in a zone, every panel answered on its own; its totals are
  // `quarry report`'s over the same days, zone and scope, and (tokens) SQLite's.
  const zone = "Asia/Tokyo"; // +09:00 all year: SQLite can shift by it
  const dayOf = `date(u.occurred_at_ms / 1000 + 9 * 3600, 'unixepoch')`;
  const aliceDays = rows(`SELECT DISTINCT ${dayOf} AS day FROM usage u JOIN sessions s USING (session_id)
    WHERE s.owner = 'alice' ORDER BY day`).map((r) => r.day);
  check(aliceDays.length >= 3, `alice's usage spans ${aliceDays.length} days`);
  // From the archive's first day (bob's) through a middle one of hers: some of her usage falls outside.
  const [{ since }] = rows(`SELECT min(${dayOf}) AS since FROM usage u`);
  const until = aliceDays[Math.floor(aliceDays.length / 2)];
  const report = (scope) => JSON.parse(quarry("--scope", scope, "--tz", zone, "--format", "json", "report", "daily",
    "--since", since, "--until", until, "--no-refresh")).totals;
  const cents = (x) => Math.round(Number(x) * 100);
  await page.setViewportSize({ width: 1280, height: 900 });
  const dashboardUrl = "/#/dashboard?" + new URLSearchParams({ since, until, tz: zone });
  const dashboardStart = Date.now();
  await page.goto(base + dashboardUrl);
  await page.waitForSelector(".dash-panel");
  await page.waitForFunction(() => [...document.querySelectorAll(".dash-panel")].every((p) => p.dataset.rendered === "true"),
    null, { timeout: 60000 });
  const panels = await page.$$eval(".dash-panel", (ps) => ps.map((p) => ({ id: p.id, charts: p.querySelectorAll("svg.chart").length,
    error: !!p.querySelector(".error-box"), query: (p.querySelector("code.query") || {}).textContent })));
  check(panels.length === 9 && panels.every((p) => !p.error && p.charts > 0 && p.query),
    `all 9 panels rendered with a chart and their query, in ${Date.now() - dashboardStart} ms: ${panels.map((p) => p.id).join(", ")}`);
  const figure = (id) => page.$eval(id, (f) => JSON.parse(f.dataset.value));
  const pageTokens = await figure("#usage-total-tokens");
  const pageCost = await figure("#usage-total-cost");
  const aliceReport = report("alice");
  check(pageTokens === aliceReport.total_tokens && pageTokens > 0,
    `the dashboard's tokens (${pageTokens}) are alice's report's over ${since}..${until} in ${zone}`);
  check(cents(pageCost) === cents(aliceReport.cost_usd), `the dashboard's cost ($${pageCost}) is her report's to the cent`);
  const [{ outside }] = rows(`SELECT count(*) AS outside FROM usage u JOIN sessions s USING (session_id)
    WHERE s.owner = 'alice' AND ${dayOf} > '${until}'`);
  check(outside > 0, `${outside} of alice's responses fall after the range, so the range matters`);
  const adminReport = report("admin");
  check(adminReport.total_tokens > pageTokens, `the admin's report over the same days counts more (${adminReport.total_tokens}): the page shows alice's only`);
  const adminPanel = await apiAs(adminToken, "/api/dashboard/usage?" + new URLSearchParams({ since, until, tz: zone }));
  const adminTokens = adminPanel.figures.find((f) => f.id === "total-tokens").value;
  const [{ sqlite }] = rows(`SELECT sum(u.input_tokens + u.output_tokens + u.cache_write_tokens + u.cache_read_tokens) AS sqlite
    FROM usage u WHERE ${dayOf} BETWEEN '${since}' AND '${until}'`);
  check(adminTokens === adminReport.total_tokens && adminTokens === sqlite,
    `the admin's dashboard tokens (${adminTokens}) equal the admin's report and SQLite's sum in ${zone}`);
  // A panel's numbers are its query's answer: the same query in the console, in the same zone.
  const panelRows = await page.$$eval("#panel-sessions-by-origin tbody tr", (r) => r.length);
  await page.click("#panel-sessions-by-origin .open-console");
  await page.waitForSelector("#console-zone");
  const consoleQuery = await page.$eval("#console-text", (t) => t.value);
  check(consoleQuery === panels.find((p) => p.id === "panel-sessions-by-origin").query, `the panel's query opens in the console: ${consoleQuery}`);
  await page.click("#console-run");
  await page.waitForSelector("#console-table");
  const consoleRows = await page.$$eval("#console-table tbody tr", (r) => r.length);
  const apiPanel = await apiAs(readerToken, "/api/dashboard/sessions-by-origin?" + new URLSearchParams({ since, until, tz: zone }));
  const apiAnswer = await (await fetch(base + "/api/query-units", { method: "POST", headers: { Authorization: "Bearer " + readerToken,
    "Content-Type": "application/json" }, body: JSON.stringify({ expression: consoleQuery, tz: zone }) })).json();
  check(consoleRows === panelRows && JSON.stringify(apiAnswer.rows) === JSON.stringify(apiPanel.rows),
    `the console answers the panel's query with the panel's rows (${consoleRows})`);

  // The HTML report of the same days, zone and scope: one file, opened offline, the same totals.
  const reportFile = path.join(work, "report.html");
  quarry("--scope", "alice", "--tz", zone, "report", "daily", "--by", "model", "--since", since, "--until", until,
    "--no-refresh", "-o", reportFile);
  const html = fs.readFileSync(reportFile, "utf8");
  const references = html.match(/(https?:|\/\/[a-z0-9.-]+\.[a-z]{2,}|\bsrc=|\bhref=|url\(|@import|<script|<link)/gi);
  check(html.length > 1000 && references === null, `the HTML report (${html.length} bytes) refers to no other host or file`);
  const offline = await browser.newContext({ viewport: { width: 1280, height: 900 }, offline: true });
  const reportPage = await offline.newPage();
  const reportRequests = [];
  reportPage.on("request", (r) => reportRequests.push(r.url()));
  await reportPage.goto("file://" + reportFile);
  const fileTokens = await reportPage.$eval("#usage-total-tokens", (f) => JSON.parse(f.dataset.value));
  const fileCost = await reportPage.$eval("#usage-total-cost", (f) => JSON.parse(f.dataset.value));
  const fileCharts = await reportPage.$$eval("svg.chart", (s) => s.length);
  check(fileTokens === pageTokens && cents(fileCost) === cents(pageCost) && fileCharts >= 9,
    `the report opened offline shows the dashboard's totals (${fileTokens} tokens, $${fileCost}) and ${fileCharts} charts`);
  check(reportRequests.every((u) => u.startsWith("file://")), `the report asked for nothing but itself (${reportRequests.length})`);
  if (args.screenshots) {
    await reportPage.screenshot({ path: path.join(args.screenshots, "report-1280.png"), fullPage: true });
  }
  await offline.close();

  // Layout: no horizontal scrolling of the page at 1280 and 390 pixels; screenshots on request.
  const pages = {
    sessions: "/#/sessions",
    search: "/#/search?q=" + encodeURIComponent(phrase),
    transcript: "/#/session/" + encodeURIComponent(delegated.parent),
    console: "/#/console",
    dashboard: dashboardUrl,
  };
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    for (const [name, url] of Object.entries(pages)) {
      await page.goto(base + url);
      await page.waitForFunction(() => !document.querySelector(".loading"), null, { timeout: 60000 });
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      check(overflow <= 0, `${name} at ${width} px scrolls no wider than the window (${overflow})`);
      if (args.screenshots) {
        fs.mkdirSync(args.screenshots, { recursive: true });
        await page.screenshot({ path: path.join(args.screenshots, `${name}-${width}.png`), fullPage: name === "dashboard" });
      }
    }
  }

  // No token in any URL the page asked for, and nothing asked of another host.
  check(!requested.some((u) => u.includes(readerToken)), `no token in any of the ${requested.length} URLs the page requested`);
  check(requested.every((u) => u.startsWith(base) || u.startsWith("blob:") || u.startsWith("data:")),
    "every request went to this server");
  check(errors.length === 0, `no script errors: ${errors.join("; ")}`);
  check(!serverLog.includes(readerToken), "the token is not in the server's log");

  // Live: a turn appended while the page is open appears in the open transcript, then in the
  // session list, with no reload (the page's own marker survives).
  const liveSession = "claude-code-session:" + liveId;
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto(base + "/#/session/" + encodeURIComponent(liveSession));
  await page.waitForFunction(() => document.querySelectorAll("#transcript > article.message").length === 2,
    null, { timeout: 20000 });
  await page.evaluate(() => { window.__stayed = true; });
  const liveText = "appended while the page is open " + Date.now();
  appendTurn("is the page live?", liveText);
  await page.waitForFunction((t) => [...document.querySelectorAll("#transcript article.message")]
    .some((a) => a.textContent.includes(t)), liveText, { timeout: 20000 });
  const transcriptLive = await page.evaluate(() => ({ stayed: window.__stayed === true,
    messages: document.querySelectorAll("#transcript > article.message").length,
    loads: performance.getEntriesByType("navigation").length }));
  check(transcriptLive.stayed && transcriptLive.messages === 4,
    `a turn appended while its transcript is open appears in it without a reload (${JSON.stringify(transcriptLive)})`);
  await page.goto(base + "/#/sessions");
  const listed = () => page.$$eval("#sessions-list li", (items, id) => {
    const item = items.find((li) => li.querySelector("a").getAttribute("href").includes(encodeURIComponent(id)));
    return item ? item.textContent : null;
  }, liveSession);
  await page.waitForFunction(() => document.querySelectorAll("#sessions-list li").length > 0);
  const before = await listed();
  check(before && before.includes("4 messages"), `the live session is listed with its 4 messages: ${before}`);
  await page.evaluate(() => { window.__stayed = true; });
  appendTurn("and once more", "the list follows");
  await page.waitForFunction((id) => [...document.querySelectorAll("#sessions-list li")]
    .some((li) => li.querySelector("a").getAttribute("href").includes(encodeURIComponent(id)) && li.textContent.includes("6 messages")),
    liveSession, { timeout: 20000 });
  check(await page.evaluate(() => window.__stayed === true), "the session list shows the new turn's messages without a reload");
  // The live stream names only what alice's scope sees: bob's sessions, written now, are not.
  const feed = await page.evaluate(async () => {
    const source = new EventSource("/api/live");
    const seen = [];
    source.addEventListener("changes", (e) => seen.push(...JSON.parse(e.data).sessions.map((x) => x.session_id)));
    await new Promise((r) => source.addEventListener("hello", r));
    window.__feed = { source, seen };
    return true;
  });
  check(feed, "a second live stream opened");
  // bob's agent writes a session of his (ingested now), then alice's writes one more turn.
  const bobFolder = path.join(work, "bob-live");
  fs.mkdirSync(bobFolder);
  const bobId = "22fe0000-0000-4000-8000-00000000beef";
  writer(path.join(bobFolder, bobId + ".jsonl"), bobId)("bob's secret plan", "noted");
  quarry("ingest", "--no-progress", "--owner", "bob", bobFolder);
  appendTurn("after bob's", "alice again");
  await page.waitForFunction((id) => window.__feed.seen.includes(id), liveSession, { timeout: 20000 });
  const seen = await page.evaluate(() => { window.__feed.source.close(); return window.__feed.seen; });
  const bobIds = rows(`SELECT session_id FROM sessions WHERE owner = 'bob'`).map((r) => r.session_id);
  check(bobIds.includes("claude-code-session:" + bobId) && seen.every((id) => !bobIds.includes(id)),
    `the live stream named ${seen.length} changed sessions, none of bob's ${bobIds.length}`);

  // Revoking the token ends the sign-in.
  quarry("token", "revoke", "alice-browser", "--tokens", tokens);
  const status = await page.evaluate(async () => (await fetch("/api/session")).status);
  check(status === 401, "a revoked token's sign-in is refused");

  await browser.close();
  server.kill("SIGTERM");
  fs.rmSync(work, { recursive: true, force: true });
}

main().catch(async (e) => {
  console.error("FAILED: " + (e && e.stack ? e.stack : e));
  if (page) {
    const shown = await page.evaluate(() => document.body.innerText).catch(() => "");
    console.error("the page showed:\n" + shown.slice(0, 2000));
  }
  process.exit(1);
});
