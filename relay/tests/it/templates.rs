//! Sandbox templates over real HTTP on a real store: CRUD by id and by
//! name, unique names, scope and member rules, the size limits, `.env`
//! errors that name the line, secret warnings, and one audit entry per
//! change.

use reqwest::{Method, StatusCode};
use runner_proto::templates::{MAX_ENV_TEXT_BYTES, MAX_SETUP_SCRIPT_BYTES};
use runner_relay::store::MemberKind;
use serde_json::{json, Value};

use crate::support::{spawn_relay, TestRelay};

async fn call(
    relay: &TestRelay,
    method: Method,
    path: &str,
    key: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    relay.request(method, path, Some(key), body).await
}

async fn create(relay: &TestRelay, key: &str, body: Value) -> (StatusCode, Value) {
    call(relay, Method::POST, "/templates", key, Some(body)).await
}

fn names(list: &Value) -> Vec<&str> {
    list["templates"]
        .as_array()
        .expect("templates")
        .iter()
        .map(|template| template["name"].as_str().expect("name"))
        .collect()
}

#[tokio::test]
async fn a_template_is_created_read_by_id_and_name_changed_and_deleted() {
    let relay = spawn_relay().await;
    let admin = relay.admin_key.clone();
    let (status, created) = create(
        &relay,
        &admin,
        json!({
            "name": "python",
            "description": "Python 3 with pip",
            "network": "allowlist",
            "allowed_domains": ["PyPI.org", "files.pythonhosted.org"],
            "env_text": "# tools\nexport PIP_INDEX_URL=https://pypi.org/simple\nGREETING=\"hello\\nworld\"\n",
            "setup_script": "#!/bin/bash\napt-get install -y python3-pip\n",
            "idle_timeout_s": 600
        }),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().expect("id").to_owned();
    assert!(id.starts_with("tpl_"), "{id}");
    assert_eq!(created["scope"], "shared");
    assert_eq!(created["network"], "allowlist");
    assert_eq!(
        created["allowed_domains"],
        json!(["pypi.org", "files.pythonhosted.org"])
    );
    assert_eq!(created["env_names"], json!(["PIP_INDEX_URL", "GREETING"]));
    assert_eq!(created["idle_timeout_s"], 600);
    assert_eq!(created["max_lifetime_s"], 28_800, "the default");
    assert_eq!(created["created_by"]["name"], "admin");
    assert!(created.get("warnings").is_none(), "{created}");

    let (status, by_id) = relay.get(&format!("/templates/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(by_id, created);
    let (status, by_name) = relay.get("/templates/python").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(by_name["id"], id.as_str());

    let (status, changed) = call(
        &relay,
        Method::PATCH,
        "/templates/python",
        &admin,
        Some(json!({"name": "py", "network": "none", "setup_script": "", "description": null})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(changed["name"], "py");
    assert_eq!(changed["network"], "none");
    assert_eq!(
        changed["allowed_domains"],
        json!([]),
        "left with the allowlist"
    );
    assert_eq!(changed["setup_script"], "");
    assert_eq!(
        changed["description"], "Python 3 with pip",
        "null leaves it"
    );
    assert_eq!(changed["env_text"], created["env_text"]);

    let (status, list) = relay.get("/templates").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(names(&list), ["py"]);

    let (status, _) = call(&relay, Method::DELETE, "/templates/py", &admin, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, answer) = relay.get(&format!("/templates/{id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(answer["error"]["code"], "template_not_found");
    let (status, _) = call(&relay, Method::DELETE, "/templates/py", &admin, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn names_are_unique_and_follow_the_environment_rules() {
    let relay = spawn_relay().await;
    let admin = relay.admin_key.clone();
    let (status, _) = create(&relay, &admin, json!({"name": "base"})).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, answer) = create(&relay, &admin, json!({"name": "base"})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .expect("message")
            .contains("template named \"base\""),
        "{answer}"
    );
    let (status, _) = create(&relay, &admin, json!({"name": "other"})).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, answer) = call(
        &relay,
        Method::PATCH,
        "/templates/other",
        &admin,
        Some(json!({"name": "base"})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");

    for name in [
        json!(""),
        json!("  "),
        json!("a\u{7}b"),
        json!("x".repeat(129)),
    ] {
        let (status, answer) = create(&relay, &admin, json!({ "name": name })).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {answer}");
    }
    let (status, _) = create(&relay, &admin, json!({"name": "x".repeat(128)})).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, answer) = create(&relay, &admin, json!({"name": "a", "scope": "team:"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    let (status, answer) = call(
        &relay,
        Method::PATCH,
        "/templates/base",
        &admin,
        Some(json!({"scope": "team:ops"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        "scope is fixed at creation; create a new template to change it"
    );
}

/// Shared templates: everyone uses them, admins change them. A team's:
/// its members only; an admin outside the team sees it (403 on change),
/// any other member gets 404.
#[tokio::test]
async fn scope_decides_who_sees_uses_and_changes_a_template() {
    let relay = spawn_relay().await;
    let admin = relay.admin_key.clone();
    let (_, ops) = relay
        .new_member("olga", false, &["ops"], MemberKind::Person)
        .await;
    let (_, web) = relay
        .new_member("wes", false, &["web"], MemberKind::Person)
        .await;

    let (status, answer) = create(&relay, &ops, json!({"name": "shared-one"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    let (status, answer) = create(
        &relay,
        &ops,
        json!({"name": "web-one", "scope": "team:web"}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    let (status, answer) = create(
        &relay,
        &admin,
        json!({"name": "ops-by-admin", "scope": "team:ops"}),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "admins join a team first: {answer}"
    );

    let (status, _) = create(&relay, &admin, json!({"name": "base"})).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, answer) = create(
        &relay,
        &ops,
        json!({"name": "ops-tools", "scope": "team:ops"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");

    let (_, list) = call(&relay, Method::GET, "/templates", &ops, None).await;
    assert_eq!(names(&list), ["base", "ops-tools"]);
    let (_, list) = call(&relay, Method::GET, "/templates", &web, None).await;
    assert_eq!(names(&list), ["base"]);
    let (_, list) = relay.get("/templates").await;
    assert_eq!(names(&list), ["base", "ops-tools"], "admins see every one");

    let (status, _) = call(&relay, Method::GET, "/templates/ops-tools", &web, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = call(&relay, Method::DELETE, "/templates/ops-tools", &web, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = relay.get("/templates/ops-tools").await;
    assert_eq!(status, StatusCode::OK, "an admin reads it");
    let (status, _) = call(&relay, Method::DELETE, "/templates/ops-tools", &admin, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = call(
        &relay,
        Method::PATCH,
        "/templates/base",
        &ops,
        Some(json!({"description": "mine now"})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, answer) = call(
        &relay,
        Method::PATCH,
        "/templates/ops-tools",
        &ops,
        Some(json!({"description": "ours"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let (status, _) = call(&relay, Method::GET, "/templates", "rnrk_wrong", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn sizes_are_limited_in_bytes() {
    let relay = spawn_relay().await;
    let admin = relay.admin_key.clone();
    // Exactly at the limits: accepted.
    let value = "x".repeat(MAX_ENV_TEXT_BYTES - "A=".len());
    let (status, answer) = create(
        &relay,
        &admin,
        json!({"name": "full", "env_text": format!("A={value}"), "setup_script": "#".repeat(MAX_SETUP_SCRIPT_BYTES)}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{}", answer["error"]);
    // One byte over: refused, saying how big it was.
    let (status, answer) = create(
        &relay,
        &admin,
        json!({"name": "env", "env_text": format!("A={value}x")}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        answer["error"]["message"],
        format!(
            "env_text is {} bytes; at most {MAX_ENV_TEXT_BYTES} are allowed",
            MAX_ENV_TEXT_BYTES + 1
        )
    );
    // Counted in bytes, not characters: 'é' is two.
    let (status, _) = create(
        &relay,
        &admin,
        json!({"name": "wide", "env_text": format!("A={}", "é".repeat(MAX_ENV_TEXT_BYTES / 2))}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, answer) = create(
        &relay,
        &admin,
        json!({"name": "setup", "setup_script": "#".repeat(MAX_SETUP_SCRIPT_BYTES + 1)}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        answer["error"]["message"]
            .as_str()
            .expect("message")
            .starts_with("setup_script is 65537 bytes"),
        "{answer}"
    );
    for body in [
        json!({"name": "t", "idle_timeout_s": 59}),
        json!({"name": "t", "idle_timeout_s": 86_401}),
        json!({"name": "t", "max_lifetime_s": 604_801}),
        json!({"name": "t", "network": "allowlist", "allowed_domains": ["https://pypi.org"]}),
        json!({"name": "t", "network": "allowlist", "allowed_domains": ["*.pypi.org"]}),
        json!({"name": "t", "network": "everything"}),
        json!({"name": "t", "env": "A=1"}),
    ] {
        let (status, answer) = create(&relay, &admin, body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
    }
    let (_, list) = relay.get("/templates").await;
    assert_eq!(names(&list), ["full"], "nothing else was created");
}

#[tokio::test]
async fn env_parse_errors_name_the_line() {
    let relay = spawn_relay().await;
    let admin = relay.admin_key.clone();
    for (env_text, message) in [
        (
            "A=1\n# fine\n\nB=\"multi\nline\"\n1BAD=x\n",
            "env_text: line 6: \"1BAD\" is not a variable name: a name starts with a letter or `_` and has only letters, digits and `_`",
        ),
        (
            "A=1\nB='never closed\nC=3\n",
            "env_text: line 2: the single quote opened here is never closed",
        ),
        ("A=1\nA=2\n", "env_text: line 2: A is already set on line 1"),
        (
            "A=1\nnot a line\n",
            "env_text: line 2: expected `=` after not, found 'a'",
        ),
    ] {
        let (status, answer) = create(&relay, &admin, json!({"name": "t", "env_text": env_text})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{env_text:?}");
        assert_eq!(answer["error"]["message"], message, "{env_text:?}");
    }
    let (status, _) = create(&relay, &admin, json!({"name": "t", "env_text": "A=1\n"})).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, answer) = call(
        &relay,
        Method::PATCH,
        "/templates/t",
        &admin,
        Some(json!({"env_text": "A=1\nB=\"x\" junk\n"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        answer["error"]["message"],
        "env_text: line 2: unexpected text after the closing quote: \"junk\""
    );
}

#[tokio::test]
async fn secret_looking_values_are_saved_with_warnings() {
    let relay = spawn_relay().await;
    let admin = relay.admin_key.clone();
    let (status, created) = create(
        &relay,
        &admin,
        json!({"name": "ci", "env_text": "LANG=C.UTF-8\nGITHUB_TOKEN=abc\nHELPER=ghp_0123456789abcdefghijABCDEFGHIJ012345\n"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let warnings = created["warnings"].as_array().expect("warnings");
    let flagged: Vec<(&str, u64)> = warnings
        .iter()
        .map(|warning| {
            (
                warning["name"].as_str().expect("name"),
                warning["line"].as_u64().expect("line"),
            )
        })
        .collect();
    assert_eq!(flagged, [("GITHUB_TOKEN", 2), ("HELPER", 3)]);
    let message = warnings[1]["message"].as_str().expect("message");
    assert!(
        message.contains("GitHub personal access token"),
        "{message}"
    );
    assert!(message.contains("can read its value"), "{message}");
    // Reading it again says so too.
    let (_, read) = relay.get("/templates/ci").await;
    assert_eq!(read["warnings"], created["warnings"]);
}

#[tokio::test]
async fn every_change_leaves_one_audit_entry_naming_the_template() {
    let relay = spawn_relay().await;
    let admin = relay.admin_key.clone();
    let (_, created) = create(&relay, &admin, json!({"name": "audited"})).await;
    let id = created["id"].as_str().expect("id").to_owned();
    call(
        &relay,
        Method::PATCH,
        "/templates/audited",
        &admin,
        Some(json!({"description": "d"})),
    )
    .await;
    // A refused change leaves none.
    call(
        &relay,
        Method::PATCH,
        "/templates/audited",
        &admin,
        Some(json!({"env_text": "bad line"})),
    )
    .await;
    call(&relay, Method::DELETE, "/templates/audited", &admin, None).await;
    let (status, page) = relay.get("/audit?limit=1000").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let actions: Vec<(&str, &str, &str)> = page["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|entry| {
            entry["action"]
                .as_str()
                .is_some_and(|action| action.starts_with("template."))
        })
        .map(|entry| {
            (
                entry["action"].as_str().expect("action"),
                entry["target"].as_str().expect("target"),
                entry["actor"]["name"].as_str().expect("actor"),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            ("template.create", id.as_str(), "admin"),
            ("template.update", id.as_str(), "admin"),
            ("template.delete", id.as_str(), "admin"),
        ]
    );
    let (status, page) = relay.get("/audit?action=template.update").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page["entries"].as_array().expect("entries").len(), 1);
}

/// The document describes the routes with the rules the relay applies,
/// and warns that values are visible.
#[tokio::test]
async fn the_document_describes_templates() {
    let document = runner_relay::http::openapi::document();
    let update = &document["components"]["schemas"]["UpdateTemplate"];
    assert!(update["properties"].get("scope").is_none(), "{update}");
    let create = &document["components"]["schemas"]["CreateTemplate"];
    assert_eq!(create["properties"]["name"]["maxLength"], 128);
    assert_eq!(create["additionalProperties"], false);
    assert_eq!(
        create["properties"]["allowed_domains"]["items"]["maxLength"],
        253
    );
    let post = &document["paths"]["/templates"]["post"];
    assert!(
        post["description"]
            .as_str()
            .expect("description")
            .contains("plain text"),
        "{post}"
    );
    assert!(document["paths"]["/templates/{id}"]["delete"].is_object());
}

/// A session that names a template gets sandboxes prepared by it; the
/// template is checked when the session starts, and one deleted since
/// leaves the session's new sandboxes the defaults.
#[tokio::test]
async fn a_sandbox_session_starts_its_sandbox_with_the_templates_settings() {
    use runner_proto::sandbox::{
        Capacity, Network, SandboxState, StartSandbox, Started, DESTROY_TOOL, HOST_ROLE, START_TOOL,
    };
    use runner_proto::ws::{CallResult, RunnerMessage};

    use crate::support::{hello, FakeRunner};

    let relay = spawn_relay().await;
    let admin = relay.admin_key.clone();
    let host_id = relay
        .create_env(json!({ "name": "host", "type": HOST_ROLE }))
        .await;
    let token = relay.token(&host_id).await;
    let mut greeting = hello("host", "host", &[START_TOOL, DESTROY_TOOL]);
    greeting.sandbox_capacity = Some(Capacity {
        slots_total: 4,
        slots_used: 0,
        memory_total_mb: 8192,
        memory_available_mb: 4096,
    });
    let mut host = FakeRunner::connect(&relay, &token, greeting).await;
    relay
        .wait_status(&host_id, |status| status["status"] == "online")
        .await;
    let (status, template) = create(
        &relay,
        &admin,
        json!({
            "name": "py",
            "network": "allowlist",
            "allowed_domains": ["pypi.org"],
            "env_text": "GREETING=\"hello\nworld\"\nLANG=C.UTF-8\n",
            "setup_script": "echo ready\n",
            "idle_timeout_s": 600,
            "max_lifetime_s": 3600
        }),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{template}");
    let (_, ops_key) = relay
        .new_member("olga", false, &["ops"], MemberKind::Person)
        .await;
    let (status, _) = create(
        &relay,
        &ops_key,
        json!({"name": "ops-only", "scope": "team:ops"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let member = relay.member(false, &["web"]).await;

    // Named by an unknown name, or one of another team: 404 at creation.
    for name in ["nope", "ops-only"] {
        let (status, answer) = call(
            &relay,
            Method::POST,
            "/sessions",
            &member,
            Some(json!({"environment": "sandbox", "template": name})),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}: {answer}");
        assert_eq!(answer["error"]["code"], "template_not_found");
    }

    // Starts one sandbox through the session and returns what the host was
    // asked, answering ready.
    async fn first_start(
        relay: &TestRelay,
        key: &str,
        host: &mut FakeRunner,
        body: Value,
    ) -> StartSandbox {
        let (status, session) = relay
            .request(Method::POST, "/sessions", Some(key), Some(body))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{session}");
        let id = session["id"].as_str().expect("id").to_owned();
        let (url, key) = (
            format!("{}/sessions/{id}/invoke-tool", relay.url),
            key.to_owned(),
        );
        let call = tokio::spawn(async move {
            reqwest::Client::new()
                .post(url)
                .bearer_auth(key)
                .json(&json!({ "tool_name": "ping", "args": {} }))
                .send()
                .await
                .expect("sent")
                .status()
        });
        let start_call = host.next_call().await;
        assert_eq!(start_call.tool, START_TOOL);
        let start: StartSandbox =
            serde_json::from_value(start_call.args.clone()).expect("start args");
        let mut sandbox = FakeRunner::connect(
            relay,
            &start.token.0,
            hello("sandbox", &start.sandbox_id, &["ping"]),
        )
        .await;
        let started = Started {
            sandbox_id: start.sandbox_id.clone(),
            state: SandboxState::Ready,
            reason: None,
            setup: None,
            elapsed_ms: 1,
        };
        host.send(&RunnerMessage::Result(CallResult {
            call_id: start_call.call_id.clone(),
            result: serde_json::to_value(&started).expect("encodes"),
            exit_code: Some(0),
            error: None,
            error_code: None,
        }))
        .await;
        let ping = sandbox.next_call().await;
        sandbox.answer(&ping, 0).await;
        assert_eq!(call.await.expect("call task"), StatusCode::OK);
        start
    }

    let start = first_start(
        &relay,
        &member,
        &mut host,
        json!({"environment": "sandbox", "template": "py"}),
    )
    .await;
    assert_eq!(start.network, Network::Allowlist);
    assert_eq!(start.allowed_domains, ["pypi.org"]);
    let env: Vec<(&str, &str)> = start
        .env
        .iter()
        .map(|var| (var.name.as_str(), var.value.as_str()))
        .collect();
    assert_eq!(env, [("GREETING", "hello\nworld"), ("LANG", "C.UTF-8")]);
    assert_eq!(start.setup_script.as_deref(), Some("echo ready\n"));
    assert_eq!((start.idle_timeout_s, start.max_lifetime_s), (600, 3600));

    // Deleted after the session began: its sandbox gets the defaults.
    let (status, session) = call(
        &relay,
        Method::POST,
        "/sessions",
        &member,
        Some(json!({"environment": "sandbox", "template": "py"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{session}");
    assert_eq!(session["template_id"], template["id"]);
    let (status, _) = call(&relay, Method::DELETE, "/templates/py", &admin, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let id = session["id"].as_str().expect("id");
    let url = format!("{}/sessions/{id}/invoke-tool", relay.url);
    let key = member.clone();
    let call_task = tokio::spawn(async move {
        reqwest::Client::new()
            .post(url)
            .bearer_auth(key)
            .json(&json!({ "tool_name": "ping", "args": {} }))
            .send()
            .await
            .expect("sent")
            .status()
    });
    let start_call = host.next_call().await;
    let start: StartSandbox = serde_json::from_value(start_call.args.clone()).expect("start args");
    assert_eq!(start.network, Network::None);
    assert!(
        start.env.is_empty() && start.setup_script.is_none(),
        "{start:?}"
    );
    call_task.abort();
}
