"""quarry's MCP server exercised by a client quarry did not write: the official MCP Python SDK.

Starts `quarry mcp` over stdio: once open (the query tools, under the default reader scope of
the local user) and pinned to one conversation with `--session ID` (the fixed-statement tools and
the reads of that conversation): a session with subagents, and a subagent with a parent and
siblings, each trying to read across its conversation's edge. Every answer is checked against SQLite asked directly (Python's sqlite3 on the
archive file), never against quarry's own output.

    "$(benches/tools.sh mcp)" tests/clients/mcp_client.py --quarry target/debug/quarry \
        --archive archive.db

Exits non-zero on the first failed check, naming it.
"""

import argparse
import asyncio
import getpass
import sqlite3
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

OPEN_TOOLS = {"query_units", "search", "facets", "read", "lineage", "trace", "resolve_ref", "find_session",
              "sql_query", "explain", "list_tables", "query_completions"}
PINNED_TOOLS = {"conversation_recent_turns", "conversation_list_tool_calls", "read", "lineage", "trace",
                "find_session", "query_completions"}


def check(condition, what):
    if not condition:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"ok: {what}")


def rows_of(result):
    """The rows of a tool answer's envelope (structured content)."""
    check(not result.is_error, f"the call succeeded: {text_of(result)[:300]}")
    return result.structured_content["rows"]


def text_of(result):
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def walk(session, tool, call):
    """Every page of `tool` called with `call`, passing each page's next_cursor on: the pages'
    structured contents, and the last one."""
    pages, cursor = [], None
    while True:
        result = await session.call_tool(tool, {**call, **({"cursor": cursor} if cursor else {})})
        check(not result.is_error, f"{tool} page {len(pages) + 1} answers: {text_of(result)[:300]}")
        pages.append(result.structured_content)
        cursor = pages[-1].get("next_cursor")
        if not cursor:
            return pages, pages[-1]
        check(len(pages) < 1000, f"the {tool} walk ends")


async def open_server(args, db):
    owner = getpass.getuser()
    async with stdio_client(
        StdioServerParameters(command=args.quarry, args=["--archive", args.archive, "--tz", "UTC", "mcp"])
    ) as (read, write):
        async with ClientSession(read, write) as session:
            info = await session.initialize()
            check(info.server_info.name == "quarry", "the server names itself quarry")
            tools = {t.name: t for t in (await session.list_tools()).tools}
            check(set(tools) == OPEN_TOOLS, f"the open server offers exactly {sorted(OPEN_TOOLS)}: {sorted(tools)}")
            for tool in tools.values():
                check(bool(tool.description) and tool.input_schema.get("type") == "object",
                      f"{tool.name} has a description and an object schema")
            check("expression" in tools["query_units"].input_schema["properties"],
                  "query_units takes an expression")

            # The default scope: the local user's sessions, hidden messages not shown.
            visible = """FROM messages m JOIN sessions s USING (session_id)
                         WHERE s.owner = ? AND NOT m.hidden"""
            (expected,) = db.execute(f"SELECT count(*) {visible}", (owner,)).fetchone()
            result = await session.call_tool("query_units", {"expression": "messages | count"})
            rows = rows_of(result)
            check(rows == [[expected]], f"query_units counts {expected} messages as SQLite does: {rows}")
            check(result.structured_content["exact"] is True, "the envelope says exact")

            by_role = [list(r) for r in db.execute(
                f"SELECT m.role, count(*) {visible} GROUP BY m.role ORDER BY m.role", (owner,))]
            result = await session.call_tool("sql_query", {
                "sql": "SELECT role, count(*) AS n FROM messages GROUP BY role ORDER BY role"})
            check(rows_of(result) == by_role, f"sql_query groups by role as SQLite does: {by_role}")
            check(result.structured_content["columns"] == ["role", "n"], "sql_query answers in the SQL shape")

            result = await session.call_tool("query_units", {"expression": "messages", "limit": 5})
            check(len(rows_of(result)) == 5 and result.structured_content["truncated"] is True,
                  "a limit cuts the rows and sets truncated")
            check("truncated" in text_of(result), "the text rendering says truncated")

            # query_units pages: each capped answer hands out next_cursor, and the walk equals
            # SQLite's order of the reader's rows by primary key.
            want = [r[0] for r in db.execute(
                f"SELECT m.message_id {visible} AND m.role = 'user' ORDER BY m.message_id", (owner,))]
            pages, envelope = await walk(session, "query_units",
                                         {"expression": "messages where role:user | select message_id", "limit": 40})
            walked = [r[0] for page in pages for r in page["rows"]]
            pages = len(pages)
            check(walked == want and pages > 1,
                  f"query_units pages ({pages}) walk the reader's {len(want)} user messages in key order")

            result = await session.call_tool("list_tables", {})
            names = {t["name"] for t in result.structured_content["tables"]}
            check("messages" in names and "events_raw" not in names,
                  "list_tables shows the reader's catalog (no events_raw)")

            result = await session.call_tool("query_completions", {"kind": "example"})
            examples = result.structured_content["examples"]
            check(len(examples) > 10, f"query_completions lists {len(examples)} examples")
            result = await session.call_tool("query_completions", {"kind": "error"})
            errors = result.structured_content["errors"]
            check(len(errors) > 3 and all("diagnostic" in e for e in errors),
                  "query_completions lists mistakes with their diagnostics")

            result = await session.call_tool("query_units", {"expression": "messages where rol:assistant"})
            check(result.is_error, "a bad query is a tool error")
            diagnostic = result.structured_content["diagnostics"][0]
            check(diagnostic["column"] >= 1 and diagnostic["code"],
                  f"the tool error carries the diagnostic with its column: {diagnostic}")
            check("rol" in text_of(result), "the text draws the error under the query")

            result = await session.call_tool("query_units", {})
            check(result.is_error, "a missing argument is a tool error, not a crash")
            result = await session.call_tool("query_completions", {"kind": "everything"})
            check(result.is_error, "a wrong argument value is a tool error")

            result = await session.call_tool("sql_query", {"sql": "DROP TABLE messages"})
            check(result.is_error and result.structured_content["code"] == "sql_refused",
                  "DDL is refused as a tool error")
            result = await session.call_tool("sql_query", {"sql": "SELECT payload FROM events_raw"})
            check(result.is_error, "events_raw is not in a reader's catalog")

            # A ranked search paged to its end with cursors: every page's sessions are the
            # reader's and match in SQLite's own index, none repeats, and the walk equals the
            # one-page answer.
            matching = {r[0] for r in db.execute(
                """SELECT DISTINCT b.session_id FROM blocks_fts JOIN blocks b ON b.rowid = blocks_fts.rowid
                   JOIN messages m ON m.message_id = b.message_id AND m.session_id = b.session_id
                   JOIN sessions s ON s.session_id = b.session_id
                   WHERE blocks_fts MATCH 'test' AND b.type IN ('text', 'thinking')
                     AND m.role IN ('user', 'assistant') AND NOT m.hidden AND s.owner = ?""", (owner,))}
            pages, envelope = await walk(session, "search", {"query": "test", "limit": 3})
            walked = [h["session"]["session_id"] for page in pages for h in page["hits"]]
            first_cursor = pages[0].get("next_cursor")
            pages = len(pages)
            check(len(walked) == len(set(walked)) == envelope["total"],
                  f"the walk of {pages} pages returns each of the {envelope['total']} sessions once")
            check(set(walked) <= matching and len(walked) > 0,
                  f"every session found is the reader's and matches in SQLite ({len(walked)} of {len(matching)})")
            result = await session.call_tool("search", {"query": "test", "limit": 1000})
            whole = [h["session"]["session_id"] for h in result.structured_content["hits"]]
            check(whole == walked, "the paged walk equals the one-page ranking")
            check(first_cursor is not None, "the search has more than one page")
            result = await session.call_tool("search", {"query": "error", "limit": 3, "cursor": first_cursor})
            check(result.is_error and result.structured_content["code"] == "invalid_cursor",
                  "another search's cursor is refused")
            result = await session.call_tool("search", {"query": "test", "retrieval_lane": "semantic"})
            check(result.is_error and result.structured_content["code"] == "lane_unavailable",
                  "the semantic lane is a typed unavailability, not a fallback")

            # Facets over the reader's sessions: the global view equals SQLite's counts of the
            # reader's sessions, and the search-scoped view counts the sessions the walk found.
            result = await session.call_tool("facets", {"families": ["origin", "tool"]})
            check(not result.is_error, f"facets answer: {text_of(result)[:300]}")
            facets = result.structured_content
            expected = dict(db.execute(
                "SELECT origin, count(*) FROM sessions WHERE owner = ? GROUP BY origin", (owner,)))
            got = {b["value"]: b["count"] for b in facets["global"]["origin"]}
            check(got == expected, f"global origin counts are the reader's sessions: {got} vs {expected}")
            check(not facets["scoped_to_query"] and facets["complete_families"] == ["origin", "tool"],
                  "an unfiltered facets call counts the families asked for")
            result = await session.call_tool("facets", {"query": "test", "families": ["origin"]})
            facets = result.structured_content
            check(facets["scoped_to_query"] and facets["total_sessions"]["scoped"] == len(walked)
                  and sum(b["count"] for b in facets["scoped"]["origin"]) == len(walked),
                  f"search-scoped facets count the {len(walked)} sessions the search found")

            # Reading: a window of one of the reader's sessions holds SQLite's records, without
            # raw payloads; another owner's session is what an absent one is.
            mine, count = db.execute(
                """SELECT s.session_id, count(*) FROM sessions s JOIN events e ON e.session_id = s.session_id
                   WHERE s.owner = ? GROUP BY s.session_id HAVING count(*) >= 5 AND sum(e.seq <= 3) = 4
                   ORDER BY s.session_id LIMIT 1""", (owner,)).fetchone()
            result = await session.call_tool("read", {"ref": f"session:{mine}", "around": 2, "before": 2, "after": 1})
            check(not result.is_error, f"read answers: {text_of(result)[:300]}")
            window = result.structured_content
            want = [list(r) for r in db.execute(
                "SELECT seq, type, surface FROM events WHERE session_id = ? AND seq BETWEEN 0 AND 3 ORDER BY seq",
                (mine,))]
            got = [[e["seq"], e["type"], e["surface"]] for e in window["events"]]
            check(got == want and window["startSeq"] == 0 and window["endSeq"] == 3
                  and window["target"]["seq"] == 2,
                  f"the window around seq 2 holds SQLite's records 0-3 of {mine}")
            check(all(e["payload"] is None for e in window["events"]), "a reader's window has no raw payloads")
            (last,) = db.execute("SELECT max(seq) FROM events_raw WHERE session_id = ?", (mine,)).fetchone()
            result = await session.call_tool("read", {"ref": mine, "around": last + 1})
            check(result.is_error and result.structured_content["code"] == "event_not_found",
                  "a seq past the end is event_not_found")
            result = await session.call_tool("read", {"ref": mine, "around": 1, "before": 201})
            check(result.is_error and result.structured_content["code"] == "invalid_window",
                  "more than 200 neighbours is invalid_window")
            row = db.execute("SELECT session_id FROM sessions WHERE owner IS NOT ? LIMIT 1", (owner,)).fetchone()
            other = row[0] if row else None
            for ref in [other, "session:no-such-session"]:
                if ref is None:
                    continue
                result = await session.call_tool("lineage", {"ref": ref})
                check(result.is_error and result.structured_content["code"] == "session_not_found",
                      f"lineage of {ref} (not the reader's) is session_not_found")
            pages, last = await walk(session, "read", {"ref": mine, "limit": 2})
            positions = [m["position"] for page in pages for m in page["messages"]]
            want = [r[0] for r in db.execute(
                "SELECT position FROM messages WHERE session_id = ? AND NOT hidden ORDER BY position", (mine,))]
            check(positions == want, f"the transcript of {mine} pages its {len(want)} messages in order")
            result = await session.call_tool("read", {"ref": mine, "limit": 2, "before": 1})
            check(result.is_error and result.structured_content["code"] == "bad_request",
                  "a transcript's and a window's arguments together are bad_request")
            (message, text) = db.execute(
                "SELECT message_id, text FROM messages WHERE session_id = ? AND NOT hidden ORDER BY position LIMIT 1",
                (mine,)).fetchone()
            result = await session.call_tool("resolve_ref", {"ref": f"message:{message}"})
            got = result.structured_content
            check(not result.is_error and got["resolved"] and got["session_id"] == mine
                  and got["object"]["message_id"] == message and got["object"]["text"] == text[:4000],
                  f"message:{message} resolves to SQLite's row")
            result = await session.call_tool("resolve_ref", {"ref": "message:no-such/m0"})
            check(not result.is_error and result.structured_content["resolved"] is False
                  and result.structured_content["reason"] == "not_found",
                  "a missing message resolves to the bounded unresolved payload")
            result = await session.call_tool("lineage", {"ref": mine})
            check(not result.is_error and result.structured_content["target"]["header"]["session_id"] == mine,
                  "lineage of the reader's own session answers")

            result = await session.call_tool("explain", {"expression": "messages | group by role | count"})
            check(not result.is_error and result.structured_content["unit_source"] == "messages",
                  "explain shows the parse")
            result = await session.call_tool("explain", {"expression": "messages | count", "plan": True})
            check(result.is_error and result.structured_content["code"] == "admin_only",
                  "explaining a plan is for the admin scope")


async def pinned_server(args, db):
    (session_id,) = db.execute(
        """SELECT t.session_id FROM turns t JOIN actions a ON a.session_id = t.session_id
           AND a.turn_id = t.turn_id WHERE t.committed
           GROUP BY t.session_id ORDER BY count(DISTINCT t.turn_id) DESC, t.session_id LIMIT 1""").fetchone()
    async with stdio_client(StdioServerParameters(
            command=args.quarry,
            args=["--archive", args.archive, "--tz", "UTC", "mcp", "--session", session_id])) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            check(tools == PINNED_TOOLS, f"a pinned server offers exactly {sorted(PINNED_TOOLS)}: {sorted(tools)}")

            turns = [r[0] for r in db.execute(
                """SELECT turn_id FROM turns WHERE session_id = ? AND committed
                   ORDER BY started_at_ms DESC, turn_id DESC""", (session_id,))]
            result = await session.call_tool("conversation_recent_turns", {})
            rows = rows_of(result)
            columns = result.structured_content["columns"]
            got = [r[columns.index("turn_id")] for r in rows]
            check(got == turns[:20], f"the 20 newest committed turns, newest first ({len(turns)} in all)")
            counts = {r[0]: r[1] for r in db.execute(
                """SELECT turn_id, count(*) FROM messages WHERE session_id = ? AND NOT hidden
                   GROUP BY turn_id""", (session_id,))}
            check(all(r[columns.index("messages")] == counts.get(r[columns.index("turn_id")], 0) for r in rows),
                  "each turn's message count is SQLite's")

            result = await session.call_tool("conversation_recent_turns", {"limit": 500, "full": True})
            rows = rows_of(result)
            check(len(rows) == min(50, len(turns)), f"at most 50 turns: {len(rows)}")
            check("failed_tool_calls" in result.structured_content["columns"], "full mode adds failure information")

            # Arguments cannot pick another conversation.
            result = await session.call_tool("conversation_recent_turns", {"session_id": "other"})
            if not result.is_error:
                got = [r[0] for r in result.structured_content["rows"]]
                check(set(got) <= set(turns), "an extra argument does not widen the conversation")

            (calls,) = db.execute(
                """SELECT count(*) FROM actions a JOIN messages m USING (message_id)
                   WHERE a.session_id = ? AND NOT m.hidden
                   AND (a.turn_committed OR a.turn_id IS NULL)""", (session_id,)).fetchone()
            result = await session.call_tool("conversation_list_tool_calls", {})
            rows = rows_of(result)
            check(len(rows) == min(20, calls), f"20 newest tool calls of {calls}: {len(rows)}")
            columns = result.structured_content["columns"]
            check("arguments_preview" in columns and "approval" not in columns, "previews by default")
            result = await session.call_tool("conversation_list_tool_calls", {"limit": 1000, "full": True})
            rows = rows_of(result)
            columns = result.structured_content["columns"]
            check(len(rows) == min(100, calls) and "approval" in columns,
                  f"full mode, at most 100 calls: {len(rows)}")
            approvals = {r[columns.index("approval")] for r in rows}
            check(approvals <= {"ran", "rejected", "no_result"}, f"approval statuses: {approvals}")

            try:
                result = await session.call_tool("query_units", {"expression": "messages | count"})
                refused = result.is_error
            except Exception:  # a protocol error: the tool does not exist here
                refused = True
            check(refused, "a pinned server runs no query text")


def pinned(args, session_id):
    return stdio_client(StdioServerParameters(
        command=args.quarry, args=["--archive", args.archive, "--tz", "UTC", "mcp", "--session", session_id]))


async def refused_everywhere(session, ref, who):
    """Every read of `ref` answers exactly what a missing session answers."""
    for tool, call in [("read", {"ref": ref}), ("read", {"ref": ref, "around": 0}),
                       ("read", {"ref": ref, "limit": 1}), ("trace", {"ref": ref, "seq": 0}),
                       ("lineage", {"ref": ref})]:
        result = await session.call_tool(tool, call)
        check(result.is_error and result.structured_content["code"] == "session_not_found",
              f"{who}: {tool} {call} is session_not_found")
    result = await session.call_tool("find_session", {"id": ref})
    check(not result.is_error and result.structured_content["resolved"] is False,
          f"{who}: find_session of {ref} finds nothing")


async def pinned_conversations(args, db):
    """A pinned server reads its own conversation (the session and the subagents it started) and
    nothing of any other session but headers in a lineage."""
    # A main session with subagents in the archive.
    (parent,) = db.execute(
        """SELECT p.session_id FROM sessions p WHERE p.parent_session_id IS NULL
           AND EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = p.session_id)
           ORDER BY p.session_id LIMIT 1""").fetchone()
    children = [r[0] for r in db.execute(
        "SELECT session_id FROM sessions WHERE parent_session_id = ? ORDER BY session_id", (parent,))]
    (unrelated,) = db.execute(
        """SELECT session_id FROM sessions WHERE session_id != ? AND coalesce(parent_session_id, '') != ?
           ORDER BY session_id LIMIT 1""", (parent, parent)).fetchone()
    async with pinned(args, parent) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            pages, _ = await walk(session, "read", {"ref": parent, "limit": 50})
            positions = [m["position"] for page in pages for m in page["messages"]]
            want = [r[0] for r in db.execute(
                "SELECT position FROM messages WHERE session_id = ? AND NOT hidden ORDER BY position", (parent,))]
            check(positions == want, f"pinned to {parent}: its transcript, {len(want)} messages")
            for child in children:
                result = await session.call_tool("read", {"ref": child, "limit": 5})
                check(not result.is_error and result.structured_content["session"]["session_id"] == child,
                      f"pinned to {parent}: its subagent {child} reads")
                (records,) = db.execute("SELECT count(*) FROM events WHERE session_id = ?", (child,)).fetchone()
                result = await session.call_tool("trace", {"ref": child, "seq": records - 1})
                check(not result.is_error and result.structured_content["target"]["seq"] == records - 1,
                      f"pinned to {parent}: a record of {child} traces")
            result = await session.call_tool("lineage", {"ref": parent})
            got = sorted(n["session"]["header"]["session_id"] for n in result.structured_content["descendants"])
            check(got == children, f"pinned to {parent}: its lineage holds its subagents {children}")
            await refused_everywhere(session, unrelated, f"pinned to {parent}")
            await refused_everywhere(session, "session:no-such-session", f"pinned to {parent}")

    # A subagent with a parent and a sibling in the archive.
    row = db.execute(
        """SELECT c.session_id, c.parent_session_id, s.session_id FROM sessions c
           JOIN sessions p ON p.session_id = c.parent_session_id
           JOIN sessions s ON s.parent_session_id = c.parent_session_id AND s.session_id != c.session_id
           ORDER BY c.session_id LIMIT 1""").fetchone()
    check(row is not None, "the archive holds a subagent with a parent and a sibling")
    child, parent, sibling = row
    async with pinned(args, child) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("read", {"ref": child})
            check(not result.is_error, f"pinned to {child}: its own transcript reads")
            await refused_everywhere(session, sibling, f"pinned to {child}, its sibling")
            await refused_everywhere(session, parent, f"pinned to {child}, its parent's body")
            result = await session.call_tool("lineage", {"ref": child})
            lineage = result.structured_content
            check(not result.is_error and lineage["complete"] and lineage["root"]["header"]["session_id"] == parent,
                  f"pinned to {child}: its lineage reaches its parent {parent}")
            header = lineage["ancestors"][0]
            (title,) = db.execute("SELECT title FROM sessions WHERE session_id = ?", (parent,)).fetchone()
            check(header.get("header_only") is True and header["header"]["message_count"] == 0
                  and header["header"]["repo"] is None and header["header"]["session_id"] == parent,
                  f"pinned to {child}: the parent is a header only")
            check((header["header"]["title"] is None) == (title is None),
                  "the parent's header carries its title (masked)")


async def errors(args, db):
    """The read errors over MCP under the admin scope, each with its code and JSON-RPC code."""
    (mine, records) = db.execute(
        "SELECT session_id, count(*) FROM events_raw GROUP BY session_id ORDER BY session_id LIMIT 1").fetchone()
    async with stdio_client(StdioServerParameters(
            command=args.quarry, args=["--archive", args.archive, "--scope", "admin", "mcp"])) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for tool, call, code, rpc in [
                ("read", {"ref": "session:no-such-session"}, "session_not_found", -32004),
                ("trace", {"ref": mine, "seq": records}, "event_not_found", -32004),
                ("read", {"ref": mine, "around": 0, "after": 201}, "invalid_window", -32602),
                ("read", {"ref": mine, "around": 0, "surface": ["gone"]}, "invalid_surface", -32602),
                ("read", {"ref": mine, "limit": 0}, "invalid_limit", -32602),
                ("read", {"ref": mine, "cursor": "nonsense"}, "invalid_cursor", -32009),
                ("search", {"query": "test", "where": "colour:blue"}, "invalid_filter", -32602),
                ("search", {"query": "test AND"}, "invalid_query", -32602),
                ("search", {"query": "test", "limit": 0}, "invalid_limit", -32602),
            ]:
                result = await session.call_tool(tool, call)
                body = result.structured_content or {}
                check(result.is_error and body.get("code") == code and body.get("jsonrpc_code") == rpc,
                      f"{tool} {call}: {code} ({rpc}): {body.get('code')}")
            result = await session.call_tool("trace", {"ref": mine, "seq": 0})
            check(not result.is_error and result.structured_content["target"]["seq"] == 0, "a trace answers")


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quarry", required=True)
    parser.add_argument("--archive", required=True)
    args = parser.parse_args()
    db = sqlite3.connect(f"file:{args.archive}?mode=ro", uri=True)
    await open_server(args, db)
    await pinned_server(args, db)
    await pinned_conversations(args, db)
    await errors(args, db)
    print("the MCP server passed every check")


if __name__ == "__main__":
    asyncio.run(main())
