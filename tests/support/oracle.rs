//! The oracle functions computed in Rust where SQLite cannot compute the answer: exact
//! nearest-rank percentiles, the interpolated median, the sample standard deviation (and, for
//! the fuzzer's groups, the other aggregates over the same values), ordered subsequences of a
//! session's actions (`seq`), and time buckets in a zone with daylight saving. Written from the
//! language's definitions (`docs/language.md`), never from the engine's code: the question files
//! and the differential fuzzer both check quarry against them.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Datelike, Duration, NaiveDateTime, Offset, TimeZone, Timelike, Utc};
use serde_json::Value;

/// A statistic of a group's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stat {
    /// Rows in the group (NULL values included).
    Count,
    /// Distinct non-NULL values.
    CountDistinct,
    /// Sum of the non-NULL values (booleans as 0/1); NULL when there are none.
    Sum,
    /// Mean of the non-NULL values.
    Avg,
    /// Smallest non-NULL value.
    Min,
    /// Largest non-NULL value.
    Max,
    /// Interpolated median: the middle value, or the mean of the two middle ones.
    Median,
    /// Sample standard deviation (n − 1); NULL for fewer than two values.
    Stddev,
    /// Nearest-rank percentile: the smallest value with at least p% of the values at or below.
    P(usize),
}

impl Stat {
    /// The statistic's name in the language and the question files (`count`, `p90`, ...).
    pub fn name(self) -> String {
        match self {
            Stat::Count => "count".into(),
            Stat::CountDistinct => "count_distinct".into(),
            Stat::Sum => "sum".into(),
            Stat::Avg => "avg".into(),
            Stat::Min => "min".into(),
            Stat::Max => "max".into(),
            Stat::Median => "median".into(),
            Stat::Stddev => "stddev".into(),
            Stat::P(p) => format!("p{p}"),
        }
    }

    /// The statistic a question file names (`count`, `p90`, `median`, ...).
    pub fn from_name(name: &str) -> Option<Stat> {
        Some(match name {
            "count" => Stat::Count,
            "count_distinct" => Stat::CountDistinct,
            "sum" => Stat::Sum,
            "avg" => Stat::Avg,
            "min" => Stat::Min,
            "max" => Stat::Max,
            "median" => Stat::Median,
            "stddev" => Stat::Stddev,
            other => {
                let p: usize = other.strip_prefix('p')?.parse().ok()?;
                if !(1..=99).contains(&p) {
                    return None;
                }
                Stat::P(p)
            }
        })
    }
}

/// Nearest rank: the smallest value with at least p% of the values at or below it.
pub fn nearest_rank(sorted: &[f64], p: usize) -> Option<f64> {
    let n = sorted.len();
    let rank = (1..=n).find(|k| 100 * k >= p * n)?;
    sorted.get(rank - 1).copied()
}

/// A value as a number (booleans as 0/1), when it is one.
fn number(v: &Value) -> Option<f64> {
    v.as_bool()
        .map(|b| if b { 1.0 } else { 0.0 })
        .or_else(|| v.as_f64())
}

/// `stat` of one group's values (one per row, NULLs included).
pub fn stat(values: &[Value], stat: Stat) -> Value {
    let present: Vec<&Value> = values.iter().filter(|v| !v.is_null()).collect();
    let mut numbers: Vec<f64> = present.iter().filter_map(|v| number(v)).collect();
    numbers.sort_by(f64::total_cmp);
    let n = numbers.len();
    let out = match stat {
        Stat::Count => return Value::from(values.len() as i64),
        Stat::CountDistinct => {
            let distinct: BTreeSet<String> = present.iter().map(|v| v.to_string()).collect();
            return Value::from(distinct.len() as i64);
        }
        Stat::Sum if n == 0 => None,
        Stat::Sum => {
            let integers: Option<Vec<i64>> = present
                .iter()
                .map(|v| v.as_i64().or_else(|| v.as_bool().map(i64::from)))
                .collect();
            if let Some(integers) = integers {
                return Value::from(integers.iter().sum::<i64>());
            }
            Some(numbers.iter().sum())
        }
        Stat::Avg if n == 0 => None,
        Stat::Avg => Some(numbers.iter().sum::<f64>() / n as f64),
        Stat::Min => numbers.first().copied(),
        Stat::Max => numbers.last().copied(),
        Stat::Median if n == 0 => None,
        Stat::Median if n % 2 == 1 => Some(numbers[n / 2]),
        Stat::Median => Some((numbers[n / 2 - 1] + numbers[n / 2]) / 2.0),
        Stat::Stddev if n < 2 => None,
        Stat::Stddev => {
            let mean = numbers.iter().sum::<f64>() / n as f64;
            let ss: f64 = numbers.iter().map(|x| (x - mean) * (x - mean)).sum();
            Some((ss / (n - 1) as f64).sqrt())
        }
        Stat::P(p) => nearest_rank(&numbers, p),
    };
    out.map_or(Value::Null, Value::from)
}

/// Per group (rows arrive ordered by their first `keys` columns), each statistic of the value
/// column after the keys: one row per group, the keys then the statistics. With no keys there is
/// one group even when there are no rows.
pub fn stats_by_group(rows: Vec<Vec<Value>>, keys: usize, stats: &[Stat]) -> Vec<Vec<Value>> {
    let mut groups: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
    for row in rows {
        let key = row[..keys].to_vec();
        if groups.last().is_none_or(|(k, _)| *k != key) {
            groups.push((key, Vec::new()));
        }
        if let Some(group) = groups.last_mut() {
            group.1.push(row[keys].clone());
        }
    }
    if keys == 0 && groups.is_empty() {
        groups.push((Vec::new(), Vec::new()));
    }
    groups
        .into_iter()
        .map(|(mut key, values)| {
            key.extend(stats.iter().map(|s| stat(&values, *s)));
            key
        })
        .collect()
}

/// Whether a session's actions, in order, match the steps as a subsequence: `matches[i][s]` says
/// whether action `i` matches step `s`; each step must be met by a later action than the one
/// before it.
pub fn is_subsequence(matches: &[Vec<bool>], steps: usize) -> bool {
    let mut next = 0;
    for action in matches {
        if next < steps && action[next] {
            next += 1;
        }
    }
    next == steps
}

/// The sessions whose actions contain the steps in order. `rows` are (session id, one flag per
/// step), ordered by session, then by time with NULL times first, then by action id.
pub fn seq_sessions(rows: &[(String, Vec<bool>)], steps: usize) -> BTreeSet<String> {
    let mut per_session: BTreeMap<&str, Vec<Vec<bool>>> = BTreeMap::new();
    for (session, flags) in rows {
        per_session
            .entry(session.as_str())
            .or_default()
            .push(flags.clone());
    }
    per_session
        .into_iter()
        .filter(|(_, actions)| is_subsequence(actions, steps))
        .map(|(session, _)| session.to_string())
        .collect()
}

/// A zone of day boundaries: a fixed offset, or an IANA zone with its daylight-saving rules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Zone {
    /// A fixed offset, in seconds east of UTC.
    Fixed(i32),
    /// An IANA zone.
    Named(chrono_tz::Tz),
}

impl Zone {
    /// The zone a `--tz` value names (`UTC`, `+05:30`, `Europe/Warsaw`).
    pub fn parse(text: &str) -> Option<Zone> {
        if text.eq_ignore_ascii_case("utc") {
            return Some(Zone::Fixed(0));
        }
        if let Some(rest) = text.strip_prefix(['+', '-']) {
            let (h, m) = rest.split_once(':')?;
            let seconds = h.parse::<i32>().ok()? * 3600 + m.parse::<i32>().ok()? * 60;
            return Some(Zone::Fixed(if text.starts_with('-') {
                -seconds
            } else {
                seconds
            }));
        }
        text.parse().ok().map(Zone::Named)
    }

    /// The offset from UTC at the instant `ms`, in seconds.
    pub fn offset_at(&self, ms: i64) -> i32 {
        let utc = utc(ms);
        match self {
            Zone::Fixed(seconds) => *seconds,
            Zone::Named(tz) => tz.offset_from_utc_datetime(&utc).fix().local_minus_utc(),
        }
    }

    /// The instants whose local time in the zone is `local` (none in a gap, two in an overlap).
    fn instants(&self, local: NaiveDateTime) -> Vec<i64> {
        match self {
            Zone::Fixed(seconds) => vec![
                (local - Duration::seconds(i64::from(*seconds)))
                    .and_utc()
                    .timestamp_millis(),
            ],
            Zone::Named(tz) => match tz.from_local_datetime(&local) {
                chrono::LocalResult::Single(t) => vec![t.timestamp_millis()],
                chrono::LocalResult::Ambiguous(a, b) => {
                    vec![a.timestamp_millis(), b.timestamp_millis()]
                }
                chrono::LocalResult::None => Vec::new(),
            },
        }
    }
}

impl Zone {
    /// The instant a wall-clock time in the zone stands for: the earlier one when the time
    /// happens twice (daylight saving ends), the first minute that exists after a skipped one
    /// (daylight saving begins).
    pub fn local_instant(&self, local: NaiveDateTime) -> i64 {
        (0..=180)
            .find_map(|m| {
                self.instants(local + Duration::minutes(m))
                    .into_iter()
                    .min()
            })
            .unwrap_or_else(|| local.and_utc().timestamp_millis())
    }
}

fn utc(ms: i64) -> NaiveDateTime {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .naive_utc()
}

/// A time bucket of `group by time:<bucket>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bucket {
    /// The hour.
    Hour,
    /// The day (local midnight to midnight).
    Day,
    /// The week, Monday to Sunday.
    Week,
    /// The calendar month.
    Month,
    /// The calendar year.
    Year,
}

/// The instant (epoch ms) the bucket holding the instant `ms` starts at: the local time of `ms`
/// in `zone`, truncated to the bucket's start, as an instant. A start that is two instants
/// (the hour repeated when daylight saving ends) is the one with the offset `ms` itself has; a
/// start that does not exist (skipped when it begins) is the first instant after the gap.
pub fn bucket_start(ms: i64, zone: &Zone, bucket: Bucket) -> i64 {
    let offset = zone.offset_at(ms);
    let local = utc(ms) + Duration::seconds(i64::from(offset));
    let day = local.date();
    let start = match bucket {
        Bucket::Hour => day.and_hms_opt(local.hour(), 0, 0),
        Bucket::Day => day.and_hms_opt(0, 0, 0),
        Bucket::Week => (day - Duration::days(i64::from(day.weekday().num_days_from_monday())))
            .and_hms_opt(0, 0, 0),
        Bucket::Month => day.with_day(1).and_then(|d| d.and_hms_opt(0, 0, 0)),
        Bucket::Year => day
            .with_day(1)
            .and_then(|d| d.with_month(1))
            .and_then(|d| d.and_hms_opt(0, 0, 0)),
    }
    .unwrap_or(local);
    let candidates = zone.instants(start);
    match candidates.as_slice() {
        [one] => *one,
        [] => {
            // The local start fell in a gap: the first minute after it that exists.
            (1..=180)
                .find_map(|m| zone.instants(start + Duration::minutes(m)).first().copied())
                .unwrap_or(ms)
        }
        several => several
            .iter()
            .copied()
            .find(|t| zone.offset_at(*t) == offset)
            .unwrap_or(several[0]),
    }
}

/// Epoch milliseconds as the RFC 3339 text quarry's answers carry (UTC).
pub fn rfc3339(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}
