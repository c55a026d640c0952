// How fast the web page shows an archive, in headless Chromium (Debian's package, driven by
// playwright-core: `benches/tools.sh web`): the time from navigation to a rendered first page of
// search hits, and to a rendered transcript of 2,000 records (its first page of 500 messages,
// then all of it through **More**), and to a dashboard with every panel rendered over every day of
// the archive's usage (--since/--until narrow it), with when each panel was drawn (they come in
// one streamed answer, each as soon as it is ready; none waits on another). Each figure is the median of --runs fresh navigations.
//
//   node benches/web_page.cjs --modules "$(benches/tools.sh web)" --quarry target/release/quarry \
//       --archive /tmp/quarry-compare-1/archive.db [--runs 5]
//
// It adds one generated Claude Code session of 2,000 records to the archive (written to
// web-bench/ beside it; the 1M archive of `benches/compare --keep` is the intended one),
// refreshes its snapshot so the server reads a fresh one, and serves it on loopback with a token
// of its own; it removes its temporary files.
"use strict";

const { execFileSync, spawn } = require("node:child_process");
const fs = require("node:fs");
const net = require("node:net");
const os = require("node:os");
const path = require("node:path");

const args = { runs: "5" };
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
const { chromium } = require(path.join(args.modules, "playwright-core"));
const runs = Number(args.runs);
const work = fs.mkdtempSync(path.join(os.tmpdir(), "quarry-web-bench-"));
const quarry = (...a) => execFileSync(args.quarry, ["--archive", args.archive, ...a], { encoding: "utf8" });

// A session of 2,000 records: 1,000 prompts and 1,000 replies.
const native = "0b0e0c00-0000-4000-8000-00000000web1";
// Beside the archive, so a second run finds it unchanged and the archive keeps one copy.
const file = path.join(path.dirname(path.resolve(args.archive)), "web-bench", native + ".jsonl");
fs.mkdirSync(path.dirname(file), { recursive: true });
const lines = [];
let parent = null;
for (let i = 0; i < 1000; i++) {
  const at = new Date(Date.UTC(2026, 5, 1, 9, 0, 0) + i * 60000).toISOString();
  const common = { sessionId: native, cwd: "/home/bench/web-bench", version: "2.1.0", isSidechain: false, userType: "external" };
  const u = "u" + i, a = "a" + i;
  lines.push(JSON.stringify({ ...common, type: "user", uuid: u, parentUuid: parent, timestamp: at,
    message: { role: "user", content: `step ${i}: check the bench widget number ${i} and report` } }));
  lines.push(JSON.stringify({ ...common, type: "assistant", uuid: a, parentUuid: u, timestamp: at, requestId: "req_" + i,
    message: { id: "msg_" + i, type: "message", role: "assistant", model: "claude-sonnet-4-5",
      content: [{ type: "text", text: `Widget ${i} checked: it reports ${i * 7} units, as expected for step ${i}.` }],
      usage: { input_tokens: 100 + i, output_tokens: 40 } } }));
  parent = a;
}
fs.writeFileSync(file, lines.join("\n") + "\n");
quarry("ingest", "--no-progress", path.dirname(file));
quarry("snapshot");
const session = "claude-code-session:" + native;
const tokens = path.join(work, "tokens.toml");
const token = quarry("token", "add", "web-bench", "--scope", "admin", "--tokens", tokens).trim().split("\n").pop().trim();
const phrase = "widget number";

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
}

async function main() {
  const port = await new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
  const base = `http://127.0.0.1:${port}`;
  const server = spawn(args.quarry, ["--archive", args.archive, "serve", "--listen", `127.0.0.1:${port}`, "--tokens", tokens],
    { stdio: "ignore" });
  for (let i = 0; i < 300; i++) {
    try { if ((await fetch(base + "/healthz")).ok) break; } catch (_) { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(base + "/");
  await page.fill("#token", token);
  await page.click("#sign-in-form button");
  await page.waitForSelector("#nav:not([hidden])");
  const timed = async (url, done) => {
    const fresh = await context.newPage();
    const t0 = Date.now();
    await fresh.goto(base + url);
    const marks = await done(fresh, t0);
    await fresh.close();
    return marks;
  };
  const search = [], firstPage = [], whole = [], dashboard = [], panelTimes = {};
  const [first, last] = execFileSync("sqlite3", [args.archive,
    "SELECT date(min(occurred_at_ms) / 1000, 'unixepoch'), date(max(occurred_at_ms) / 1000, 'unixepoch') FROM usage"],
  { encoding: "utf8" }).trim().split("|");
  const since = args.since || first;
  const until = args.until || last;
  const dashboardUrl = "/#/dashboard?" + new URLSearchParams({ since, until, tz: "UTC" });
  for (let i = 0; i <= runs; i++) {
    const s = await timed("/#/search?q=" + encodeURIComponent(phrase), async (p, t0) => {
      await p.waitForSelector("#hit-list li", { timeout: 120000 });
      return Date.now() - t0;
    });
    const [f, w] = await timed("/#/session/" + encodeURIComponent(session), async (p, t0) => {
      await p.waitForFunction(() => document.querySelectorAll("#transcript > article").length >= 500, null, { timeout: 120000 });
      const first = Date.now() - t0;
      let shown = await p.$$eval("#transcript article", (a) => a.length);
      while (shown < 2000) {
        await p.click("#transcript button.plain");
        await p.waitForFunction((n) => document.querySelectorAll("#transcript article").length > n, shown,
          { timeout: 120000 });
        shown = await p.$$eval("#transcript article", (a) => a.length);
      }
      return [first, Date.now() - t0];
    });
    const [d, panels] = await timed(dashboardUrl, async (p, t0) => {
      await p.waitForFunction(() => {
        const ps = [...document.querySelectorAll(".dash-panel")];
        return ps.length > 0 && ps.every((x) => x.dataset.rendered === "true");
      }, null, { timeout: 300000 });
      const all = Date.now() - t0;
      const failed = await p.$$eval(".dash-panel .error-box", (e) => e.map((x) => x.textContent));
      if (failed.length) throw new Error("a panel failed: " + failed.join("; "));
      // When the streamed answer was asked for, and when each panel was drawn (ms after navigation).
      const entries = await p.evaluate(() => {
        const asked = performance.getEntriesByType("resource").find((e) => e.name.includes("/api/dashboard/all"));
        return [...document.querySelectorAll(".dash-panel")].map((x) => ({ panel: x.id.replace("panel-", ""),
          start: asked ? asked.startTime : 0, took: Number(x.dataset.at) - (asked ? asked.startTime : 0) }));
      });
      return [all, entries];
    });
    if (i === 0) continue; // the warm-up
    search.push(s); firstPage.push(f); whole.push(w); dashboard.push(d);
    for (const e of panels) (panelTimes[e.panel] = panelTimes[e.panel] || []).push([e.start, e.took]);
  }
  const rows = Number(execFileSync("sqlite3", [args.archive, "SELECT count(*) FROM messages"], { encoding: "utf8" }));
  console.log(`archive: ${rows.toLocaleString("en")} messages, fresh snapshot; ${runs} runs after a warm-up, medians`);
  console.log(`navigation to a rendered first page of search hits ("${phrase}"): ${median(search)} ms (min ${Math.min(...search)}, max ${Math.max(...search)})`);
  console.log(`navigation to the first 500 messages of a 2,000-record transcript: ${median(firstPage)} ms`);
  console.log(`navigation to all 2,000 messages rendered (four pages): ${median(whole)} ms (min ${Math.min(...whole)}, max ${Math.max(...whole)})`);
  console.log(`navigation to a dashboard with all ${Object.keys(panelTimes).length} panels rendered (${since} through ${until}, UTC): ${median(dashboard)} ms (min ${Math.min(...dashboard)}, max ${Math.max(...dashboard)})`);
  for (const [panel, times] of Object.entries(panelTimes)) {
    console.log(`  ${panel}: asked at ${Math.round(median(times.map((t) => t[0])))} ms, drawn ${Math.round(median(times.map((t) => t[1])))} ms later`);
  }
  await browser.close();
  server.kill("SIGTERM");
  fs.rmSync(work, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
