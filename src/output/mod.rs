//! Writing answers: one encoder per format over a record-batch stream, and the destination the
//! bytes go to. Encoders see only record batches and the answer's metadata, never a plan.
//!
//! | format | module | how |
//! |---|---|---|
//! | json | [`envelope`] | the typed [`Envelope`], rows encoded by arrow's JSON encoders |
//! | yaml | [`envelope`] | the same envelope, through `serde_yaml_ng` |
//! | table | `table` | comfy-table, floats at a readable precision |
//! | ndjson, csv | `text` | arrow's JSON (line-delimited) and CSV writers, batch by batch |
//! | arrow, parquet | `binary` | arrow's IPC file writer, parquet's `ArrowWriter`, batch by batch |
//!
//! Times are Arrow timestamps in the binary formats and RFC 3339 in the text formats, as Arrow
//! renders them: `Z` for UTC, fractional seconds to the millisecond when there are any
//! (`2026-01-05T09:30:00.250Z`, `2026-01-05T00:00:00Z`).

#[cfg(feature = "engine")]
mod binary;
mod destination;
#[cfg(feature = "engine")]
pub mod envelope;
#[cfg(feature = "engine")]
mod table;
#[cfg(feature = "engine")]
mod text;

pub use self::destination::{Destination, format_for_path, output_path};
#[cfg(feature = "engine")]
pub use self::envelope::{Envelope, rows_json};
#[cfg(feature = "engine")]
pub use self::table::render as render_table;

use crate::api::{Completion, Error, QueryStream};
use crate::format::Format;

/// Writes the answer of `stream` to `destination` in `format` and reports how it ended. The
/// streamed formats (parquet, arrow, csv, ndjson) hold one batch at a time, so an answer of any
/// size fits; json, yaml and table collect the answer first. A streamed format refuses an
/// answer with rows attached by `with` projections ([`Error::NotStreamable`]).
pub async fn write(
    #[cfg_attr(not(feature = "engine"), allow(unused_mut))] mut stream: QueryStream,
    format: Format,
    destination: &mut Destination,
) -> Result<Completion, Error> {
    #[cfg(feature = "engine")]
    {
        if format.streams() {
            if !stream.attached_units().is_empty() {
                let e = Error::NotStreamable(format.name());
                stream.record_failure(&e);
                return Err(e);
            }
            return match format {
                Format::Parquet | Format::Arrow => binary::write(stream, format, destination).await,
                _ => text::write(stream, format, destination).await,
            };
        }
        let answer = stream.collect().await?;
        let text = match format {
            Format::Table => table::render(&answer)?,
            Format::Yaml => envelope::yaml(&answer)?,
            Format::SqlJson => envelope::sql_json(&answer)? + "\n",
            _ => envelope::json(&answer)? + "\n",
        };
        destination.write_text(&text)?;
        Ok(answer.completion())
    }
    #[cfg(not(feature = "engine"))]
    {
        let _ = (format, destination);
        stream.unreachable()
    }
}
