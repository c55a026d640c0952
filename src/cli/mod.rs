//! The command line: flags and verbs (clap), and the one place that maps outcomes to exit codes
//! (0 success, 1 runtime failure, 2 usage or query error). A closed pipe is not an error.

mod complete;
mod explain;
mod prices;
mod report;
mod serve;
mod storage;
mod tables;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::audit::Language;
use crate::format::Format;
use crate::ingest::{IngestOptions, ingest};
use crate::location::{archive_path, host_name, os_user};
use crate::output::{self, Destination};
use crate::{Caps, Error, Options, Quarry, block_on};
use quarry_providers::Archive;

/// Exact analytical queries over archives of AI-agent sessions.
#[derive(Debug, Parser)]
#[command(name = "quarry", version, about, long_about = None)]
pub struct Cli {
    /// The archive file (default: $QUARRY_HOME/archive.db, else ~/.local/share/quarry/archive.db).
    #[arg(long, global = true, value_name = "PATH", env = "QUARRY_ARCHIVE")]
    pub archive: Option<PathBuf>,

    /// Output format: table (people; the default), json (the envelope), ndjson, csv, yaml,
    /// arrow (IPC file) or parquet. With -o the file's extension chooses, unless this is given.
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
    #[arg(long, global = true, value_name = "SIZE")]
    pub memory_limit: Option<String>,

    /// The longest a query may take before it is cancelled (e.g. 30s, 500ms, 2m; default: no
    /// limit, and 30s for `serve` and `mcp`, whose requests may ask for less).
    #[arg(long, global = true, value_name = "DURATION", value_parser = serve::parse_duration)]
    pub timeout: Option<std::time::Duration>,

    /// Zone of day boundaries and time buckets: UTC, local (default), an offset like +02:00 or an
    /// IANA name like Europe/Warsaw (daylight saving followed).
    #[arg(long, global = true, value_name = "ZONE")]
    pub tz: Option<String>,

    /// Which storage answers: auto (the snapshot when it is as of the archive's generation,
    /// else the archive; the default), sqlite (the archive) or snapshot.
    #[arg(long, global = true, value_name = "SOURCE", value_parser = ["auto", "sqlite", "snapshot"])]
    pub source: Option<String>,

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
    /// Read transcripts into the archive (no path: discover ~/.claude, ~/.codex, ~/.gemini).
    Ingest {
        /// Files or folders to read.
        paths: Vec<PathBuf>,
        /// Owner recorded on the sessions (default: the OS user).
        #[arg(long)]
        owner: Option<String>,
        /// Never draw the progress bar.
        #[arg(long)]
        no_progress: bool,
        /// The machine these files are read on (default: this host's name).
        #[arg(long)]
        machine: Option<String>,
        /// Replace the archived sessions of this file although it was rewritten rather than
        /// appended to (repeatable); without it a rewritten transcript is kept out.
        #[arg(long, value_name = "PATH")]
        replace: Vec<PathBuf>,
        /// Refresh the columnar snapshot afterwards (only the partitions the ingest changed).
        #[arg(long)]
        refresh_snapshot: bool,
    },
    /// Write or refresh the columnar snapshot (Parquet) that `--source auto|snapshot` reads:
    /// only the partitions changed since it was last written are rewritten.
    Snapshot(storage::SnapshotArgs),
    /// Write whole tables to a folder or object store in --format parquet (the default),
    /// arrow, csv or ndjson.
    Export(storage::ExportArgs),
    /// Run a query (the same as `quarry QUERY`; use it when the query is a verb's name).
    Query {
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
    /// Serve the HTTP API: both languages over the archive, each bearer token under its scope,
    /// every query audited; stops on SIGINT/SIGTERM after running queries finish.
    Serve(serve::ServeArgs),
    /// Serve MCP over stdio for agents (default scope: a reader scope of the local user's
    /// sessions; --session ID pins it to one conversation's own tools).
    Mcp(serve::McpArgs),
    /// Bearer tokens of `quarry serve`: add (printed once), list, revoke.
    Token {
        /// What to do.
        #[command(subcommand)]
        action: serve::TokenCommand,
    },
    /// The audit trail: the most recent queries with who ran them, their scope and outcome
    /// (admin scope only; --limit N, default 50).
    Audit,
    /// The catalog: every table with its exact row count and columns.
    Tables,
    /// Tokens and estimated cost per day, week, month, session or 5-hour billing window
    /// (after ingesting new transcripts from the default locations; --explain shows the query).
    Report(report::ReportArgs),
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
    Explain {
        /// The query, e.g. 'messages where role:assistant | group by role | count'.
        #[arg(allow_hyphen_values = true)]
        query: String,
        /// Print DataFusion's logical and physical plans instead (pushdown is visible there).
        #[arg(long)]
        plan: bool,
    },
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
    Gen {
        /// About this many messages in all.
        #[arg(long, conflicts_with = "sessions")]
        messages: Option<u64>,
        /// Exactly this many sessions.
        #[arg(long)]
        sessions: Option<u64>,
        /// Seed: the same seed writes the same bytes.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Short sessions (under 1 KB per message instead of 2.2 KB) with tool calls, cache
        /// tiers and subagent progress records, for archives of tens of millions of messages.
        #[arg(long)]
        lean: bool,
        /// Output folder (created).
        #[arg(long)]
        out: PathBuf,
    },
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

/// A failure with its exit code, and the error body `--format json` writes (a library error's,
/// or one of class `usage` or `internal` for the command line's own).
pub struct Failure {
    code: u8,
    message: String,
    body: Option<Box<crate::ErrorBody>>,
}

impl Failure {
    /// A runtime failure (exit 1).
    pub fn runtime(message: impl std::fmt::Display) -> Self {
        Failure::of_class(crate::ErrorClass::Internal, "failed", message)
    }
    /// A usage error (exit 2).
    pub fn usage(message: impl std::fmt::Display) -> Self {
        Failure::of_class(crate::ErrorClass::Usage, "invalid_usage", message)
    }
    /// A failure of `class` with `code`.
    fn of_class(
        class: crate::ErrorClass,
        code: &'static str,
        message: impl std::fmt::Display,
    ) -> Self {
        let message = message.to_string();
        Failure {
            code: class.exit_code(),
            body: Some(Box::new(crate::ErrorBody {
                code,
                class,
                status: class.http_status(),
                message: message.clone(),
                diagnostics: serde_json::json!([{"code": code, "message": message}]),
                rendered: None,
            })),
            message,
        }
    }
    /// A library error: the exit code of its class; `query` is the text it is about.
    fn of(e: &Error, query: Option<&str>) -> Self {
        Failure {
            code: e.class().exit_code(),
            message: e.message(),
            body: Some(Box::new(e.body(query))),
        }
    }
    /// A failure whose message was already written (a rendered diagnostic).
    fn silent(code: u8) -> Self {
        Failure {
            code,
            message: String::new(),
            body: None,
        }
    }
}

/// Runs the command line and returns the process exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse_from(with_default_verb(std::env::args_os().collect())) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let json = matches!(cli.format, Some(Format::Json | Format::SqlJson));
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            if json && let Some(body) = &f.body {
                emit(&format!("{}\n", body.to_json()));
            }
            if !f.message.is_empty() {
                eprintln!("error: {}", f.message);
            }
            ExitCode::from(f.code)
        }
    }
}

/// Writes to stdout; a closed pipe (`quarry tables | head`) ends quietly.
pub fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

fn open_archive(flag: Option<PathBuf>) -> Result<Archive, Failure> {
    Archive::open(&archive_path(flag)).map_err(Failure::runtime)
}

fn run(mut cli: Cli) -> Result<(), Failure> {
    let json = cli.format() == Format::Json;
    let Some(command) = cli.command.take() else {
        return Err(Failure::usage(
            "give a query or a verb; see `quarry --help`",
        ));
    };
    if let Command::Export(_) = command {
        if cli.output.is_some() {
            return Err(Failure::usage("export writes to --to URL, not -o"));
        }
    } else if !matches!(
        command,
        Command::Query { .. } | Command::Sql { .. } | Command::Report(_)
    ) {
        if cli.output.is_some() {
            return Err(Failure::usage(
                "-o writes query results; for a verb's report redirect standard output",
            ));
        }
        if !matches!(cli.format(), Format::Table | Format::Json) {
            return Err(Failure::usage(format!(
                "--format {} is for query results; verbs report as table or json",
                cli.format().name()
            )));
        }
    }
    if let Some(verb) = admin_only_verb(&command)
        && !scope_of(&cli)?.is_admin()
    {
        return Err(Failure::of_class(
            crate::ErrorClass::Forbidden,
            "admin_only",
            format!(
                "`quarry {verb}` is only for the admin scope (a reader scope queries with `quarry QUERY`, `quarry sql` and `quarry export`)"
            ),
        ));
    }
    match command {
        Command::Query { query } => run_query(&query.join(" "), &cli, Language::Query),
        Command::Sql { sql } => run_query(&sql.join(" "), &cli, Language::Sql),
        Command::Audit => run_audit(&cli),
        Command::Serve(args) => serve::run_serve(&cli, args),
        Command::Mcp(args) => serve::run_mcp(&cli, args),
        Command::Token { action } => serve::run_token(&cli, action),
        Command::Ingest {
            paths,
            owner,
            no_progress,
            machine,
            replace,
            refresh_snapshot,
        } => {
            let mut archive = open_archive(cli.archive.clone())?;
            let options = IngestOptions {
                paths,
                owner: owner.or_else(os_user),
                progress: !no_progress && !json,
                machine: machine.or_else(host_name),
                replace,
                quick_check: false,
            };
            let summary = ingest(&mut archive, &options).map_err(|e| match e {
                crate::ingest::IngestError::MissingPath(_)
                | crate::ingest::IngestError::NothingToDiscover => Failure::usage(e),
                other => Failure::runtime(other),
            })?;
            if json {
                emit(&format!("{}\n", summary.to_json()));
            } else {
                emit(&summary.to_human());
            }
            drop(archive);
            if refresh_snapshot {
                storage::run_snapshot(&cli, storage::SnapshotArgs::default())?;
            }
            Ok(())
        }
        Command::Snapshot(args) => storage::run_snapshot(&cli, args),
        Command::Report(args) => report::run_report(&cli, args),
        Command::Prices { model } => {
            let table =
                crate::prices::PriceTable::load(cli.prices.as_deref()).map_err(Failure::usage)?;
            emit(&prices::render(&table, model.as_deref(), json));
            Ok(())
        }
        Command::Export(args) => storage::run_export(&cli, args),
        Command::Reindex => {
            let archive = open_archive(cli.archive)?;
            let summary =
                crate::ingest::reindex::reindex(archive.conn()).map_err(Failure::runtime)?;
            if json {
                emit(&format!(
                    "{}\n",
                    serde_json::to_value(&summary).unwrap_or_default()
                ));
            } else {
                emit(&summary.to_human());
            }
            Ok(())
        }
        Command::Tables => {
            let archive = open_archive(cli.archive)?;
            let tables = archive.tables().map_err(Failure::runtime)?;
            emit(&tables::render(
                &tables,
                json,
                archive.generation().unwrap_or(0),
            ));
            Ok(())
        }
        Command::Gen {
            messages,
            sessions,
            seed,
            lean,
            out,
        } => {
            let plan = match (messages, sessions) {
                (_, Some(n)) => crate::synth::Size::Sessions(n),
                (Some(n), None) => crate::synth::Size::Messages(n),
                (None, None) => return Err(Failure::usage("give --messages N or --sessions N")),
            };
            let shape = if lean {
                crate::synth::Shape::Lean
            } else {
                crate::synth::Shape::Realistic
            };
            let report =
                crate::synth::generate(&out, plan, shape, seed).map_err(Failure::runtime)?;
            if json {
                emit(&format!(
                    "{}\n",
                    serde_json::to_value(&report).unwrap_or_default()
                ));
            } else {
                emit(&format!(
                    "wrote {} sessions ({} files, {} messages, {:.1} MB) to {}\n",
                    report.sessions,
                    report.files,
                    report.messages,
                    report.bytes as f64 / 1e6,
                    out.display()
                ));
            }
            Ok(())
        }
        Command::Explain { query, plan: true } => run_explain_plan(&query, &cli),
        Command::Explain { query, plan: false } => {
            exit_with(explain::run(&query, json, stderr_color()))
        }
        Command::Complete { examples, errors } => exit_with(complete::run(examples, errors, json)),
        Command::Demo => {
            emit(&crate::synth::demo(json).map_err(Failure::runtime)?);
            Ok(())
        }
        Command::Tag { session, tag } => {
            let mut archive = open_archive(cli.archive)?;
            let id =
                crate::assertions::tag(archive.conn_mut(), &session, &tag, os_user().as_deref())
                    .map_err(assertion_failure)?;
            emit(&format!("tagged {id} with {tag}\n"));
            Ok(())
        }
        Command::Note { session, text } => {
            let mut archive = open_archive(cli.archive)?;
            let id =
                crate::assertions::note(archive.conn_mut(), &session, &text, os_user().as_deref())
                    .map_err(assertion_failure)?;
            emit(&format!("noted {id}\n"));
            Ok(())
        }
        Command::Assertions {
            action: AssertionsCommand::Import { file },
        } => {
            let mut archive = open_archive(cli.archive)?;
            let (rows, diagnostics) =
                crate::assertions::import(archive.conn_mut(), &file).map_err(assertion_failure)?;
            if json {
                emit(&format!(
                    "{}\n",
                    serde_json::json!({"imported": rows, "diagnostics": diagnostics})
                ));
            } else {
                let mut out = format!("imported {rows} assertions\n");
                for d in &diagnostics {
                    out.push_str(&format!(
                        "  {}:{}: {} — {}\n",
                        d.file,
                        d.line.unwrap_or(0),
                        d.kind,
                        d.reason
                    ));
                }
                emit(&out);
            }
            Ok(())
        }
    }
}

/// The verb's name when only the admin scope may run it: everything that writes the archive,
/// copies it whole, or reports on all of it.
fn admin_only_verb(command: &Command) -> Option<&'static str> {
    Some(match command {
        Command::Ingest { .. } => "ingest",
        Command::Snapshot(_) => "snapshot",
        Command::Reindex => "reindex",
        Command::Tables => "tables",
        Command::Audit => "audit",
        Command::Serve(_) => "serve",
        Command::Tag { .. } => "tag",
        Command::Note { .. } => "note",
        Command::Assertions { .. } => "assertions",
        Command::Explain { plan: true, .. } => "explain --plan",
        _ => return None,
    })
}

/// The library's options from the global flags.
fn options(cli: &Cli) -> Result<Options, Failure> {
    let mut options = Options::new(archive_path(cli.archive.clone()));
    options.memory_limit = cli
        .memory_limit
        .as_deref()
        .map(parse_size)
        .transpose()
        .map_err(Failure::usage)?;
    options.tz = cli.tz.clone();
    if let Some(source) = &cli.source {
        options.source = crate::SourceChoice::from_name(source).ok_or_else(|| {
            Failure::usage(format!("--source {source}: use auto, sqlite or snapshot"))
        })?;
    }
    options.snapshot_url = cli.snapshot_url.clone();
    options.prices = cli.prices.clone();
    options.scope = scope_of(cli)?;
    options.caller = crate::Caller {
        who: os_user(),
        surface: "cli".into(),
    };
    Ok(options)
}

/// The scope `--scope` names (admin when none), from `--scopes` or the file beside the archive.
fn scope_of(cli: &Cli) -> Result<crate::Scope, Failure> {
    scope_named(cli, cli.scope.as_deref().unwrap_or(crate::scope::ADMIN))
}

/// The scope called `name`, from `--scopes` or the file beside the archive.
fn scope_named(cli: &Cli, name: &str) -> Result<crate::Scope, Failure> {
    let file = match &cli.scopes {
        Some(file) => file.clone(),
        None => crate::scope::default_scopes_file(&archive_path(cli.archive.clone())),
    };
    crate::scope::resolve(name, &file).map_err(Failure::usage)
}

/// A library error as a failure of its class (the one map: `Error::class`).
pub(crate) fn by_class(e: Error) -> Failure {
    Failure::of(&e, None)
}

/// A library error as the command line reports it: with `--format json` the error body on
/// standard output (the one HTTP and MCP send); else a query's diagnostics drawn under the
/// query, anything else as a message on standard error. The exit code is its class's.
fn failure(query: &str, e: Error, json: bool) -> Failure {
    match e {
        Error::Query(diagnostics) if !json => {
            eprint!(
                "{}",
                quarry_grammar::render(query, &diagnostics, stderr_color())
            );
            Failure::silent(Error::Query(diagnostics).class().exit_code())
        }
        // The diagnostics say it all, in the body.
        e @ Error::Query(_) => Failure {
            message: String::new(),
            ..Failure::of(&e, Some(query))
        },
        e => Failure::of(&e, Some(query)),
    }
}

fn stderr_color() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// The format of a query's answer: `--format`, else the extension of `-o FILE`, else table.
fn answer_format(cli: &Cli, path: Option<&std::path::Path>) -> Result<Format, Failure> {
    Ok(match (cli.format, path) {
        (Some(f), Some(path)) => match Format::for_path(path) {
            Some(named) if named != f => {
                return Err(Failure::usage(format!(
                    "--format {} contradicts the extension of {} ({}); give one of them",
                    f.name(),
                    path.display(),
                    named.name()
                )));
            }
            _ => f,
        },
        (Some(f), None) => f,
        (None, Some(path)) => output::format_for_path(path).map_err(Failure::usage)?,
        (None, None) => Format::Table,
    })
}

fn run_query(query: &str, cli: &Cli, language: Language) -> Result<(), Failure> {
    // An object store URL: the answer is written to a local file first, then uploaded whole.
    let remote = cli
        .output
        .as_deref()
        .map(storage::RemoteOutput::for_target)
        .transpose()?
        .flatten();
    let path = match (&remote, cli.output.as_deref()) {
        (Some(remote), _) => Some(remote.staged()),
        (None, Some(target)) => Some(output::output_path(target).map_err(Failure::usage)?),
        _ => None,
    };
    let format = answer_format(cli, path.as_deref())?;
    if format.is_binary() && path.is_none() && std::io::stdout().is_terminal() {
        return Err(Failure::usage(
            "binary output (arrow, parquet) is not written to a terminal: give -o FILE or redirect standard output",
        ));
    }
    let json = matches!(format, Format::Json | Format::SqlJson);
    let quarry = Quarry::open(&options(cli)?).map_err(|e| failure(query, e, json))?;
    let caps = Caps {
        limit: cli.limit,
        offset: cli.offset,
    };
    let mut destination = match &path {
        Some(path) => Destination::file(path).map_err(Failure::runtime)?,
        None => Destination::stdout(),
    };
    let request = crate::Request {
        language,
        text: query.to_string(),
        caps,
        timeout: cli.timeout,
    };
    let written = block_on(async {
        let stream = quarry.run(&request).await?;
        let unit = stream.meta().unit.clone();
        let written = output::write(stream, format, &mut destination)
            .await
            .map(|completion| (unit, completion));
        eprint!("{}", report::unpriced_lines(&quarry.take_unpriced()));
        written
    })
    .and_then(|written| written);
    let (unit, completion) = match written {
        Ok(written) => written,
        Err(_) if destination.closed() => return Ok(()),
        Err(e) => return Err(failure(query, e, json)),
    };
    destination.commit().map_err(Failure::runtime)?;
    let target = match (&remote, &path) {
        (Some(remote), _) => Some(remote.upload()?),
        (None, Some(path)) => Some(path.display().to_string()),
        _ => None,
    };
    if let Some(target) = target {
        eprintln!(
            "wrote {} rows ({unit}, {}, exact) to {target}",
            completion.rows,
            format.name(),
        );
    }
    Ok(())
}

fn run_audit(cli: &Cli) -> Result<(), Failure> {
    let quarry = Quarry::open(&options(cli)?).map_err(by_class)?;
    let limit = cli.limit.unwrap_or(50);
    let records = quarry.audit_records(limit).map_err(by_class)?;
    let (requests, refusals) = quarry.audit_requests(limit).map_err(by_class)?;
    if cli.format() == Format::Json {
        emit(&format!(
            "{}\n",
            serde_json::json!({ "records": records, "requests": requests, "refusals": refusals })
        ));
        return Ok(());
    }
    let mut out = String::new();
    for r in &records {
        let when = utc_time(r.at_ms);
        let outcome = match (&r.status, &r.error) {
            (None, _) => "no outcome (no result was returned)".to_string(),
            (Some(_), Some(e)) => format!("error: {e}"),
            (Some(s), None) => format!(
                "{s}, {} rows{}, {} ms",
                r.rows.unwrap_or(0),
                if r.truncated == Some(true) {
                    " (truncated)"
                } else {
                    ""
                },
                r.duration_ms.unwrap_or(0)
            ),
        };
        out.push_str(&format!(
            "#{} {when} UTC  {} via {} as {} ({}): {}\n    {outcome}\n",
            r.intent_id,
            r.who.as_deref().unwrap_or("?"),
            r.surface,
            r.scope,
            r.language,
            r.query.replace('\n', " "),
        ));
    }
    if records.is_empty() {
        out.push_str("no audited queries yet\n");
    }
    if !requests.is_empty() {
        out.push_str("\nrequests that ran no query, newest first:\n");
    }
    for r in &requests {
        let outcome = match (&r.code, &r.error) {
            (Some(code), Some(e)) => format!("{code}: {e}"),
            _ => r.status.clone(),
        };
        out.push_str(&format!(
            "#{} {} UTC  {} via {} as {}: {} {}{}\n    {outcome}\n",
            r.request_id,
            utc_time(r.at_ms),
            r.who.as_deref().unwrap_or("?"),
            r.surface,
            r.scope.as_deref().unwrap_or("?"),
            r.kind,
            r.target,
            r.text
                .as_deref()
                .map(|t| format!(": {}", t.replace('\n', " ")))
                .unwrap_or_default(),
        ));
    }
    if !refusals.is_empty() {
        out.push_str("\nrefused before the caller was known, per minute and source:\n");
    }
    for r in &refusals {
        out.push_str(&format!(
            "{} UTC  {} from {}: {} × {}\n",
            utc_time(r.minute_ms),
            r.surface,
            r.source,
            r.count,
            r.code
        ));
    }
    emit(&out);
    Ok(())
}

/// Milliseconds since the epoch as `YYYY-MM-DD HH:MM:SS` (UTC).
fn utc_time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default()
}

fn run_explain_plan(query: &str, cli: &Cli) -> Result<(), Failure> {
    let json = cli.format() == Format::Json;
    let quarry = Quarry::open(&options(cli)?).map_err(|e| failure(query, e, json))?;
    let text = block_on(quarry.explain_plan(query))
        .and_then(|text| text)
        .map_err(|e| failure(query, e, json))?;
    emit(&format!("{text}\n"));
    Ok(())
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

/// Maps a verb's exit code to a result (2: the message was already printed).
fn exit_with(code: i32) -> Result<(), Failure> {
    match code {
        0 => Ok(()),
        other => Err(Failure::silent(other.clamp(1, 255) as u8)),
    }
}

fn assertion_failure(e: crate::assertions::AssertionError) -> Failure {
    match e {
        crate::assertions::AssertionError::UnknownSession(_) => {
            Failure::of_class(crate::ErrorClass::NotFound, "not_found", e)
        }
        crate::assertions::AssertionError::AmbiguousSession(..) => Failure::usage(e),
        other => Failure::runtime(other),
    }
}
