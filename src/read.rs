//! `quarry read REF`: a window of a session's source records or its lineage, through the
//! library, printed as lines for people or as the spec's shapes with `--format json`.

use quarry::read::{ReadRequest, WindowRequest};
use quarry::{Format, Quarry, block_on};

use crate::flags::{Cli, ReadArgs};
use crate::query::failure;
use crate::search::print;
use crate::{Failure, options};

/// `quarry read REF --around SEQ` or `quarry read REF --lineage`.
pub fn run_read(cli: &Cli, args: ReadArgs) -> Result<(), Failure> {
    let json = cli.format() == Format::Json;
    let request = match args.around {
        Some(seq) => ReadRequest::Window(WindowRequest {
            session: args.reference,
            seq,
            before: args.before,
            after: args.after,
        }),
        None => ReadRequest::Lineage(args.reference),
    };
    let about = request.reference().to_string();
    let quarry = Quarry::open(&options(cli)?).map_err(|e| failure(&about, e, json))?;
    let answer = block_on(quarry.read(&request))
        .and_then(|r| r)
        .map_err(|e| failure(&about, e, json))?;
    print(
        json,
        || serde_json::to_string(&answer),
        || answer.render_text(),
    )
}
