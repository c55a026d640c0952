//! quarry's charts: plain series in, inline SVG out. The page and the HTML report draw their
//! panels with it, so a chart looks the same in both and needs no hosted service, no system
//! fonts and no native library (the browser draws the text).
//!
//! A chart is bars over categories (days, models, tools): vertical ([`Orientation::Columns`],
//! stacked when there are several series, as tokens per day by model) or horizontal
//! ([`Orientation::Rows`], as the busiest repositories; side by side when there are several
//! series, as p50 and p90). One category may be marked (the active 5-hour window): a dashed
//! outline and a label over it. Every chart has a title, a value axis with
//! round ticks and the unit, a legend when it has several series, a `<title>` on every bar (the
//! exact value), and an `aria-label`. Colours come from the Okabe–Ito palette, which stays
//! distinct under the common colour-vision deficiencies, and bars are outlined so adjacent
//! series stay apart in grey print. Texts are escaped. The SVG has no `xmlns` and no reference to
//! any other document: it is meant to be inlined in HTML.
//!
//! ```
//! use quarry_chart::{Chart, Orientation, Series, Unit};
//! let chart = Chart {
//!     title: "Cost per day".into(),
//!     categories: vec!["2026-03-01".into(), "2026-03-02".into()],
//!     series: vec![Series { name: "opus".into(), values: vec![1.5, 2.0] }],
//!     unit: Unit::Usd,
//!     orientation: Orientation::Columns,
//!     marked: None,
//! };
//! let svg = chart.svg(640, 280);
//! assert!(svg.starts_with("<svg") && svg.contains("Cost per day"));
//! ```

#![warn(missing_docs)]

use std::fmt::Write;

/// The Okabe–Ito palette (without black), in the order series take it.
pub const PALETTE: [&str; 7] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
];

/// One named series of values, one per category.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Its name (the legend's label).
    pub name: String,
    /// Its value for each category (missing ones as 0).
    pub values: Vec<f64>,
}

/// What the values count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A plain count (tokens, sessions, messages): `12k`, `3.4M`.
    Count,
    /// US dollars: `$12.50`.
    Usd,
    /// A share: `12.5 %` (values are fractions).
    Percent,
    /// Milliseconds: `250 ms`, `1.5 s`.
    Millis,
}

impl Unit {
    /// `value` written for an axis or a label.
    pub fn format(self, value: f64) -> String {
        match self {
            Unit::Count => compact(value),
            Unit::Usd if value.abs() >= 1000.0 => format!("${}", compact(value)),
            Unit::Usd => format!("${value:.2}"),
            Unit::Percent => format!("{:.1} %", value * 100.0),
            Unit::Millis if value.abs() >= 120_000.0 => format!("{:.1} min", value / 60_000.0),
            Unit::Millis if value.abs() >= 1000.0 => format!("{:.1} s", value / 1000.0),
            Unit::Millis => format!("{value:.0} ms"),
        }
    }

    /// Round ticks from 0 to at least `max`, round in the unit the axis shows (a time axis
    /// reaching minutes ticks at whole minutes' fractions, not at milliseconds').
    pub fn ticks(self, max: f64) -> Vec<f64> {
        let scale = self.axis_scale(max).0;
        ticks(max / scale).into_iter().map(|t| t * scale).collect()
    }

    /// A tick's text on an axis reaching `top`: every tick of a time axis in one unit.
    pub fn axis_text(self, value: f64, top: f64) -> String {
        match self.axis_scale(top) {
            (scale, Some(suffix)) => {
                let v = value / scale;
                if v.fract() == 0.0 {
                    format!("{v:.0} {suffix}")
                } else {
                    format!("{v:.1} {suffix}")
                }
            }
            (_, None) => self.format(value),
        }
    }

    /// How a time axis reaching `top` counts: in minutes, seconds or milliseconds.
    fn axis_scale(self, top: f64) -> (f64, Option<&'static str>) {
        match self {
            Unit::Millis if top >= 120_000.0 => (60_000.0, Some("min")),
            Unit::Millis if top >= 1000.0 => (1000.0, Some("s")),
            Unit::Millis => (1.0, Some("ms")),
            _ => (1.0, None),
        }
    }

    /// The unit's name, for the axis.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Count => "count",
            Unit::Usd => "USD",
            Unit::Percent => "share",
            Unit::Millis => "time",
        }
    }
}

/// `12`, `1.2k`, `3.4M`, `5.6G`.
fn compact(value: f64) -> String {
    let a = value.abs();
    let (scaled, suffix) = if a >= 1e9 {
        (value / 1e9, "G")
    } else if a >= 1e6 {
        (value / 1e6, "M")
    } else if a >= 1e3 {
        (value / 1e3, "k")
    } else {
        (value, "")
    };
    let text = if (suffix.is_empty() && scaled.fract() == 0.0) || scaled.abs() >= 100.0 {
        format!("{scaled:.0}")
    } else {
        format!("{scaled:.1}")
    };
    format!("{}{suffix}", text.trim_end_matches(".0"))
}

/// `text` cut to its last `keep` characters behind `…` when it is longer (the end of a path
/// or a tool name tells them apart).
fn tail(text: &str, keep: usize) -> String {
    let count = text.chars().count();
    if count <= keep {
        return text.to_string();
    }
    let mut out = String::from("…");
    out.extend(text.chars().skip(count - keep + 1));
    out
}

/// Which way the bars go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Orientation {
    /// Upright bars over categories along the bottom (stacked when there are several series).
    Columns,
    /// Bars from the left, one row per category (labels on the left); several series side by
    /// side within the row.
    Rows,
}

/// A bar chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Its title.
    pub title: String,
    /// The categories, in order.
    pub categories: Vec<String>,
    /// The series (stacked in this order, the first at the bottom).
    pub series: Vec<Series>,
    /// What the values count.
    pub unit: Unit,
    /// Which way the bars go.
    pub orientation: Orientation,
    /// A category to mark, with the label shown over it (the active window: `active`).
    pub marked: Option<(usize, String)>,
}

/// Round ticks from 0 to at least `max`: about five, at 1, 2 or 5 times a power of ten.
pub fn ticks(max: f64) -> Vec<f64> {
    if !max.is_finite() || max <= 0.0 {
        return vec![0.0, 1.0];
    }
    let rough = max / 5.0;
    let power = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * power);
    let count = (max / step).ceil() as usize;
    (0..=count).map(|i| i as f64 * step).collect()
}

/// `text` escaped for SVG text and attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

impl Chart {
    fn value(&self, series: usize, category: usize) -> f64 {
        self.series
            .get(series)
            .and_then(|s| s.values.get(category))
            .copied()
            .filter(|v| v.is_finite())
            .unwrap_or(0.0)
    }

    /// The total of each category over the series.
    pub fn totals(&self) -> Vec<f64> {
        (0..self.categories.len())
            .map(|c| (0..self.series.len()).map(|s| self.value(s, c)).sum())
            .collect()
    }

    /// A height that gives each row of a [`Orientation::Rows`] chart room for its bars (a
    /// columns chart: `columns_height`).
    pub fn height(&self, columns_height: u32) -> u32 {
        match self.orientation {
            Orientation::Columns => columns_height,
            Orientation::Rows => {
                let per_row = 13 * self.series.len().max(1) + 7;
                let legend = if self.series.len() > 1 { 32 } else { 0 };
                (50 + per_row * self.categories.len() + legend).max(120) as u32
            }
        }
    }

    /// The chart as inline SVG, `width` by `height` pixels (a viewBox, so it scales).
    pub fn svg(&self, width: u32, height: u32) -> String {
        let (w, h) = (f64::from(width), f64::from(height));
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" aria-label="{}" font-family="system-ui, sans-serif" font-size="11">"#,
            escape(&self.title)
        );
        let _ = write!(
            out,
            r##"<text x="0" y="14" font-size="13" font-weight="600" fill="#1d2330">{}</text>"##,
            escape(&self.title)
        );
        if self.categories.is_empty() || self.series.is_empty() {
            let _ = write!(
                out,
                r##"<text x="{}" y="{}" text-anchor="middle" fill="#5d6677">no data in this range</text></svg>"##,
                w / 2.0,
                h / 2.0
            );
            return out;
        }
        let legend = self.legend(w);
        let legend_h = legend
            .last()
            .map_or(0.0, |(_, line)| 16.0 * (*line as f64 + 1.0));
        match self.orientation {
            Orientation::Columns => self.columns(&mut out, w, h, legend_h),
            Orientation::Rows => self.rows(&mut out, w, h, legend_h),
        }
        for (i, (s, (x, line))) in self.series.iter().zip(&legend).enumerate() {
            let y = h - legend_h + 16.0 * *line as f64;
            let _ = write!(
                out,
                r##"<rect x="{x}" y="{:.1}" width="10" height="10" fill="{}" stroke="#1d2330" stroke-width="0.5"/><text x="{}" y="{:.1}" fill="#1d2330">{}</text>"##,
                y + 2.0,
                PALETTE[i % PALETTE.len()],
                x + 14.0,
                y + 11.0,
                escape(&s.name)
            );
        }
        out.push_str("</svg>");
        out
    }

    /// Where each series' legend entry goes (x, line), wrapping at the width; none for a single
    /// series.
    fn legend(&self, w: f64) -> Vec<(f64, usize)> {
        if self.series.len() < 2 {
            return Vec::new();
        }
        let (mut x, mut line) = (0.0, 0);
        let mut out = Vec::new();
        for s in &self.series {
            let width = 24.0 + 6.5 * s.name.chars().count() as f64;
            if x > 0.0 && x + width > w {
                (x, line) = (0.0, line + 1);
            }
            out.push((x, line));
            x += width;
        }
        out
    }

    fn columns(&self, out: &mut String, w: f64, h: f64, legend_h: f64) {
        let totals = self.totals();
        let ticks = self.unit.ticks(totals.iter().copied().fold(0.0, f64::max));
        let top = *ticks.last().unwrap_or(&1.0);
        let (left, right, upper) = (56.0, 8.0, 26.0);
        let lower = 28.0 + legend_h;
        let plot_h = h - upper - lower;
        let plot_w = w - left - right;
        let y = |v: f64| upper + plot_h * (1.0 - v / top);
        for t in &ticks {
            let _ = write!(
                out,
                r##"<line x1="{left}" x2="{}" y1="{:.1}" y2="{:.1}" stroke="#d8dde6"/><text x="{}" y="{:.1}" text-anchor="end" fill="#5d6677">{}</text>"##,
                w - right,
                y(*t),
                y(*t),
                left - 4.0,
                y(*t) + 4.0,
                escape(&self.unit.axis_text(*t, top))
            );
        }
        let n = self.categories.len() as f64;
        let slot = plot_w / n;
        let bar = (slot * 0.8).max(1.0);
        let every = (n / (plot_w / 70.0)).ceil().max(1.0) as usize;
        for (c, category) in self.categories.iter().enumerate() {
            let x = left + slot * c as f64 + (slot - bar) / 2.0;
            let mut base = 0.0;
            for s in 0..self.series.len() {
                let v = self.value(s, c);
                if v <= 0.0 {
                    continue;
                }
                let _ = write!(
                    out,
                    r##"<rect class="bar" x="{x:.1}" y="{:.1}" width="{bar:.1}" height="{:.1}" fill="{}" stroke="#ffffff" stroke-width="0.5" data-value="{v}"><title>{}: {}: {}</title></rect>"##,
                    y(base + v),
                    y(base) - y(base + v),
                    PALETTE[s % PALETTE.len()],
                    escape(category),
                    escape(&self.series[s].name),
                    escape(&self.unit.format(v))
                );
                base += v;
            }
            if let Some((_, label)) = self.marked.as_ref().filter(|(m, _)| *m == c) {
                let _ = write!(
                    out,
                    r##"<rect class="marked" x="{:.1}" y="{upper}" width="{:.1}" height="{plot_h:.1}" fill="none" stroke="#1d2330" stroke-width="1.5" stroke-dasharray="4 3"/><text x="{:.1}" y="{:.1}" text-anchor="middle" font-weight="600" fill="#1d2330">{}</text>"##,
                    x - 2.0,
                    bar + 4.0,
                    x + bar / 2.0,
                    upper - 3.0,
                    escape(label)
                );
            }
            if c % every == 0 {
                let _ = write!(
                    out,
                    r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#5d6677">{}</text>"##,
                    x + bar / 2.0,
                    h - lower + 14.0,
                    escape(category)
                );
            }
        }
        let _ = write!(
            out,
            r##"<line x1="{left}" x2="{left}" y1="{upper}" y2="{:.1}" stroke="#5d6677"/>"##,
            h - lower
        );
    }

    fn rows(&self, out: &mut String, w: f64, h: f64, legend_h: f64) {
        let ticks = self.unit.ticks(
            (0..self.series.len())
                .flat_map(|s| (0..self.categories.len()).map(move |c| (s, c)))
                .map(|(s, c)| self.value(s, c))
                .fold(0.0, f64::max),
        );
        let top = *ticks.last().unwrap_or(&1.0);
        let longest = self
            .categories
            .iter()
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(0);
        let left = (6.2 * longest.min(40) as f64 + 8.0).min(w * 0.45);
        let (right, upper) = (56.0, 26.0);
        let lower = 20.0 + legend_h;
        let plot_w = w - left - right;
        let slot = (h - upper - lower) / self.categories.len() as f64;
        let bar = (slot * 0.8 / self.series.len() as f64).clamp(1.0, 22.0);
        let x = |v: f64| left + plot_w * v / top;
        for t in &ticks {
            let _ = write!(
                out,
                r##"<line x1="{:.1}" x2="{:.1}" y1="{upper}" y2="{:.1}" stroke="#d8dde6"/><text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#5d6677">{}</text>"##,
                x(*t),
                x(*t),
                h - lower,
                x(*t),
                h - lower + 14.0,
                escape(&self.unit.axis_text(*t, top))
            );
        }
        for (c, category) in self.categories.iter().enumerate() {
            let first = upper + slot * c as f64 + slot * 0.1;
            let label = tail(category, 40);
            let _ = write!(
                out,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#1d2330">{}</text>"##,
                left - 4.0,
                first + bar * self.series.len() as f64 / 2.0 + 4.0,
                escape(&label),
            );
            for (s, series) in self.series.iter().enumerate() {
                let v = self.value(s, c);
                let y = first + bar * s as f64;
                let _ = write!(
                    out,
                    r##"<rect class="bar" x="{left:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}" stroke="#ffffff" stroke-width="0.5" data-value="{v}"><title>{}: {}: {}</title></rect><text x="{:.1}" y="{:.1}" fill="#5d6677">{}</text>"##,
                    (x(v) - left).max(0.0),
                    (bar - 1.0).max(1.0),
                    PALETTE[s % PALETTE.len()],
                    escape(category),
                    escape(&series.name),
                    escape(&self.unit.format(v)),
                    x(v) + 4.0,
                    y + bar / 2.0 + 4.0,
                    escape(&self.unit.format(v))
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn chart(series: Vec<Series>, orientation: Orientation) -> Chart {
        Chart {
            title: "Tokens <per> day".into(),
            categories: vec!["a".into(), "b".into(), "c&d".into()],
            series,
            unit: Unit::Count,
            orientation,
            marked: None,
        }
    }

    /// Every `attr="…"` value of the bars, in order.
    fn bar_attr(svg: &str, attr: &str) -> Vec<f64> {
        svg.split(r#"<rect class="bar""#)
            .skip(1)
            .map(|part| {
                let at = part.find(&format!(" {attr}=\"")).unwrap() + attr.len() + 3;
                part[at..].split('"').next().unwrap().parse().unwrap()
            })
            .collect()
    }

    #[test]
    fn ticks_are_round_and_reach_the_maximum() {
        assert_eq!(ticks(7.0), vec![0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(ticks(100.0), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(ticks(0.0), vec![0.0, 1.0]);
        let t = ticks(123_456.0);
        assert!(*t.last().unwrap() >= 123_456.0 && t.len() <= 8, "{t:?}");
    }

    #[test]
    fn stacked_columns_have_heights_in_proportion_and_stack_to_the_total() {
        let c = chart(
            vec![
                Series {
                    name: "x".into(),
                    values: vec![2.0, 4.0, 0.0],
                },
                Series {
                    name: "y".into(),
                    values: vec![2.0, 4.0, 6.0],
                },
            ],
            Orientation::Columns,
        );
        let svg = c.svg(600, 300);
        let heights = bar_attr(&svg, "height");
        // a: 2 + 2, b: 4 + 4, c: 6 (a zero draws no bar).
        assert_eq!(heights.len(), 5);
        let unit = heights[0] / 2.0;
        for (h, v) in heights.iter().zip([2.0, 2.0, 4.0, 4.0, 6.0]) {
            assert!((h - v * unit).abs() < 0.2, "{heights:?}");
        }
        assert_eq!(bar_attr(&svg, "data-value"), vec![2.0, 2.0, 4.0, 4.0, 6.0]);
        assert_eq!(c.totals(), vec![4.0, 8.0, 6.0]);
        // Two series: a legend with both names.
        assert!(svg.contains(">x</text>") && svg.contains(">y</text>"));
    }

    #[test]
    fn texts_are_escaped_and_nothing_outside_is_referenced() {
        let svg = chart(
            vec![Series {
                name: "<s>".into(),
                values: vec![1.0; 3],
            }],
            Orientation::Rows,
        )
        .svg(400, 200);
        assert!(svg.contains("Tokens &lt;per&gt; day") && svg.contains("c&amp;d"));
        assert!(!svg.contains("<s>") && !svg.contains("http") && !svg.contains("href"));
        assert_eq!(bar_attr(&svg, "data-value"), vec![1.0, 1.0, 1.0]);
    }

    #[test]
    fn rows_put_several_series_side_by_side_in_proportion() {
        let c = chart(
            vec![
                Series {
                    name: "p50".into(),
                    values: vec![100.0, 200.0, 50.0],
                },
                Series {
                    name: "p90".into(),
                    values: vec![400.0, 800.0, 50.0],
                },
            ],
            Orientation::Rows,
        );
        let svg = c.svg(600, 300);
        assert_eq!(
            bar_attr(&svg, "data-value"),
            vec![100.0, 400.0, 200.0, 800.0, 50.0, 50.0]
        );
        let widths = bar_attr(&svg, "width");
        for (w, v) in widths.iter().zip([100.0, 400.0, 200.0, 800.0, 50.0, 50.0]) {
            assert!((w / widths[3] - v / 800.0).abs() < 0.002, "{widths:?}");
        }
        // Within a row the bars stack downwards, never on top of each other.
        let ys = bar_attr(&svg, "y");
        assert!(ys[1] > ys[0] && ys[2] > ys[1], "{ys:?}");
        assert!(svg.contains(">p50</text>") && svg.contains(">p90</text>"));
    }

    #[test]
    fn a_marked_category_is_outlined_and_labelled() {
        let mut c = chart(
            vec![Series {
                name: "cost".into(),
                values: vec![1.0, 2.0, 3.0],
            }],
            Orientation::Columns,
        );
        assert!(!c.svg(600, 300).contains("class=\"marked\""));
        c.marked = Some((2, "active".into()));
        let svg = c.svg(600, 300);
        assert_eq!(svg.matches("class=\"marked\"").count(), 1);
        assert!(svg.contains(">active</text>"));
    }

    #[test]
    fn empty_charts_say_so() {
        let svg = chart(Vec::new(), Orientation::Columns).svg(400, 200);
        assert!(svg.contains("no data in this range"));
    }

    #[test]
    fn units_are_written_for_people() {
        assert_eq!(Unit::Count.format(1500.0), "1.5k");
        assert_eq!(Unit::Count.format(2_000_000.0), "2M");
        assert_eq!(Unit::Count.format(12.0), "12");
        assert_eq!(Unit::Usd.format(3.456), "$3.46");
        assert_eq!(Unit::Percent.format(0.125), "12.5 %");
        assert_eq!(Unit::Millis.format(1500.0), "1.5 s");
        assert_eq!(Unit::Millis.format(250.0), "250 ms");
        assert_eq!(Unit::Millis.format(600_000.0), "10.0 min");
        assert_eq!(tail("/home/u/project/src/main.rs", 12), "…src/main.rs");
        assert_eq!(tail("Bash", 12), "Bash");
        // A time axis counts in one unit, at round values of it.
        let t = Unit::Millis.ticks(280_000.0);
        let top = *t.last().unwrap();
        let texts: Vec<String> = t.iter().map(|v| Unit::Millis.axis_text(*v, top)).collect();
        assert_eq!(
            texts,
            ["0 min", "1 min", "2 min", "3 min", "4 min", "5 min"]
        );
        assert_eq!(Unit::Millis.axis_text(500.0, 800.0), "500 ms");
        assert_eq!(Unit::Count.axis_text(1500.0, 2000.0), "1.5k");
    }
}
