//! `quarry mcp`: a Model Context Protocol server over stdio (rmcp), for agents asking an
//! archive of their own past sessions what happened.
//!
//! Without `--session` it offers `query_units` (the language), `sql_query` (read-only SQL),
//! `explain`, `list_tables`, `query_completions`, `search`, `facets` and the reads (`read`,
//! `lineage`, `trace`, `resolve_ref`, `find_session`), all under one scope (by default a reader
//! scope of the local owner). With `--session ID` it is a conversation's own server: the two
//! fixed-statement tools, `conversation_recent_turns` and `conversation_list_tool_calls`, over
//! that one session (whatever their arguments say), the reads `read`, `lineage`, `trace` and
//! `find_session` over that conversation (the session and the subagent sessions it started;
//! other sessions appear in a lineage as headers only), plus `query_completions`; no query text
//! of the agent's reaches the engine.
//!
//! A thin adapter over the [`Service`]: every answer is the envelope (written by the output
//! module's JSON encoder) as structured content, with a short table as text; every failure is
//! a tool error (`isError: true`) carrying the one error body, with the JSON-RPC code of its
//! class as `jsonrpc_code` (never a crash of the server). Every query, the fixed statements
//! included, is audited with surface `mcp`, and so are the tools that run none.

use std::sync::Arc;
use std::time::Instant;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use super::service::Explained;
use super::{Asker, ScopeRef, Service};
use quarry::audit::{Language, RequestKind};
use quarry::output::{json, render_table};
use quarry::{Caller, Caps, Error, QueryResult, Request, Scope};

/// Rows a tool answer holds unless the call asks for another number.
const DEFAULT_ROWS: usize = 100;

/// Rows the text rendering of an answer shows (the structured envelope holds them all).
const TEXT_ROWS: usize = 30;

/// What the server offers.
#[derive(Debug, Clone)]
pub enum Mode {
    /// The query tools, under the server's scope.
    Open(Scope),
    /// A conversation's own tools over this one session.
    Pinned {
        /// The session's id.
        session_id: String,
    },
}

/// The MCP server.
pub struct McpServer {
    service: Arc<Service>,
    mode: Mode,
    asker: Asker,
    tool_router: ToolRouter<McpServer>,
}

/// `query_units`' arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct QueryUnitsArgs {
    /// A query of quarry's pipeline language, e.g. `messages where role:assistant | group by
    /// session.repo | agg count, p90:word_count` or `actions where is_error:true | group by
    /// tool_name | count`. Call query_completions with kind "example" for valid examples.
    pub expression: String,
    /// At most this many rows (default 100). When rows are cut, the answer's `truncated` is
    /// true and `next_cursor` continues: narrow the query or aggregate rather than reading on
    /// where you can.
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<usize>,
    /// The previous page's `next_cursor`, passed back unchanged with the same expression.
    pub cursor: Option<String>,
}

/// `read`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadArgs {
    /// The session: `session:ID` (as hits and rows cite it), its id, native id or a unique
    /// prefix of one.
    pub r#ref: String,
    /// The seq of a source record to read with its neighbours (0-based order of the session's
    /// records). Without it: a page of the session's transcript.
    pub around: Option<i64>,
    /// Messages on a transcript page (1 to 2000, default 200).
    pub limit: Option<usize>,
    /// A transcript page's `next_cursor`, passed back unchanged.
    pub cursor: Option<String>,
    /// Records before it (0 to 200, default 5).
    pub before: Option<i64>,
    /// Records after it (0 to 200, default 5).
    pub after: Option<i64>,
    /// With `around`: only records on these surfaces (`current`, `shadowed`, `log-only`).
    pub surface: Option<Vec<String>>,
}

/// `trace`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TraceArgs {
    /// The session: `session:ID`, its id, native id or a unique prefix of one.
    pub r#ref: String,
    /// The record's seq (0-based order of the session's records, as `read` with `around`
    /// shows them).
    pub seq: i64,
}

/// `find_session`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FindSessionArgs {
    /// The session's UUID as its agent names it (its native id), its quarry id, or a unique
    /// prefix of either.
    pub id: String,
}

/// `resolve_ref`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ResolveArgs {
    /// A ref as answers cite them: `session:ID`, `message:ID`, `block:ID`, `action:ID`,
    /// `assertion:ID`, `delegation:ID`, `run:ID`, `observed-event:ID`, `context-snapshot:ID`.
    pub r#ref: String,
}

/// `lineage`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LineageArgs {
    /// The session: `session:ID`, its id, native id or a unique prefix of one.
    pub r#ref: String,
}

/// `search`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// What to find, searched as text: words (all must occur), `prefix*`, "quoted phrases",
    /// AND / OR / NOT in capitals, e.g. `flaky login test` or `"null pointer" NOT test`.
    pub query: String,
    /// `auto` (default, the dialogue lane), `dialogue` (prose and thinking of user and
    /// assistant messages) or `actions` (tool calls, commands, paths and their output).
    pub retrieval_lane: Option<String>,
    /// Only sessions this predicate of the query language admits, applied before ranking,
    /// e.g. `repo:quarry since:2026-11-01`.
    pub r#where: Option<String>,
    /// Rank the messages of this one session instead of sessions.
    pub session: Option<String>,
    /// Hits per page (default 20, at most 1000).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// The previous page's `next_cursor`, passed back unchanged to get the next page (the
    /// walk stays stable while new sessions are ingested).
    pub cursor: Option<String>,
}

/// `facets`' arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FacetsArgs {
    /// Count the sessions this search text matches (as `search` takes it).
    pub query: Option<String>,
    /// The search's lane: `auto` (default), `dialogue` or `actions`.
    pub retrieval_lane: Option<String>,
    /// Count the sessions holding a row of this query of the language, e.g.
    /// `repo:quarry since:2026-11-01` or `messages where role:assistant`.
    pub r#where: Option<String>,
    /// Only these families: origin, tag, model, machine, day, repo, tool (default: all).
    pub families: Option<Vec<String>>,
    /// The time families may take in milliseconds; those not counted by then are deferred.
    pub budget_ms: Option<u64>,
    /// Leave out each value's idf.
    #[serde(default)]
    pub no_idf: bool,
}

/// `sql_query`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SqlQueryArgs {
    /// One read-only SQL query (SELECT or WITH ... SELECT) over the tables list_tables shows,
    /// e.g. `SELECT tool_name, count(*) AS calls FROM actions GROUP BY tool_name ORDER BY calls
    /// DESC`. Anything else (DDL, DML, SET, COPY, several statements) is refused.
    pub sql: String,
    /// At most this many rows (default 100); `truncated` says when rows were cut.
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<usize>,
}

/// `explain`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExplainArgs {
    /// A query of the language.
    pub expression: String,
    /// DataFusion's logical and physical plans instead of the parse (admin scope only).
    #[serde(default)]
    pub plan: bool,
}

/// `query_completions`' arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CompletionsArgs {
    /// `example`: valid queries per unit and form; `error`: typical mistakes with the
    /// diagnostic quarry gives and the corrected query.
    pub kind: CompletionKind,
    /// Only examples of this unit (`sessions`, `messages`, `actions`, ...).
    pub unit: Option<String>,
}

/// What `query_completions` lists.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CompletionKind {
    /// Valid example queries.
    Example,
    /// Typical mistakes with their diagnostics and corrections.
    Error,
}

/// `conversation_recent_turns`' arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RecentTurnsArgs {
    /// How many turns, newest first (default 20, at most 50).
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u32>,
    /// Add failure information: failed tool calls, the last error, the whole prompt and the
    /// final reply.
    #[serde(default)]
    pub full: bool,
}

/// `conversation_list_tool_calls`' arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ToolCallsArgs {
    /// How many calls, newest first (default 20, at most 100).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
    /// Add the whole arguments, an output preview, exit code, duration and approval status.
    #[serde(default)]
    pub full: bool,
}

#[tool_router]
impl McpServer {
    /// A server of `mode` over `service`; `who` is recorded in the audit trail.
    pub fn new(service: Arc<Service>, mode: Mode, who: Option<String>) -> McpServer {
        let mut tool_router = Self::tool_router();
        let offered: &[&str] = match mode {
            Mode::Open(_) => &[
                "query_units",
                "search",
                "facets",
                "read",
                "lineage",
                "trace",
                "resolve_ref",
                "find_session",
                "sql_query",
                "explain",
                "list_tables",
                "query_completions",
            ],
            Mode::Pinned { .. } => &[
                "conversation_recent_turns",
                "conversation_list_tool_calls",
                "read",
                "lineage",
                "trace",
                "find_session",
                "query_completions",
            ],
        };
        let all: Vec<String> = tool_router
            .list_all()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        for name in all {
            if !offered.contains(&name.as_str()) {
                tool_router.remove_route(&name);
            }
        }
        let scope = match &mode {
            Mode::Open(scope) => scope.clone(),
            Mode::Pinned { session_id } => {
                Scope::Reader(quarry::scope::ReaderScope::pinned(session_id))
            }
        };
        McpServer {
            service,
            mode,
            asker: Asker {
                caller: Caller {
                    who,
                    surface: "mcp".into(),
                },
                scope: ScopeRef::Fixed(scope),
            },
            tool_router,
        }
    }

    /// Run a query of quarry's pipeline language over the archive and get its exact answer:
    /// rows of sessions, messages, blocks, actions, files, runs and other units, or aggregates
    /// (count, sum, avg, exact percentiles) grouped by any field. Returns the envelope
    /// (`columns`, `rows`, `total`, `truncated`, `input_rows` for aggregates).
    #[tool(annotations(read_only_hint = true))]
    async fn query_units(
        &self,
        Parameters(args): Parameters<QueryUnitsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = Request::query(&args.expression)
            .with_caps(caps(args.limit))
            .paged(args.cursor);
        Ok(self.ask(request).await)
    }

    /// Ranked full-text search over the sessions: "find the session where I fixed the flaky
    /// login test". Returns sessions best first (BM25 over the rows this scope sees), each
    /// with its best-matching message, a highlighted snippet, score and rank; `total` counts
    /// every matching session; pass `next_cursor` back as `cursor` for the next page (absent
    /// on the last).
    #[tool(annotations(read_only_hint = true))]
    async fn search(
        &self,
        Parameters(args): Parameters<SearchArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = quarry::search::SearchRequest {
            text: args.query,
            lane: args.retrieval_lane,
            filter: args.r#where,
            session: args.session,
            page_size: args.limit,
            offset: None,
            cursor: args.cursor,
        };
        Ok(
            match self.service.search(&self.asker, &request, None).await {
                Ok(envelope) => {
                    let text = quarry::search::render_text(&envelope);
                    structured(text, serde_json::to_value(&envelope).unwrap_or_default())
                }
                Err(e) => tool_error(&e, Some(request.text_of(&e))),
            },
        )
    }

    /// Read a session: a page of its transcript (messages in order with their text, tool calls
    /// and results, each subagent's transcript nested at the call that started it, compactions
    /// marked; `limit` messages, `next_cursor` for the next page), or with `around` (a seq;
    /// `before`/`after` up to 200) its source records around one, each with its type, time,
    /// surface (current / shadowed / log-only) and the messages read from it; raw records for
    /// the admin scope. A `message:` or `block:` ref reads that message in its context.
    #[tool(annotations(read_only_hint = true))]
    async fn read(
        &self,
        Parameters(args): Parameters<ReadArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let mixed = match args.around {
            Some(_) => args.limit.is_some() || args.cursor.is_some(),
            None => args.before.is_some() || args.after.is_some() || args.surface.is_some(),
        };
        if mixed {
            let e = Error::BadRequest(
                "`limit` and `cursor` page a transcript, `before`, `after` and `surface` shape a window around `around`: give one or the other".into(),
            );
            return Ok(tool_error(&e, Some(&args.r#ref)));
        }
        use quarry::read::{ReadRequest, Ref, RefKind};
        let in_context = Ref::parse(&args.r#ref)
            .is_some_and(|r| matches!(r.kind, RefKind::Message | RefKind::Block));
        let request = match args.around {
            Some(seq) => ReadRequest::Window(quarry::read::WindowRequest {
                session: args.r#ref,
                around: quarry::read::Around::Seq(seq),
                before: args.before.unwrap_or(5),
                after: args.after.unwrap_or(5),
                surfaces: args.surface.unwrap_or_default(),
            }),
            None if in_context && args.limit.is_none() && args.cursor.is_none() => {
                ReadRequest::Context(args.r#ref)
            }
            None => ReadRequest::Transcript(quarry::read::TranscriptRequest {
                session: args.r#ref,
                page_size: args.limit,
                cursor: args.cursor,
            }),
        };
        Ok(self.read_answer(&request).await)
    }

    /// A session's lineage: its parents from the immediate one outward, its subagents and
    /// continuations as a tree, and `complete` with the `root`, or `unresolvedParentId` where
    /// the chain leaves what this scope sees.
    #[tool(annotations(read_only_hint = true))]
    async fn lineage(
        &self,
        Parameters(args): Parameters<LineageArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = quarry::read::ReadRequest::Lineage(args.r#ref);
        Ok(self.read_answer(&request).await)
    }

    /// One record's direct relationships: its surface (current / shadowed / log-only), the
    /// record that replaced it and the chain of replacements to the last, the records it
    /// replaced itself, the records it names as its provenance (a parent record, the tool call
    /// an output answers) and the later records naming it. Empty lists where the source logs
    /// no such link.
    #[tool(annotations(read_only_hint = true))]
    async fn trace(
        &self,
        Parameters(args): Parameters<TraceArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = quarry::read::ReadRequest::Trace(quarry::read::TraceRequest {
            session: args.r#ref,
            seq: args.seq,
        });
        Ok(self.read_answer(&request).await)
    }

    /// Look a session up by the UUID its agent gave it (or quarry's id, or a unique prefix):
    /// its header (title, origin, times, message count, parent), or `resolved: false` when
    /// this scope sees no such session.
    #[tool(annotations(read_only_hint = true))]
    async fn find_session(
        &self,
        Parameters(args): Parameters<FindSessionArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let id = args.id.trim().trim_start_matches("session:");
        let request = quarry::read::ReadRequest::Resolve(format!("session:{id}"));
        Ok(self.read_answer(&request).await)
    }

    /// What a ref names, as this scope sees it: the object's fields (long texts cut, with a
    /// caveat), its session, and for a delegation an evidence card (the whole instruction, a
    /// bounded excerpt of the result the parent got and of the child's last reply). A ref
    /// that names nothing this scope sees answers `resolved: false`; it is never widened into
    /// a search.
    #[tool(annotations(read_only_hint = true))]
    async fn resolve_ref(
        &self,
        Parameters(args): Parameters<ResolveArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = quarry::read::ReadRequest::Resolve(args.r#ref);
        Ok(self.read_answer(&request).await)
    }

    /// Facets: how the sessions a search (`query`) or a filter (`where`) finds spread over
    /// origin, tag, model, machine, day, repo and tool, as session counts beside the same counts
    /// over every session this scope sees (`scoped`, `global`), with each value's idf
    /// (`ln(N / df)`, higher = rarer). Without either, both views are the scope's whole archive.
    #[tool(annotations(read_only_hint = true))]
    async fn facets(
        &self,
        Parameters(args): Parameters<FacetsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = quarry::facets::FacetsRequest {
            text: args.query,
            lane: args.retrieval_lane,
            filter: args.r#where,
            families: args.families,
            budget_ms: args.budget_ms,
            no_idf: args.no_idf,
        };
        Ok(
            match self.service.facets(&self.asker, &request, None).await {
                Ok(facets) => {
                    let text = quarry::facets::render_text(&facets);
                    structured(text, serde_json::to_value(&facets).unwrap_or_default())
                }
                Err(e) => tool_error(&e, Some(request.text_of(&e))),
            },
        )
    }

    /// Run one read-only SQL query over the same tables (list_tables shows them and their
    /// columns). Returns `{columns, rows, truncated, skipped_partitions}`.
    #[tool(annotations(read_only_hint = true))]
    async fn sql_query(
        &self,
        Parameters(args): Parameters<SqlQueryArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(self.run(Language::Sql, &args.sql, args.limit).await)
    }

    /// Show how a query of the language parses: its unit, semantics and ordered pipeline
    /// stages, or the diagnostic with a correction when it does not parse. With `plan`, the
    /// engine's plans (admin scope only).
    #[tool(annotations(read_only_hint = true))]
    async fn explain(
        &self,
        Parameters(args): Parameters<ExplainArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let result = self
            .service
            .explain(&self.asker, &args.expression, args.plan)
            .await
            .map(|explained| match explained {
                Explained::Parse { json, text } => {
                    structured(text, serde_json::from_str(&json).unwrap_or_default())
                }
                Explained::Plan(plan) => {
                    let value = serde_json::json!({"expression": args.expression, "plan": plan});
                    structured(plan, value)
                }
            });
        Ok(result.unwrap_or_else(|e| tool_error(&e, Some(&args.expression))))
    }

    /// List the tables and columns this server's scope may query, with what each holds.
    #[tool(annotations(read_only_hint = true))]
    async fn list_tables(&self) -> Result<CallToolResult, ErrorData> {
        let result = self.service.tables(&self.asker).await.map(|t| {
            let text = t
                .tables
                .iter()
                .map(|t| {
                    let columns: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
                    format!("{}: {}", t.name, columns.join(", "))
                })
                .collect::<Vec<_>>()
                .join("\n");
            let value = serde_json::json!({"scope": t.scope, "tables": t.tables});
            structured(text, value)
        });
        Ok(result.unwrap_or_else(|e| tool_error(&e, None)))
    }

    /// Valid example queries of the language (kind "example"), or typical mistakes with the
    /// diagnostic quarry gives and the corrected query (kind "error"). Use it before writing a
    /// query, and when one is refused.
    #[tool(annotations(read_only_hint = true))]
    async fn query_completions(
        &self,
        Parameters(args): Parameters<CompletionsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let started = Instant::now();
        let (text, value) = match args.kind {
            CompletionKind::Example => {
                let examples: Vec<_> = quarry_grammar::complete::examples()
                    .into_iter()
                    .filter(|e| args.unit.as_deref().is_none_or(|u| e.unit == u))
                    .collect();
                let text = examples
                    .iter()
                    .map(|e| format!("{} ({}): {}", e.unit, e.form, e.query))
                    .collect::<Vec<_>>()
                    .join("\n");
                (text, serde_json::json!({"examples": examples}))
            }
            CompletionKind::Error => (
                quarry_grammar::complete::errors_text(),
                serde_json::json!({"errors": quarry_grammar::complete::errors()}),
            ),
        };
        self.service.record(
            &self.asker,
            RequestKind::Completions,
            "query_completions",
            None,
            started,
            None,
        );
        Ok(structured(text, value))
    }

    /// This conversation's committed turns, newest first: when each started and completed, the
    /// prompt (a preview), how many messages and tool calls it had. `full` adds failure
    /// information. Reads only this conversation.
    #[tool(annotations(read_only_hint = true))]
    async fn conversation_recent_turns(
        &self,
        Parameters(args): Parameters<RecentTurnsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let limit = args.limit.unwrap_or(20).clamp(1, 50);
        Ok(self
            .run(Language::Sql, &recent_turns_sql(limit, args.full), None)
            .await)
    }

    /// This conversation's tool calls in committed turns, newest first, with an argument
    /// preview and whether each failed. `full` adds the whole arguments, an output preview,
    /// exit code, duration and approval status. Reads only this conversation.
    #[tool(annotations(read_only_hint = true))]
    async fn conversation_list_tool_calls(
        &self,
        Parameters(args): Parameters<ToolCallsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let limit = args.limit.unwrap_or(20).clamp(1, 100);
        Ok(self
            .run(Language::Sql, &tool_calls_sql(limit, args.full), None)
            .await)
    }
}

impl McpServer {
    /// Answers a read: the spec's shape as structured content and its lines as text, or a
    /// tool error.
    async fn read_answer(&self, request: &quarry::read::ReadRequest) -> CallToolResult {
        match self.service.read(&self.asker, request, None).await {
            Ok(answer) => structured(
                answer.render_text(),
                serde_json::to_value(&answer).unwrap_or_default(),
            ),
            Err(e) => tool_error(&e, Some(request.reference())),
        }
    }

    /// Runs a query within the server's limits: the envelope, or a tool error.
    async fn run(&self, language: Language, text: &str, limit: Option<usize>) -> CallToolResult {
        let request = match language {
            Language::Sql => Request::sql(text),
            _ => Request::query(text),
        };
        self.ask(request.with_caps(caps(limit))).await
    }

    /// Answers `request` within the server's limits: the envelope, or a tool error.
    async fn ask(&self, request: Request) -> CallToolResult {
        let (language, text) = (request.language, request.text.clone());
        let answer = self.service.collect(&self.asker, request).await;
        match answer.and_then(|answer| answer_result(&answer, language)) {
            Ok(result) => result,
            Err(e) => tool_error(&e, Some(&text)),
        }
    }
}

/// A tool call's row cap: `limit`, or [`DEFAULT_ROWS`].
fn caps(limit: Option<usize>) -> Caps {
    Caps {
        limit: Some(limit.unwrap_or(DEFAULT_ROWS)),
        offset: None,
    }
}

/// An answer as a tool result: the envelope as structured content, a short table as text.
fn answer_result(answer: &QueryResult, language: Language) -> Result<CallToolResult, Error> {
    let json = match language {
        Language::Sql => json::sql_json(answer)?,
        _ => json::json(answer)?,
    };
    let value: serde_json::Value = serde_json::from_str(&json).map_err(Error::failed)?;
    let rows = answer.num_rows();
    let shown = head(answer, TEXT_ROWS);
    let mut text = render_table(&shown)?;
    if rows > TEXT_ROWS {
        text.push_str(&format!(
            "\n({TEXT_ROWS} of {rows} rows shown; all {rows} are in the structured result)"
        ));
    }
    text.push_str(&format!(
        "\n{rows} rows{}",
        match (answer.truncated, &answer.next_cursor) {
            (true, Some(_)) => {
                " — truncated: more rows match; pass next_cursor as cursor for the next page, or narrow the query"
            }
            (true, None) => " — truncated: more rows match; narrow the query, aggregate, or raise limit",
            _ => "",
        }
    ));
    Ok(structured(text, value))
}

/// The first `n` rows of `answer` (for its text rendering).
fn head(answer: &QueryResult, n: usize) -> QueryResult {
    let mut left = n;
    let mut batches = Vec::new();
    for batch in &answer.batches {
        if left == 0 {
            break;
        }
        let take = batch.num_rows().min(left);
        batches.push(batch.slice(0, take));
        left -= take;
    }
    QueryResult {
        batches,
        attachments: Vec::new(),
        ..answer.clone()
    }
}

fn structured(text: String, value: serde_json::Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(value);
    result
}

/// A failure as a tool error the agent reads: the message (with the query drawn under it and
/// the correction, for a query error), and the error body as structured content, with the
/// JSON-RPC code of its class.
fn tool_error(e: &Error, query: Option<&str>) -> CallToolResult {
    let body = e.body(query);
    let text = body
        .rendered
        .clone()
        .unwrap_or_else(|| format!("{} ({})", body.message, body.code));
    let mut value = serde_json::to_value(&body).unwrap_or_default();
    value["jsonrpc_code"] = body.class.mcp_code().into();
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(value);
    result
}

/// The fixed statement of `conversation_recent_turns` (the only text in it is `limit`, a
/// number the tool bounded).
fn recent_turns_sql(limit: u32, full: bool) -> String {
    let extra = if full {
        ",
       p.text AS prompt_full,
       r.text AS final_reply,
       COALESCE(a.failed_tool_calls, 0) AS failed_tool_calls,
       e.tool_name AS last_failed_tool,
       substr(e.output_text, 1, 500) AS last_error"
    } else {
        ""
    };
    let extra_joins = if full {
        "
LEFT JOIN (SELECT turn_id, text FROM (
    SELECT turn_id, text, row_number() OVER (PARTITION BY turn_id ORDER BY position DESC) AS n
    FROM messages WHERE role = 'assistant' AND type = 'text') WHERE n = 1) r ON r.turn_id = t.turn_id
LEFT JOIN (SELECT turn_id, tool_name, output_text FROM (
    SELECT turn_id, tool_name, output_text,
           row_number() OVER (PARTITION BY turn_id ORDER BY occurred_at_ms DESC, action_id DESC) AS n
    FROM actions WHERE is_error) WHERE n = 1) e ON e.turn_id = t.turn_id"
    } else {
        ""
    };
    format!(
        "SELECT t.turn_id,
       t.started_at_ms AS started_at,
       t.completed_at_ms AS completed_at,
       substr(p.text, 1, 200) AS prompt,
       COALESCE(m.messages, 0) AS messages,
       COALESCE(a.tool_calls, 0) AS tool_calls{extra}
FROM turns t
LEFT JOIN (SELECT turn_id, count(*) AS messages FROM messages GROUP BY turn_id) m ON m.turn_id = t.turn_id
LEFT JOIN (SELECT turn_id, count(*) AS tool_calls,
                  sum(CASE WHEN is_error THEN 1 ELSE 0 END) AS failed_tool_calls
           FROM actions GROUP BY turn_id) a ON a.turn_id = t.turn_id
LEFT JOIN (SELECT turn_id, text FROM (
    SELECT turn_id, text, row_number() OVER (PARTITION BY turn_id ORDER BY position) AS n
    FROM messages WHERE role = 'user') WHERE n = 1) p ON p.turn_id = t.turn_id{extra_joins}
WHERE t.committed
ORDER BY t.started_at_ms DESC NULLS LAST, t.turn_id DESC
LIMIT {limit}"
    )
}

/// The fixed statement of `conversation_list_tool_calls`.
fn tool_calls_sql(limit: u32, full: bool) -> String {
    let extra = if full {
        ",
       tool_input AS arguments,
       substr(output_text, 1, 1000) AS output_preview,
       exit_code,
       duration_ms,
       followup_class,
       CASE
         WHEN tool_result_block_id IS NULL THEN 'no_result'
         WHEN output_text LIKE 'The user doesn''t want to proceed with this tool use%' THEN 'rejected'
         ELSE 'ran'
       END AS approval"
    } else {
        ""
    };
    format!(
        "SELECT action_id,
       turn_id,
       occurred_at_ms AS called_at,
       tool_name,
       semantic_type,
       substr(COALESCE(tool_command, tool_path, tool_input), 1, 200) AS arguments_preview,
       is_error{extra}
FROM actions
WHERE turn_committed OR turn_id IS NULL
ORDER BY occurred_at_ms DESC NULLS LAST, action_id DESC
LIMIT {limit}"
    )
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let instructions = match &self.mode {
            Mode::Open(scope) => format!(
                "quarry answers exact questions over an archive of AI-agent sessions (Claude Code, Codex, ChatGPT, Claude.ai, Gemini). Scope: {}. Use query_units for the pipeline language (call query_completions with kind \"example\" first), sql_query for read-only SQL over the tables list_tables shows. Answers are exact over every matching row; check `truncated` before reading a list as complete.",
                scope.name()
            ),
            Mode::Pinned { .. } => "quarry reads this conversation's own history: conversation_recent_turns (committed turns, newest first), conversation_list_tool_calls (tool calls with argument previews), read (the transcript, or records around a seq), lineage, trace (one record's relationships) and find_session. They read only this conversation and the subagent sessions it started.".to_string(),
        };
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("quarry", env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions)
    }
}

/// Serves MCP over standard input and output until the client closes its end.
pub async fn serve_stdio(server: McpServer) -> Result<(), Error> {
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| Error::failed(format!("the MCP session did not start: {e}")))?;
    running
        .waiting()
        .await
        .map_err(|e| Error::failed(format!("the MCP server failed: {e}")))?;
    Ok(())
}
