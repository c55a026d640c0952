//! The servers' verbs: `quarry serve` (HTTP), `quarry mcp` (MCP over stdio), and `quarry token
//! add|list|revoke`, which keep the tokens file the HTTP server reads. The servers need the
//! engine; a build without it says so.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::{Cli, Failure, emit};
use crate::location::archive_path;
use crate::tokens::Tokens;

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
    #[arg(long, value_name = "SIZE", default_value = "1MiB", value_parser = super::parse_size)]
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

/// The tokens file `flag` names, else `tokens.toml` beside the archive.
fn tokens_file(cli: &Cli, flag: Option<PathBuf>) -> PathBuf {
    flag.unwrap_or_else(|| {
        archive_path(cli.archive.clone())
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join("tokens.toml")
    })
}

/// `quarry token add|list|revoke`.
pub fn run_token(cli: &Cli, command: TokenCommand) -> Result<(), Failure> {
    let json = cli.format() == crate::Format::Json;
    match command {
        TokenCommand::Add { name, tokens } => {
            // The global --scope names the token's scope here, not the scope to run under.
            let scope = cli.scope.clone().ok_or_else(|| {
                Failure::usage("give the token's scope: quarry token add NAME --scope SCOPE")
            })?;
            let path = tokens_file(cli, tokens);
            // The scope must exist now (a server re-checks it at every request).
            super::scope_named(cli, &scope)?;
            let token = crate::tokens::update(&path, |file| file.add(&name, &scope))
                .map_err(Failure::usage)?;
            if json {
                emit(&format!(
                    "{}\n",
                    serde_json::json!({"name": name, "scope": scope, "tokens_file": path.display().to_string(), "token": token})
                ));
            } else {
                emit(&format!(
                    "added token {name} (scope {scope}) to {}\nit is shown once, now; only its SHA-256 is kept:\n{token}\n",
                    path.display()
                ));
            }
            Ok(())
        }
        TokenCommand::List { tokens } => {
            let path = tokens_file(cli, tokens);
            let file = Tokens::load(&path).map_err(Failure::usage)?;
            if json {
                let list: Vec<_> = file
                    .tokens
                    .iter()
                    .map(|t| serde_json::json!({"name": t.name, "scope": t.scope, "created_at": t.created_at, "sha256_prefix": &t.sha256[..12]}))
                    .collect();
                emit(&format!("{}\n", serde_json::json!({"tokens": list})));
            } else {
                let mut table = comfy_table::Table::new();
                table.load_preset(comfy_table::presets::ASCII_MARKDOWN);
                table.set_header(["name", "scope", "created_at", "sha256"]);
                for t in &file.tokens {
                    table.add_row([
                        t.name.clone(),
                        t.scope.clone(),
                        t.created_at.clone().unwrap_or_default(),
                        format!("{}…", &t.sha256[..12]),
                    ]);
                }
                emit(&format!("{table}\n"));
            }
            Ok(())
        }
        TokenCommand::Revoke { name, tokens } => {
            let path = tokens_file(cli, tokens);
            if !path.exists() {
                return Err(Failure::usage(format!(
                    "no tokens file at {}",
                    path.display()
                )));
            }
            let gone =
                crate::tokens::update(&path, |file| file.revoke(&name)).map_err(Failure::usage)?;
            emit(&format!(
                "revoked token {} (scope {}); a running server refuses it from its next request\n",
                gone.name, gone.scope
            ));
            Ok(())
        }
    }
}

/// Parses `30s`, `500ms`, `2m` or a number of seconds.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let (value, unit) = super::number_and_unit(text)
        .ok_or_else(|| format!("not a duration: {text} (try 30s or 500ms)"))?;
    let seconds = match unit {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" | "min" => value * 60.0,
        _ => return Err(format!("not a duration: {text} (try 30s or 500ms)")),
    };
    if !(seconds > 0.0 && seconds.is_finite()) {
        return Err(format!("{text}: a duration must be more than zero"));
    }
    Ok(std::time::Duration::from_secs_f64(seconds))
}

#[cfg(feature = "engine")]
mod engine {
    use std::sync::Arc;

    use super::{LimitArgs, McpArgs, ServeArgs, tokens_file};
    use crate::cli::{Cli, Failure, by_class, options};
    use crate::server::{Limits, Service};

    /// The service of a server: one engine for the process, the scopes file, the bounds.
    fn service(cli: &Cli, limits: &LimitArgs) -> Result<Service, Failure> {
        let mut base = options(cli)?;
        let scopes_file = match &cli.scopes {
            Some(file) => file.clone(),
            None => crate::scope::default_scopes_file(&base.archive),
        };
        let defaults = Limits::default();
        let limits = Limits {
            timeout: cli.timeout.unwrap_or(defaults.timeout),
            max_rows: limits.max_rows,
            max_body: limits.max_body,
            max_concurrent: usize::try_from(limits.max_concurrent).unwrap_or(8),
            memory_limit: base.memory_limit.or(defaults.memory_limit),
        };
        // One pool for every query the server runs.
        base.memory_limit = limits.memory_limit;
        // The engine's own default session is the admin scope's (each request has its own).
        base.scope = crate::Scope::Admin;
        let quarry = crate::Quarry::open(&base).map_err(by_class)?;
        Ok(Service::new(quarry, scopes_file, limits))
    }

    /// `quarry serve`.
    pub fn run_serve(cli: &Cli, args: ServeArgs) -> Result<(), Failure> {
        if cli.scope.is_some() {
            return Err(Failure::usage(
                "quarry serve takes no --scope: each token's scope decides (see `quarry token add --scope`)",
            ));
        }
        let options = crate::server::http::ServeOptions {
            listen: args.listen,
            tokens: tokens_file(cli, args.tokens),
        };
        // The tokens file is checked before the archive is opened.
        crate::tokens::Tokens::load(&options.tokens).map_err(Failure::usage)?;
        let service = service(cli, &args.limits)?;
        crate::block_on(crate::server::http::serve(service, options))
            .map_err(by_class)?
            .map_err(|e| match e {
                crate::server::http::ServeError::Listen { .. } => Failure::runtime(e),
                other => Failure::usage(other),
            })
    }

    /// `quarry mcp`.
    pub fn run_mcp(cli: &Cli, args: McpArgs) -> Result<(), Failure> {
        let service = service(cli, &args.limits)?;
        let mode = match &args.session {
            Some(reference) => {
                if cli.scope.is_some() {
                    return Err(Failure::usage(
                        "give --session or --scope, not both: a pinned server sees its one session",
                    ));
                }
                let archive = quarry_providers::Archive::open_read_only(service.quarry().archive())
                    .map_err(Failure::runtime)?;
                let session_id = crate::assertions::resolve_session(archive.conn(), reference)
                    .map_err(Failure::usage)?;
                crate::server::mcp::Mode::Pinned { session_id }
            }
            None => crate::server::mcp::Mode::Open(mcp_scope(cli)?),
        };
        let server =
            crate::server::mcp::McpServer::new(Arc::new(service), mode, crate::location::os_user());
        crate::block_on(crate::server::mcp::serve_stdio(server))
            .map_err(by_class)?
            .map_err(by_class)
    }

    /// `--scope`, or a reader scope of the local owner: an agent's server sees its owner's
    /// sessions, masked, unless `--scope admin` says otherwise.
    fn mcp_scope(cli: &Cli) -> Result<crate::Scope, Failure> {
        if let Some(name) = &cli.scope {
            return crate::cli::scope_named(cli, name);
        }
        let owner = crate::location::os_user().ok_or_else(|| {
            Failure::usage("cannot tell the local user: give --scope NAME (or --scope admin)")
        })?;
        crate::scope::ReaderScope::new("local-owner", None, Some(&owner))
            .map(crate::Scope::Reader)
            .map_err(Failure::usage)
    }
}

#[cfg(feature = "engine")]
pub use engine::{run_mcp, run_serve};

/// `quarry serve` in a build without the engine.
#[cfg(not(feature = "engine"))]
pub fn run_serve(_cli: &Cli, _args: ServeArgs) -> Result<(), Failure> {
    Err(Failure::usage(crate::Error::EngineUnavailable))
}

/// `quarry mcp` in a build without the engine.
#[cfg(not(feature = "engine"))]
pub fn run_mcp(_cli: &Cli, _args: McpArgs) -> Result<(), Failure> {
    Err(Failure::usage(crate::Error::EngineUnavailable))
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
        assert_eq!(parse_duration("1.5").unwrap().as_millis(), 1_500);
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("3h").is_err());
        assert!(parse_duration("x").is_err());
    }
}
