//! The dashboards as one self-contained HTML document (`quarry report … --format html`): the
//! charts inline as SVG, every table and query in the page, the style inline, no script and no
//! other host, so the file reads the same offline and can be shared as it is.

use super::Panel;
use crate::output::html::{document as page, escape, table};

pub use crate::output::html::cell_text;

/// One panel as HTML: heading, figures (`id="{panel}-{figure}"`, the exact value in
/// `data-value`), charts, note, and the table and query it came from.
pub fn section(panel: &Panel) -> String {
    let mut out = format!(
        "<section class=\"panel\" id=\"panel-{}\"><h2>{}</h2>",
        escape(panel.id),
        escape(&panel.title)
    );
    if !panel.figures.is_empty() {
        out.push_str("<div class=\"figures\">");
        for f in &panel.figures {
            out.push_str(&format!(
                "<div class=\"figure\" id=\"{}-{}\" data-value=\"{}\"><b>{}</b>{}</div>",
                escape(panel.id),
                escape(f.id),
                escape(&f.value.to_string()),
                escape(&f.text),
                escape(f.label)
            ));
        }
        out.push_str("</div>");
    }
    for chart in &panel.charts {
        out.push_str(&chart.svg);
    }
    if let Some(note) = &panel.note {
        out.push_str(&format!("<p class=\"meta\">{}</p>", escape(note)));
    }
    out.push_str(&format!(
        "<details><summary>Table ({} rows)</summary>{}</details>\
         <details><summary>Query</summary><pre>{}</pre></details></section>",
        panel.rows.len(),
        table(&panel.columns, &panel.rows),
        escape(&panel.query)
    ));
    out
}

/// The document: `heading`, `lines` saying what it covers, then every panel.
pub fn document(heading: &str, lines: &[String], panels: &[Panel]) -> String {
    let mut body = format!("<h1>{}</h1>", escape(heading));
    for line in lines {
        body.push_str(&format!("<p class=\"meta\">{}</p>", escape(line)));
    }
    for panel in panels {
        body.push_str(&section(panel));
    }
    page(heading, &body)
}
