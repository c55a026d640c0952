//! Opens an archive and runs a query through quarry's public API, printing the rows as JSON and
//! what the answer is. Any front end (a server, a notebook bridge) is built the same way: one
//! `Quarry` per process, a session per request, the exit code from the error's class.
//!
//! ```sh
//! cargo run -p quarry --example query -- ARCHIVE.db 'messages | group by role | agg count, p90:word_count'
//! ```

use std::process::ExitCode;

use quarry::{Caller, Options, Quarry, Request, Scope, block_on};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(archive), Some(query)) = (args.next(), args.next()) else {
        eprintln!("usage: query ARCHIVE QUERY");
        return ExitCode::from(2);
    };
    match run(&archive, &query) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error [{}]: {e}", e.code());
            ExitCode::from(e.class().exit_code())
        }
    }
}

fn run(archive: &str, query: &str) -> Result<(), quarry::Error> {
    let quarry = Quarry::open(&Options::new(archive))?;
    let answer = block_on(async {
        let session = quarry.session(Scope::Admin, Caller::default()).await?;
        session.run(&Request::query(query)).await?.collect().await
    })??;
    let rows = quarry::output::rows_json(&answer.batches)?;
    for row in rows.as_array().into_iter().flatten() {
        println!("{row}");
    }
    println!(
        "{} rows of {} ({}, exact: {}, source: {}, generation {}), input rows: {}",
        answer.num_rows(),
        answer.meta.unit,
        serde_json::to_value(answer.meta.semantics).unwrap_or_default(),
        answer.meta.exact,
        answer.meta.source.name(),
        answer.meta.generation,
        answer
            .input_rows
            .map_or_else(|| "-".to_string(), |n| n.to_string()),
    );
    Ok(())
}
