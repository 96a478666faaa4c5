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

/// Posts a console form with the page's token.
async fn post_form(
    relay: &TestRelay,
    cookie: &str,
    key: &str,
    path: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    let token = csrf(key);
    let mut form: Vec<(&str, &str)> = vec![("csrf", token.as_str())];
    form.extend_from_slice(fields);
    client()
        .post(format!("{}{path}", relay.url))
        .header(COOKIE, cookie)
        .form(&form)
        .send()
        .await
        .expect("answered")
}

#[tokio::test]
async fn templates_are_created_edited_and_deleted_from_the_console() {
    let relay = spawn_relay().await;
    let admin = relay.admin_key.clone();
    let cookie = sign_in(&relay, &admin).await;
    let (status, body) = page(&relay, &cookie, "/console/templates").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("No templates yet."), "{body}");
    assert!(body.contains("0 / 32768 bytes"), "{body}");
    assert!(body.contains(r#"aria-current="page">Templates"#), "{body}");

    // A refused form comes back as typed, with the line at fault.
    let answer = post_form(
        &relay,
        &cookie,
        &admin,
        "/console/templates",
        &[
            ("name", "python"),
            ("scope", "shared"),
            ("network", "none"),
            ("env_text", "A=1\r\nnot a line\r\n"),
        ],
    )
    .await;
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    let body = answer.text().await.expect("body");
    assert!(
        body.contains("env_text: line 2: expected `=` after not"),
        "{body}"
    );
    assert!(body.contains("not a line"), "kept as typed: {body}");

    // Browsers send CRLF; the template keeps LF, so bash reads the script.
    let answer = post_form(
        &relay,
        &cookie,
        &admin,
        "/console/templates",
        &[
            ("name", "python"),
            ("scope", "shared"),
            ("network", "allowlist"),
            ("allowed_domains", "pypi.org\r\nfiles.pythonhosted.org"),
            ("env_text", "MOTD=\"two\r\nlines\"\r\nGITHUB_TOKEN=abc\r\n"),
            ("setup_script", "set -e\r\necho ready\r\n"),
            ("idle_minutes", "30"),
            ("lifetime_minutes", "120"),
        ],
    )
    .await;
    assert_eq!(answer.status(), StatusCode::SEE_OTHER);
    let location = answer.headers()[LOCATION]
        .to_str()
        .expect("ASCII")
        .to_owned();
    assert!(
        location.starts_with("/console/templates/tpl_"),
        "{location}"
    );
    let (_, template) = relay.get("/templates/python").await;
    assert_eq!(
        template["env_text"],
        "MOTD=\"two\nlines\"\nGITHUB_TOKEN=abc\n"
    );
    assert_eq!(template["setup_script"], "set -e\necho ready\n");
    assert_eq!(template["idle_timeout_s"], 1800);
    assert_eq!(template["max_lifetime_s"], 7200);
    assert_eq!(
        template["allowed_domains"],
        json!(["pypi.org", "files.pythonhosted.org"])
    );
    let id = template["id"].as_str().expect("id").to_owned();

    let (status, body) = page(&relay, &cookie, &location).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("Template created."), "{body}");
    assert!(body.contains("Values that look like secrets"), "{body}");
    assert!(
        body.contains("<code>GITHUB_TOKEN</code> (line 3)"),
        "{body}"
    );
    let (_, list) = page(&relay, &cookie, "/console/templates").await;
    assert!(list.contains("1 flagged"), "{list}");

    // Edit: a wrong delete confirmation changes nothing; a save does.
    let path = format!("/console/templates/{id}");
    let answer = post_form(
        &relay,
        &cookie,
        &admin,
        &path,
        &[
            ("name", "py"),
            ("network", "none"),
            ("env_text", "LANG=C.UTF-8"),
            ("setup_script", ""),
            ("idle_minutes", "15"),
            ("lifetime_minutes", "480"),
        ],
    )
    .await;
    assert_eq!(answer.status(), StatusCode::SEE_OTHER);
    let (_, template) = relay.get(&format!("/templates/{id}")).await;
    assert_eq!(template["name"], "py");
    assert_eq!(template["network"], "none");
    assert_eq!(template["allowed_domains"], json!([]));
    assert_eq!(template["setup_script"], "");
    let answer = post_form(
        &relay,
        &cookie,
        &admin,
        &format!("{path}/delete"),
        &[("confirm_name", "python")],
    )
    .await;
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    let (status, _) = relay.get(&format!("/templates/{id}")).await;
    assert_eq!(status, StatusCode::OK, "still there");
    // Without the page's token: refused.
    let answer = client()
        .post(format!("{}{path}/delete", relay.url))
        .header(COOKIE, &cookie)
        .form(&[("confirm_name", "py")])
        .send()
        .await
        .expect("answered");
    assert_eq!(answer.status(), StatusCode::FORBIDDEN);
    let answer = post_form(
        &relay,
        &cookie,
        &admin,
        &format!("{path}/delete"),
        &[("confirm_name", "py")],
    )
    .await;
    assert_eq!(answer.status(), StatusCode::SEE_OTHER);
    let (status, _) = relay.get(&format!("/templates/{id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// The pages apply the API's rules: a member sees shared templates and
/// their team's, may change only their team's, and never another team's.
#[tokio::test]
async fn members_see_and_change_only_the_templates_the_api_lets_them() {
    let relay = spawn_relay().await;
    for body in [json!({"name": "base"})] {
        let (status, answer) = relay.post("/templates", body).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }
    let ops = relay.member(false, &["ops"]).await;
    let web = relay.member(false, &["web"]).await;
    let ops_cookie = sign_in(&relay, &ops).await;
    let web_cookie = sign_in(&relay, &web).await;
    let answer = post_form(
        &relay,
        &ops_cookie,
        &ops,
        "/console/templates",
        &[
            ("name", "ops-tools"),
            ("scope", "team:ops"),
            ("network", "none"),
        ],
    )
    .await;
    assert_eq!(answer.status(), StatusCode::SEE_OTHER);
    let (_, ops_tools) = relay.get("/templates/ops-tools").await;
    let ops_id = ops_tools["id"].as_str().expect("id").to_owned();

    let (_, list) = page(&relay, &web_cookie, "/console/templates").await;
    assert!(list.contains("base"), "{list}");
    assert!(!list.contains("ops-tools"), "{list}");
    assert!(list.contains("team:web"), "may create for its team: {list}");
    assert!(!list.contains(r#"<option value="shared""#), "{list}");
    let (status, _) = page(&relay, &web_cookie, &format!("/console/templates/{ops_id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let answer = post_form(
        &relay,
        &web_cookie,
        &web,
        &format!("/console/templates/{ops_id}/delete"),
        &[("confirm_name", "ops-tools")],
    )
    .await;
    assert_eq!(answer.status(), StatusCode::NOT_FOUND);

    // A shared template: read-only for a member.
    let (status, body) = page(&relay, &ops_cookie, "/console/templates/base").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        body.contains("Only organisation admins may change"),
        "{body}"
    );
    assert!(!body.contains("Delete template"), "{body}");
    let answer = post_form(
        &relay,
        &ops_cookie,
        &ops,
        "/console/templates/base",
        &[("name", "mine"), ("network", "none")],
    )
    .await;
    assert_eq!(answer.status(), StatusCode::FORBIDDEN);
}
