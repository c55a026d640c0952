//! `quarry search`: a ranked full-text search through the library, printed as lines for people
//! or as the SearchEnvelope with `--format json`.

use quarry::search::{SearchRequest, render_text};
use quarry::{Format, Quarry, block_on};

use crate::flags::{Cli, SearchArgs};
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
        page_size: args.page_size.map(usize::from),
        offset: args.page_offset,
        cursor: args.cursor,
    };
    let envelope = block_on(quarry.search(&request))
        .and_then(|r| r)
        .map_err(|e| failure(request.text_of(&e), e, json))?;
    if json {
        let body = serde_json::to_string(&envelope)
            .map_err(|e| Failure::runtime(format!("cannot encode the answer: {e}")))?;
        emit(&format!("{body}\n"));
    } else {
        emit(&render_text(&envelope));
    }
    Ok(())
}
