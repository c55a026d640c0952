//! The command line: flags and verbs (clap), and the one place that maps outcomes to exit codes
//! (0 success, 1 runtime failure, 2 usage or query error). A closed pipe is not an error.

mod complete;
mod explain;
mod tables;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::ingest::{IngestOptions, ingest};
use crate::location::{archive_path, os_user};
use quarry_providers::Archive;

/// Exact analytical queries over archives of AI-agent sessions.
#[derive(Debug, Parser)]
#[command(name = "quarry", version, about, long_about = None)]
pub struct Cli {
    /// The archive file (default: $QUARRY_HOME/archive.db, else ~/.local/share/quarry/archive.db).
    #[arg(long, global = true, value_name = "PATH", env = "QUARRY_ARCHIVE")]
    pub archive: Option<PathBuf>,

    /// Output format: table (people) or json (machines).
    #[arg(long, global = true, value_enum, default_value_t = Format::Table)]
    pub format: Format,

    /// The verb.
    #[command(subcommand)]
    pub command: Command,
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Human-readable text and tables.
    Table,
    /// One JSON document.
    Json,
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
    },
    /// The catalog: every table with its exact row count and columns.
    Tables,
    /// Parse and resolve a query (no archive needed): the typed AST and its pipeline stages.
    Explain {
        /// The query, e.g. 'messages where role:assistant | group by role | count'.
        #[arg(allow_hyphen_values = true)]
        query: String,
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

/// A failure with its exit code.
pub struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    /// A runtime failure (exit 1).
    pub fn runtime(message: impl std::fmt::Display) -> Self {
        Failure {
            code: 1,
            message: message.to_string(),
        }
    }
    /// A usage error (exit 2).
    pub fn usage(message: impl std::fmt::Display) -> Self {
        Failure {
            code: 2,
            message: message.to_string(),
        }
    }
}

/// Runs the command line and returns the process exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
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

fn run(cli: Cli) -> Result<(), Failure> {
    let json = cli.format == Format::Json;
    match cli.command {
        Command::Ingest {
            paths,
            owner,
            no_progress,
        } => {
            let mut archive = open_archive(cli.archive)?;
            let options = IngestOptions {
                paths,
                owner: owner.or_else(os_user),
                progress: !no_progress && !json,
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
            out,
        } => {
            let plan = match (messages, sessions) {
                (_, Some(n)) => crate::synth::Size::Sessions(n),
                (Some(n), None) => crate::synth::Size::Messages(n),
                (None, None) => return Err(Failure::usage("give --messages N or --sessions N")),
            };
            let report = crate::synth::generate(&out, plan, seed).map_err(Failure::runtime)?;
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
        Command::Explain { query } => {
            let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            exit_with(explain::run(&query, json, color))
        }
        Command::Complete { examples, errors } => exit_with(complete::run(examples, errors, json)),
        Command::Demo => crate::synth::demo(json).map_err(Failure::runtime),
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

/// Maps a verb's exit code to a result (2: the message was already printed).
fn exit_with(code: i32) -> Result<(), Failure> {
    match code {
        0 => Ok(()),
        2 => Err(Failure {
            code: 2,
            message: String::new(),
        }),
        other => Err(Failure {
            code: other.clamp(1, 255) as u8,
            message: String::new(),
        }),
    }
}

fn assertion_failure(e: crate::assertions::AssertionError) -> Failure {
    match e {
        crate::assertions::AssertionError::UnknownSession(_)
        | crate::assertions::AssertionError::AmbiguousSession(..) => Failure::usage(e),
        other => Failure::runtime(other),
    }
}
