//! `quarry search` and `quarry facets` through the library, printed as lines for people or as
//! the SearchEnvelope / facets response with `--format json`.

use quarry::facets::FacetsRequest;
use quarry::search::{SearchRequest, render_text};
use quarry::{Format, Quarry, block_on};

use crate::flags::{Cli, FacetsArgs, SearchArgs};
use crate::query::failure;
use crate::{Failure, emit, options};

/// `quarry search TEXT`: one page of hits, best first, and how to ask for the next.
pub fn run_search(cli: &Cli, args: SearchArgs) -> Result<(), Failure> {
    let text = args.text.join(" ");
    let json = cli.format() == Format::Json;
    let quarry = Quarry::open(&options(cli)?).map_err(|e| failure(&text, e, json))?;
    let request = SearchRequest {
        text: text.clone(),
        lane: args.lane,
        filter: args.filter,
        session: args.session,
        page_size: args.page_size,
        offset: args.page_offset,
        cursor: args.cursor,
    };
    let envelope = block_on(quarry.search(&request))
        .and_then(|r| r)
        .map_err(|e| failure(request.text_of(&e), e, json))?;
    print(
        json,
        || serde_json::to_string(&envelope),
        || render_text(&envelope),
    )
}

/// `quarry facets`: both views of every family asked for.
pub fn run_facets(cli: &Cli, args: FacetsArgs) -> Result<(), Failure> {
    let json = cli.format() == Format::Json;
    let request = FacetsRequest {
        text: args.text,
        lane: args.lane,
        filter: args.filter,
        families: args.families,
        budget_ms: args.budget_ms,
        no_idf: args.no_idf,
    };
    let about = request.filter.clone().unwrap_or_default();
    let quarry = Quarry::open(&options(cli)?).map_err(|e| failure(&about, e, json))?;
    let facets = block_on(quarry.facets(&request))
        .and_then(|r| r)
        .map_err(|e| failure(request.text_of(&e), e, json))?;
    print(
        json,
        || serde_json::to_string(&facets),
        || quarry::facets::render_text(&facets),
    )
}

/// The answer as JSON (`encode`), or as `text` draws it.
pub(crate) fn print(
    json: bool,
    encode: impl FnOnce() -> serde_json::Result<String>,
    text: impl FnOnce() -> String,
) -> Result<(), Failure> {
    if json {
        let body =
            encode().map_err(|e| Failure::runtime(format!("cannot encode the answer: {e}")))?;
        emit(&format!("{body}\n"));
    } else {
        emit(&text());
    }
    Ok(())
}
