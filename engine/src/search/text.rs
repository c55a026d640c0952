//! What people type into a search box, read as data: words, `prefix*`, `"quoted phrases"`,
//! `AND`, `OR`, `NOT` (upper case, as FTS5 spells them) and parentheses, turned into an FTS5
//! expression in which every term is a quoted string. Nothing the user types reaches FTS5 as
//! syntax: `text:css` is the phrase `"text:css"` (the tokenizer reads it as `text css`), a stray
//! quote or bracket is a word boundary, lower-case `and`/`or`/`not` are words.
//!
//! The phrases are numbered as FTS5 numbers them (left to right), so the statistics of phrase
//! `i` (how many documents hold it) line up with the frequencies its auxiliary function reports.

use quarry_archive::schema::fold_for_index;

/// A search text made ready for FTS5.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    /// The FTS5 expression (every phrase quoted, ł folded).
    pub fts: String,
    /// The phrases in FTS5's order: the expression of each alone, and whether it sits under a
    /// `NOT` (it can never be counted in a matching row, so its statistics are not needed).
    pub phrases: Vec<Phrase>,
    /// The tokens a reader can expect highlighted: lower-cased, operators and `*` stripped,
    /// each once, in order of appearance.
    pub terms: Vec<String>,
    /// The text as quarry read it (words, operators and phrases separated by single spaces):
    /// what a cursor is bound to.
    pub normalized: String,
}

/// One phrase of a [`Search`].
#[derive(Debug, Clone, PartialEq)]
pub struct Phrase {
    /// The phrase alone as an FTS5 expression (`"null pointer"`, `"refactor" *`).
    pub fts: String,
    /// Under a `NOT`: it never occurs in a matching row.
    pub negated: bool,
}

/// Why a search text cannot be searched.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TextError {
    /// Nothing to search for.
    #[error(
        "the search text has no word to search for; give one or more words, a \"quoted phrase\" or a prefix*"
    )]
    Empty,
    /// An operator with nothing on one side, or brackets that do not pair.
    #[error("{0}")]
    Malformed(String),
}

/// One lexical piece of a search text.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word { text: String, prefix: bool },
    Phrase(String),
    And,
    Or,
    Not,
    Open,
    Close,
}

/// The tree a search text parses to.
#[derive(Debug, Clone)]
enum Node {
    Term {
        text: String,
        prefix: bool,
    },
    And(Vec<Node>),
    Or(Vec<Node>),
    /// `left NOT right` (FTS5's NOT is binary).
    Not(Box<Node>, Box<Node>),
}

/// Reads `text` (see the module docs).
pub fn parse(text: &str) -> Result<Search, TextError> {
    let tokens = lex(text);
    if !tokens
        .iter()
        .any(|t| matches!(t, Token::Word { .. } | Token::Phrase(_)))
    {
        return Err(TextError::Empty);
    }
    let mut parser = Parser { tokens, at: 0 };
    let node = parser.or()?;
    if parser.at < parser.tokens.len() {
        return Err(TextError::Malformed(
            "a `)` without its `(`: remove it, or quote the text as a \"phrase\"".into(),
        ));
    }
    let mut search = Search {
        fts: String::new(),
        phrases: Vec::new(),
        terms: Vec::new(),
        normalized: normalized(&parser.tokens),
    };
    search.fts = emit(&node, false, &mut search.phrases, &mut search.terms);
    Ok(search)
}

/// Splits `text` into words, phrases, operators and brackets. Characters that are neither
/// letters, digits nor one of `"()*` separate words; an unclosed quote runs to the end.
fn lex(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    let mut word = String::new();
    let flush = |word: &mut String, tokens: &mut Vec<Token>, prefix: bool| {
        if word.is_empty() {
            return;
        }
        let operator = match word.as_str() {
            _ if prefix => None,
            "AND" => Some(Token::And),
            "OR" => Some(Token::Or),
            "NOT" => Some(Token::Not),
            _ => None,
        };
        let token = operator.unwrap_or_else(|| Token::Word {
            text: word.clone(),
            prefix,
        });
        word.clear();
        tokens.push(token);
    };
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                flush(&mut word, &mut tokens, false);
                let mut phrase = String::new();
                for c in chars.by_ref() {
                    if c == '"' {
                        break;
                    }
                    phrase.push(c);
                }
                if has_word(&phrase) {
                    tokens.push(Token::Phrase(
                        phrase.split_whitespace().collect::<Vec<_>>().join(" "),
                    ));
                }
            }
            '(' => {
                flush(&mut word, &mut tokens, false);
                tokens.push(Token::Open);
            }
            ')' => {
                flush(&mut word, &mut tokens, false);
                tokens.push(Token::Close);
            }
            '*' => flush(&mut word, &mut tokens, true),
            c if c.is_whitespace() => flush(&mut word, &mut tokens, false),
            c => word.push(c),
        }
    }
    flush(&mut word, &mut tokens, false);
    // A word of punctuation only (`--`, `::`) holds no token for the index: it is dropped.
    tokens.retain(|t| match t {
        Token::Word { text, .. } => has_word(text),
        _ => true,
    });
    tokens
}

/// Whether `text` holds a letter or digit (something the tokenizer indexes).
fn has_word(text: &str) -> bool {
    text.chars().any(char::is_alphanumeric)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn or(&mut self) -> Result<Node, TextError> {
        let mut items = vec![self.and()?];
        while self.peek() == Some(&Token::Or) {
            self.at += 1;
            items.push(self.and()?);
        }
        Ok(if items.len() == 1 {
            items.remove(0)
        } else {
            Node::Or(items)
        })
    }

    fn and(&mut self) -> Result<Node, TextError> {
        let mut items = vec![self.not()?];
        loop {
            match self.peek() {
                Some(Token::And) => {
                    self.at += 1;
                    items.push(self.not()?);
                }
                Some(Token::Word { .. } | Token::Phrase(_) | Token::Open) => {
                    items.push(self.not()?)
                }
                _ => break,
            }
        }
        Ok(if items.len() == 1 {
            items.remove(0)
        } else {
            Node::And(items)
        })
    }

    fn not(&mut self) -> Result<Node, TextError> {
        let mut left = self.primary()?;
        while self.peek() == Some(&Token::Not) {
            self.at += 1;
            let right = self.primary()?;
            left = Node::Not(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn primary(&mut self) -> Result<Node, TextError> {
        let token = self.peek().cloned();
        self.at += 1;
        match token {
            Some(Token::Word { text, prefix }) => Ok(Node::Term { text, prefix }),
            Some(Token::Phrase(text)) => Ok(Node::Term {
                text,
                prefix: false,
            }),
            Some(Token::Open) => {
                let node = self.or()?;
                if self.peek() != Some(&Token::Close) {
                    return Err(TextError::Malformed(
                        "a `(` without its `)`: close it, or quote the text as a \"phrase\"".into(),
                    ));
                }
                self.at += 1;
                Ok(node)
            }
            Some(op @ (Token::And | Token::Or | Token::Not)) => Err(TextError::Malformed(format!(
                "`{}` needs a word on both sides (e.g. `refactor {} schema`); write it in lower case to search for the word itself",
                op_name(&op),
                op_name(&op)
            ))),
            Some(Token::Close) => Err(TextError::Malformed(
                "`()` holds nothing to search for".into(),
            )),
            None => Err(TextError::Malformed(
                "the search text ends with an operator: add a word after it".into(),
            )),
        }
    }
}

fn op_name(token: &Token) -> &'static str {
    match token {
        Token::And => "AND",
        Token::Or => "OR",
        _ => "NOT",
    }
}

/// The FTS5 expression of `node`, numbering its phrases into `phrases`.
fn emit(node: &Node, negated: bool, phrases: &mut Vec<Phrase>, terms: &mut Vec<String>) -> String {
    match node {
        Node::Term { text, prefix } => {
            let quoted = format!("\"{}\"", fold_for_index(text).replace('"', "\"\""));
            let fts = if *prefix {
                format!("{quoted} *")
            } else {
                quoted
            };
            phrases.push(Phrase {
                fts: fts.clone(),
                negated,
            });
            for token in text
                .split(|c: char| !c.is_alphanumeric())
                .filter(|t| !t.is_empty())
            {
                let token = token.to_lowercase();
                if !terms.contains(&token) {
                    terms.push(token);
                }
            }
            fts
        }
        Node::And(items) => group(items, " AND ", negated, phrases, terms),
        Node::Or(items) => group(items, " OR ", negated, phrases, terms),
        Node::Not(left, right) => {
            let left = emit(left, negated, phrases, terms);
            let right = emit(right, true, phrases, terms);
            format!("({left} NOT {right})")
        }
    }
}

fn group(
    items: &[Node],
    op: &str,
    negated: bool,
    phrases: &mut Vec<Phrase>,
    terms: &mut Vec<String>,
) -> String {
    let parts: Vec<String> = items
        .iter()
        .map(|n| emit(n, negated, phrases, terms))
        .collect();
    format!("({})", parts.join(op))
}

/// The tokens written back with single spaces.
fn normalized(tokens: &[Token]) -> String {
    tokens
        .iter()
        .map(|t| match t {
            Token::Word { text, prefix } => format!("{text}{}", if *prefix { "*" } else { "" }),
            Token::Phrase(text) => format!("\"{text}\""),
            Token::And => "AND".into(),
            Token::Or => "OR".into(),
            Token::Not => "NOT".into(),
            Token::Open => "(".into(),
            Token::Close => ")".into(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn words_are_anded_phrases_quoted_and_prefixes_kept() {
        let s = parse("flaky  login* \"null pointer\"").unwrap();
        assert_eq!(s.fts, r#"("flaky" AND "login" * AND "null pointer")"#);
        assert_eq!(s.phrases.len(), 3);
        assert_eq!(s.terms, ["flaky", "login", "null", "pointer"]);
        assert_eq!(s.normalized, r#"flaky login* "null pointer""#);
    }

    #[test]
    fn operators_are_upper_case_only_and_not_marks_its_phrases() {
        let s = parse("refactor AND schema NOT test or not").unwrap();
        assert_eq!(
            s.fts,
            r#"("refactor" AND ("schema" NOT "test") AND "or" AND "not")"#
        );
        let negated: Vec<bool> = s.phrases.iter().map(|p| p.negated).collect();
        assert_eq!(negated, [false, false, true, false, false]);
        let s = parse("(parser OR lexer) crash").unwrap();
        assert_eq!(s.fts, r#"(("parser" OR "lexer") AND "crash")"#);
    }

    #[test]
    fn fts5_syntax_is_data() {
        let s = parse("text:css NEAR(a b) col:\"x").unwrap();
        assert!(!s.fts.contains("NEAR("), "{}", s.fts);
        assert!(s.fts.contains(r#""text:css""#), "{}", s.fts);
        let s = parse(r#"say "he said ""hi"""#).unwrap();
        assert!(s.fts.starts_with(r#"("say""#), "{}", s.fts);
    }

    #[test]
    fn the_l_stroke_is_folded_like_the_index() {
        let s = parse("zrobiłem Łatwo").unwrap();
        assert_eq!(s.fts, r#"("zrobilem" AND "Latwo")"#);
        assert_eq!(s.terms, ["zrobiłem", "łatwo"]);
    }

    #[test]
    fn nothing_to_search_and_dangling_operators_are_errors() {
        assert_eq!(parse("  -- ** () "), Err(TextError::Empty));
        assert!(matches!(parse("AND"), Err(TextError::Empty)));
        assert!(matches!(parse("parser AND"), Err(TextError::Malformed(_))));
        assert!(matches!(parse("(parser"), Err(TextError::Malformed(_))));
        assert!(matches!(parse("parser)"), Err(TextError::Malformed(_))));
        assert!(matches!(parse("OR parser"), Err(TextError::Malformed(_))));
    }
}
