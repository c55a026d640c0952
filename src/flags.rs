//! The command line's arguments: the global flags and the verbs (clap), each flag's value
//! parsed and checked by its value parser before any work starts, and the rule that makes
//! `query` the default verb.

use std::path::PathBuf;

use chrono::NaiveDate;
use clap::{Args, Parser, Subcommand};
use quarry::export::check_codec;
use quarry::request::check_zone;
use quarry::{Format, SourceChoice};

/// Exact analytical queries over archives of AI-agent sessions.
#[derive(Debug, Parser)]
#[command(name = "quarry", version, about, long_about = None)]
pub struct Cli {
    /// The archive file (default: $QUARRY_HOME/archive.db, else ~/.local/share/quarry/archive.db).
    #[arg(long, global = true, value_name = "PATH", env = "QUARRY_ARCHIVE")]
    pub archive: Option<PathBuf>,

    /// Output format: table (people; the default), json (the envelope), ndjson, csv, yaml,
    /// html (one self-contained document; a report's dashboards), arrow (IPC file) or parquet.
    /// With -o the file's extension chooses, unless this is given.
    #[arg(long, global = true, value_name = "FORMAT", value_parser = format_parser())]
    pub format: Option<Format>,

    /// Write the result to FILE (or a file:// URL) instead of standard output; .parquet,
    /// .arrow, .csv and .ndjson are streamed, so results of any size fit.
    #[arg(short = 'o', long = "output", global = true, value_name = "FILE")]
    pub output: Option<String>,

    /// Return at most N rows (sets `truncated` when it cuts rows).
    #[arg(long, global = true, value_name = "N")]
    pub limit: Option<usize>,

    /// Skip N rows first.
    #[arg(long, global = true, value_name = "N")]
    pub offset: Option<usize>,

    /// Memory for a query's sorts and aggregates (e.g. 256MB, 2GB); beyond it they spill to disk.
    #[arg(long, global = true, value_name = "SIZE", value_parser = parse_size)]
    pub memory_limit: Option<usize>,

    /// The longest a query may take before it is cancelled (e.g. 30s, 500ms, 2m; default: no
    /// limit, and 30s for `serve` and `mcp`, whose requests may ask for less).
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<std::time::Duration>,

    /// Zone of day boundaries and time buckets: UTC, local (default), an offset like +02:00 or an
    /// IANA name like Europe/Warsaw (daylight saving followed).
    #[arg(long, global = true, value_name = "ZONE", value_parser = parse_zone)]
    pub tz: Option<String>,

    /// Which storage answers: auto (the snapshot when it is as of the archive's generation,
    /// else the archive; the default), sqlite (the archive) or snapshot.
    #[arg(long, global = true, value_name = "SOURCE", value_parser = source_parser())]
    pub source: Option<SourceChoice>,

    /// Where the snapshot is: a folder, file://, s3://bucket/prefix or memory:// URL (default:
    /// the <archive stem>.snapshot folder beside the archive).
    #[arg(long, global = true, value_name = "URL", env = "QUARRY_SNAPSHOT_URL")]
    pub snapshot_url: Option<String>,

    /// The scope to query under: admin (the default: everything) or a reader scope of the
    /// scopes file (its sessions only, credentials masked, no raw payloads).
    #[arg(long, global = true, value_name = "NAME", env = "QUARRY_SCOPE")]
    pub scope: Option<String>,

    /// The scopes file (TOML) defining reader scopes (default: scopes.toml beside the archive).
    #[arg(long, global = true, value_name = "FILE")]
    pub scopes: Option<PathBuf>,

    /// The price table costs are computed with for this run (TOML in the layout of
    /// data/prices.toml; default: the table compiled in, see `quarry prices`).
    #[arg(long, global = true, value_name = "FILE", env = "QUARRY_PRICES")]
    pub prices: Option<PathBuf>,

    /// The verb; anything else is a query (`quarry 'messages | count'` = `quarry query ...`).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// `--source`'s values.
fn source_parser() -> impl clap::builder::TypedValueParser<Value = SourceChoice> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["auto", "sqlite", "snapshot"])
        .try_map(|name: String| SourceChoice::from_name(&name).ok_or("not a source"))
}

/// `--tz`'s values: any zone the library takes (checked now, kept as written).
fn parse_zone(text: &str) -> Result<String, String> {
    check_zone(text).map(|()| text.to_string())
}

/// `--format`'s values: the library's formats by name.
fn format_parser() -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Format::ALL.map(Format::name))
        .try_map(|name: String| Format::from_name(&name).ok_or("not a format"))
}

/// Global flags that take a value (so the default-verb rule can skip their values).
const VALUE_FLAGS: &[&str] = &[
    "--archive",
    "--format",
    "--limit",
    "--offset",
    "--memory-limit",
    "--timeout",
    "--tz",
    "--source",
    "--snapshot-url",
    "--scope",
    "--scopes",
    "--prices",
    "-o",
    "--output",
];

/// Makes `query` the default verb: when the first argument that is not a global flag (or its
/// value) is not a verb, `query` is inserted before it. `quarry -- -tag:stale` works too. Global
/// flags written after a query (`quarry 'messages | count' --format json`) or a `sql` statement
/// are moved before it,
/// since the query's words are otherwise taken as they come; after a `--` nothing moves.
pub fn with_default_verb(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let verbs: Vec<String> = <Cli as clap::CommandFactory>::command()
        .get_subcommands()
        .flat_map(|c| {
            std::iter::once(c.get_name().to_string()).chain(c.get_all_aliases().map(str::to_string))
        })
        .chain(["help".to_string()])
        .collect();
    let mut i = 1;
    while let Some(arg) = args.get(i) {
        let text = arg.to_string_lossy();
        if text == "--" {
            let mut out = args.clone();
            out[i] = "query".into();
            return out;
        }
        if text.starts_with('-') && text.len() > 1 {
            i += if takes_value(&text) { 2 } else { 1 };
            continue;
        }
        // `query` and `sql` take free text: global flags written after it are moved before.
        let verb = match text.as_ref() {
            "query" | "sql" => Some(text.to_string()),
            _ => None,
        };
        if verb.is_none() && verbs.iter().any(|v| v == text.as_ref()) {
            return args;
        }
        let words = if verb.is_some() { i + 1 } else { i };
        let mut out: Vec<std::ffi::OsString> = args[..i].to_vec();
        let mut query = vec![verb.unwrap_or_else(|| "query".into()).into()];
        let mut rest = args[words..].iter();
        while let Some(arg) = rest.next() {
            let text = arg.to_string_lossy();
            if text == "--" {
                query.push(arg.clone());
                query.extend(rest.cloned());
                break;
            }
            let flag = text.split('=').next().unwrap_or_default();
            // (`-oFILE` stays a query word: `-origin:x` is a negated clause.)
            if VALUE_FLAGS.contains(&flag) || HELP_FLAGS.contains(&flag) {
                out.push(arg.clone());
                if takes_value(&text) {
                    out.extend(rest.next().cloned());
                }
            } else {
                query.push(arg.clone());
            }
        }
        out.extend(query);
        return out;
    }
    args
}

/// Flags that mean the same wherever they are written.
const HELP_FLAGS: &[&str] = &["--help", "-h", "--version", "-V"];

/// Whether `arg` is a global flag whose value is the next argument.
fn takes_value(arg: &str) -> bool {
    VALUE_FLAGS.contains(&arg) && !arg.contains('=')
}

impl Cli {
    /// The format given with --format, else table.
    pub fn format(&self) -> Format {
        self.format.unwrap_or(Format::Table)
    }
}

/// The verbs.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read transcripts into the archive (no path: discover ~/.claude, ~/.codex, ~/.gemini, ~/.pi, ~/.qwen, ~/.kimi, ~/.copilot, OpenCode's, Kilo's and Goose's databases).
    Ingest(IngestArgs),
    /// Keep the archive up with agents writing now: watch the transcript folders (no path: the
    /// default locations) and ingest each file written, once its writes settle.
    Watch(WatchArgs),
    /// Write or refresh the columnar snapshot (Parquet) that `--source auto|snapshot` reads:
    /// only the partitions changed since it was last written are rewritten.
    Snapshot(SnapshotArgs),
    /// Write whole tables to a folder or object store in --format parquet (the default),
    /// arrow, csv or ndjson.
    Export(ExportArgs),
    /// Run a query (the same as `quarry QUERY`; use it when the query is a verb's name, or to
    /// continue a paged answer with --cursor).
    Query {
        /// The previous page's `next_cursor` (an answer capped by --limit hands one out),
        /// passed back unchanged with the same query.
        #[arg(long, value_name = "CURSOR")]
        cursor: Option<String>,
        /// The query.
        #[arg(allow_hyphen_values = true, required = true)]
        query: Vec<String>,
    },
    /// Run one read-only SQL query over the same catalog (DataFusion SQL; anything but a single
    /// query is refused before planning).
    Sql {
        /// The statement, e.g. "SELECT role, COUNT(*) FROM messages GROUP BY role".
        #[arg(allow_hyphen_values = true, required = true)]
        sql: Vec<String>,
    },
    /// Ranked full-text search: sessions by their best-matching message (BM25 over the rows
    /// your scope sees), with highlighted snippets and a cursor for the next page.
    Search(SearchArgs),
    /// Facets: how the sessions a search or a filter finds spread over origin, tag, model,
    /// machine, day, repo and tool, beside the counts over every session of the scope.
    Facets(FacetsArgs),
    /// Read what a ref names: a session's transcript (subagents nested where they were
    /// started), a window of its source records around one (--around SEQ), or its lineage
    /// (--lineage: parents, subagents, continuations).
    Read(ReadArgs),
    /// Serve the HTTP API: both languages over the archive, each bearer token under its scope,
    /// every query audited; stops on SIGINT/SIGTERM after running queries finish.
    Serve(ServeArgs),
    /// Serve MCP over stdio for agents (default scope: a reader scope of the local user's
    /// sessions; --session ID pins it to one conversation's own tools).
    Mcp(McpArgs),
    /// Bearer tokens of `quarry serve`: add (printed once), list, revoke.
    Token {
        /// What to do.
        #[command(subcommand)]
        action: TokenCommand,
    },
    /// The audit trail: the most recent queries with who ran them, their scope and outcome
    /// (admin scope only; --limit N, default 50).
    Audit,
    /// The catalog: every table with its exact row count and columns.
    Tables,
    /// Tokens and estimated cost per day, week, month, session or 5-hour billing window
    /// (after ingesting new transcripts from the default locations; --explain shows the query).
    Report(ReportArgs),
    /// The price table costs are computed with: per model, each period's rates, dates and
    /// sources (MODEL: only models whose id contains it, with full sources).
    Prices {
        /// Part of a model id.
        model: Option<String>,
    },
    /// Re-derive the archive's transcript sessions from its own stored records, under this
    /// version's rules (no source files needed), and report what changed.
    Reindex,
    /// Parse and resolve a query (no archive needed): the typed AST and its pipeline stages.
    Explain(ExplainArgs),
    /// Parser-valid examples per unit and form, or typical mistakes with their corrections.
    Complete {
        /// List examples (the default).
        #[arg(long)]
        examples: bool,
        /// List typical mistakes with their diagnostic and correction.
        #[arg(long)]
        errors: bool,
    },
    /// Write a deterministic synthetic corpus in the real Claude Code and Codex formats.
    Gen(GenArgs),
    /// Generate a small corpus into a temporary archive, ingest it and show what it holds.
    Demo,
    /// Tag a session (an assertion of kind tag).
    Tag {
        /// Session id, native id or unique prefix.
        session: String,
        /// The tag.
        tag: String,
    },
    /// Add a note to a session (an assertion of kind note).
    Note {
        /// Session id, native id or unique prefix.
        session: String,
        /// The note's text.
        text: String,
    },
    /// Assertions: import tags, notes and claims from JSON Lines.
    Assertions {
        /// What to do.
        #[command(subcommand)]
        action: AssertionsCommand,
    },
    /// Judge machine-made claims: accept, reject, defer or supersede a candidate, or show the
    /// queue (`--list`), the judged (`--review`) or its health (`--status`).
    Judge(JudgeArgs),
}

/// `quarry judge`'s arguments: exactly one action.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("action").required(true).args([
    "accept", "reject", "defer", "supersede", "list", "review", "status"
])))]
pub struct JudgeArgs {
    /// Accept a candidate (`assertion:ID`): an active claim replaces it.
    #[arg(long, value_name = "REF")]
    pub accept: Option<String>,
    /// Reject a candidate.
    #[arg(long, value_name = "REF")]
    pub reject: Option<String>,
    /// Defer a candidate: it leaves the queue, judged `deferred`.
    #[arg(long, value_name = "REF")]
    pub defer: Option<String>,
    /// Supersede a candidate with a different claim (`--body`, `--replacement-kind`).
    #[arg(long, value_name = "REF")]
    pub supersede: Option<String>,
    /// Candidates awaiting judgment.
    #[arg(long)]
    pub list: bool,
    /// Judged candidates, with why each takes no more action.
    #[arg(long)]
    pub review: bool,
    /// The queue's health: pending counts and ages, breakdowns by status, kind and source.
    #[arg(long)]
    pub status: bool,
    /// Why (required to accept, reject or defer).
    #[arg(long)]
    pub reason: Option<String>,
    /// The replacement claim's kind (`--supersede`; the candidate's by default).
    #[arg(long, requires = "supersede")]
    pub replacement_kind: Option<String>,
    /// The replacement claim's text (`--supersede`).
    #[arg(long, requires = "supersede")]
    pub body: Option<String>,
    /// Only claims about this ref (`session:ID` also takes claims about its messages and blocks).
    #[arg(long, value_name = "REF")]
    pub target_ref: Option<String>,
}

/// `quarry assertions ...`
#[derive(Debug, Subcommand)]
pub enum AssertionsCommand {
    /// Import assertions: one JSON object per line with the assertions table's columns.
    Import {
        /// The JSONL file.
        file: PathBuf,
    },
}

/// Whose sessions a read records, and on which machine (`quarry ingest`, `quarry watch`).
#[derive(Debug, Args)]
pub struct ReadAs {
    /// Owner recorded on the sessions (default: the OS user).
    #[arg(long)]
    pub owner: Option<String>,
    /// The machine these files are read on (default: this host's name).
    #[arg(long)]
    pub machine: Option<String>,
}

/// `quarry ingest`'s arguments.
#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Files or folders to read.
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub read_as: ReadAs,
    /// Never draw the progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// Write the progress as a JSON line on standard error at most every 200 ms (elapsed_ms,
    /// files_done, files_total, bytes_done, bytes_total, records), for logs and benchmarks.
    #[arg(long)]
    pub progress_lines: bool,
    /// Replace the archived sessions of this file although it was rewritten rather than
    /// appended to (repeatable); without it a rewritten transcript is kept out.
    #[arg(long, value_name = "PATH")]
    pub replace: Vec<PathBuf>,
    /// Refresh the columnar snapshot afterwards (only the partitions the ingest changed).
    #[arg(long)]
    pub refresh_snapshot: bool,
    /// Read every archived file whole and compare it with its archived hash, rather than only
    /// its last chunks: finds a change anywhere in what was archived (docs/live.md).
    #[arg(long)]
    pub verify: bool,
}

/// `quarry watch`'s arguments.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Files or folders to watch.
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub read_as: ReadAs,
    /// How long a written file must stay quiet before it is read.
    #[arg(long, value_name = "DURATION", default_value = "200ms", value_parser = parse_duration)]
    pub settle: std::time::Duration,
    /// How often every watched file is looked at again, in case a notification was missed.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub rescan: std::time::Duration,
    /// Use no file notifications: look at every file each --rescan.
    #[arg(long)]
    pub poll: bool,
    /// How often every watched file is read whole and compared with what was archived (the
    /// rescans check only the last chunks of a grown file).
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = parse_duration)]
    pub verify_every: std::time::Duration,
    /// Refresh the columnar snapshot (only its changed partitions) at most this often, after a
    /// batch that changed something; without it the snapshot is left to `quarry snapshot`.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub snapshot_every: Option<std::time::Duration>,
}

/// `quarry search`'s arguments.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to find: words (all must occur), `prefix*`, "quoted phrases", AND / OR / NOT in
    /// capitals, parentheses; always searched as text, e.g. 'flaky login test' or
    /// '"null pointer" NOT test'.
    #[arg(required = true)]
    pub text: Vec<String>,
    /// The retrieval lane: auto (dialogue), dialogue (prose and thinking of user and assistant
    /// messages) or actions (tool calls and their output).
    #[arg(long = "retrieval-lane", visible_alias = "lane", value_name = "LANE",
          value_parser = ["auto", "dialogue", "actions", "hybrid", "semantic"])]
    pub lane: Option<String>,
    /// Only sessions this predicate of the query language admits, applied before ranking,
    /// e.g. 'repo:quarry since:2026-11-01' or 'origin:codex'.
    #[arg(long = "where", value_name = "PREDICATE", allow_hyphen_values = true)]
    pub filter: Option<String>,
    /// Rank the messages of this one session instead of sessions.
    #[arg(long, value_name = "SESSION_ID")]
    pub session: Option<String>,
    /// Hits per page (1 to 1000; default 20; `invalid_limit` outside).
    #[arg(long, value_name = "N")]
    pub page_size: Option<usize>,
    /// Skip this many hits (best effort; --cursor is the stable way to the next page).
    #[arg(long, value_name = "N")]
    pub page_offset: Option<u64>,
    /// The previous page's `next_cursor`, passed back unchanged.
    #[arg(long, value_name = "CURSOR")]
    pub cursor: Option<String>,
}

/// `quarry facets`' arguments.
#[derive(Debug, Args)]
pub struct FacetsArgs {
    /// Count the sessions this search text matches (as `quarry search` takes it).
    #[arg(long = "query", short = 'q', value_name = "TEXT")]
    pub text: Option<String>,
    /// The search's retrieval lane: auto (dialogue), dialogue or actions.
    #[arg(long = "retrieval-lane", visible_alias = "lane", value_name = "LANE",
          value_parser = ["auto", "dialogue", "actions", "hybrid", "semantic"])]
    pub lane: Option<String>,
    /// Count the sessions holding a row of this query, e.g. 'repo:quarry since:2026-11-01'
    /// or 'messages where role:assistant'.
    #[arg(long = "where", value_name = "PREDICATE", allow_hyphen_values = true)]
    pub filter: Option<String>,
    /// Only these families (comma-separated): origin, tag, model, machine, day, repo, tool.
    #[arg(long, value_name = "FAMILIES", value_delimiter = ',',
          value_parser = ["origin", "tag", "model", "machine", "day", "repo", "tool"])]
    pub families: Option<Vec<String>>,
    /// The time families may take; those not counted when it runs out are deferred.
    #[arg(long, value_name = "MS")]
    pub budget_ms: Option<u64>,
    /// Leave out the idf of each value.
    #[arg(long)]
    pub no_idf: bool,
}

/// `quarry read`'s arguments.
#[derive(Debug, Args)]
pub struct ReadArgs {
    /// What to read: `session:ID`, or a session's id, native id or a unique prefix of one.
    #[arg(value_name = "REF")]
    pub reference: String,
    /// The source record to read, with its neighbours: its seq, or a message of the session
    /// (`message:ID` or the id) for the record it was read from.
    #[arg(long, value_name = "SEQ|MESSAGE", allow_negative_numbers = true)]
    pub around: Option<String>,
    /// Records before it (0 to 200).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 5,
        allow_negative_numbers = true,
        requires = "around"
    )]
    pub before: i64,
    /// Records after it (0 to 200).
    #[arg(
        long,
        value_name = "M",
        default_value_t = 5,
        allow_negative_numbers = true,
        requires = "around"
    )]
    pub after: i64,
    /// Only records on these surfaces in the window (`current`, `shadowed`, `log-only`;
    /// comma-separated); the window's bounds stay.
    #[arg(
        long,
        value_name = "SURFACES",
        value_delimiter = ',',
        requires = "around"
    )]
    pub surface: Vec<String>,
    /// The session's lineage instead: its parents outward and its descendants.
    #[arg(long, conflicts_with = "around")]
    pub lineage: bool,
    /// The direct relationships of the record at SEQ instead: its surface, what replaced it,
    /// what it replaced, its logged sources and what names it as theirs.
    #[arg(long, value_name = "SEQ", allow_negative_numbers = true, conflicts_with_all = ["around", "lineage"])]
    pub trace: Option<i64>,
    /// Messages on a page of the transcript (1 to 2000; default 200).
    #[arg(long, value_name = "N", conflicts_with_all = ["around", "lineage", "trace"])]
    pub page_size: Option<usize>,
    /// The previous page's `next_cursor`, passed back unchanged.
    #[arg(long, value_name = "CURSOR", conflicts_with_all = ["around", "lineage", "trace"])]
    pub cursor: Option<String>,
    /// The transcript as Markdown.
    #[arg(long, conflicts_with_all = ["around", "lineage"])]
    pub markdown: bool,
    /// Show thinking in the transcript (collapsed to its length otherwise).
    #[arg(long, conflicts_with_all = ["around", "lineage"])]
    pub thinking: bool,
    /// What the ref names, bounded (any kind: `message:`, `block:`, `action:`, `assertion:`,
    /// `delegation:`, `run:`, `observed-event:`, `context-snapshot:`, `session:`); a ref of a
    /// kind other than `session:` is resolved without this flag too.
    #[arg(long, conflicts_with_all = ["around", "lineage", "trace", "page_size", "cursor", "markdown", "thinking"])]
    pub resolve: bool,
}

/// `quarry explain`'s arguments.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The query, e.g. 'messages where role:assistant | group by role | count'.
    #[arg(allow_hyphen_values = true)]
    pub query: String,
    /// Print DataFusion's logical and physical plans instead (pushdown is visible there).
    #[arg(long)]
    pub plan: bool,
}

/// `quarry gen`'s arguments.
#[derive(Debug, Args)]
pub struct GenArgs {
    /// About this many messages in all.
    #[arg(long, conflicts_with = "sessions")]
    pub messages: Option<u64>,
    /// Exactly this many sessions.
    #[arg(long)]
    pub sessions: Option<u64>,
    /// Seed: the same seed writes the same bytes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Short sessions (under 1 KB per message instead of 2.2 KB) with tool calls, cache
    /// tiers and subagent progress records, for archives of tens of millions of messages.
    #[arg(long)]
    pub lean: bool,
    /// Output folder (created).
    #[arg(long)]
    pub out: PathBuf,
}

/// `quarry serve`'s flags.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address to listen on (port 0: any free port; the first line printed says which).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: std::net::SocketAddr,
    /// The tokens file (default: tokens.toml beside the archive); the server refuses to start
    /// without one, or on one other users can read.
    #[arg(long, value_name = "FILE", env = "QUARRY_TOKENS")]
    pub tokens: Option<PathBuf>,
    /// Keep the archive up while serving, as `quarry watch` does: the default transcript
    /// locations, or each --watch-path.
    #[arg(long)]
    pub watch: bool,
    /// A file or folder to watch (repeatable; implies --watch).
    #[arg(long, value_name = "PATH")]
    pub watch_path: Vec<PathBuf>,
    /// Owner recorded on the sessions the watch ingests (default: the OS user).
    #[arg(long, value_name = "NAME")]
    pub watch_owner: Option<String>,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// The bounds of the servers' queries (the global --timeout is the longest a request may take:
/// 30s unless given).
#[derive(Debug, Args)]
pub struct LimitArgs {
    /// The most rows of a JSON answer (beyond it the answer is `truncated`); streamed answers
    /// (NDJSON, Arrow) are not capped.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub max_rows: usize,
    /// The largest request body (e.g. 1MiB, 64KB).
    #[arg(long, value_name = "SIZE", default_value = "1MiB", value_parser = parse_size)]
    pub max_body: usize,
    /// How many queries run at once (more wait for a slot, within their timeout); they share
    /// --memory-limit (default 4GiB for a server) in one fair pool.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub max_concurrent: u64,
}

/// `quarry token ...`
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Make a random token for NAME under --scope SCOPE (admin, or a reader scope of the
    /// scopes file); it is printed once, on the last line, and only its SHA-256 is stored.
    Add {
        /// Who or what holds it (recorded in the audit trail).
        name: String,
        /// The tokens file (default: tokens.toml beside the archive; made 0600 if new).
        #[arg(long, value_name = "FILE", env = "QUARRY_TOKENS")]
        tokens: Option<PathBuf>,
    },
    /// List the tokens: name, scope, when made, and the first digits of the hash.
    List {
        /// The tokens file.
        #[arg(long, value_name = "FILE", env = "QUARRY_TOKENS")]
        tokens: Option<PathBuf>,
    },
    /// Revoke the token called NAME; a running server refuses it from its next request.
    Revoke {
        /// The token's name.
        name: String,
        /// The tokens file.
        #[arg(long, value_name = "FILE", env = "QUARRY_TOKENS")]
        tokens: Option<PathBuf>,
    },
}

/// `quarry mcp`'s flags.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Pin the server to this conversation (session id, native id or unique prefix): it then
    /// offers only the fixed-statement conversation tools, over this session alone.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// `quarry snapshot`'s flags.
#[derive(Debug, Default, Args)]
pub struct SnapshotArgs {
    /// Keep the snapshot at this URL (a folder, s3://bucket/prefix, ...) instead of the
    /// folder beside the archive; read it with --snapshot-url.
    #[arg(long, value_name = "URL")]
    pub to: Option<String>,
    /// Rewrite every partition.
    #[arg(long)]
    pub full: bool,
    /// Parquet codec: zstd(1) (the default), zstd(LEVEL), zstd, lz4, snappy or none.
    #[arg(long, value_name = "CODEC", value_parser = parse_codec)]
    pub compression: Option<String>,
    /// Parquet codec of the `text` columns alone (default: as --compression when it is given,
    /// else the default layout's).
    #[arg(long, value_name = "CODEC", value_parser = parse_codec)]
    pub text_compression: Option<String>,
    /// Rows per Parquet row group.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub row_group_rows: Option<u64>,
    /// Plain-encode Parquet columns instead of dictionary pages (a layout to measure).
    #[arg(long)]
    pub no_dictionary: bool,
    /// parquet (the default), or arrow: uncompressed Arrow IPC files, local folders only
    /// (a layout to measure).
    #[arg(long, value_name = "FORMAT", value_parser = ["parquet", "arrow"])]
    pub file_format: Option<String>,
}

/// `quarry export`'s flags.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Where: a folder, file://, s3://bucket/prefix or memory:// URL.
    #[arg(long, value_name = "URL")]
    pub to: String,
    /// The tables (comma-separated; default every table of the catalog).
    #[arg(long, value_name = "T,...", value_delimiter = ',')]
    pub tables: Vec<String>,
    /// Write each table as Hive-style partition folders of this column.
    #[arg(long, value_name = "COLUMN")]
    pub partition_by: Option<String>,
}

/// `quarry report` arguments.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// daily, weekly (Monday to Sunday), monthly, session or blocks (5-hour billing windows,
    /// an estimate from timestamps).
    #[arg(value_parser = ["daily", "weekly", "monthly", "session", "blocks"])]
    pub report: String,
    /// From this day on, in --tz (YYYY-MM-DD or YYYYMMDD).
    #[arg(long, value_name = "DAY", value_parser = parse_day)]
    pub since: Option<NaiveDate>,
    /// Through this day, in --tz (YYYY-MM-DD or YYYYMMDD).
    #[arg(long, value_name = "DAY", value_parser = parse_day)]
    pub until: Option<NaiveDate>,
    /// Break each row down by model, repo, machine or origin.
    #[arg(long, value_name = "FIELD", value_parser = ["model", "repo", "machine", "origin"])]
    pub by: Option<String>,
    /// Count the approximate usage too (Aider's rounded token reports, `recorded_via:approximate`),
    /// which exact totals leave out.
    #[arg(long)]
    pub approximate: bool,
    /// Do not ingest new and changed transcripts from the default locations first.
    #[arg(long)]
    pub no_refresh: bool,
    /// Print the query of the language the report runs, and stop.
    #[arg(long)]
    pub explain: bool,
}

/// A Parquet codec's name, checked now.
fn parse_codec(text: &str) -> Result<String, String> {
    check_codec(text)
        .map(|()| text.to_string())
        .map_err(|e| e.to_string())
}

/// A day as `--since` and `--until` take it.
fn parse_day(text: &str) -> Result<NaiveDate, String> {
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .or_else(|_| NaiveDate::parse_from_str(text, "%Y%m%d"))
        .map_err(|_| "give a day as YYYY-MM-DD or YYYYMMDD".to_string())
}

/// Parses a size: `256MB`, `2GB`, `512MiB`, `1048576`.
pub fn parse_size(text: &str) -> Result<usize, String> {
    let (value, unit) =
        number_and_unit(text).ok_or_else(|| format!("not a size: {text} (try 256MB)"))?;
    let scale: f64 = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 1.0,
        "K" | "KB" => 1e3,
        "KIB" => 1024.0,
        "M" | "MB" => 1e6,
        "MIB" => 1024.0 * 1024.0,
        "G" | "GB" => 1e9,
        "GIB" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("not a size: {text} (try 256MB)")),
    };
    Ok((value * scale) as usize)
}

/// A number and the unit after it (`256MB` → 256 and `MB`, `1.5` → 1.5 and ``).
fn number_and_unit(text: &str) -> Option<(f64, &str)> {
    let t = text.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    Some((number.parse().ok()?, unit.trim()))
}

/// Parses `30s`, `500ms`, `2m`, `24h` or a number of seconds.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let (value, unit) = number_and_unit(text)
        .ok_or_else(|| format!("not a duration: {text} (try 30s or 500ms)"))?;
    let seconds = match unit {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(format!(
                "not a duration: {text} (try 30s, 500ms, 10m or 24h)"
            ));
        }
    };
    if !(seconds > 0.0 && seconds.is_finite()) {
        return Err(format!("{text}: a duration must be more than zero"));
    }
    Ok(std::time::Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn durations_parse_in_their_units() {
        assert_eq!(parse_duration("30s").unwrap().as_millis(), 30_000);
        assert_eq!(parse_duration("500ms").unwrap().as_millis(), 500);
        assert_eq!(parse_duration("2m").unwrap().as_millis(), 120_000);
        assert_eq!(parse_duration("24h").unwrap().as_secs(), 86_400);
        assert_eq!(parse_duration("1.5").unwrap().as_millis(), 1_500);
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("3d").is_err());
        assert!(parse_duration("x").is_err());
    }

    #[test]
    fn sizes_parse_in_their_units() {
        assert_eq!(parse_size("256MB"), Ok(256_000_000));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1048576"), Ok(1_048_576));
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("MB").is_err());
    }
}
