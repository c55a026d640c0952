//! The verbs that add assertions: `quarry tag`, `quarry note` and `quarry assertions import`,
//! through `quarry_ingest::assertions`.

use std::path::Path;

use quarry::Format;
use quarry_archive::location::os_user;
use quarry_ingest::assertions::{self, AssertionError};

use crate::flags::Cli;
use crate::{Failure, emit, open_archive};

/// `quarry tag SESSION TAG`.
pub fn run_tag(cli: &Cli, session: &str, tag: &str) -> Result<(), Failure> {
    let mut archive = open_archive(cli.archive.clone())?;
    let id = assertions::tag(archive.conn_mut(), session, tag, os_user().as_deref())
        .map_err(assertion_failure)?;
    emit(&format!("tagged {id} with {tag}\n"));
    Ok(())
}

/// `quarry note SESSION TEXT`.
pub fn run_note(cli: &Cli, session: &str, text: &str) -> Result<(), Failure> {
    let mut archive = open_archive(cli.archive.clone())?;
    let id = assertions::note(archive.conn_mut(), session, text, os_user().as_deref())
        .map_err(assertion_failure)?;
    emit(&format!("noted {id}\n"));
    Ok(())
}

/// `quarry assertions import FILE`.
pub fn run_import(cli: &Cli, file: &Path) -> Result<(), Failure> {
    let mut archive = open_archive(cli.archive.clone())?;
    let (rows, diagnostics) =
        assertions::import(archive.conn_mut(), file).map_err(assertion_failure)?;
    if cli.format() == Format::Json {
        emit(&format!(
            "{}\n",
            serde_json::json!({"imported": rows, "diagnostics": diagnostics})
        ));
    } else {
        let mut out = format!("imported {rows} assertions\n");
        for d in &diagnostics {
            out.push_str(&format!(
                "  {}:{}: {} — {}\n",
                d.file,
                d.line.unwrap_or(0),
                d.kind,
                d.reason
            ));
        }
        emit(&out);
    }
    Ok(())
}

fn assertion_failure(e: AssertionError) -> Failure {
    match e {
        AssertionError::UnknownSession(_) => {
            Failure::of_class(quarry::ErrorClass::NotFound, "not_found", e)
        }
        AssertionError::AmbiguousSession(..) => Failure::usage(e),
        other => Failure::runtime(other),
    }
}
