//! The web page's server side, over plain HTTP (the browser test is tests/clients/web_client.cjs,
//! run by `.ci/run`): the assets name no other host and carry a content security policy; a
//! bearer token signs in to an HttpOnly, SameSite=Strict cookie that sees what the token's scope
//! sees; a signed-in request from another site, or a state change without this server's
//! `Origin`, is refused; signing out or revoking the token ends the sign-in.

use std::process::Command;

use serde_json::Value;

use crate::server::{Server, fixture};

/// `curl -X METHOD URL` with `headers`: (status, response headers, body).
fn curl(method: &str, url: &str, headers: &[String], body: Option<&str>) -> (u16, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let head = dir.path().join("head");
    let mut command = Command::new("curl");
    command.args(["-sS", "-X", method, "-D"]).arg(&head).args([
        "-w",
        "\n%{http_code}",
        "--max-time",
        "60",
    ]);
    for h in headers {
        command.args(["-H", h]);
    }
    if let Some(body) = body {
        command.args([
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            body,
        ]);
    }
    let out = command.arg(url).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, status) = text.rsplit_once('\n').unwrap();
    (
        status.trim().parse().unwrap(),
        std::fs::read_to_string(head).unwrap_or_default(),
        body.to_string(),
    )
}

#[test]
fn a_token_signs_in_to_a_cookie_that_sees_its_scope_and_nothing_crosses_sites() {
    let Some(f) = fixture() else { return };
    let mut server = Server::start(&f.archive, &f.tokens, &[]);
    let url = |p: &str| format!("{}{p}", server.base);

    // The page and its assets: served without a token, no other host named, a strict policy.
    for path in ["/", "/assets/app.js", "/assets/app.css"] {
        let (status, head, body) = curl("GET", &url(path), &[], None);
        assert_eq!(status, 200, "{path}");
        assert!(body.len() > 100, "{path}");
        let lower = head.to_ascii_lowercase();
        assert!(
            lower.contains("content-security-policy: default-src 'none'; script-src 'self'"),
            "{head}"
        );
        for scheme in ["http://", "https://", "//cdn", "//fonts"] {
            assert!(
                !body.contains(scheme),
                "{path} names another host ({scheme})"
            );
        }
    }

    // Signing in takes a bearer token, in a header only.
    let (status, _, _) = curl("POST", &url("/api/session"), &[], None);
    assert_eq!(status, 401);
    let bearer = format!("Authorization: Bearer {}", f.alice);
    let (status, head, body) = curl("POST", &url("/api/session"), &[bearer], None);
    assert_eq!(status, 200, "{body}");
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (reply["who"].as_str(), reply["scope"].as_str()),
        (Some("alice-laptop"), Some("alice"))
    );
    let set = head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap();
    for part in [
        "quarry_session=",
        "HttpOnly",
        "SameSite=Strict",
        "Path=/",
        "Max-Age=",
    ] {
        assert!(set.contains(part), "{set}");
    }
    let value = set
        .split("quarry_session=")
        .nth(1)
        .unwrap()
        .split(';')
        .next()
        .unwrap();
    assert!(
        !value.contains(&f.alice) && value.len() == 64,
        "the cookie is not the token"
    );
    let cookie = format!("Cookie: quarry_session={value}");
    let origin = format!("Origin: {}", server.base);

    // The cookie sees what alice's token sees: her scope's answers, as the bearer gets them.
    let count = "/api/query-units?expression=messages%20%7C%20count";
    let (status, _, by_cookie) = curl("GET", &url(count), std::slice::from_ref(&cookie), None);
    assert_eq!(status, 200, "{by_cookie}");
    let (_, _, by_token) = curl(
        "GET",
        &url(count),
        &[format!("Authorization: Bearer {}", f.alice)],
        None,
    );
    let rows = |s: &str| serde_json::from_str::<Value>(s).unwrap()["rows"].clone();
    assert_eq!(rows(&by_cookie), rows(&by_token));
    let (_, _, by_admin) = curl(
        "GET",
        &url(count),
        &[format!("Authorization: Bearer {}", f.admin)],
        None,
    );
    assert_ne!(
        rows(&by_cookie),
        rows(&by_admin),
        "the scope is alice's, not everything"
    );
    let (_, _, me) = curl(
        "GET",
        &url("/api/session"),
        std::slice::from_ref(&cookie),
        None,
    );
    assert_eq!(
        serde_json::from_str::<Value>(&me).unwrap()["scope"],
        "alice"
    );

    // A request from another site is refused; a POST needs this server's Origin.
    let cross = [cookie.clone(), "Sec-Fetch-Site: cross-site".to_string()];
    let (status, _, body) = curl("GET", &url(count), &cross, None);
    assert_eq!(
        (
            status,
            serde_json::from_str::<Value>(&body).unwrap()["code"].clone()
        ),
        (403, "cross_site".into())
    );
    let sql = r#"{"sql": "SELECT 1"}"#;
    let (status, _, _) = curl(
        "POST",
        &url("/api/query"),
        std::slice::from_ref(&cookie),
        Some(sql),
    );
    assert_eq!(status, 403, "no Origin");
    let evil = [cookie.clone(), "Origin: http://evil.example".to_string()];
    let (status, _, _) = curl("POST", &url("/api/query"), &evil, Some(sql));
    assert_eq!(status, 403, "another Origin");
    let own = [cookie.clone(), origin.clone()];
    let (status, _, _) = curl("POST", &url("/api/query"), &own, Some(sql));
    assert_eq!(status, 200, "the page's own Origin");

    // Signing out ends it.
    let (status, _, _) = curl("DELETE", &url("/api/session"), &own, None);
    assert_eq!(status, 200);
    let (status, _, _) = curl("GET", &url(count), std::slice::from_ref(&cookie), None);
    assert_eq!(status, 401);

    // Revoking the token ends a sign-in made with it.
    let (_, head, _) = curl(
        "POST",
        &url("/api/session"),
        &[format!("Authorization: Bearer {}", f.alice)],
        None,
    );
    let value = head
        .split("quarry_session=")
        .nth(1)
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let cookie = format!("Cookie: quarry_session={value}");
    assert_eq!(
        curl("GET", &url(count), std::slice::from_ref(&cookie), None).0,
        200
    );
    f.revoke("alice-laptop");
    let (status, _, body) = curl("GET", &url(count), &[cookie], None);
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("revoked"), "{body}");
    // Neither the token nor the cookie is in the server's log (read once it stopped).
    assert!(server.terminate());
    let mut log = String::new();
    for _ in 0..100 {
        log = server.log.lock().unwrap().clone();
        if !log.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(log.contains("POST /api/session"), "{log}");
    assert!(!log.contains(&f.alice) && !log.contains(&value));
    // The audit trail records each sign-in and sign-out by the token's name, never the token.
    let audit = f.archive.with_file_name("archive.audit.db");
    let conn = crate::support::open(&audit);
    let signs = crate::support::rows::query_rows(
        &conn,
        "SELECT kind, who, scope, status FROM requests WHERE kind LIKE 'sign_%' ORDER BY request_id",
    )
    .unwrap();
    let row = |kind: &str| serde_json::json!([kind, "alice-laptop", "alice", "ok"]);
    let want: Vec<Value> = ["sign_in", "sign_out", "sign_in"]
        .iter()
        .map(|k| row(k))
        .collect();
    assert_eq!(
        signs
            .iter()
            .map(|r| Value::Array(r.clone()))
            .collect::<Vec<_>>(),
        want
    );
    let bytes = std::fs::read(&audit).unwrap();
    let holds = |needle: &str| bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
    assert!(
        !holds(&f.alice) && !holds(&value),
        "no token or cookie in the audit trail"
    );
}
