//! Scopes and teams: who sees (404) and who may act (403).

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::support::spawn_relay;

#[tokio::test]
async fn team_environments_are_invisible_to_outsiders() {
    let relay = spawn_relay().await;
    let ops = relay.member(false, &["ops"]).await;
    let outsider = relay.member(false, &["web"]).await;

    let (status, env) = relay
        .request(
            Method::POST,
            "/execution-environments",
            Some(&ops),
            Some(json!({"name": "ops-box", "scope": "team:ops"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{env}");
    let id = env["id"].as_str().expect("id").to_owned();
    let path = format!("/execution-environments/{id}");

    // The outsider learns nothing: 404 everywhere, absent from the list.
    for (method, suffix) in [
        (Method::GET, ""),
        (Method::GET, "/status"),
        (Method::POST, "/invoke-tool"),
        (Method::DELETE, ""),
    ] {
        let (status, _) = relay
            .request(
                method.clone(),
                &format!("{path}{suffix}"),
                Some(&outsider),
                Some(json!({"tool_name": "git"})),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {suffix}");
    }
    let (_, list) = relay
        .request(
            Method::GET,
            "/execution-environments",
            Some(&outsider),
            None,
        )
        .await;
    assert_eq!(list["environments"], json!([]));

    // An admin outside the team sees it but may not act on it.
    let (status, _) = relay.get(&path).await;
    assert_eq!(status, StatusCode::OK);
    let (status, error) = relay
        .request(
            Method::PATCH,
            &path,
            Some(&relay.admin_key),
            Some(json!({"description": "x"})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(error["error"]["code"], "forbidden");
    let (status, _) = relay.invoke(&id, json!({"tool_name": "git"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Team members act on it.
    let (status, _) = relay
        .request(
            Method::PATCH,
            &path,
            Some(&ops),
            Some(json!({"description": "ours"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = relay
        .request(
            Method::POST,
            &format!("{path}/generate-token"),
            Some(&ops),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn shared_environments_are_managed_by_admins_only() {
    let relay = spawn_relay().await;
    let member = relay.member(false, &[]).await;
    let (status, _) = relay
        .request(
            Method::POST,
            "/execution-environments",
            Some(&member),
            Some(json!({"name": "mine"})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = relay
        .request(
            Method::POST,
            "/execution-environments",
            Some(&member),
            Some(json!({"name": "theirs", "scope": "team:nope"})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let id = relay.create_env(json!({"name": "shared-box"})).await;
    let path = format!("/execution-environments/{id}");
    let (status, _) = relay.request(Method::GET, &path, Some(&member), None).await;
    assert_eq!(status, StatusCode::OK);
    // Members may use it (here: no runner yet).
    let (status, _) = relay
        .request(
            Method::POST,
            &format!("{path}/invoke-tool"),
            Some(&member),
            Some(json!({"tool_name": "git"})),
        )
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    for (method, suffix) in [
        (Method::PATCH, ""),
        (Method::DELETE, ""),
        (Method::POST, "/generate-token"),
        (Method::POST, "/revoke-token"),
        (Method::GET, "/token-status"),
    ] {
        let (status, _) = relay
            .request(
                method.clone(),
                &format!("{path}{suffix}"),
                Some(&member),
                Some(json!({})),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {suffix}");
    }
}

#[tokio::test]
async fn invalid_scope_is_400() {
    let relay = spawn_relay().await;
    let (status, error) = relay
        .post(
            "/execution-environments",
            json!({"name": "x", "scope": "everyone"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("scope"));
}

#[tokio::test]
async fn admins_create_teams_and_members_over_the_api_and_others_cannot() {
    let relay = spawn_relay().await;
    let (status, body) = relay
        .post("/teams", serde_json::json!({"name": "payments"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = relay
        .post(
            "/members",
            serde_json::json!({"name": "bob", "teams": ["payments"]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let key = body["api_key"].as_str().expect("key shown once").to_owned();
    assert!(key.starts_with("rnrk_"), "{body}");
    assert_eq!(body["teams"], serde_json::json!(["payments"]));

    // Bob works in his team's environments, but is no admin.
    let (status, body) = relay
        .request(
            reqwest::Method::POST,
            "/execution-environments",
            Some(&key),
            Some(serde_json::json!({"name": "pay-box", "scope": "team:payments"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, _) = relay
        .request(
            reqwest::Method::POST,
            "/teams",
            Some(&key),
            Some(serde_json::json!({"name": "x"})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = relay
        .request(
            reqwest::Method::POST,
            "/members",
            Some(&key),
            Some(serde_json::json!({"name": "eve", "admin": true})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // An unknown team is a 404 (the request itself is well formed), a bad
    // name a 400.
    let (status, body) = relay
        .post(
            "/members",
            serde_json::json!({"name": "c", "teams": ["nope"]}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"]["code"], "team_not_found");
    let (status, _) = relay
        .post("/teams", serde_json::json!({"name": "has space"}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}
