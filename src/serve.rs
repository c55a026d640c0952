//! The servers' verbs: `quarry serve` (HTTP), `quarry mcp` (MCP over stdio), and `quarry token
//! add|list|revoke`, which keep the tokens file the HTTP server reads.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use quarry_archive::location::{archive_path, os_user};
use quarry_server::tokens::Tokens;
use quarry_server::{Limits, Service};

use crate::flags::{Cli, LimitArgs, McpArgs, ServeArgs, TokenCommand};
use crate::{Failure, by_class, emit, options, scope_named};

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
    let json = cli.format() == quarry::Format::Json;
    match command {
        TokenCommand::Add { name, tokens } => {
            // The global --scope names the token's scope here, not the scope to run under.
            let scope = cli.scope.clone().ok_or_else(|| {
                Failure::usage("give the token's scope: quarry token add NAME --scope SCOPE")
            })?;
            let path = tokens_file(cli, tokens);
            // The scope must exist now (a server re-checks it at every request).
            scope_named(cli, &scope)?;
            let token = quarry_server::tokens::update(&path, |file| file.add(&name, &scope))
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
            let gone = quarry_server::tokens::update(&path, |file| file.revoke(&name))
                .map_err(Failure::usage)?;
            emit(&format!(
                "revoked token {} (scope {}); a running server refuses it from its next request\n",
                gone.name, gone.scope
            ));
            Ok(())
        }
    }
}

/// The service of a server: one engine for the process, the scopes file, the bounds.
fn service(cli: &Cli, limits: &LimitArgs) -> Result<Service, Failure> {
    let mut base = options(cli)?;
    let scopes_file = match &cli.scopes {
        Some(file) => file.clone(),
        None => quarry::scope::default_scopes_file(&base.archive),
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
    base.scope = quarry::Scope::Admin;
    let quarry = quarry::Quarry::open(&base).map_err(by_class)?;
    Ok(Service::new(quarry, scopes_file, limits))
}

/// Builds the search's row directory on a thread of its own (a server whose searches may run
/// in the admin scope); searches are exact meanwhile, and faster once it is ready.
fn prepare_search(quarry: &quarry::Quarry) {
    let quarry = quarry.clone();
    std::thread::spawn(move || {
        let started = std::time::Instant::now();
        match quarry.prepare_search() {
            Ok(Some(blocks)) => eprintln!(
                "quarry: search row directory ready: {blocks} blocks in {:.1} s",
                started.elapsed().as_secs_f64()
            ),
            Ok(None) => {}
            Err(e) => eprintln!("quarry: searches read the archive without the row directory: {e}"),
        }
    });
}

/// `quarry serve`.
pub fn run_serve(cli: &Cli, args: ServeArgs) -> Result<(), Failure> {
    if cli.scope.is_some() {
        return Err(Failure::usage(
            "quarry serve takes no --scope: each token's scope decides (see `quarry token add --scope`)",
        ));
    }
    let options = quarry_server::http::ServeOptions {
        listen: args.listen,
        tokens: tokens_file(cli, args.tokens),
    };
    // The tokens file is checked before the archive is opened.
    quarry_server::tokens::Tokens::load(&options.tokens).map_err(Failure::usage)?;
    let service = service(cli, &args.limits)?;
    if args.watch || !args.watch_path.is_empty() {
        watch_aside(cli, args.watch_path, args.watch_owner)?;
    }
    // Any token may be an admin's.
    prepare_search(service.quarry());
    quarry::block_on(quarry_server::http::serve(service, options))
        .map_err(by_class)?
        .map_err(|e| match e {
            quarry_server::http::ServeError::Listen { .. } => Failure::runtime(e),
            other => Failure::usage(other),
        })
}

/// `quarry serve --watch`: the watch of `quarry watch` on a thread of its own, with its own
/// connection to the archive; the server answers from each new generation at its next request.
fn watch_aside(cli: &Cli, paths: Vec<PathBuf>, owner: Option<String>) -> Result<(), Failure> {
    let mut archive = crate::open_archive(cli.archive.clone())?;
    let options = quarry_ingest::watch::WatchOptions {
        ingest: quarry_ingest::IngestOptions {
            paths,
            owner: owner.or_else(os_user),
            machine: quarry_archive::location::host_name(),
            replace: Vec::new(),
            ..Default::default()
        },
        ..Default::default()
    };
    let rescan = options.rescan;
    std::thread::Builder::new()
        .name("watch".into())
        .spawn(move || {
            let watched = quarry_ingest::watch::watch(
                &mut archive,
                &options,
                &mut |source, roots| {
                    eprintln!("{}", crate::ingest::watch_start(source, roots, rescan))
                },
                &mut |batch| {
                    if let Some(line) = crate::ingest::batch_line(batch) {
                        eprintln!("{line}");
                    }
                    true
                },
            );
            if let Err(e) = watched {
                eprintln!("watch: {e}; serving without it");
            }
        })
        .map_err(Failure::runtime)?;
    Ok(())
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
            let archive = quarry_archive::Archive::open_read_only(service.quarry().archive())
                .map_err(Failure::runtime)?;
            let session_id = quarry_ingest::assertions::resolve_session(archive.conn(), reference)
                .map_err(|e| match e {
                    quarry_ingest::assertions::AssertionError::UnknownSession(r) => {
                        Failure::of(&quarry::Error::SessionNotFound(r), None)
                    }
                    other => Failure::usage(other),
                })?;
            quarry_server::mcp::Mode::Pinned { session_id }
        }
        None => quarry_server::mcp::Mode::Open(mcp_scope(cli)?),
    };
    // A reader's or a pinned conversation's searches never read it.
    if matches!(&mode, quarry_server::mcp::Mode::Open(scope) if scope.is_admin()) {
        prepare_search(service.quarry());
    }
    let server = quarry_server::mcp::McpServer::new(Arc::new(service), mode, os_user());
    quarry::block_on(quarry_server::mcp::serve_stdio(server))
        .map_err(by_class)?
        .map_err(by_class)
}

/// `--scope`, or a reader scope of the local owner: an agent's server sees its owner's
/// sessions, masked, unless `--scope admin` says otherwise.
fn mcp_scope(cli: &Cli) -> Result<quarry::Scope, Failure> {
    if let Some(name) = &cli.scope {
        return scope_named(cli, name);
    }
    let owner = os_user().ok_or_else(|| {
        Failure::usage("cannot tell the local user: give --scope NAME (or --scope admin)")
    })?;
    quarry::scope::ReaderScope::new("local-owner", None, Some(&owner))
        .map(quarry::Scope::Reader)
        .map_err(Failure::usage)
}
