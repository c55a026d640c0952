//! `quarry read REF`: a session's transcript, a window of its source records, its lineage or a
//! record's trace; a message or block in its context; any ref's resolution. Through the library,
//! printed for people (text or Markdown) or as the spec's shapes with `--format json`.

use quarry::read::{
    ReadAnswer, ReadRequest, RefKind, TraceRequest, TranscriptRequest, WindowRequest,
};
use quarry::{Format, Quarry, block_on};

use crate::flags::{Cli, ReadArgs};
use crate::query::failure;
use crate::search::print;
use crate::{Failure, options};

/// `quarry read REF [--around SEQ | --lineage | --trace SEQ | --resolve]`.
pub fn run_read(cli: &Cli, args: ReadArgs) -> Result<(), Failure> {
    let json = cli.format() == Format::Json;
    let kind = quarry::read::Ref::parse(&args.reference).map(|r| r.kind);
    let plain = args.around.is_none() && !args.lineage && args.trace.is_none();
    let request = match (
        args.around.as_deref().map(quarry::read::Around::parse),
        args.lineage,
    ) {
        _ if args.resolve => ReadRequest::Resolve(args.reference),
        _ if plain && matches!(kind, Some(RefKind::Message | RefKind::Block)) => {
            ReadRequest::Context(args.reference)
        }
        _ if plain && kind.is_some_and(|k| k != RefKind::Session) => {
            ReadRequest::Resolve(args.reference)
        }
        _ if args.trace.is_some() => ReadRequest::Trace(TraceRequest {
            session: args.reference,
            seq: args.trace.unwrap_or_default(),
        }),
        (Some(around), _) => ReadRequest::Window(WindowRequest {
            session: args.reference,
            around,
            before: args.before,
            after: args.after,
            surfaces: args.surface,
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
