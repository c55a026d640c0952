//! The literal, Unicode case-insensitive, whitespace-flexible text match: the pattern matches
//! where its words appear in order, each run of whitespace in the pattern standing for any run of
//! whitespace in the text. No wildcard, no regular-expression syntax: `a.b` means the three
//! characters `a`, `.`, `b`.
//!
//! ```
//! use quarry_udf::TextPattern;
//! let p = TextPattern::new("Connection  refused");
//! assert!(p.matches("error: connection\n\trefused by peer"));
//! assert!(!p.matches("connectionrefused"));
//! ```

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextPattern {
    /// The pattern folded: lowercase, whitespace runs as one space, trimmed.
    folded: String,
}

impl TextPattern {
    /// Compiles `pattern`. An empty (or all-whitespace) pattern matches every text.
    pub fn new(pattern: &str) -> Self {
        TextPattern {
            folded: fold(pattern),
        }
    }

    /// Whether the pattern occurs in `text`.
    pub fn matches(&self, text: &str) -> bool {
        if self.folded.is_empty() {
            return true;
        }
        fold(text).contains(&self.folded)
    }
}

/// Lowercase (Unicode) with every whitespace run collapsed to one space, trimmed.
fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending_space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            pending_space = !out.is_empty();
            continue;
        }
        if pending_space {
            out.push(' ');
            pending_space = false;
        }
        out.extend(c.to_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force: try every start position, walking pattern words and whitespace runs.
    fn oracle(pattern: &str, text: &str) -> bool {
        let words: Vec<String> = pattern.split_whitespace().map(str::to_lowercase).collect();
        if words.is_empty() {
            return true;
        }
        let hay: Vec<char> = text.to_lowercase().chars().collect();
        'start: for start in 0..hay.len() {
            let mut i = start;
            for (k, w) in words.iter().enumerate() {
                if k > 0 {
                    let before = i;
                    while i < hay.len() && hay[i].is_whitespace() {
                        i += 1;
                    }
                    if i == before {
                        continue 'start;
                    }
                }
                for wc in w.chars() {
                    if i >= hay.len() || hay[i] != wc {
                        continue 'start;
                    }
                    i += 1;
                }
            }
            return true;
        }
        false
    }

    #[test]
    fn agrees_with_brute_force() {
        let texts = [
            "",
            "a",
            "A b",
            "a  b",
            "a\tb\nc",
            "ab",
            "xa bx",
            "Łódź  Gęślą",
            "ÉCOLE école",
            "a.b",
            "a b a b",
        ];
        let patterns = [
            "",
            " ",
            "a",
            "a b",
            "A   B",
            "b c",
            "ab",
            "łódź gęślą",
            "école",
            "a.b",
            "b a",
            "x",
        ];
        for p in patterns {
            for t in texts {
                assert_eq!(
                    TextPattern::new(p).matches(t),
                    oracle(p, t),
                    "pattern {p:?} text {t:?}"
                );
            }
        }
    }

    #[test]
    fn is_literal() {
        assert!(!TextPattern::new("a.c").matches("abc"));
        assert!(TextPattern::new("(x)*").matches("see (X)* here"));
    }
}
