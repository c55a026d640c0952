//! Reading JSON Lines defensively: every line is either a parsed record or a diagnostic naming
//! the file, the line and the reason (invalid UTF-8, invalid JSON, a truncated last line).

use serde_json::Value;

use super::model::Diagnostic;

/// One good line of a JSONL file.
pub struct Line {
    /// 1-based line number.
    pub number: usize,
    /// The raw text.
    pub text: String,
    /// The parsed value.
    pub value: Value,
}

/// Splits `bytes` into JSON lines; bad lines become diagnostics, blank lines are skipped.
pub fn read_lines(file: &str, bytes: &[u8], diagnostics: &mut Vec<Diagnostic>) -> Vec<Line> {
    let mut lines = Vec::new();
    let ends_with_newline = bytes.last() == Some(&b'\n');
    let chunks: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let last_index = chunks.len().saturating_sub(1);
    for (index, raw) in chunks.into_iter().enumerate() {
        let number = index + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let text = match std::str::from_utf8(raw) {
            Ok(t) => t,
            Err(e) => {
                diagnostics.push(Diagnostic {
                    file: file.to_string(),
                    line: Some(number),
                    kind: "invalid_utf8",
                    reason: format!("invalid UTF-8 at byte {} of the line", e.valid_up_to()),
                });
                continue;
            }
        };
        match serde_json::from_str::<Value>(text) {
            Ok(value) => lines.push(Line {
                number,
                text: text.to_string(),
                value,
            }),
            Err(e) => {
                let truncated = index == last_index && !ends_with_newline && e.is_eof();
                diagnostics.push(Diagnostic {
                    file: file.to_string(),
                    line: Some(number),
                    kind: if truncated {
                        "truncated_line"
                    } else {
                        "invalid_json"
                    },
                    reason: if truncated {
                        "the last line ends mid-record (file still being written or cut)"
                            .to_string()
                    } else {
                        format!("invalid JSON: {e}")
                    },
                });
            }
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_lines_become_diagnostics_and_good_lines_survive() {
        let mut diagnostics = Vec::new();
        let mut bytes = b"{\"a\":1}\nnot json\n".to_vec();
        bytes.extend_from_slice(&[0xff, 0xfe, b'\n']);
        bytes.extend_from_slice(b"\n{\"b\":2}\n{\"c\":");
        let lines = read_lines("f.jsonl", &bytes, &mut diagnostics);
        assert_eq!(
            lines.iter().map(|l| l.number).collect::<Vec<_>>(),
            vec![1, 5]
        );
        let kinds: Vec<_> = diagnostics.iter().map(|d| (d.line, d.kind)).collect();
        assert_eq!(
            kinds,
            vec![
                (Some(2), "invalid_json"),
                (Some(3), "invalid_utf8"),
                (Some(6), "truncated_line")
            ]
        );
    }
}
