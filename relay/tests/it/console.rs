//! The console's rules over plain HTTP (the browser test in
//! `cli/tests/it/console.rs` drives the pages themselves): sign-in, the
//! cookie, the cross-site checks, the same visibility as the API, headers,
//! and that the API never accepts the console's cookie.

use reqwest::header::{CONTENT_TYPE, COOKIE, LOCATION, ORIGIN, SET_COOKIE};
use reqwest::StatusCode;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::support::{spawn_relay, spawn_relay_with, TestRelay};

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// Signs in with `key`; returns the `Cookie` header to send.
async fn sign_in(relay: &TestRelay, key: &str) -> String {
    let answer = client()
        .post(format!("{}/console/sign-in", relay.url))
        .form(&[("key", key)])
        .send()
        .await
        .expect("sign-in answered");
    assert_eq!(answer.status(), StatusCode::SEE_OTHER);
    let set = answer
        .headers()
        .get(SET_COOKIE)
        .expect("a cookie")
        .to_str()
        .expect("ASCII")
        .to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(set.contains(attribute), "{set}");
    }
    assert!(!set.contains("Secure"), "plain HTTP: no Secure flag: {set}");
    set.split(';').next().expect("name=value").to_owned()
}

/// The CSRF token the console derives for `key` (the pages embed it).
fn csrf(key: &str) -> String {
    let digest = Sha256::new()
        .chain_update(b"runner-console-csrf\0")
        .chain_update(key.as_bytes())
        .finalize();
    hex::encode(&digest[..16])
}

async fn page(relay: &TestRelay, cookie: &str, path: &str) -> (StatusCode, String) {
    let answer = client()
        .get(format!("{}{path}", relay.url))
        .header(COOKIE, cookie)
        .send()
        .await
        .expect("answered");
    let status = answer.status();
    (status, answer.text().await.expect("body"))
}

#[tokio::test]
async fn pages_need_a_sign_in_and_a_bad_key_gets_none() {
    let relay = spawn_relay().await;
    let answer = client()
        .get(format!("{}/console/environments", relay.url))
        .send()
        .await
        .expect("answered");
    assert_eq!(answer.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        answer.headers()[LOCATION],
        "/console/sign-in?next=%2Fconsole%2Fenvironments"
    );

    let refused = client()
        .post(format!("{}/console/sign-in", relay.url))
        .form(&[("key", "rnrk_wrong")])
        .send()
        .await
        .expect("answered");
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert!(refused.headers().get(SET_COOKIE).is_none());
    let body = refused.text().await.expect("body");
    assert!(body.contains("not valid"), "{body}");
    assert!(
        !body.contains("rnrk_wrong"),
        "the key is never echoed: {body}"
    );

    // A forged cookie is not a sign-in either.
    let (status, _) = page(
        &relay,
        "runner_console=rnrk_forged",
        "/console/environments",
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn the_api_never_takes_the_console_cookie() {
    let relay = spawn_relay().await;
    let cookie = sign_in(&relay, &relay.admin_key).await;
    let answer = client()
        .get(format!("{}/execution-environments", relay.url))
        .header(COOKIE, &cookie)
        .send()
        .await
        .expect("answered");
    assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn changes_need_the_pages_token_and_the_relays_origin() {
    let relay = spawn_relay().await;
    let cookie = sign_in(&relay, &relay.admin_key).await;
    let create = |token: Option<String>, origin: Option<&'static str>| {
        let mut form = vec![("name", "csrf-box".to_owned())];
        if let Some(token) = token {
            form.push(("csrf", token));
        }
        let mut request = client()
            .post(format!("{}/console/environments", relay.url))
            .header(COOKIE, &cookie)
            .form(&form);
        if let Some(origin) = origin {
            request = request.header(ORIGIN, origin);
        }
        request.send()
    };
    let other_key = relay.member(true, &[]).await;
    let refusals = [
        (None, None),
        (Some(csrf(&other_key)), None),
        (Some(csrf(&relay.admin_key)), Some("http://evil.example")),
    ];
    for (token, origin) in refusals {
        let answer = create(token.clone(), origin).await.expect("answered");
        assert_eq!(
            answer.status(),
            StatusCode::FORBIDDEN,
            "{token:?} {origin:?}"
        );
    }
    let (status, _) = relay.get("/execution-environments/csrf-box").await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "no refused form created anything"
    );

    let own_origin: &'static str = Box::leak(relay.url.clone().into_boxed_str());
    let answer = create(Some(csrf(&relay.admin_key)), Some(own_origin))
        .await
        .expect("answered");
    assert_eq!(answer.status(), StatusCode::CREATED);
    let html = answer.text().await.expect("body");
    assert!(
        html.contains("Set up csrf-box") && html.contains("rnrt_"),
        "{html}"
    );
    let (status, _) = relay.get("/execution-environments/csrf-box").await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn members_see_in_the_console_what_the_api_shows_them() {
    let relay = spawn_relay().await;
    let theirs = relay.member(false, &["red"]).await;
    let blue = relay.member(false, &["blue"]).await;
    let (status, made) = relay
        .request(
            reqwest::Method::POST,
            "/execution-environments",
            Some(&blue),
            Some(json!({"name": "blue-box", "scope": "team:blue"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let blue_id = made["id"].as_str().expect("id").to_owned();
    relay.create_env(json!({"name": "shared-box"})).await;

    let cookie = sign_in(&relay, &theirs).await;
    let (status, list) = page(&relay, &cookie, "/console/environments").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        list.contains("shared-box") && !list.contains("blue-box"),
        "{list}"
    );
    let (status, _) = page(&relay, &cookie, &format!("/console/environments/{blue_id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A shared environment is not theirs to manage: no token or delete forms.
    let (status, shared) = page(&relay, &cookie, "/console/environments/shared-box").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        !shared.contains("/revoke") && !shared.contains("/delete"),
        "{shared}"
    );
    // The audit log is for admins.
    let (status, audit) = page(&relay, &cookie, "/console/audit").await;
    assert_eq!(status, StatusCode::OK);
    assert!(audit.contains("only organisation admins"), "{audit}");
}

#[tokio::test]
async fn answers_carry_the_security_headers_and_assets_are_served() {
    let relay = spawn_relay().await;
    let cookie = sign_in(&relay, &relay.admin_key).await;
    let answer = client()
        .get(format!("{}/console/environments", relay.url))
        .header(COOKIE, &cookie)
        .send()
        .await
        .expect("answered");
    let headers = answer.headers();
    let csp = headers["content-security-policy"].to_str().expect("ASCII");
    assert!(
        csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert_eq!(headers["x-frame-options"], "DENY");
    assert_eq!(headers["cache-control"], "no-store");
    let html = answer.text().await.expect("body");
    let htmx = html
        .split('"')
        .find(|part| part.starts_with("/console/assets/htmx-"))
        .expect("the page loads htmx")
        .to_owned();
    let script = client()
        .get(format!("{}{htmx}", relay.url))
        .send()
        .await
        .expect("answered");
    assert_eq!(script.status(), StatusCode::OK);
    assert!(script.headers()[CONTENT_TYPE]
        .to_str()
        .expect("ASCII")
        .starts_with("text/javascript"));
    assert!(script.text().await.expect("body").contains("htmx"));
    let missing = client()
        .get(format!("{}/console/assets/..%2Fetc%2Fpasswd", relay.url))
        .send()
        .await
        .expect("answered");
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_playground_decides_with_the_runners_engine() {
    let relay = spawn_relay().await;
    let cookie = sign_in(&relay, &relay.admin_key).await;
    let answer = client()
        .post(format!("{}/console/playground", relay.url))
        .header(COOKIE, &cookie)
        .form(&[
            ("csrf", csrf(&relay.admin_key).as_str()),
            ("file", "permission:\n  \"ls *\": allow\n"),
            ("commands", "ls -la\nls; rm -rf /\n"),
        ])
        .send()
        .await
        .expect("answered");
    assert_eq!(answer.status(), StatusCode::OK);
    let html = answer.text().await.expect("body");
    assert!(
        html.contains(r#"data-command="ls -la" data-allowed="true""#),
        "{html}"
    );
    assert!(
        html.contains(r#"data-command="ls; rm -rf /" data-allowed="false""#),
        "{html}"
    );
}

#[tokio::test]
async fn the_console_can_be_turned_off() {
    let relay = spawn_relay_with(|state| {
        state.with_console(runner_relay::state::ConsoleSettings {
            enabled: false,
            ..Default::default()
        })
    })
    .await;
    let answer = client()
        .get(format!("{}/console/sign-in", relay.url))
        .send()
        .await
        .expect("answered");
    assert_eq!(answer.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_refresh_after_sign_out_sends_the_whole_page_to_sign_in() {
    let relay = spawn_relay().await;
    let answer = client()
        .get(format!("{}/console/environments/rows", relay.url))
        .header("HX-Request", "true")
        .send()
        .await
        .expect("answered");
    assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(answer.headers()["hx-redirect"], "/console/sign-in");
    assert!(answer.headers().get(LOCATION).is_none());
}

#[tokio::test]
async fn a_link_followed_before_signing_in_is_where_the_sign_in_lands() {
    let relay = spawn_relay().await;
    let answer = client()
        .get(format!("{}/console/approvals/apr_42?x=1", relay.url))
        .send()
        .await
        .expect("answered");
    assert_eq!(answer.status(), StatusCode::SEE_OTHER);
    let location = answer.headers()[LOCATION]
        .to_str()
        .expect("ASCII")
        .to_owned();
    assert_eq!(
        location,
        "/console/sign-in?next=%2Fconsole%2Fapprovals%2Fapr_42%3Fx%3D1"
    );
    let page = client()
        .get(format!("{}{location}", relay.url))
        .send()
        .await
        .expect("answered")
        .text()
        .await
        .expect("body");
    assert!(
        page.contains(r#"name="next" value="/console/approvals/apr_42?x=1""#),
        "{page}"
    );

    let signed_in = |next: &'static str| {
        client()
            .post(format!("{}/console/sign-in", relay.url))
            .form(&[("key", relay.admin_key.as_str()), ("next", next)])
            .send()
    };
    let answer = signed_in("/console/approvals/apr_42?x=1")
        .await
        .expect("answered");
    assert_eq!(answer.headers()[LOCATION], "/console/approvals/apr_42?x=1");
    // Never to another site.
    let answer = signed_in("//evil.example/console/")
        .await
        .expect("answered");
    assert_eq!(answer.headers()[LOCATION], "/console/environments");
}
