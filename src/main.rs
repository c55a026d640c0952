//! The `quarry` command line: flags and verbs ([`flags`], clap, every value checked by its
//! parser), one function per verb (in the module of its kind), and the one place that maps
//! outcomes to exit codes (0 success, 1 runtime failure, 2 usage or query error; a closed pipe
//! is not an error). It calls the `quarry` library, the servers of `quarry-server` and the
//! ingest of `quarry-ingest`; it computes nothing itself.

mod assertions;
mod audit;
mod complete;
mod demo;
mod explain;
mod flags;
mod ingest;
mod prices;
mod query;
mod read;
mod report;
mod search;
mod serve;
mod storage;
mod tables;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use quarry::{Error, Format, Options};
use quarry_archive::Archive;
use quarry_archive::location::{archive_path, os_user};

use crate::flags::{AssertionsCommand, Cli, Command, ExplainArgs, with_default_verb};

/// A failure with its exit code, and the error body `--format json` writes (a library error's,
/// or one of class `usage` or `internal` for the command line's own).
pub struct Failure {
    code: u8,
    message: String,
    body: Option<Box<quarry::ErrorBody>>,
}

impl Failure {
    /// A runtime failure (exit 1).
    pub fn runtime(message: impl std::fmt::Display) -> Self {
        Failure::of_class(quarry::ErrorClass::Internal, "failed", message)
    }
    /// A usage error (exit 2).
    pub fn usage(message: impl std::fmt::Display) -> Self {
        Failure::of_class(quarry::ErrorClass::Usage, "invalid_usage", message)
    }
    /// A failure of `class` with `code`.
    fn of_class(
        class: quarry::ErrorClass,
        code: &'static str,
        message: impl std::fmt::Display,
    ) -> Self {
        let message = message.to_string();
        Failure {
            code: class.exit_code(),
            body: Some(Box::new(quarry::ErrorBody {
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
fn main() -> ExitCode {
    let args = with_default_verb(std::env::args_os().collect());
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e, &args),
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

/// A command line clap refused (a wrong flag, a value its parser rejected): clap's message on
/// standard error and, when `--format json` was asked for, the usage error's body on standard
/// output, as for any other error; exit 2 (0 for `--help` and `--version`).
fn usage_error(e: &clap::Error, args: &[std::ffi::OsString]) -> ExitCode {
    let _ = e.print();
    if !e.use_stderr() {
        return ExitCode::SUCCESS;
    }
    if asks_for_json(args) {
        let message = e.to_string();
        let first = message.lines().next().unwrap_or_default();
        let failure = Failure::usage(first.trim_start_matches("error: "));
        if let Some(body) = &failure.body {
            emit(&format!("{}\n", body.to_json()));
        }
    }
    ExitCode::from(2)
}

/// Whether the arguments ask for `--format json` (or `sql-json`), before any `--`.
fn asks_for_json(args: &[std::ffi::OsString]) -> bool {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .take_while(|a| a != "--")
        .collect();
    let json = |v: &str| matches!(v, "json" | "sql-json");
    args.windows(2).any(|w| w[0] == "--format" && json(&w[1]))
        || args
            .iter()
            .any(|a| a.strip_prefix("--format=").is_some_and(json))
}

/// Writes to stdout; a closed pipe (`quarry tables | head`) ends quietly.
pub fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

fn open_archive(flag: Option<PathBuf>) -> Result<Archive, Failure> {
    let archive = Archive::open(&archive_path(flag)).map_err(Failure::runtime)?;
    for notice in archive.notices() {
        eprintln!("quarry: {notice}");
    }
    Ok(archive)
}

/// Checks the flags that apply to every verb, then runs the verb (one function each).
fn run(mut cli: Cli) -> Result<(), Failure> {
    let Some(command) = cli.command.take() else {
        return Err(Failure::usage(
            "give a query or a verb; see `quarry --help`",
        ));
    };
    check_output_flags(&cli, &command)?;
    if let Some(verb) = admin_only_verb(&command)
        && !scope_of(&cli)?.is_admin()
    {
        return Err(Failure::of_class(
            quarry::ErrorClass::Forbidden,
            "admin_only",
            format!(
                "`quarry {verb}` is only for the admin scope (a reader scope queries with `quarry QUERY`, `quarry sql` and `quarry export`)"
            ),
        ));
    }
    match command {
        Command::Query { query, cursor } => {
            query::run_query(&query.join(" "), &cli, quarry::Language::Query, cursor)
        }
        Command::Sql { sql } => query::run_query(&sql.join(" "), &cli, quarry::Language::Sql, None),
        Command::Search(args) => search::run_search(&cli, args),
        Command::Facets(args) => search::run_facets(&cli, args),
        Command::Read(args) => read::run_read(&cli, args),
        Command::Audit => audit::run_audit(&cli),
        Command::Serve(args) => serve::run_serve(&cli, args),
        Command::Mcp(args) => serve::run_mcp(&cli, args),
        Command::Token { action } => serve::run_token(&cli, action),
        Command::Ingest(args) => ingest::run_ingest(&cli, args),
        Command::Watch(args) => ingest::run_watch(&cli, args),
        Command::Snapshot(args) => storage::run_snapshot(&cli, args),
        Command::Export(args) => storage::run_export(&cli, args),
        Command::Report(args) => report::run_report(&cli, args),
        Command::Prices { model } => prices::run_prices(&cli, model.as_deref()),
        Command::Reindex => ingest::run_reindex(&cli),
        Command::Tables => tables::run_tables(&cli),
        Command::Gen(args) => demo::run_gen(&cli, args),
        Command::Explain(ExplainArgs { query, plan: true }) => {
            query::run_explain_plan(&query, &cli)
        }
        Command::Explain(ExplainArgs { query, plan: false }) => explain::run_explain(&query, &cli),
        Command::Complete { examples, errors } => complete::run_complete(&cli, examples, errors),
        Command::Demo => demo::run_demo(&cli),
        Command::Tag { session, tag } => assertions::run_tag(&cli, &session, &tag),
        Command::Note { session, text } => assertions::run_note(&cli, &session, &text),
        Command::Judge(args) => assertions::run_judge(&cli, &args),
        Command::Assertions {
            action: AssertionsCommand::Import { file },
        } => assertions::run_import(&cli, &file),
    }
}

/// `-o` and `--format` belong to the verbs that write answers.
fn check_output_flags(cli: &Cli, command: &Command) -> Result<(), Failure> {
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
    Ok(())
}

/// The verb's name when only the admin scope may run it: everything that writes the archive,
/// copies it whole, or reports on all of it.
fn admin_only_verb(command: &Command) -> Option<&'static str> {
    Some(match command {
        Command::Ingest(_) => "ingest",
        Command::Snapshot(_) => "snapshot",
        Command::Reindex => "reindex",
        Command::Tables => "tables",
        Command::Audit => "audit",
        Command::Serve(_) => "serve",
        Command::Tag { .. } => "tag",
        Command::Note { .. } => "note",
        Command::Assertions { .. } => "assertions",
        Command::Judge(_) => "judge",
        Command::Explain(ExplainArgs { plan: true, .. }) => "explain --plan",
        _ => return None,
    })
}

/// The library's options from the global flags.
pub(crate) fn options(cli: &Cli) -> Result<Options, Failure> {
    let mut options = Options::new(archive_path(cli.archive.clone()));
    options.memory_limit = cli.memory_limit;
    options.tz = cli.tz.clone();
    options.source = cli.source.unwrap_or_default();
    options.snapshot_url = cli.snapshot_url.clone();
    options.prices = cli.prices.clone();
    options.scope = scope_of(cli)?;
    options.caller = quarry::Caller {
        who: os_user(),
        surface: "cli".into(),
    };
    Ok(options)
}

/// The scope `--scope` names (admin when none), from `--scopes` or the file beside the archive.
pub(crate) fn scope_of(cli: &Cli) -> Result<quarry::Scope, Failure> {
    scope_named(cli, cli.scope.as_deref().unwrap_or(quarry::scope::ADMIN))
}

/// The scope called `name`, from `--scopes` or the file beside the archive.
pub(crate) fn scope_named(cli: &Cli, name: &str) -> Result<quarry::Scope, Failure> {
    let file = match &cli.scopes {
        Some(file) => file.clone(),
        None => quarry::scope::default_scopes_file(&archive_path(cli.archive.clone())),
    };
    quarry::scope::resolve(name, &file).map_err(Failure::usage)
}

/// A library error as a failure of its class (the one map: `Error::class`).
pub(crate) fn by_class(e: Error) -> Failure {
    Failure::of(&e, None)
}

/// Whether the answer goes to a terminal's standard error in colour.
fn stderr_color() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// Maps a verb's exit code to a result (2: the message was already printed).
fn exit_with(code: i32) -> Result<(), Failure> {
    match code {
        0 => Ok(()),
        other => Err(Failure::silent(other.clamp(1, 255) as u8)),
    }
}
