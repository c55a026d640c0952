//! Credential masking: every credential recognised in a text (private keys, provider API keys,
//! bearer tokens, passwords in URLs and command lines, values of secret-named keys and flags) is
//! replaced by `[REDACTED:<kind>]`. The text around the secret stays (the header name, the URL's
//! user and host, the key of an assignment or flag), so the result still reads. [`PATTERNS`]
//! lists what is caught.
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

use aho_corasick::{AhoCorasick, MatchKind};
use memchr::memmem;
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
                      `passphrase`, `DB_PASSWORD`, uppercase `…_PASS`). Also passwords on a \
                      command line, only after their command earlier in the same command (no \
                      newline, `;`, `|` or `&&` between): curl's `-u user:password` (`--user`, \
                      `-U`, `--proxy-user`, glued `-uuser:password`, last in a flag cluster such \
                      as `-sSu`, quoted `'user:password'` or `\"user:password\"`), where the part \
                      after the first `:` is masked and the user stays; and the glued \
                      `-pPASSWORD` (also `-p'…'`, `-p\"…\"`) of `mysql`, `mysqldump`, \
                      `mysqladmin`, `mariadb`, `mariadb-dump` and the other MySQL clients. Left \
                      alone: `curl -u user` (curl prompts), `mysql -p` and `mysql -p dbname` (a \
                      prompt, then the database), the `-u` and `-p` of other commands (`ps -u \
                      root`, `sort -u file:1`, `mkdir -p`, `cp -pr`, `ssh -p 22`), placeholders \
                      (`-u \"$USER:$PASS\"`) and code templates (`{password}`, `%s`). wget's \
                      `--password …` and `--http-password …` are caught as secret-named flags.",
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
                      is masked (`self.token = token`): it cannot be told from a password. A \
                      quoted value is masked whole, spaces and YAML's `''` included \
                      (`password: \"correct horse battery\"`, `DB_PASSWORD='my pass'`, \
                      `'it''s'`); with spaces it is a placeholder only when enclosed whole \
                      (`\"${VAR:-a default}\"`, `\"<your password>\"`, `\"$(cat a file)\"`) or \
                      when every word is one (`\"$USER $PASS\"`), so `\"$uper secret\"` is \
                      masked. A secret-named `--flag` followed by a space and a value (`--token \
                      abc`, `--access-token abc`, `--client-secret \"two words\"`) has the value \
                      masked and the flag kept; left alone there also another flag (`--token \
                      --verbose`, `-`), help-text metavariables in capitals (`--token TOKEN`, \
                      `--api-key API_KEY`, `--password TEXT`) and words of prose (`--password is \
                      required`, `the --token flag`); other prose after a flag is masked. Whose \
                      `--password` takes no value (`mysql --password db`, `psql --password db`) \
                      has the next word masked all the same: names and values cannot be told \
                      apart.",
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
    /// For a command's option: a pattern matching the whole command the option belongs to (its
    /// name, then the rest of it, see [`same_command`]); a match is masked only inside one.
    command: Option<&'static str>,
}

/// The capture group `key` of the secret-named key rules: a name whose last part names a secret.
macro_rules! secret_key {
    () => {
        r"(?P<key>[A-Za-z0-9_.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|secret[_-]?key|(?-i:_PASS)))"
    };
}

/// The end of a `command` pattern: the rest of the command after its name, up to a `;`, `|`,
/// `&&` or newline, a real one or a JSON-escaped `\n`, except a newline after a `\` that
/// continues the command on the next line (real or JSON-escaped).
macro_rules! same_command {
    () => {
        concat!(
            r"(?:[ \t](?:[^\n;|&\\]|&[^&\n]",
            r"|\\\r?\n|\\\\\\(?:r\\)?n|\\\\|\\[^n\n\\])*)?"
        )
    };
}

/// The rules, applied in this order: specific shapes first, so a key assigned to a secret-named
/// name gets the provider's kind, and the name rules then skip the already masked value.
const RULES: &[Rule] = &[
    Rule {
        kind: Kind::Fixed("private_key"),
        pattern: r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[ \t\r\n]*(?P<secret>(?s:.*?))[ \t\r\n]*(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\z)",
        masks: is_secret,
        command: None,
    },
    Rule {
        kind: Kind::Fixed("anthropic_key"),
        pattern: r"(?-u:\b)(?P<secret>sk-ant-[A-Za-z0-9_-]{20,})",
        masks: is_secret,
        command: None,
    },
    Rule {
        kind: Kind::Fixed("openai_key"),
        pattern: r"(?-u:\b)(?P<secret>sk-[A-Za-z0-9_-]{20,})",
        masks: is_secret_with_digit,
        command: None,
    },
    Rule {
        kind: Kind::Fixed("github_token"),
        pattern: r"(?-u:\b)(?P<secret>gh[pousr]_[A-Za-z0-9]{36,})",
        masks: is_secret,
        command: None,
    },
    Rule {
        kind: Kind::Fixed("github_token"),
        pattern: r"(?-u:\b)(?P<secret>github_pat_[A-Za-z0-9_]{22,})",
        masks: is_secret_with_digit,
        command: None,
    },
    Rule {
        kind: Kind::Fixed("aws_key"),
        pattern: r"(?-u:\b)(?P<secret>(?:AKIA|ASIA)[A-Z0-9]{16})(?-u:\b)",
        masks: is_secret,
        command: None,
    },
    Rule {
        kind: Kind::Fixed("google_key"),
        pattern: r"(?-u:\b)(?P<secret>AIza[A-Za-z0-9_-]{35})",
        masks: is_secret,
        command: None,
    },
    Rule {
        kind: Kind::Fixed("slack_token"),
        pattern: r"(?-u:\b)(?P<secret>xox[abprs]-[A-Za-z0-9-]{10,})",
        masks: is_secret,
        command: None,
    },
    Rule {
        kind: Kind::Fixed("stripe_key"),
        pattern: r"(?-u:\b)(?P<secret>[rs]k_(?:live|test)_[A-Za-z0-9]{16,})",
        masks: is_secret,
        command: None,
    },
    Rule {
        kind: Kind::Fixed("huggingface_token"),
        pattern: r"(?-u:\b)(?P<secret>hf_[A-Za-z0-9]{30,})",
        masks: is_secret,
        command: None,
    },
    Rule {
        kind: Kind::Fixed("jwt"),
        pattern: r"(?-u:\b)(?P<secret>eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*)",
        masks: is_secret,
        command: None,
    },
    Rule {
        kind: Kind::Fixed("bearer_token"),
        pattern: r"(?i)(?-u:\b)bearer[ \t]+(?P<secret>[A-Za-z0-9._~+/=-]{8,})",
        masks: is_bearer_secret,
        command: None,
    },
    Rule {
        kind: Kind::Fixed("basic_auth"),
        pattern: r#"(?i)(?-u:\b)authorization\\?["']?[ \t]*[:=][ \t]*\\?["']?basic[ \t]+(?P<secret>[A-Za-z0-9+/=]{4,})"#,
        masks: is_secret,
        command: None,
    },
    Rule {
        kind: Kind::Fixed("url_password"),
        pattern: r#"[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@'"\[\]]*:(?P<secret>[^\s/?#'"]+)@"#,
        masks: is_secret,
        command: None,
    },
    // curl's `-u user:password` (`--user`, `-U`, `--proxy-user`, glued `-uuser:password`, last
    // in a cluster of curl's flags such as `-sSu`), after `curl` earlier in the same command, so
    // that the `-u` of other commands (`ps -u root`, `sort -u file:1`) stays. Only the part after
    // the first `:`.
    Rule {
        kind: Kind::Fixed("password"),
        pattern: concat!(
            r"(?:(?m:^)|[ \t])(?:-[0-9#sSvLkiIfgGjnNOqR]*[uU][ \t]*|--(?:proxy-)?user[ \t]+)",
            r#"(?:'[^':\n]*:(?P<secret_single>[^'\n]*)'"#,
            r#"|"(?:[^"\\:\n]|\\[^\n])*:(?P<secret>(?:[^"\\\n]|\\[^\n])*)""#,
            r#"|\\"[^"\\:\n]*:(?P<secret_escaped>(?:[^"\\\n]|\\[^"\n])*)\\""#,
            r#"|[^\s:'"\\]*:(?P<secret_bare>[^\s'"\\]+))"#
        ),
        masks: is_argument_secret,
        command: Some(concat!(
            r"(?:^|[^A-Za-z0-9_.-])curl(?:\.exe)?",
            same_command!()
        )),
    },
    // The MySQL clients' `-pPASSWORD`, glued to `-p`, after `mysql`, `mysqldump`, `mariadb`, …
    // earlier in the same command: `-p dbname` (a prompt, then the database) and the `-p` of
    // other commands (`mkdir -p`, `ssh -p 22`) stay.
    Rule {
        kind: Kind::Fixed("password"),
        pattern: concat!(
            r"(?:(?m:^)|[ \t])-p",
            r#"(?:'(?P<secret_single>[^'\n]*)'"#,
            r#"|"(?P<secret>(?:[^"\\\n]|\\[^\n])*)""#,
            r#"|\\"(?P<secret_escaped>(?:[^"\\\n]|\\[^"\n])*)\\""#,
            r#"|(?P<secret_bare>[^\s"'`;&|)\\]+))"#
        ),
        masks: is_argument_secret,
        command: Some(concat!(
            r"(?:^|[^A-Za-z0-9_.-])",
            r"(?:mysql(?:dump|admin|import|show|check|pump|slap|binlog|sh)?",
            r"|mariadb(?:-?(?:dump|admin|import|show|check|slap|binlog))?)(?:\.exe)?",
            same_command!()
        )),
    },
    // A quoted value: "…", '…' or, inside a JSON string, \"…\".
    Rule {
        kind: Kind::FromKey,
        pattern: concat!(
            r"(?i)(?:^|[^A-Za-z0-9_.-])",
            secret_key!(),
            r#"\\?["'`]?[ \t]*(?:=>|:=|[:=])[ \t]*(?:"(?P<secret>(?:[^"\\\n]|\\.)*)"|'(?P<secret_single>(?:[^'\n]|'')*)'|\\"(?P<secret_escaped>(?:[^"\\\n]|\\[^"\n])*)\\")"#
        ),
        masks: is_secret,
        command: None,
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
        command: None,
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
        command: None,
    },
    // A quoted value after a secret-named `--flag` and a space: `--password "two words"`.
    Rule {
        kind: Kind::FromKey,
        pattern: concat!(
            r"(?i)(?:^|[^A-Za-z0-9_.-])--",
            secret_key!(),
            r#"[ \t]+(?:"(?P<secret>(?:[^"\\\n]|\\.)*)"|'(?P<secret_single>(?:[^'\n]|'')*)'|\\"(?P<secret_escaped>(?:[^"\\\n]|\\[^"\n])*)\\")"#
        ),
        masks: is_secret,
        command: None,
    },
    // An unquoted value after a secret-named `--flag` and a space: `--token abc123`.
    Rule {
        kind: Kind::FromKey,
        pattern: concat!(
            r"(?i)(?:^|[^A-Za-z0-9_.-])--",
            secret_key!(),
            r#"[ \t]+(?P<secret>[^\s"'`,;&)\]}\\]+)"#
        ),
        masks: is_flag_secret,
        command: None,
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

/// Whether a captured value is a secret worth masking: not empty, not a placeholder (see
/// [`is_placeholder`]) and not already masked.
fn is_secret(value: &str) -> bool {
    !value.is_empty() && !value.starts_with(REDACTED_PREFIX) && !is_placeholder(value)
}

/// Whether `value` is a placeholder: one enclosed whole (`${VAR:-a default}`, `$(cat a file)`,
/// `<your password here>`, `{{ var }}`), or words that are each one (`$VAR`, `${VAR}`, `<key>`,
/// `{{var}}`, all `*`, `x`, `X`, `.` or `•`), such as `$USER $PASS`; blank counts too. So a
/// quoted value with spaces whose first word only looks like a placeholder (`"$uper secret"`,
/// `"<3 my cat"`) is a secret. A value without spaces is a placeholder as before: when it starts
/// with `$`, `<` or `{{`, or is all mask characters.
fn is_placeholder(value: &str) -> bool {
    is_enclosed_placeholder(value) || value.split_whitespace().all(is_placeholder_word)
}

/// Whether one word (no whitespace) is a placeholder: it starts with `$`, `<` or `{{`, or it
/// is all `*`, `x`, `X`, `.` or `•`.
fn is_placeholder_word(word: &str) -> bool {
    word.starts_with(['$', '<'])
        || word.starts_with("{{")
        || word
            .chars()
            .all(|c| matches!(c, '*' | 'x' | 'X' | '.' | '•'))
}

/// Whether `value` is one placeholder enclosed whole, spaces allowed inside: `${…}`, `$(…)` or
/// `<…>` whose bracket opened first closes at the very end, or `{{…}}`.
fn is_enclosed_placeholder(value: &str) -> bool {
    let (open, close, rest) = if let Some(rest) = value.strip_prefix("${") {
        ('{', '}', rest)
    } else if let Some(rest) = value.strip_prefix("$(") {
        ('(', ')', rest)
    } else if let Some(rest) = value.strip_prefix('<') {
        ('<', '>', rest)
    } else {
        return value.starts_with("{{") && value.ends_with("}}");
    };
    let mut depth = 1_usize;
    for (i, c) in rest.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return i + c.len_utf8() == rest.len();
            }
        }
    }
    false
}

/// Whether a command-line argument (curl's password, MySQL's `-p…`) is a secret: [`is_secret`],
/// and not a format or template placeholder of code that builds the command (`{password}`,
/// `%s`).
fn is_argument_secret(value: &str) -> bool {
    is_secret(value) && !value.starts_with(['{', '%'])
}

/// Whether an unquoted word after a secret-named `--flag` and a space is its value:
/// [`is_assigned_secret`], and not another flag (`--token --verbose`, `-`), not a metavariable
/// of help text (`--token TOKEN`, `--api-key API_KEY`, `--password TEXT`) and not prose
/// (`--password is required`, `the --token flag`).
fn is_flag_secret(value: &str) -> bool {
    is_assigned_secret(value)
        && !value.starts_with('-')
        && !is_metavar(value)
        && !is_prose_word(value)
}

/// Whether `value` is a metavariable of help text: in capitals without digits, a generic one
/// (`TEXT`, `VALUE`, `STRING`) or ending in the secret word (`TOKEN`, `ACCESS_TOKEN`, `API-KEY`).
fn is_metavar(value: &str) -> bool {
    if value
        .bytes()
        .any(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        return false;
    }
    if ["TEXT", "VALUE", "STRING", "STR"].contains(&value) {
        return true;
    }
    [
        "TOKEN",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "PASS",
        "SECRET",
        "KEY",
        "APIKEY",
    ]
    .iter()
    .any(|word| {
        value
            .strip_suffix(word)
            .is_some_and(|head| head.is_empty() || head.ends_with(['_', '-']))
    })
}

/// Whether `value` is an English word that follows a flag's name in prose (`--password is
/// required`, `pass --token to`, `the --token flag`), in any case.
fn is_prose_word(value: &str) -> bool {
    [
        "is",
        "are",
        "was",
        "were",
        "be",
        "must",
        "should",
        "can",
        "cannot",
        "will",
        "may",
        "flag",
        "flags",
        "option",
        "options",
        "argument",
        "parameter",
        "and",
        "or",
        "to",
        "the",
        "a",
        "an",
        "of",
        "for",
        "with",
        "in",
        "on",
        "if",
        "not",
        "only",
        "instead",
    ]
    .iter()
    .any(|w| value.eq_ignore_ascii_case(w))
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
    /// Its `command` pattern, compiled.
    command: Option<Regex>,
}

/// The commands of a text a command rule's matches must lie in, consulted in text order.
struct Commands {
    /// Where each command starts and ends, in text order.
    spans: Vec<(usize, usize)>,
    /// The first span that does not end before the last position asked about.
    next: usize,
}

impl Commands {
    /// Whether `position` lies inside a command; positions must be asked about in increasing
    /// order, so a text's matches are checked in one pass.
    fn contain(&mut self, position: usize) -> bool {
        while self
            .spans
            .get(self.next)
            .is_some_and(|&(_, end)| end <= position)
        {
            self.next += 1;
        }
        self.spans
            .get(self.next)
            .is_some_and(|&(start, _)| start <= position)
    }
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
        let command = match rule.command {
            Some(pattern) => Some(Regex::new(pattern).ok()?),
            None => None,
        };
        Some(CompiledRule {
            rule,
            regex,
            secret_groups,
            key_group,
            command,
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
        let mut commands = self.command.as_ref().map(|command| Commands {
            spans: command
                .find_iter(text)
                .map(|found| (found.start(), found.end()))
                .collect(),
            next: 0,
        });
        for caps in self.regex.captures_iter(text) {
            let Some(secret) = self.secret_groups.iter().find_map(|&i| caps.get(i)) else {
                continue;
            };
            if !(self.rule.masks)(secret.as_str()) {
                continue;
            }
            if let (Some(commands), Some(found)) = (commands.as_mut(), caps.get(0))
                && !commands.contain(found.start())
            {
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
    /// What one of which every match of every rule holds (see [`Prefilter`]).
    prefilter: Prefilter,
    /// All the patterns at once: which rules can match at all, in one pass.
    set: RegexSet,
    /// The rules, in [`RULES`] order.
    rules: Vec<CompiledRule>,
}

impl Compiled {
    /// Compiles [`RULES`]; `None` if any pattern fails.
    fn new() -> Option<Self> {
        let prefilter = Prefilter::new()?;
        let set = RegexSet::new(RULES.iter().map(|r| r.pattern)).ok()?;
        let rules = RULES
            .iter()
            .map(CompiledRule::new)
            .collect::<Option<Vec<_>>>()?;
        Some(Compiled {
            prefilter,
            set,
            rules,
        })
    }

    /// `text` masked by every rule whose pattern occurs in it, in order.
    fn mask<'t>(&self, text: &'t str) -> Cow<'t, str> {
        // Most texts hold no credential: a text without any of the words every match needs
        // holds none, and one search that stops at the first match of any rule settles most
        // others, far faster than finding every rule's matches.
        if !self.prefilter.may_match(text) || !self.set.is_match(text) {
            return Cow::Borrowed(text);
        }
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

/// A necessary condition of every rule, far cheaper than the rules: each match of a rule holds
/// one of [`LITERALS`] (compared exactly: those rules compare case), a letter of [`FOLDING`], a
/// `bearer` (any ASCII case) followed by a space or tab, or ends a name with one of
/// [`KEY_WORDS`] where the name is assigned a value (`=` or `:` after it) or is a `--flag`
/// followed by a space or tab. Prose (`token budget`, `key point`, `passes`) meets none.
struct Prefilter {
    /// [`LITERALS`].
    literals: AhoCorasick,
    /// [`FOLDING`], each on its own.
    folding: Vec<memmem::Finder<'static>>,
    /// `bearer` in any ASCII case, then a space or tab.
    bearer: regex::bytes::Regex,
    /// The `--` a flag starts with.
    flag: memmem::Finder<'static>,
}

impl Prefilter {
    fn new() -> Option<Self> {
        Some(Prefilter {
            literals: AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostFirst)
                .build(LITERALS)
                .ok()?,
            folding: FOLDING.iter().map(|c| memmem::Finder::new(*c)).collect(),
            bearer: regex::bytes::Regex::new(r"(?i-u)bearer[ \t]").ok()?,
            flag: memmem::Finder::new("--"),
        })
    }

    /// Whether some rule could match `text`; `false` only if none can.
    fn may_match(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        self.literals.is_match(text)
            || self.folding.iter().any(|f| f.find(bytes).is_some())
            || self.bearer.is_match(bytes)
            || assigns_a_key(bytes)
            || flags_a_key(bytes, &self.flag)
    }
}

/// Whether a name ending with a key word is followed by an assignment as the key rules read
/// one: an optional `\`, an optional quote (`"`, `'` or a backtick), spaces or tabs, then `=`
/// or `:` (which `=>` and `:=` start with). Read backwards from each `=` and `:`.
fn assigns_a_key(bytes: &[u8]) -> bool {
    memchr::memchr2_iter(b'=', b':', bytes).any(|at| {
        let mut end = at;
        while end > 0 && matches!(bytes[end - 1], b' ' | b'\t') {
            end -= 1;
        }
        // A name ends with a letter: a quote or backslash before the spaces is not in it.
        if end > 0 && matches!(bytes[end - 1], b'"' | b'\'' | b'`') {
            end -= 1;
        }
        if end > 0 && bytes[end - 1] == b'\\' {
            end -= 1;
        }
        ends_with_key_word(&bytes[..end])
    })
}

/// Whether a `--flag` whose name (`A-Z a-z 0-9 _ . -`) ends with a key word is followed by a
/// space or tab.
fn flags_a_key(bytes: &[u8], flag: &memmem::Finder<'_>) -> bool {
    let is_name = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-');
    flag.find_iter(bytes).any(|at| {
        let start = at + 2;
        let end = bytes[start..]
            .iter()
            .position(|b| !is_name(b))
            .map_or(bytes.len(), |n| start + n);
        matches!(bytes.get(end), Some(b' ' | b'\t')) && ends_with_key_word(&bytes[start..end])
    })
}

/// Whether `name` ends with one of [`KEY_WORDS`], in any ASCII case.
fn ends_with_key_word(name: &[u8]) -> bool {
    KEY_WORDS.iter().any(|word| {
        name.len() >= word.len()
            && name[name.len() - word.len()..].eq_ignore_ascii_case(word.as_bytes())
    })
}

/// Whether a literal, case-insensitive search for `needle` could find, in a masked text, a
/// match that the masking made: one that takes in a `[` or a `]` of a replacement, or lies
/// within its `REDACTED:<kind>`. When it could not (this returns `false`), every match in a
/// masked text lies in text the masking left as it was, so it is a match in the stored text
/// too: searching the stored text first can only drop rows the search of the masked text
/// would drop. Whitespace in `needle` is ignored (a replacement holds none), and a needle that
/// is empty or not ASCII (Unicode case folding could make other letters match) always could.
pub fn may_match_replacement(needle: &str) -> bool {
    let folded: String = needle
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if folded.is_empty() || !folded.is_ascii() || folded.contains(['[', ']']) {
        return true;
    }
    PATTERNS
        .iter()
        .map(|p| p.kind)
        .chain(["unmaskable"])
        .any(|kind| format!("redacted:{kind}").contains(&folded))
}

/// Words one of which every match of the rules that compare case holds: the providers'
/// prefixes, the `://` of a URL, the `-----BEGIN` of a private key, and the commands whose
/// options are masked (`curl`, the MySQL and MariaDB clients). A rule added to [`RULES`] must
/// hold one of these, or meet another condition of [`Prefilter`], in every match
/// (`every_masked_text_passes_the_prefilter` and the `cases()` tests check that each kind's
/// texts pass).
const LITERALS: &[&str] = &[
    "sk-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "AKIA",
    "ASIA",
    "AIza",
    "xox",
    "_live_",
    "_test_",
    "hf_",
    "eyJ",
    "://",
    "-----BEGIN",
    "curl",
    "mysql",
    "mariadb",
];

/// The letters outside ASCII that the rules which ignore case read as ASCII letters (Unicode's
/// simple case folding): `ſ` (U+017F) is `s` and `K` (U+212A) is `k`. A text holding either goes
/// to the rules.
const FOLDING: &[&str] = &["\u{17F}", "\u{212A}"];

/// What the name of every secret-named key ends with (`secret_key!`: `pass` ends `_PASS`, `key`
/// ends `api_key`, `access_key`, `private_key` and `secret_key`), and the `authorization` of a
/// basic-auth header.
const KEY_WORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "pass",
    "secret",
    "token",
    "key",
    "authorization",
];

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
            (
                "gh auth login --token abc123 --hostname x",
                "gh auth login --token [REDACTED:token] --hostname x",
            ),
            (
                "tool --client-secret \"two words\" run",
                "tool --client-secret \"[REDACTED:secret]\" run",
            ),
            (
                "curl -u bob:hunter2 https://x.example.com",
                "curl -u bob:[REDACTED:password] https://x.example.com",
            ),
            (
                "curl --user 'bob:two words' https://x.example.com",
                "curl --user 'bob:[REDACTED:password]' https://x.example.com",
            ),
            (
                "mysql -u root -phunter2 app",
                "mysql -u root -p[REDACTED:password] app",
            ),
            (
                "password: \"correct horse battery staple\"",
                "password: \"[REDACTED:password]\"",
            ),
            ("password: 'it''s mine'", "password: '[REDACTED:password]'"),
            (
                "password: \"$uper secret\"",
                "password: \"[REDACTED:password]\"",
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

    /// `text` masked by every rule the set finds, without the [`Prefilter`].
    fn unfiltered(compiled: &Compiled, text: &str) -> String {
        let matched = compiled.set.matches(text);
        let mut out = Cow::Borrowed(text);
        for index in matched.iter() {
            if let Some(masked) = compiled.rules[index].apply(&out) {
                out = Cow::Owned(masked);
            }
        }
        out.into_owned()
    }

    #[test]
    fn every_masked_text_passes_the_prefilter() {
        let compiled = Compiled::new().unwrap();
        let examples = PATTERNS.iter().map(|p| p.example.to_string());
        let masked_inputs = cases()
            .into_iter()
            .filter(|(input, output)| input != output)
            .map(|(input, _)| input);
        for text in examples.chain(masked_inputs) {
            assert!(
                compiled.prefilter.may_match(&text),
                "{text:?} fails the prefilter"
            );
            // Masked with the prefilter as without it.
            assert_eq!(
                compiled.mask(&text),
                unfiltered(&compiled, &text),
                "{text:?}"
            );
        }
    }

    /// Texts put together at random from the pieces the prefilter looks at (key words, their
    /// endings, quotes, separators, flags, the two non-ASCII letters that fold to ASCII) and
    /// from the shapes of every kind, masked with the prefilter and without it: the prefilter
    /// may only skip texts that no rule changes.
    #[test]
    fn the_prefilter_skips_only_texts_no_rule_changes() {
        const PIECES: &[&str] = &[
            "token",
            "TOKEN",
            "Token",
            "pass",
            "PASS",
            "_PASS",
            "word",
            "wd",
            "phrase",
            "secret",
            "key",
            "Key",
            "api",
            "api_",
            "access-",
            "private_",
            "secret_",
            "to\u{212A}en",
            "\u{17F}ecret",
            "pa\u{17F}\u{17F}word",
            "--",
            "-",
            "=",
            ":",
            "=>",
            ":=",
            "\\",
            "\"",
            "'",
            "`",
            " ",
            "  ",
            "\t",
            "\n",
            "\\n",
            "abc",
            "s3cr3t-42",
            "hunter2",
            "x",
            "_",
            ".",
            "$VAR",
            "{",
            "(",
            "# c",
            "my",
            "bearer ",
            "BeArEr\t",
            "bearer",
            "https://",
            "u:",
            "@h",
            "curl -u ",
            "mysql -p",
            "Authorization",
            "basic ",
            "Basic ",
            "-----BEGIN ",
            "PRIVATE KEY",
            "-----",
            "dXNlcjpodW50ZXIy",
            "ba\u{17F}ic",
        ];
        let compiled = Compiled::new().unwrap();
        let mut next = crate::xorshift(0x2545_f491_4f6c_dd1d_u64);
        let mut masked = 0;
        for _ in 0..50_000 {
            let len = 1 + (next() % 12) as usize;
            let text: String = (0..len)
                .map(|_| PIECES[(next() % PIECES.len() as u64) as usize])
                .collect();
            let want = unfiltered(&compiled, &text);
            masked += usize::from(want != text);
            assert_eq!(compiled.mask(&text), want, "{text:?}");
        }
        // The pieces make secrets often enough for the comparison to mean something.
        assert!(masked > 2_000, "only {masked} of the texts were masked");
    }

    /// The letters outside ASCII that a case-insensitive ASCII letter matches in the rules are
    /// exactly [`FOLDING`].
    #[test]
    fn the_letters_that_fold_to_ascii_are_listed() {
        let letter = Regex::new("(?i)^[a-z]$").unwrap();
        let folding: Vec<char> = (0x80..=0x10_FFFF)
            .filter_map(char::from_u32)
            .filter(|c| letter.is_match(&c.to_string()))
            .collect();
        let listed: Vec<char> = FOLDING.iter().flat_map(|c| c.chars()).collect();
        assert_eq!(folding, listed);
        // A key named with one of them is masked (the prefilter once let these through).
        for text in [
            "to\u{212A}en=abc123",
            "\u{17F}ecret: abc123",
            "--api\u{212A}ey abc123",
        ] {
            let masked = mask(text);
            assert!(!masked.contains("abc123"), "{text:?} gave {masked:?}");
        }
    }

    #[test]
    fn a_needle_the_replacements_could_hold_is_told() {
        for needle in [
            "red",
            "ACTED",
            "d:tok",
            "[",
            "x]",
            "redacted:password",
            "",
            " ",
            "ſecret",
        ] {
            assert!(may_match_replacement(needle), "{needle:?}");
        }
        for needle in [
            "timeout",
            "hunter2",
            "flaky login",
            "sk-",
            "password=",
            "kind]x",
        ] {
            assert_eq!(
                may_match_replacement(needle),
                needle.contains(']'),
                "{needle:?}"
            );
        }
        // What the claim rests on: a needle it clears, found in a masked text, is in the text.
        for (input, masked) in cases() {
            for needle in ["timeout", "bob", "example", "api", "user", "com"] {
                if !may_match_replacement(needle) && masked.to_ascii_lowercase().contains(needle) {
                    assert!(input.to_ascii_lowercase().contains(needle), "{input:?}");
                }
            }
        }
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

    /// Asserts that `input` masks to `expected`, and that masking that again changes nothing.
    fn assert_masks(input: &str, expected: &str) {
        assert_eq!(mask(input), expected, "input {input:?}");
        assert_kept(expected);
    }

    #[test]
    fn masks_secret_flags_followed_by_a_space() {
        for (input, expected) in [
            ("--token abc123", "--token [REDACTED:token]"),
            (
                "cli --password hunter2 --user bob",
                "cli --password [REDACTED:password] --user bob",
            ),
            (
                "tool --api-key abc123 run",
                "tool --api-key [REDACTED:api_key] run",
            ),
            ("tool --secret s3cr3t", "tool --secret [REDACTED:secret]"),
            (
                "tool --access-token abc123",
                "tool --access-token [REDACTED:token]",
            ),
            (
                "tool --client-secret abc123",
                "tool --client-secret [REDACTED:secret]",
            ),
            (
                "tool --secret-key abc123",
                "tool --secret-key [REDACTED:secret]",
            ),
            (
                "tool --DB_PASS\thunter2",
                "tool --DB_PASS\t[REDACTED:password]",
            ),
            (
                "kubeadm join --token abcdef.0123456789abcdef host:6443",
                "kubeadm join --token [REDACTED:token] host:6443",
            ),
            (
                "tool --password \"correct horse battery\" --verbose",
                "tool --password \"[REDACTED:password]\" --verbose",
            ),
            (
                "tool --password 'two words'",
                "tool --password '[REDACTED:password]'",
            ),
            (
                "{\"command\":\"tool --token abc123 --password \\\"a b\\\"\"}",
                "{\"command\":\"tool --token [REDACTED:token] --password \\\"[REDACTED:password]\\\"\"}",
            ),
            (
                "wget --user bob --password hunter2 https://x.example.com",
                "wget --user bob --password [REDACTED:password] https://x.example.com",
            ),
            (
                "wget --http-user=bob --http-password hunter2 https://x.example.com",
                "wget --http-user=bob --http-password [REDACTED:password] https://x.example.com",
            ),
        ] {
            assert_masks(input, expected);
        }
        // A provider key after a flag keeps the provider's kind.
        assert_masks(
            &format!("huggingface-cli login --token {HUGGINGFACE}"),
            "huggingface-cli login --token [REDACTED:huggingface_token]",
        );
    }

    #[test]
    fn leaves_flags_without_a_value_alone() {
        for text in [
            "tool --token --verbose",
            "tool --password -",
            "tool --token $TOKEN",
            "tool --token ${TOKEN}",
            "tool --token <token>",
            "tool --token \"$TOKEN\"",
            "tool --password '<your password>'",
            "  --token TOKEN         the API token",
            "  --api-key API_KEY     the key",
            "  --access-token ACCESS_TOKEN",
            "  --password TEXT",
            "--password is required",
            "use the --token flag or the --api-key option",
            "max_tokens 100",
            "--max-tokens 100",
            "--token-file path",
            "--password-stdin",
            "gh auth login --with-token < token.txt",
            "f\"--token {token}\"",
            "\"--password %s\" % password",
            "tool --token \\\n  abc",
        ] {
            assert_kept(text);
        }
    }

    #[test]
    fn masks_curl_user_passwords() {
        for (input, expected) in [
            (
                "curl --user bob:hunter2 https://x.example.com",
                "curl --user bob:[REDACTED:password] https://x.example.com",
            ),
            (
                "curl -u 'bob:hunter2' https://x.example.com",
                "curl -u 'bob:[REDACTED:password]' https://x.example.com",
            ),
            (
                "curl -u \"bob:hunter2\" https://x.example.com",
                "curl -u \"bob:[REDACTED:password]\" https://x.example.com",
            ),
            (
                "curl -ubob:hunter2 https://x.example.com",
                "curl -ubob:[REDACTED:password] https://x.example.com",
            ),
            (
                "curl -sSu bob:hunter2 https://x.example.com",
                "curl -sSu bob:[REDACTED:password] https://x.example.com",
            ),
            (
                "curl -u 'bob:pa:ss word' https://x.example.com",
                "curl -u 'bob:[REDACTED:password]' https://x.example.com",
            ),
            (
                "/usr/bin/curl -H 'Accept: a/b' -u bob:s3cret -U proxy:pw https://x",
                "/usr/bin/curl -H 'Accept: a/b' -u bob:[REDACTED:password] -U proxy:[REDACTED:password] https://x",
            ),
            (
                "curl -u \"$USER:$PASS\" -x p --proxy-user px:pw https://x",
                "curl -u \"$USER:$PASS\" -x p --proxy-user px:[REDACTED:password] https://x",
            ),
            (
                "{\"command\":\"curl -u bob:hunter2 https://x\\nls -la\"}",
                "{\"command\":\"curl -u bob:[REDACTED:password] https://x\\nls -la\"}",
            ),
            (
                "{\"command\":\"curl -u \\\"bob:hunter2\\\" https://x\"}",
                "{\"command\":\"curl -u \\\"bob:[REDACTED:password]\\\" https://x\"}",
            ),
            // A command continued on the next lines by a `\`, as is, with `\r\n` or in JSON.
            (
                "curl -X POST https://x.example.com \\\n  -H 'A: b' \\\n  -u bob:hunter2 \\\n  -d x",
                "curl -X POST https://x.example.com \\\n  -H 'A: b' \\\n  -u bob:[REDACTED:password] \\\n  -d x",
            ),
            (
                "curl https://x \\\r\n-u bob:hunter2",
                "curl https://x \\\r\n-u bob:[REDACTED:password]",
            ),
            (
                "{\"command\":\"curl https://x \\\\\\n  --user bob:hunter2\"}",
                "{\"command\":\"curl https://x \\\\\\n  --user bob:[REDACTED:password]\"}",
            ),
        ] {
            assert_masks(input, expected);
        }
    }

    #[test]
    fn leaves_user_options_without_a_curl_password_alone() {
        for text in [
            "curl -u bob https://x.example.com",
            "curl -u bob https://x.example.com:8080/",
            "curl -u :  --negotiate https://x.example.com",
            "curl -u \"$USER:$PASS\" https://x.example.com",
            "curl -u \"${USER}:${PASS}\" https://x.example.com",
            "curl -u bob:$(cat pw.txt) https://x.example.com",
            "curl -u 'bob:{password}' https://x.example.com",
            "curl --user-agent 'Agent:1' https://x.example.com",
            "ps -u root",
            "sort -u file:1",
            "curl https://x.example.com && sort -u a:b",
            "curl https://x.example.com | sort -u a:b",
            "curl https://x.example.com; sort -u a:b",
            "curl https://x.example.com\nsort -u a:b",
            "curl https://x.example.com\n-u a:b",
            "{\"command\":\"curl https://x.example.com\\nsort -u a:b\"}",
            "{\"command\":\"curl 'https://x.example.com/a\\\\nb' \\\"x\\\"\\nsort -u a:b\"}",
            "docker run -u 1000:1000 image",
        ] {
            assert_kept(text);
        }
    }

    #[test]
    fn masks_mysql_glued_passwords() {
        for (input, expected) in [
            (
                "mysqldump -phunter2 app",
                "mysqldump -p[REDACTED:password] app",
            ),
            (
                "mysqladmin -u root -p\"x y\" status",
                "mysqladmin -u root -p\"[REDACTED:password]\" status",
            ),
            (
                "mariadb -h db -p'two words' app",
                "mariadb -h db -p'[REDACTED:password]' app",
            ),
            (
                "mariadb-dump -uroot -phunter2 app > dump.sql",
                "mariadb-dump -uroot -p[REDACTED:password] app > dump.sql",
            ),
            (
                "docker exec db mysql -uroot -phunter2 -e 'select 1'",
                "docker exec db mysql -uroot -p[REDACTED:password] -e 'select 1'",
            ),
            (
                "{\"command\":\"mysql -u root -phunter2 app\"}",
                "{\"command\":\"mysql -u root -p[REDACTED:password] app\"}",
            ),
            (
                "mysql -h db.example.com \\\n  -u root \\\n  -phunter2 app",
                "mysql -h db.example.com \\\n  -u root \\\n  -p[REDACTED:password] app",
            ),
        ] {
            assert_masks(input, expected);
        }
    }

    #[test]
    fn leaves_other_p_options_alone() {
        for text in [
            "mysql -p",
            "mysql -u root -p",
            "mysql -p dbname",
            "mysql -u root -p -e 'show databases'",
            "mysql -P 3306 -h db -p app",
            "mysql -p$MYSQL_PWD app",
            "mysql -p\"$MYSQL_PWD\" app",
            "mysql --protocol tcp app",
            "mkdir -p foo",
            "cp -pr a b",
            "ssh -p 22 host",
            "mysql -p app; mkdir -pfoo",
            "mysql -p app && cp -prsrc dst",
            "mysql -p app\nmkdir -pfoo",
            "{\"command\":\"mysql -p app\\ncp -pr a b\"}",
            "f\"mysql -p{password} app\"",
        ] {
            assert_kept(text);
        }
    }

    #[test]
    fn quoted_values_with_spaces_vanish_whole() {
        for (text, secret) in [
            (
                "password: \"correct horse battery staple\"",
                "correct horse battery staple",
            ),
            ("password: 'two words'", "two words"),
            ("DB_PASSWORD=\"my hidden phrase\"", "my hidden phrase"),
            ("export DB_PASSWORD='my hidden phrase'", "my hidden phrase"),
            ("DB_PASSWORD = \"a1 b2 c3\"", "a1 b2 c3"),
            (
                "db:\n  password: \"red fox jumps\"\n  user: app\n",
                "red fox jumps",
            ),
            (
                "users:\n  - password: \"red fox\"\n    name: bob\n",
                "red fox",
            ),
            ("- password: \"red fox\"", "red fox"),
            ("password: 'it''s mine'", "it''s mine"),
            ("password: \"$uper secret\"", "$uper secret"),
            ("password: '<3 my cat'", "<3 my cat"),
            ("password: \"{{ not }} a template\"", "{{ not }} a template"),
            (
                "{\"command\":\"export DB_PASSWORD=\\\"my hidden phrase\\\"\"}",
                "my hidden phrase",
            ),
        ] {
            // The whole quoted value is replaced, so no word of it remains.
            let expected = text.replacen(secret, "[REDACTED:password]", 1);
            assert_masks(text, &expected);
        }
    }

    #[test]
    fn quoted_placeholders_with_spaces_stay() {
        for text in [
            "password: \"${DB_PASSWORD:-a default}\"",
            "password: \"$(cat /run/secrets/db pass)\"",
            "password: \"<your password here>\"",
            "password: \"{{ vault_password }}\"",
            "password: \"$USER $PASS\"",
            "password: \"*** ***\"",
            "password: \"   \"",
        ] {
            assert_kept(text);
        }
        assert!(is_placeholder("${A:-x y}"));
        assert!(!is_placeholder("${A} secret}"));
        assert!(!is_placeholder("$(a) b"));
        assert!(!is_placeholder("<3 my cat"));
    }
}
