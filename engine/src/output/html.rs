//! HTML: one self-contained document (`--format html`). A query's answer is a table; a report
//! is its dashboards (`crate::dashboard::html`), written with the same pieces. The document
//! loads nothing: its style is inline, it has no script, and it names no other host, so it
//! opens the same offline, attached to a mail, or from a shared folder.

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;

use super::numbers::thousands;
use crate::error::Error;

/// `text` escaped for HTML text and attribute values.
pub use quarry_chart::escape;

/// The document's style: system fonts, print-friendly, readable on a phone.
const STYLE: &str = "body{font-family:system-ui,sans-serif;color:#1d2330;background:#fff;\
margin:0 auto;max-width:1100px;padding:1rem;overflow-wrap:anywhere}\
h1{font-size:1.4rem;margin:.2rem 0}h2{font-size:1.1rem;margin:1.5rem 0 .3rem}\
.meta{color:#5d6677;font-size:.85rem}.figures{display:flex;flex-wrap:wrap;gap:1rem;margin:.6rem 0}\
.figure{border:1px solid #d8dde6;border-radius:6px;padding:.4rem .8rem}\
.figure b{display:block;font-size:1.3rem}.panel{break-inside:avoid;margin-bottom:1.2rem}\
.wrap{overflow-x:auto}table{border-collapse:collapse;font-size:.8rem;margin:.3rem 0}\
th,td{border:1px solid #d8dde6;padding:.15rem .4rem;text-align:left;vertical-align:top}\
td.n{text-align:right;font-variant-numeric:tabular-nums}pre{white-space:pre-wrap;\
background:#f4f6f9;padding:.4rem;font-size:.8rem}svg.chart{display:block;width:100%;max-width:760px;height:auto}\
details>summary{cursor:pointer;color:#5d6677}";

/// A whole document titled `title` around `body` (HTML already escaped).
pub fn document(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n{body}\n</body></html>\n",
        escape(title)
    )
}

/// A cell's value as a person reads it: integers with thousands separators, other numbers to
/// four decimals (the JSON and CSV formats keep full precision), NULL as nothing.
pub fn cell_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) if i < 0 => format!("-{}", thousands(i.unsigned_abs())),
            (Some(i), _, _) => thousands(i.unsigned_abs()),
            (_, Some(u), _) => thousands(u),
            (_, _, Some(f)) => {
                let text = format!("{f:.4}");
                text.trim_end_matches('0').trim_end_matches('.').to_string()
            }
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// A table of `rows` under `columns` (numbers right-aligned), in a box that scrolls sideways
/// on a narrow screen.
pub fn table(columns: &[String], rows: &[Vec<serde_json::Value>]) -> String {
    let mut out = String::from("<div class=\"wrap\"><table><thead><tr>");
    for c in columns {
        out.push_str(&format!("<th>{}</th>", escape(c)));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for value in row {
            let class = if value.is_number() {
                " class=\"n\""
            } else {
                ""
            };
            out.push_str(&format!("<td{class}>{}</td>", escape(&cell_text(value))));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    out
}

/// The rows of `batches` under the column names of `schema`.
fn rows_of(
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> Result<(Vec<String>, Vec<Vec<serde_json::Value>>), Error> {
    let columns = schema.fields().iter().map(|f| f.name().clone()).collect();
    let rows = match super::envelope::rows_json(batches)? {
        serde_json::Value::Array(rows) => rows
            .into_iter()
            .map(|r| match r {
                serde_json::Value::Array(cells) => cells,
                other => vec![other],
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok((columns, rows))
}

/// A query's answer as a document, written once the answer is complete.
pub(super) fn whole(parts: &super::whole::Parts<'_>) -> Result<String, Error> {
    let unit = &parts.meta.unit;
    let (columns, rows) = rows_of(parts.schema, parts.batches)?;
    let mut body = format!(
        "<h1>quarry: {} rows</h1>{}",
        escape(unit),
        table(&columns, &rows)
    );
    let mut footer = format!("{} rows ({unit}, exact)", parts.completion.rows);
    if parts.completion.truncated {
        footer.push_str("; truncated by the caller's cap");
    }
    body.push_str(&format!("<p class=\"meta\">{}</p>", escape(&footer)));
    for a in parts.attached {
        let (columns, rows) = rows_of(&a.schema, &a.batches)?;
        body.push_str(&format!(
            "<h2>attached {}</h2>{}",
            escape(&a.unit),
            table(&columns, &rows)
        ));
    }
    Ok(document(&format!("quarry: {unit} rows"), &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_written_for_people_and_escaped() {
        assert_eq!(cell_text(&serde_json::json!(1234567)), "1,234,567");
        assert_eq!(cell_text(&serde_json::json!(-1234)), "-1,234");
        assert_eq!(cell_text(&serde_json::json!(12.5)), "12.5");
        assert_eq!(cell_text(&serde_json::json!(0.123456)), "0.1235");
        assert_eq!(cell_text(&serde_json::Value::Null), "");
        let t = table(
            &["a<b".into()],
            &[
                vec![serde_json::json!("<script>")],
                vec![serde_json::json!(3)],
            ],
        );
        assert!(t.contains("a&lt;b") && t.contains("&lt;script&gt;") && !t.contains("<script>"));
        assert!(t.contains("<td class=\"n\">3</td>"));
        let doc = document("x & y", &t);
        assert!(doc.starts_with("<!doctype html>") && doc.contains("<title>x &amp; y</title>"));
        assert!(!doc.contains("http") && !doc.contains("src=") && !doc.contains("href="));
    }
}
