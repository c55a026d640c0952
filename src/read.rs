//! `quarry read REF`: a session's transcript, a window of its source records or its lineage,
//! through the library, printed for people (text or Markdown) or as the spec's shapes with
//! `--format json`.

use quarry::read::{ReadAnswer, ReadRequest, TranscriptRequest, WindowRequest};
use quarry::{Format, Quarry, block_on};

use crate::flags::{Cli, ReadArgs};
use crate::query::failure;
use crate::search::print;
use crate::{Failure, options};

/// `quarry read REF [--around SEQ | --lineage]`.
pub fn run_read(cli: &Cli, args: ReadArgs) -> Result<(), Failure> {
    let json = cli.format() == Format::Json;
    let other_kind = quarry::read::Ref::parse(&args.reference)
        .is_some_and(|r| r.kind != quarry::read::RefKind::Session);
    let resolve = args.resolve || (other_kind && args.around.is_none() && !args.lineage);
    let request = match (args.around, args.lineage) {
        _ if resolve => ReadRequest::Resolve(args.reference),
        (Some(seq), _) => ReadRequest::Window(WindowRequest {
            session: args.reference,
            seq,
            before: args.before,
            after: args.after,
        }),
        (None, true) => ReadRequest::Lineage(args.reference),
        (None, false) => ReadRequest::Transcript(TranscriptRequest {
            session: args.reference,
            page_size: args.page_size,
            cursor: args.cursor,
        }),
    };
    let about = request.reference().to_string();
    let quarry = Quarry::open(&options(cli)?).map_err(|e| failure(&about, e, json))?;
    let answer = block_on(quarry.read(&request))
        .and_then(|r| r)
        .map_err(|e| failure(&about, e, json))?;
    let text = || match &answer {
        ReadAnswer::Transcript(t) => {
            quarry::read::transcript::render(t, args.markdown, args.thinking)
        }
        other => other.render_text(),
    };
    print(json, || serde_json::to_string(&answer), text)
}
