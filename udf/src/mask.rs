//! Credential masking: every credential recognised in a text (private keys, provider API keys,
//! bearer tokens, passwords in URLs, values of secret-named keys) is replaced by
//! `[REDACTED:<kind>]`. The text around the secret stays (the header name, the URL's user and
//! host, the key of an assignment), so the result still reads. [`PATTERNS`] lists what is caught.
//!
//! Masking works on shapes and names, so it is a best effort: a secret in no known shape and
//! under no secret-like name passes through. It fails closed: should the patterns not compile,
//! every non-empty text becomes [`UNMASKABLE`]. Masking twice gives the same text as masking once.
//!
//! ```
//! use quarry_udf::mask_credentials;
//! assert_eq!(
//!     mask_credentials("git clone https://bob:hunter2@example.com/repo.git"),
//!     "git clone https://bob:[REDACTED:url_password]@example.com/repo.git"
//! );
//! assert_eq!(mask_credentials("password=hunter2 user=bob"), "password=[REDACTED:password] user=bob");
//! assert_eq!(mask_credentials("nothing to hide"), "nothing to hide");
//! ```

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex, RegexSet};

/// What a masked text is replaced by when the patterns could not be compiled.
pub const UNMASKABLE: &str = "[REDACTED:unmaskable]";

/// The start of every replacement: `[REDACTED:` then the kind then `]`.
const REDACTED_PREFIX: &str = "[REDACTED:";

/// One documented pattern: what [`mask_credentials`] catches under one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pattern {
    /// The name in the replacement `[REDACTED:<kind>]`.
    pub kind: &'static str,
    /// What is caught, and what is deliberately left alone.
    pub description: &'static str,
    /// A made-up text the pattern masks.
    pub example: &'static str,
}

/// Every kind [`mask_credentials`] can produce, with what it catches and an example. The
/// provider examples are split in the source so secret scanners do not flag them.
pub const PATTERNS: &[Pattern] = &[
    Pattern {
        kind: "private_key",
        description: "A PEM private key (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP or plain): the body \
                      between `-----BEGIN … PRIVATE KEY-----` and `-----END … PRIVATE KEY-----`; the \
                      two lines stay. A BEGIN line without an END masks to the end of the text. \
                      Public keys and certificates are left alone.",
        example: concat!(
            "-----BEGIN RSA PRIVATE",
            " KEY-----\nMIIEowIBAAKCAQEAexampleEXAMPLEexample\n-----END RSA PRIVATE KEY-----"
        ),
    },
    Pattern {
        kind: "anthropic_key",
        description: "An Anthropic API key: `sk-ant-` and at least 20 letters, digits, `_` or `-`.",
        example: concat!(
            "x-api-key: sk-an",
            "t-api03-EXAMPLEexampleEXAMPLEexample0123456789"
        ),
    },
    Pattern {
        kind: "openai_key",
        description: "An OpenAI-style API key (also used by other providers): `sk-`, `sk-proj-` \
                      and so on, then at least 20 letters, digits, `_` or `-` with at least one \
                      digit (so kebab-case names such as `sk-loading-spinner-container` stay).",
        example: concat!("OPENAI_API_KEY=sk-pro", "j-EXAMPLEexample0123456789EXAMPLE"),
    },
    Pattern {
        kind: "github_token",
        description: "A GitHub token: `ghp_`, `gho_`, `ghu_`, `ghs_` or `ghr_` and at least 36 \
                      letters or digits; or a fine-grained `github_pat_` and at least 22 letters, \
                      digits or `_` with at least one digit.",
        example: concat!(
            "git remote add origin https://gh",
            "p_EXAMPLE0example1EXAMPLE2example3ABCD@github.com/o/r"
        ),
    },
    Pattern {
        kind: "aws_key",
        description: "An AWS access key id: `AKIA` or `ASIA` and exactly 16 uppercase letters or \
                      digits. (The secret access key is caught by its name, as `secret`.)",
        example: concat!("aws_access_key_id = AKIA", "IOSFODNN7EXAMPLE"),
    },
    Pattern {
        kind: "google_key",
        description: "A Google API key: `AIza` and 35 letters, digits, `_` or `-`.",
        example: concat!(
            "https://maps.example.com/api?key=AIza",
            "SyEXAMPLE-example_EXAMPLE0123456789"
        ),
    },
    Pattern {
        kind: "slack_token",
        description: "A Slack token: `xoxa-`, `xoxb-`, `xoxp-`, `xoxr-` or `xoxs-` and at least 10 \
                      letters, digits or `-`.",
        example: concat!("SLACK=xox", "b-123456789012-1234567890123-EXAMPLEexample"),
    },
    Pattern {
        kind: "stripe_key",
        description: "A Stripe secret or restricted key: `sk_live_`, `sk_test_`, `rk_live_` or \
                      `rk_test_` and at least 16 letters or digits.",
        example: concat!("stripe.api_key = sk_", "live_EXAMPLE0123456789example"),
    },
    Pattern {
        kind: "huggingface_token",
        description: "A Hugging Face token: `hf_` and at least 30 letters or digits.",
        example: concat!(
            "huggingface-cli login --token hf",
            "_EXAMPLEexampleEXAMPLEexampleEXAMPLE"
        ),
    },
    Pattern {
        kind: "jwt",
        description: "A JSON Web Token: three base64url parts separated by dots, the first two \
                      starting with `eyJ` (an encoded `{\"`).",
        example: "id=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJleGFtcGxlIn0.c2lnbmF0dXJlLWV4YW1wbGU",
    },
    Pattern {
        kind: "bearer_token",
        description: "A bearer token: `Bearer` (any case) then at least 8 characters of \
                      `A-Z a-z 0-9 . _ ~ + / = -` with a digit or at least 20 long, so that prose \
                      (\"the bearer of bad news\", \"bearer authentication\") stays. `Bearer` stays.",
        example: "curl -H 'Authorization: Bearer abcdef1234567890' https://api.example.com",
    },
    Pattern {
        kind: "basic_auth",
        description: "HTTP basic credentials: `Authorization: Basic` then the base64 user and \
                      password. The header stays.",
        example: "Authorization: Basic dXNlcjpodW50ZXIy",
    },
    Pattern {
        kind: "url_password",
        description: "The password of a URL `scheme://user:password@host`; the scheme, user and \
                      host stay. Ports (`host:8080`) and `user@host` are left alone.",
        example: "postgres://app:hunter2@db.example.com:5432/app",
    },
    Pattern {
        kind: "password",
        description: "The value of a key named like a password (`password`, `passwd`, \
                      `passphrase`, `DB_PASSWORD`, uppercase `…_PASS`).",
        example: "{\"user\": \"bob\", \"password\": \"hunter2\"}",
    },
    Pattern {
        kind: "token",
        description: "The value of a key named like a token (`token`, `access_token`, \
                      `GITHUB_TOKEN`, `refreshToken`, `X-Auth-Token`).",
        example: "https://example.com/callback?access_token=abc123example&state=1",
    },
    Pattern {
        kind: "secret",
        description: "The value of a key named like a secret (`secret`, `client_secret`, \
                      `SECRET_KEY`, `aws_secret_access_key`, `private_key`).",
        example: "client_secret: s3cr3t-example",
    },
    Pattern {
        kind: "api_key",
        description: "The value of a key named like an API key (`api_key`, `apiKey`, `API-KEY`, \
                      `OPENAI_API_KEY`, `X-Api-Key`). For every secret-named key: the key is the \
                      last part of the name (`max_tokens`, `token_type`, `password_hash` are not \
                      keys), the value follows `=`, `:`, `:=` or `=>`. A quoted value (`\"…\"`, \
                      `'…'`, or JSON-escaped `\\\"…\\\"`) is always masked; an unquoted one runs \
                      to a space, quote, `,`, `;`, `&`, `)`, `]` or `}`, after `=` anywhere \
                      (`export API_KEY=…`, `?api_key=…&`, `--api-key=…`) and after `:` only at the \
                      start of a line or a quoted string (YAML, HTTP headers) and ending it. Left \
                      alone: empty values, placeholders (`$VAR`, `${VAR}`, `<your-key>`, `{{ var }}`, \
                      `***`, `xxx`, `...`), and unquoted values that look like code (containing \
                      `(`, `[` or `{`, as in `let token = next_token();`; `==`, `=>`, `%s`; \
                      `null`, `true`, `false`, `None`; after `:` also type names such as `str`, \
                      `String` and YAML anchors, aliases, tags and block scalars). A plain identifier \
                      is masked (`self.token = token`): it cannot be told from a password.",
        example: "export SERVICE_API_KEY=abc123example",
    },
];

/// How a rule names what it masked.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// Always this kind.
    Fixed(&'static str),
    /// From the name of the key the value is assigned to (see [`key_kind`]).
    FromKey,
}

/// One masking rule: a regular expression whose capture group named `secret…` (the first that
/// took part in the match) is replaced, and a check that the captured value is a secret.
struct Rule {
    /// The name in the replacement.
    kind: Kind,
    /// The regular expression.
    pattern: &'static str,
    /// Whether a captured value is masked.
    masks: fn(&str) -> bool,
}

/// The capture group `key` of the secret-named key rules: a name whose last part names a secret.
macro_rules! secret_key {
    () => {
        r"(?P<key>[A-Za-z0-9_.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|secret[_-]?key|(?-i:_PASS)))"
    };
}

/// The rules, applied in this order: specific shapes first, so a key assigned to a secret-named
/// name gets the provider's kind, and the name rules then skip the already masked value.
const RULES: &[Rule] = &[
    Rule {
        kind: Kind::Fixed("private_key"),
        pattern: r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[ \t\r\n]*(?P<secret>(?s:.*?))[ \t\r\n]*(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\z)",
        masks: is_secret,
    },
    Rule {
        kind: Kind::Fixed("anthropic_key"),
        pattern: r"(?-u:\b)(?P<secret>sk-ant-[A-Za-z0-9_-]{20,})",
        masks: is_secret,
    },
    Rule {
        kind: Kind::Fixed("openai_key"),
        pattern: r"(?-u:\b)(?P<secret>sk-[A-Za-z0-9_-]{20,})",
        masks: is_secret_with_digit,
    },
    Rule {
        kind: Kind::Fixed("github_token"),
        pattern: r"(?-u:\b)(?P<secret>gh[pousr]_[A-Za-z0-9]{36,})",
        masks: is_secret,
    },
    Rule {
        kind: Kind::Fixed("github_token"),
        pattern: r"(?-u:\b)(?P<secret>github_pat_[A-Za-z0-9_]{22,})",
        masks: is_secret_with_digit,
    },
    Rule {
        kind: Kind::Fixed("aws_key"),
        pattern: r"(?-u:\b)(?P<secret>(?:AKIA|ASIA)[A-Z0-9]{16})(?-u:\b)",
        masks: is_secret,
    },
    Rule {
        kind: Kind::Fixed("google_key"),
        pattern: r"(?-u:\b)(?P<secret>AIza[A-Za-z0-9_-]{35})",
        masks: is_secret,
    },
    Rule {
        kind: Kind::Fixed("slack_token"),
        pattern: r"(?-u:\b)(?P<secret>xox[abprs]-[A-Za-z0-9-]{10,})",
        masks: is_secret,
    },
    Rule {
        kind: Kind::Fixed("stripe_key"),
        pattern: r"(?-u:\b)(?P<secret>[rs]k_(?:live|test)_[A-Za-z0-9]{16,})",
        masks: is_secret,
    },
    Rule {
        kind: Kind::Fixed("huggingface_token"),
        pattern: r"(?-u:\b)(?P<secret>hf_[A-Za-z0-9]{30,})",
        masks: is_secret,
    },
    Rule {
        kind: Kind::Fixed("jwt"),
        pattern: r"(?-u:\b)(?P<secret>eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*)",
        masks: is_secret,
    },
    Rule {
        kind: Kind::Fixed("bearer_token"),
        pattern: r"(?i)(?-u:\b)bearer[ \t]+(?P<secret>[A-Za-z0-9._~+/=-]{8,})",
        masks: is_bearer_secret,
    },
    Rule {
        kind: Kind::Fixed("basic_auth"),
        pattern: r#"(?i)(?-u:\b)authorization\\?["']?[ \t]*[:=][ \t]*\\?["']?basic[ \t]+(?P<secret>[A-Za-z0-9+/=]{4,})"#,
        masks: is_secret,
    },
    Rule {
        kind: Kind::Fixed("url_password"),
        pattern: r#"[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@'"\[\]]*:(?P<secret>[^\s/?#'"]+)@"#,
        masks: is_secret,
    },
    // A quoted value: "…", '…' or, inside a JSON string, \"…\".
    Rule {
        kind: Kind::FromKey,
        pattern: concat!(
            r"(?i)(?:^|[^A-Za-z0-9_.-])",
            secret_key!(),
            r#"\\?["'`]?[ \t]*(?:=>|:=|[:=])[ \t]*(?:"(?P<secret>(?:[^"\\\n]|\\.)*)"|'(?P<secret_single>[^'\n]*)'|\\"(?P<secret_escaped>(?:[^"\\\n]|\\[^"\n])*)\\")"#
        ),
        masks: is_secret,
    },
    // An unquoted value after `=`, anywhere.
    Rule {
        kind: Kind::FromKey,
        pattern: concat!(
            r"(?i)(?:^|[^A-Za-z0-9_.-])",
            secret_key!(),
            r#"[ \t]*=[ \t]*(?P<secret>[^\s"'`,;&)\]}\\]+)"#
        ),
        masks: is_assigned_secret,
    },
    // An unquoted value after `:`, at the start of a line or of a quoted string, ending it.
    Rule {
        kind: Kind::FromKey,
        pattern: concat!(
            r#"(?im)(?:^|["'])[ \t]*(?:-[ \t]+)?"#,
            secret_key!(),
            r#"[ \t]*:[ \t]*(?P<secret>[^\s"'`,;#\\]+)[ \t\r]*(?:#[^\n]*)?(?:$|["'])"#
        ),
        masks: is_yaml_secret,
    },
];

/// The kind of a secret-named key's value: `token`, `password`, `api_key` or `secret`.
fn key_kind(key: &str) -> &'static str {
    let key = key.to_ascii_lowercase();
    if ends_with_any(&key, &["token"]) {
        "token"
    } else if ends_with_any(&key, &["password", "passwd", "passphrase", "_pass"]) {
        "password"
    } else if ends_with_any(&key, &["apikey", "api_key", "api-key"]) {
        "api_key"
    } else {
        "secret"
    }
}

/// Whether `text` ends with one of `suffixes`.
fn ends_with_any(text: &str, suffixes: &[&str]) -> bool {
    suffixes.iter().any(|s| text.ends_with(s))
}

/// Whether a captured value is a secret worth masking: not empty, not a placeholder (`$VAR`,
/// `${VAR}`, `<your-key>`, `{{ var }}`, all `*`, `x`, `X` or `.`) and not already masked.
fn is_secret(value: &str) -> bool {
    !value.is_empty()
        && !value.starts_with(['$', '<'])
        && !value.starts_with("{{")
        && !value.starts_with(REDACTED_PREFIX)
        && !value
            .chars()
            .all(|c| matches!(c, '*' | 'x' | 'X' | '.' | '•'))
}

/// Whether `value` has an ASCII digit.
fn has_digit(value: &str) -> bool {
    value.bytes().any(|b| b.is_ascii_digit())
}

/// [`is_secret`] with at least one digit: random keys have one, kebab-case names do not.
fn is_secret_with_digit(value: &str) -> bool {
    is_secret(value) && has_digit(value)
}

/// [`is_secret`] with a digit or at least 20 characters, so that prose after "bearer" stays.
fn is_bearer_secret(token: &str) -> bool {
    is_secret(token) && (has_digit(token) || token.len() >= 20)
}

/// Whether an unquoted value after `=` is a secret: [`is_secret`], and not code (a call, an
/// index or a block: `(`, `[`, `{`; a comparison or an arrow: `==`, `=>`), not a format
/// placeholder (`%s`) and not a literal keyword (`null`, `true`, `None`, …).
fn is_assigned_secret(value: &str) -> bool {
    is_secret(value)
        && !value.contains(['(', '[', '{'])
        && !value.starts_with(['=', '>', '%'])
        && !is_keyword(value)
}

/// Whether an unquoted value after `:` is a secret: [`is_assigned_secret`], and not YAML syntax
/// (an anchor `&`, an alias `*`, a tag `!`, a block scalar `|` or `>`) nor a type (`str`,
/// `String`, `Option<String>`).
fn is_yaml_secret(value: &str) -> bool {
    is_assigned_secret(value)
        && !value.starts_with(['&', '*', '!', '|'])
        && !value.contains('<')
        && !is_type_name(value)
}

/// Whether `value` is a literal keyword of a common language, in any case.
fn is_keyword(value: &str) -> bool {
    ["null", "true", "false", "none", "nil", "undefined"]
        .iter()
        .any(|k| value.eq_ignore_ascii_case(k))
}

/// Whether `value` is a common type name, in any case.
fn is_type_name(value: &str) -> bool {
    ["str", "string", "bytes", "int", "bool", "object", "any"]
        .iter()
        .any(|t| value.eq_ignore_ascii_case(t))
}

/// A rule with its regular expression compiled.
struct CompiledRule {
    /// The rule.
    rule: &'static Rule,
    /// Its pattern, compiled.
    regex: Regex,
    /// The indices of the groups named `secret…`, in order.
    secret_groups: Vec<usize>,
    /// The index of the group named `key`, if any.
    key_group: Option<usize>,
}

impl CompiledRule {
    /// Compiles `rule`; `None` if its pattern does not compile or has no `secret…` group.
    fn new(rule: &'static Rule) -> Option<Self> {
        let regex = Regex::new(rule.pattern).ok()?;
        let secret_groups: Vec<usize> = regex
            .capture_names()
            .enumerate()
            .filter(|(_, name)| name.is_some_and(|n| n.starts_with("secret")))
            .map(|(i, _)| i)
            .collect();
        if secret_groups.is_empty() {
            return None;
        }
        let key_group = regex.capture_names().position(|name| name == Some("key"));
        Some(CompiledRule {
            rule,
            regex,
            secret_groups,
            key_group,
        })
    }

    /// The kind of one match.
    fn kind(&self, caps: &Captures<'_>) -> &'static str {
        match self.rule.kind {
            Kind::Fixed(kind) => kind,
            Kind::FromKey => self
                .key_group
                .and_then(|i| caps.get(i))
                .map_or("secret", |key| key_kind(key.as_str())),
        }
    }

    /// `text` with every secret this rule finds replaced, or `None` if it replaced nothing.
    fn apply(&self, text: &str) -> Option<String> {
        let mut out = String::new();
        let mut copied = 0;
        let mut changed = false;
        for caps in self.regex.captures_iter(text) {
            let Some(secret) = self.secret_groups.iter().find_map(|&i| caps.get(i)) else {
                continue;
            };
            if !(self.rule.masks)(secret.as_str()) {
                continue;
            }
            out.push_str(&text[copied..secret.start()]);
            out.push_str(REDACTED_PREFIX);
            out.push_str(self.kind(&caps));
            out.push(']');
            copied = secret.end();
            changed = true;
        }
        if !changed {
            return None;
        }
        out.push_str(&text[copied..]);
        Some(out)
    }
}

/// Every rule compiled, with a set of all the patterns as the prefilter.
struct Compiled {
    /// All the patterns at once: which rules can match at all, in one pass.
    set: RegexSet,
    /// The rules, in [`RULES`] order.
    rules: Vec<CompiledRule>,
}

impl Compiled {
    /// Compiles [`RULES`]; `None` if any pattern fails.
    fn new() -> Option<Self> {
        let set = RegexSet::new(RULES.iter().map(|r| r.pattern)).ok()?;
        let rules = RULES
            .iter()
            .map(CompiledRule::new)
            .collect::<Option<Vec<_>>>()?;
        Some(Compiled { set, rules })
    }

    /// `text` masked by every rule whose pattern occurs in it, in order.
    fn mask<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let matched = self.set.matches(text);
        let mut out = Cow::Borrowed(text);
        for index in matched.iter() {
            let Some(rule) = self.rules.get(index) else {
                continue;
            };
            if let Some(masked) = rule.apply(&out) {
                out = Cow::Owned(masked);
            }
        }
        out
    }
}

/// The rules, compiled once.
static COMPILED: LazyLock<Option<Compiled>> = LazyLock::new(Compiled::new);

/// `text` with every recognised credential replaced by `[REDACTED:<kind>]` (see [`PATTERNS`]);
/// borrowed when nothing was masked. If the patterns failed to compile, a non-empty text is
/// replaced whole by [`UNMASKABLE`].
pub fn mask_credentials(text: &str) -> Cow<'_, str> {
    mask_with(COMPILED.as_ref(), text)
}

/// [`mask_credentials`] with the given rules, failing closed without them.
fn mask_with<'t>(compiled: Option<&Compiled>, text: &'t str) -> Cow<'t, str> {
    match compiled {
        Some(compiled) => compiled.mask(text),
        None if text.is_empty() => Cow::Borrowed(text),
        None => Cow::Owned(UNMASKABLE.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    // Made-up keys, split so secret scanners do not flag this source.
    const ANTHROPIC: &str = concat!("sk-an", "t-api03-EXAMPLEexampleEXAMPLEexample0123456789");
    const OPENAI: &str = concat!("sk-pro", "j-EXAMPLEexample0123456789EXAMPLE");
    const OPENAI_LEGACY: &str = concat!("sk-", "EXAMPLE0example1EXAMPLE2example3EXAMPLE4example5");
    const GITHUB: &str = concat!("gh", "p_EXAMPLE0example1EXAMPLE2example3ABCD");
    const GITHUB_PAT: &str = concat!("github", "_pat_11pat0EXAMPLE0example0EXAMPLE0example");
    const AWS: &str = concat!("AKIA", "IOSFODNN7EXAMPLE");
    const GOOGLE: &str = concat!("AIza", "SyEXAMPLE-example_EXAMPLE0123456789");
    const SLACK: &str = concat!("xox", "b-123456789012-1234567890123-EXAMPLEexample");
    const STRIPE: &str = concat!("sk_", "live_EXAMPLE0123456789example");
    const STRIPE_TEST: &str = concat!("sk_", "test_EXAMPLE0123456789example");
    const HUGGINGFACE: &str = concat!("hf", "_EXAMPLEexampleEXAMPLEexampleEXAMPLE");
    const JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJleGFtcGxlIn0.c2lnbmF0dXJlLWV4YW1wbGU";

    /// Every key above with its kind.
    const KEYS: &[(&str, &str)] = &[
        (ANTHROPIC, "anthropic_key"),
        (OPENAI, "openai_key"),
        (OPENAI_LEGACY, "openai_key"),
        (GITHUB, "github_token"),
        (GITHUB_PAT, "github_token"),
        (AWS, "aws_key"),
        (GOOGLE, "google_key"),
        (SLACK, "slack_token"),
        (STRIPE, "stripe_key"),
        (STRIPE_TEST, "stripe_key"),
        (HUGGINGFACE, "huggingface_token"),
        (JWT, "jwt"),
    ];

    /// The kinds the secret-named key rules produce.
    const KEY_KINDS: &[&str] = &["token", "password", "api_key", "secret"];

    fn mask(text: &str) -> String {
        mask_credentials(text).into_owned()
    }

    fn assert_kept(text: &str) {
        let masked = mask_credentials(text);
        assert!(
            matches!(masked, Cow::Borrowed(_)),
            "{text:?} was masked to {masked:?}"
        );
    }

    /// (input, expected output) pairs, also used for idempotence.
    fn cases() -> Vec<(String, String)> {
        let fixed = [
            (
                "Authorization: Bearer abcdef1234567890",
                "Authorization: Bearer [REDACTED:bearer_token]",
            ),
            (
                "authorization: bearer abc.def_ghi~jkl+mno/pqr=",
                "authorization: bearer [REDACTED:bearer_token]",
            ),
            (
                "-H \"Authorization: Basic dXNlcjpodW50ZXIy\"",
                "-H \"Authorization: Basic [REDACTED:basic_auth]\"",
            ),
            (
                "{\"Authorization\": \"Basic dXNlcjpodW50ZXIy\"}",
                "{\"Authorization\": \"Basic [REDACTED:basic_auth]\"}",
            ),
            (
                "https://user:hunter2@host/path",
                "https://user:[REDACTED:url_password]@host/path",
            ),
            (
                "redis://:hunter2@cache:6379/0",
                "redis://:[REDACTED:url_password]@cache:6379/0",
            ),
            (
                "mongodb://u:p@ss:w0rd@db.example.com/x",
                "mongodb://u:[REDACTED:url_password]@db.example.com/x",
            ),
            ("password=hunter2", "password=[REDACTED:password]"),
            (
                "{\"password\": \"hunter2\"}",
                "{\"password\": \"[REDACTED:password]\"}",
            ),
            (
                "{\"apiKey\":\"abc123\"}",
                "{\"apiKey\":\"[REDACTED:api_key]\"}",
            ),
            (
                "{\"command\":\"echo '{\\\"api_key\\\": \\\"abc123\\\"}'\"}",
                "{\"command\":\"echo '{\\\"api_key\\\": \\\"[REDACTED:api_key]\\\"}'\"}",
            ),
            ("API_KEY: abc123", "API_KEY: [REDACTED:api_key]"),
            (
                "db:\n  password: hunter2 # prod\n  user: app\n",
                "db:\n  password: [REDACTED:password] # prod\n  user: app\n",
            ),
            (
                "- client_secret: abc123\r\n",
                "- client_secret: [REDACTED:secret]\r\n",
            ),
            ("secret='s3cr3t'", "secret='[REDACTED:secret]'"),
            ("token=abc123", "token=[REDACTED:token]"),
            (
                "curl 'https://x.example.com/cb?access_token=abc123&state=1'",
                "curl 'https://x.example.com/cb?access_token=[REDACTED:token]&state=1'",
            ),
            (
                "mysql --password=hunter2 -u root",
                "mysql --password=[REDACTED:password] -u root",
            ),
            (
                "aws_secret_access_key = wJalrEXAMPLEsecretEXAMPLE0123",
                "aws_secret_access_key = [REDACTED:secret]",
            ),
            (
                "export DB_PASS=hunter2; run",
                "export DB_PASS=[REDACTED:password]; run",
            ),
            (
                "curl -H 'X-Api-Key: abc123' https://x.example.com",
                "curl -H 'X-Api-Key: [REDACTED:api_key]' https://x.example.com",
            ),
            (
                "let password = \"hunter2\";",
                "let password = \"[REDACTED:password]\";",
            ),
            (
                "connect(password=hunter2)",
                "connect(password=[REDACTED:password])",
            ),
            ("token := \"abc123\"", "token := \"[REDACTED:token]\""),
            (
                "{:password => \"hunter2\"}",
                "{:password => \"[REDACTED:password]\"}",
            ),
            (
                concat!(
                    "-----BEGIN OPENSSH PRIVATE",
                    " KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAABG5vbmUAAAAEbm9uZQ==\n",
                    "-----END OPENSSH PRIVATE KEY-----\nafter"
                ),
                concat!(
                    "-----BEGIN OPENSSH PRIVATE",
                    " KEY-----\n[REDACTED:private_key]\n-----END OPENSSH PRIVATE KEY-----\nafter"
                ),
            ),
            (
                concat!(
                    "x -----BEGIN PRIVATE",
                    " KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nand more"
                ),
                concat!("x -----BEGIN PRIVATE", " KEY-----\n[REDACTED:private_key]"),
            ),
            (
                concat!(
                    "\"-----BEGIN EC PRIVATE",
                    " KEY-----\\nMHcCAQEEIExample\\n-----END EC PRIVATE KEY-----\\n\""
                ),
                concat!(
                    "\"-----BEGIN EC PRIVATE",
                    " KEY-----[REDACTED:private_key]-----END EC PRIVATE KEY-----\\n\""
                ),
            ),
            (
                "{\"command\":\"curl -H 'Authorization: Bearer abcdef1234567890' https://api.x.com\"}",
                "{\"command\":\"curl -H 'Authorization: Bearer [REDACTED:bearer_token]' https://api.x.com\"}",
            ),
        ];
        let mut cases: Vec<(String, String)> = fixed
            .iter()
            .map(|(input, expected)| (input.to_string(), expected.to_string()))
            .collect();
        for (key, kind) in KEYS {
            cases.push((
                format!("before {key} after"),
                format!("before [REDACTED:{kind}] after"),
            ));
        }
        cases.extend([
            (
                format!("OPENAI_API_KEY={OPENAI}\nHOME=/root\n"),
                "OPENAI_API_KEY=[REDACTED:openai_key]\nHOME=/root\n".to_string(),
            ),
            (
                format!("{{\"api_key\": \"{ANTHROPIC}\"}}"),
                "{\"api_key\": \"[REDACTED:anthropic_key]\"}".to_string(),
            ),
            (
                format!("Authorization: Bearer {JWT}"),
                "Authorization: Bearer [REDACTED:jwt]".to_string(),
            ),
            (
                format!("git clone https://x-access-token:{GITHUB}@github.com/o/r.git"),
                "git clone https://x-access-token:[REDACTED:github_token]@github.com/o/r.git"
                    .to_string(),
            ),
            (
                format!("AWS_ACCESS_KEY_ID={AWS}\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENG\n"),
                "AWS_ACCESS_KEY_ID=[REDACTED:aws_key]\nAWS_SECRET_ACCESS_KEY=[REDACTED:secret]\n"
                    .to_string(),
            ),
        ]);
        cases
    }

    #[test]
    fn patterns_compile() {
        for rule in RULES {
            let regex = Regex::new(rule.pattern).unwrap();
            assert!(
                regex
                    .capture_names()
                    .any(|name| name.is_some_and(|n| n.starts_with("secret"))),
                "{} has no secret group",
                rule.pattern
            );
            assert!(CompiledRule::new(rule).is_some());
        }
        assert!(COMPILED.is_some());
    }

    #[test]
    fn every_kind_is_documented_once() {
        let documented: Vec<&str> = PATTERNS.iter().map(|p| p.kind).collect();
        for (i, kind) in documented.iter().enumerate() {
            assert!(!documented[..i].contains(kind), "{kind} documented twice");
        }
        let mut produced: Vec<&str> = KEY_KINDS.to_vec();
        for rule in RULES {
            if let Kind::Fixed(kind) = rule.kind {
                produced.push(kind);
            }
        }
        for kind in &produced {
            assert!(documented.contains(kind), "{kind} is not documented");
        }
        for kind in &documented {
            assert!(produced.contains(kind), "{kind} is never produced");
        }
    }

    #[test]
    fn every_pattern_masks_its_example() {
        for pattern in PATTERNS {
            let masked = mask_credentials(pattern.example);
            let marker = format!("[REDACTED:{}]", pattern.kind);
            assert!(
                masked.contains(&marker),
                "{}: {:?} became {masked:?}",
                pattern.kind,
                pattern.example
            );
            assert!(!pattern.description.is_empty());
        }
    }

    #[test]
    fn masks_exactly_the_secret() {
        for (input, expected) in cases() {
            assert_eq!(mask(&input), expected, "input {input:?}");
        }
    }

    #[test]
    fn secrets_are_gone_in_any_context() {
        for (key, kind) in KEYS {
            for text in [
                format!("key {key} end"),
                format!("Authorization: Bearer {key}"),
                format!("\"token\": \"{key}\""),
                format!("export MY_TOKEN={key}"),
                format!("https://me:{key}@example.com/"),
            ] {
                let masked = mask(&text);
                assert!(!masked.contains(key), "{text:?} became {masked:?}");
                let marker = format!("[REDACTED:{kind}]");
                assert!(masked.contains(&marker), "{text:?} became {masked:?}");
            }
        }
        for (text, secret) in [
            ("Authorization: Bearer s3cr3t-t0ken", "s3cr3t-t0ken"),
            ("\"token\": \"hunter2\"", "hunter2"),
            ("export MY_TOKEN=hunter2", "hunter2"),
            ("https://me:hunter2@example.com/", "hunter2"),
            ("password: hunter2", "hunter2"),
        ] {
            let masked = mask(text);
            assert!(!masked.contains(secret), "{text:?} became {masked:?}");
        }
        assert_eq!(
            mask(&format!("start {GITHUB} middle {STRIPE} end")),
            "start [REDACTED:github_token] middle [REDACTED:stripe_key] end"
        );
    }

    #[test]
    fn masks_every_secret_of_a_text() {
        let text = format!(
            "export OPENAI_API_KEY={OPENAI}\n\
             curl -H \"Authorization: Bearer abcdef1234567890\" \
             https://admin:hunter2@example.com/?token=t0ken123\n\
             {{\"password\": \"pa55word\", \"user\": \"bob\"}}\n"
        );
        assert_eq!(
            mask(&text),
            "export OPENAI_API_KEY=[REDACTED:openai_key]\n\
             curl -H \"Authorization: Bearer [REDACTED:bearer_token]\" \
             https://admin:[REDACTED:url_password]@example.com/?token=[REDACTED:token]\n\
             {\"password\": \"[REDACTED:password]\", \"user\": \"bob\"}\n"
        );
    }

    #[test]
    fn tool_output_with_an_env_dump() {
        let output = format!(
            "{{\"type\":\"tool_result\",\"content\":\"PATH=/usr/bin\\nOPENAI_API_KEY={OPENAI}\\nLANG=C\"}}"
        );
        let masked = mask(&output);
        assert!(!masked.contains(OPENAI), "{masked}");
        assert!(
            masked.contains("OPENAI_API_KEY=[REDACTED:openai_key]\\nLANG=C"),
            "{masked}"
        );
    }

    #[test]
    fn is_idempotent() {
        let mut inputs: Vec<String> = cases().into_iter().map(|(input, _)| input).collect();
        inputs.extend(PATTERNS.iter().map(|p| p.example.to_string()));
        for input in inputs {
            let once = mask(&input);
            let twice = mask_credentials(&once);
            assert!(
                matches!(twice, Cow::Borrowed(_)),
                "{input:?}: {once:?} was masked again to {twice:?}"
            );
        }
    }

    #[test]
    fn leaves_ordinary_text_borrowed() {
        for text in [
            "",
            "skeleton",
            "task-list",
            "the sk- prefix",
            "sk-loading-spinner-container-large",
            "the bearer of bad news",
            "Bearer authentication is a scheme",
            "Bearer <token>",
            "3f786850e387550fdab836ed7e6dc881de23001b",
            "123e4567-e89b-12d3-a456-426614174000",
            "/home/user/.ssh/id_rsa and src/token.rs",
            "Enter your password to continue; reset the password later.",
            "the token expired",
            "let token = next_token();",
            "let token = tokens.next()?;",
            "password = getpass.getpass()",
            "api_key = os.environ[\"API_KEY\"]",
            "if token == expected {",
            "if password != confirm {",
            "struct Login {\n    password: String,\n    token: Option<String>,\n}",
            "class Config:\n    password: str\n",
            "fn login(password: &str) -> bool",
            "interface Creds {\n  token: string;\n}",
            "\"input_tokens\": 1234, \"output_tokens\": 56",
            "{\"token_type\": \"bearer\", \"max_tokens\": 100}",
            "\"password\": null",
            "max_tokens=100 bypass=1",
            "password_hash=abc123",
            "https://example.com:8080/path?q=1",
            "mail bob@example.com or git@github.com:org/repo.git",
            "ssh://git@github.com/org/repo",
            "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
            "Łódź token ünïcödé",
        ] {
            assert_kept(text);
        }
    }

    #[test]
    fn leaves_placeholders_alone() {
        for text in [
            "password=",
            "password=\n",
            "\"password\": \"\"",
            "password=<your-password>",
            "API_KEY=${API_KEY}",
            "TOKEN=$TOKEN",
            "export OPENAI_API_KEY=$(cat key.txt)",
            "password: \"***\"",
            "\"api_key\": \"xxxx\"",
            "\"api_key\": \"XXXXXXXX\"",
            "token: ...",
            "password: {{ vault_password }}",
            "password: &default_pw",
            "password: !vault |",
            "password=%s",
            "https://user:${PASSWORD}@host/",
            "https://user:****@host/",
            "Authorization: Bearer ${TOKEN}",
            "already [REDACTED:password] here",
            "password=[REDACTED:password]",
        ] {
            assert_kept(text);
        }
    }

    #[test]
    fn fails_closed_without_rules() {
        assert_eq!(mask_with(None, "password=hunter2"), UNMASKABLE);
        assert_eq!(mask_with(None, "nothing secret"), UNMASKABLE);
        assert!(matches!(mask_with(None, ""), Cow::Borrowed("")));
    }

    #[test]
    fn key_kinds() {
        assert_eq!(key_kind("GITHUB_TOKEN"), "token");
        assert_eq!(key_kind("refreshToken"), "token");
        assert_eq!(key_kind("DB_PASSWORD"), "password");
        assert_eq!(key_kind("SMTP_PASS"), "password");
        assert_eq!(key_kind("x-api-key"), "api_key");
        assert_eq!(key_kind("apiKey"), "api_key");
        assert_eq!(key_kind("client_secret"), "secret");
        assert_eq!(key_kind("aws_secret_access_key"), "secret");
    }
}
