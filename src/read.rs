//! `quarry read REF`: a window of a session's source records or its lineage, through the
//! library, printed as lines for people or as the spec's shapes with `--format json`.

use quarry::read::{WindowRequest, render_lineage, render_window};
use quarry::{Format, Quarry, block_on};

use crate::flags::{Cli, ReadArgs};
use crate::query::failure;
use crate::search::print;
use crate::{Failure, options};

/// `quarry read REF --around SEQ` or `quarry read REF --lineage`.
pub fn run_read(cli: &Cli, args: ReadArgs) -> Result<(), Failure> {
    let json = cli.format() == Format::Json;
    let reference = args.reference;
    let quarry = Quarry::open(&options(cli)?).map_err(|e| failure(&reference, e, json))?;
    match args.around {
        Some(seq) => {
            let request = WindowRequest {
                session: reference.clone(),
                seq,
                before: args.before,
                after: args.after,
            };
            let window = block_on(quarry.read_window(&request))
                .and_then(|r| r)
                .map_err(|e| failure(&reference, e, json))?;
            print(
                json,
                || serde_json::to_string(&window),
                || render_window(&window),
            )
        }
        None => {
            let trace = block_on(quarry.lineage(&reference))
                .and_then(|r| r)
                .map_err(|e| failure(&reference, e, json))?;
            print(
                json,
                || serde_json::to_string(&trace),
                || render_lineage(&trace),
            )
        }
    }
}
