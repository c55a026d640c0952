//! The lexer: query text → tokens with byte spans.
//!
//! Words are maximal runs of characters that are not whitespace or punctuation (`( ) [ ] | , "`
//! and the comparison operators `< > = !`); a word may contain `:` and `-` (`role:assistant`,
//! `example-repo`, `2026-06-30`). A `-` or `~` at the start of a token is its own token (negation,
//! FTS leaf); `->` is the sequence arrow. The parser decides what a word means. This module owns no
//! grammar.

#![allow(clippy::result_large_err)] // one Diagnostic per failed parse; boxing buys nothing here

use crate::ast::Span;
use crate::diagnostic::{Diagnostic, DiagnosticCode};

/// What a token is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenKind {
    /// A bare word (may contain `:`).
    Word(String),
    /// A double-quoted string, unescaped.
    Str(String),
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `[`
    LBracket,
    /// `]`
    RBracket,
    /// `|`
    Pipe,
    /// `,`
    Comma,
    /// `-` at the start of a token (negation or a negative number).
    Minus,
    /// `~` at the start of a token (an FTS leaf).
    Tilde,
    /// `->`
    Arrow,
    /// A comparison operator.
    Cmp(CmpOp),
    /// End of input.
    Eof,
}

pub use crate::ast::CmpOp;

/// One token with its byte span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// What it is.
    pub kind: TokenKind,
    /// Where it is.
    pub span: Span,
}

impl Token {
    /// How the token reads in a diagnostic (`` `where` ``, `end of query`).
    pub fn describe(&self) -> String {
        match &self.kind {
            TokenKind::Word(w) => format!("`{w}`"),
            TokenKind::Str(s) => format!("\"{s}\""),
            TokenKind::LParen => "`(`".into(),
            TokenKind::RParen => "`)`".into(),
            TokenKind::LBracket => "`[`".into(),
            TokenKind::RBracket => "`]`".into(),
            TokenKind::Pipe => "`|`".into(),
            TokenKind::Comma => "`,`".into(),
            TokenKind::Minus => "`-`".into(),
            TokenKind::Tilde => "`~`".into(),
            TokenKind::Arrow => "`->`".into(),
            TokenKind::Cmp(op) => format!("`{}`", op.as_str()),
            TokenKind::Eof => "end of query".into(),
        }
    }
}

fn is_punct(c: char) -> bool {
    matches!(
        c,
        '(' | ')' | '[' | ']' | '|' | ',' | '"' | '<' | '>' | '=' | '!'
    )
}

fn is_word_char(c: char) -> bool {
    !c.is_whitespace() && !is_punct(c)
}

/// Splits `query` into tokens; the last token is always `Eof`.
pub fn lex(query: &str) -> Result<Vec<Token>, Diagnostic> {
    let mut tokens = Vec::new();
    let mut chars = query.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let single = |kind: TokenKind, len: usize| Token {
            kind,
            span: Span::new(start, start + len),
        };
        match c {
            '(' | ')' | '[' | ']' | '|' | ',' => {
                chars.next();
                let kind = match c {
                    '(' => TokenKind::LParen,
                    ')' => TokenKind::RParen,
                    '[' => TokenKind::LBracket,
                    ']' => TokenKind::RBracket,
                    '|' => TokenKind::Pipe,
                    _ => TokenKind::Comma,
                };
                tokens.push(single(kind, 1));
            }
            '<' | '>' | '=' | '!' => {
                chars.next();
                let eq_follows = matches!(chars.peek(), Some(&(_, '=')));
                let (op, len) = match (c, eq_follows) {
                    ('<', true) => (CmpOp::Le, 2),
                    ('<', false) => (CmpOp::Lt, 1),
                    ('>', true) => (CmpOp::Ge, 2),
                    ('>', false) => (CmpOp::Gt, 1),
                    ('!', true) => (CmpOp::Ne, 2),
                    ('=', true) => (CmpOp::Eq, 2),
                    ('=', false) => (CmpOp::Eq, 1),
                    _ => {
                        return Err(Diagnostic::new(
                            DiagnosticCode::UnexpectedToken,
                            Span::new(start, start + 1),
                            "`!` must be followed by `=`",
                        )
                        .expected(["`!=`"])
                        .found("`!`"));
                    }
                };
                if len == 2 {
                    chars.next();
                }
                tokens.push(single(TokenKind::Cmp(op), len));
            }
            '"' => {
                chars.next();
                let mut text = String::new();
                let mut closed = None;
                while let Some((i, ch)) = chars.next() {
                    match ch {
                        '"' => {
                            closed = Some(i + 1);
                            break;
                        }
                        '\\' => match chars.next() {
                            Some((_, esc)) => text.push(esc),
                            None => break,
                        },
                        other => text.push(other),
                    }
                }
                match closed {
                    Some(end) => tokens.push(Token {
                        kind: TokenKind::Str(text),
                        span: Span::new(start, end),
                    }),
                    None => {
                        return Err(Diagnostic::new(
                            DiagnosticCode::UnterminatedString,
                            Span::new(start, query.len()),
                            "this quoted string has no closing quote",
                        )
                        .expected(["`\"`"])
                        .found("end of query")
                        .correction(format!("{query}\"")));
                    }
                }
            }
            '-' | '~' => {
                chars.next();
                let next = chars.peek().map(|&(_, n)| n);
                if c == '-' && next == Some('>') {
                    chars.next();
                    tokens.push(single(TokenKind::Arrow, 2));
                } else if c == '-' && next.is_some_and(|n| n.is_whitespace()) {
                    // A lone dash is a word of its own (it negates nothing).
                    tokens.push(single(TokenKind::Word("-".into()), 1));
                } else if c == '-' {
                    tokens.push(single(TokenKind::Minus, 1));
                } else {
                    tokens.push(single(TokenKind::Tilde, 1));
                }
            }
            _ => {
                let mut end = start;
                while let Some(&(i, ch)) = chars.peek() {
                    if !is_word_char(ch) {
                        break;
                    }
                    end = i + ch.len_utf8();
                    chars.next();
                }
                let text = query.get(start..end).unwrap_or_default().to_string();
                tokens.push(Token {
                    kind: TokenKind::Word(text),
                    span: Span::new(start, end),
                });
            }
        }
    }
    tokens.push(Token {
        kind: TokenKind::Eof,
        span: Span::new(query.len(), query.len()),
    });
    Ok(tokens)
}
