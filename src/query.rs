//! Queries: `quarry QUERY`, `quarry sql` and `quarry explain --plan`, each through the library
//! API, its answer encoded by the library's encoder of the format asked for.

use std::io::IsTerminal;

use quarry::output::{self, Destination};
use quarry::{Caps, Error, Format, Language, Quarry, block_on};

use crate::flags::Cli;
use quarry::UnpricedModel;

use crate::{Failure, emit, options, stderr_color, storage};
use quarry::output::numbers::thousands;

/// A library error as the command line reports it: with `--format json` the error body on
/// standard output (the one HTTP and MCP send); else a query's diagnostics drawn under the
/// query, anything else as a message on standard error. The exit code is its class's.
pub(crate) fn failure(query: &str, e: Error, json: bool) -> Failure {
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

/// The format of a query's answer: `--format`, else the extension of `-o FILE`, else table.
pub(crate) fn answer_format(cli: &Cli, path: Option<&std::path::Path>) -> Result<Format, Failure> {
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

/// `quarry QUERY`, `quarry query` and `quarry sql`: the answer streamed to standard output or
/// written to `-o` (a local file, or an object store URL staged locally and uploaded whole).
/// A query of the language capped by `--limit`, or continued with `cursor`, pages (its rows in
/// a total order, `next_cursor` when the cap cuts them).
pub fn run_query(
    query: &str,
    cli: &Cli,
    language: Language,
    cursor: Option<String>,
) -> Result<(), Failure> {
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
    let mut request = match language {
        Language::Sql => quarry::Request::sql(query),
        _ => quarry::Request::query(query),
    }
    .with_caps(caps)
    .with_timeout(cli.timeout);
    if language == Language::Query && (cli.limit.is_some() || cursor.is_some()) {
        request = request.paged(cursor);
    }
    let written = block_on(async {
        let stream = quarry.run(&request).await?;
        let unit = stream.meta().unit.clone();
        let written = output::write(stream, format, &mut destination)
            .await
            .map(|completion| (unit, completion));
        eprint!("{}", unpriced_lines(&quarry.take_unpriced()));
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

/// `quarry explain --plan`: DataFusion's plans of a query over the archive.
pub fn run_explain_plan(query: &str, cli: &Cli) -> Result<(), Failure> {
    let json = cli.format() == Format::Json;
    let quarry = Quarry::open(&options(cli)?).map_err(|e| failure(query, e, json))?;
    let text = block_on(quarry.explain_plan(query))
        .and_then(|text| text)
        .map_err(|e| failure(query, e, json))?;
    emit(&format!("{text}\n"));
    Ok(())
}

/// One line per model a query left without a cost, for standard error.
pub(crate) fn unpriced_lines(unpriced: &[UnpricedModel]) -> String {
    unpriced
        .iter()
        .map(|u| {
            let (noun, its, them) = if u.responses == 1 {
                ("response", "its", "it")
            } else {
                ("responses", "their", "them")
            };
            format!(
                "note: {} for model {}: {} {noun} ({its} cost_usd is NULL; sums leave {them} out)\n",
                u.reason,
                u.model,
                thousands(u.responses)
            )
        })
        .collect()
}
