//! Environment CRUD, validation and API-level error shapes.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::support::spawn_relay;

#[tokio::test]
async fn create_list_get_patch_delete() {
    let relay = spawn_relay().await;
    let (status, created) = relay
        .post(
            "/execution-environments",
            json!({"name": "build-box", "tags": ["linux", "gpu"], "description": "CI"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().expect("id").to_owned();
    assert!(id.starts_with("env_"));
    assert_eq!(created["scope"], "shared");
    assert_eq!(created["tier"], "production");
    assert_eq!(created["type"], "Local");
    assert_eq!(
        created["policy"]["tools"],
        json!({"mode": "list", "tools": ["kubectl", "helm", "git", "file_read", "http_local", "browser", "claude_code", "claude_sessions", "claude_status"]})
    );
    assert_eq!(created["policy"]["file_paths"], json!([]));

    let (status, list) = relay.get("/execution-environments").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["environments"].as_array().map(Vec::len), Some(1));

    let (status, got) = relay.get(&format!("/execution-environments/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(got["name"], "build-box");

    let (status, patched) = relay
        .request(
            Method::PATCH,
            &format!("/execution-environments/{id}"),
            Some(&relay.admin_key),
            Some(json!({"name": "renamed", "policy": {"tools": {"mode": "all"}, "file_paths": ["/srv"]}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{patched}");
    assert_eq!(patched["name"], "renamed");
    assert_eq!(patched["policy"]["tools"]["mode"], "all");
    assert_eq!(patched["tags"], json!(["linux", "gpu"]));

    let (status, error) = relay
        .request(
            Method::PATCH,
            &format!("/execution-environments/{id}"),
            Some(&relay.admin_key),
            Some(json!({"scope": "team:ops"})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("scope"));

    let (status, _) = relay
        .request(
            Method::DELETE,
            &format!("/execution-environments/{id}"),
            Some(&relay.admin_key),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, error) = relay.get(&format!("/execution-environments/{id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error["error"]["code"], "not_found");
}

#[tokio::test]
async fn development_tier_allows_everything() {
    let relay = spawn_relay().await;
    let (_, created) = relay
        .post(
            "/execution-environments",
            json!({"name": "dev", "tier": "development"}),
        )
        .await;
    assert_eq!(created["policy"]["tools"], json!({"mode": "all"}));
    assert_eq!(created["policy"]["file_paths"], json!(["*"]));
}

#[tokio::test]
async fn names_are_bounded_and_unique() {
    let relay = spawn_relay().await;
    let (status, _) = relay
        .post("/execution-environments", json!({"name": "a".repeat(129)}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = relay
        .post("/execution-environments", json!({"name": "a".repeat(128)}))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, error) = relay
        .post("/execution-environments", json!({"name": "a".repeat(128)}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(error["error"]["code"], "conflict");
    // Blank names may repeat until runners fill them.
    for _ in 0..2 {
        let (status, _) = relay.post("/execution-environments", json!({})).await;
        assert_eq!(status, StatusCode::CREATED);
    }
}

#[tokio::test]
async fn bad_api_key_is_401_json() {
    let relay = spawn_relay().await;
    for key in [Some("rnrk_wrong"), Some("nonsense"), None] {
        let (status, body) = relay
            .request(Method::GET, "/execution-environments", key, None)
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{key:?}");
        assert_eq!(body["error"]["code"], "unauthorized");
    }
}

#[tokio::test]
async fn malformed_bodies_and_unknown_routes_get_json_errors() {
    let relay = spawn_relay().await;
    let response = relay
        .http
        .post(format!("{}/execution-environments", relay.url))
        .bearer_auth(&relay.admin_key)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        response
            .headers()
            .get("x-runner-api-version")
            .map(|v| v.as_bytes()),
        Some(&b"1"[..])
    );
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(body["error"]["code"], "bad_request");

    let (status, body) = relay
        .post(
            "/execution-environments",
            json!({"name": "x", "colour": "red"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("colour"));

    let (status, body) = relay.get("/no/such/route").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["code"], "route_not_found");

    let (status, body) = relay
        .request(
            Method::PUT,
            "/execution-environments",
            Some(&relay.admin_key),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(body["error"]["code"], "method_not_allowed");
}

#[tokio::test]
async fn health_probes() {
    let relay = spawn_relay().await;
    let (status, _) = relay.request(Method::GET, "/healthz", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = relay.request(Method::GET, "/readyz", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "ready");
}

#[test]
fn secret_debug_redacts() {
    let secret = runner_relay::secret::Secret::new("rnrk_topsecretvalue");
    assert_eq!(format!("{secret:?}"), "Secret(<redacted>)");
    assert_eq!(format!("{secret}"), "<redacted>");
}

#[tokio::test]
async fn oversized_bodies_are_413_json() {
    let relay = spawn_relay().await;
    let (id, _) = relay.dev_env("big").await;
    let huge = format!(
        r#"{{"tool_name":"shell","args":{{"blob":"{}"}}}}"#,
        "x".repeat(runner_relay::http::MAX_BODY_BYTES + 1)
    );
    let response = relay
        .http
        .post(format!(
            "{}/execution-environments/{id}/invoke-tool",
            relay.url
        ))
        .bearer_auth(&relay.admin_key)
        .body(huge)
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(body["error"]["code"], "payload_too_large");
}

/// A blank tool name or path in a policy list is refused with a 400 that
/// names the field, at creation and on update; an empty list clears.
#[tokio::test]
async fn blank_names_in_policy_lists_are_refused_naming_the_field() {
    let relay = spawn_relay().await;
    let (status, body) = relay
        .post(
            "/execution-environments",
            json!({"name": "gated", "policy": {"tools": {"mode": "all"}, "approval_required": [""]}}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("policy.approval_required"), "{message}");

    let (status, created) = relay
        .post("/execution-environments", json!({"name": "gated"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let path = format!(
        "/execution-environments/{}",
        created["id"].as_str().expect("id")
    );
    for (policy, field) in [
        (
            json!({"tools": {"mode": "list", "tools": ["git", " "]}}),
            "policy.tools.tools",
        ),
        (
            json!({"tools": {"mode": "all"}, "file_paths": [""]}),
            "policy.file_paths",
        ),
        (
            json!({"tools": {"mode": "all"}, "approval_required": ["shell", ""]}),
            "policy.approval_required",
        ),
    ] {
        let (status, body) = relay
            .request(
                Method::PATCH,
                &path,
                Some(&relay.admin_key),
                Some(json!({"policy": policy})),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        let message = body["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(field), "{field}: {message}");
    }
    let (status, body) = relay
        .request(
            Method::PATCH,
            &path,
            Some(&relay.admin_key),
            Some(json!({"policy": {"tools": {"mode": "all"}, "approval_required": []}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["policy"]["approval_required"], json!([]));
}
