//! Registration tokens: rotation grace, idle expiry, status (on the clock).

use reqwest::StatusCode;
use serde_json::json;
use time::Duration;

use crate::support::spawn_relay;

#[tokio::test]
async fn register_answers_the_environment() {
    let relay = spawn_relay().await;
    let (id, token) = relay.dev_env("reg").await;
    let (status, body) = relay.register(&token).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["environment"]["id"], id.as_str());
    assert_eq!(body["environment"]["name"], "reg");
    let (status, body) = relay.register("rnrt_unknown").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"]["message"], "invalid registration token");
}

#[tokio::test]
async fn rotation_keeps_the_old_token_for_the_grace_period() {
    let relay = spawn_relay().await;
    let (id, old) = relay.dev_env("rotating").await;
    let (status, rotated) = relay
        .post(
            &format!("/execution-environments/{id}/generate-token?grace_hours=2"),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(rotated["previous_valid_until"].is_string(), "{rotated}");
    let new = rotated["token"].as_str().expect("token").to_owned();
    assert_ne!(new, old);

    relay.clock.advance(Duration::minutes(119));
    assert_eq!(relay.register(&old).await.0, StatusCode::OK);
    relay.clock.advance(Duration::minutes(2));
    let (status, error) = relay.register(&old).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(error["error"]["code"], "token_expired");
    assert_eq!(relay.register(&new).await.0, StatusCode::OK);
}

#[tokio::test]
async fn zero_grace_stops_the_old_token_at_once() {
    let relay = spawn_relay().await;
    let (id, old) = relay.dev_env("instant").await;
    let (status, _) = relay
        .post(
            &format!("/execution-environments/{id}/generate-token?grace_hours=0"),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(relay.register(&old).await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn grace_hours_out_of_range_is_400() {
    let relay = spawn_relay().await;
    let (id, _) = relay.dev_env("grace").await;
    for grace in ["169", "-1", "abc", "1.5"] {
        let (status, error) = relay
            .post(
                &format!("/execution-environments/{id}/generate-token?grace_hours={grace}"),
                json!({}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{grace}");
        assert!(error["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("grace_hours"));
    }
    let (status, _) = relay
        .post(
            &format!("/execution-environments/{id}/generate-token?grace_hours=168"),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn tokens_expire_after_90_days_without_use() {
    let relay = spawn_relay().await;
    let (_, token) = relay.dev_env("idle").await;
    // Each use restarts the 90 days.
    relay.clock.advance(Duration::days(89));
    assert_eq!(relay.register(&token).await.0, StatusCode::OK);
    relay.clock.advance(Duration::days(89));
    assert_eq!(relay.register(&token).await.0, StatusCode::OK);
    relay.clock.advance(Duration::days(90));
    let (status, error) = relay.register(&token).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(error["error"]["code"], "token_expired");
    assert!(error["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("90 days"));
}

#[tokio::test]
async fn token_status_never_shows_the_token() {
    let relay = spawn_relay().await;
    let id = relay.create_env(json!({"name": "quiet"})).await;
    let (status, body) = relay
        .get(&format!("/execution-environments/{id}/token-status"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["has_token"], false);

    let token = relay.token(&id).await;
    relay.clock.advance(Duration::days(10));
    assert_eq!(relay.register(&token).await.0, StatusCode::OK);
    relay.clock.advance(Duration::days(5));
    let (status, body) = relay
        .get(&format!("/execution-environments/{id}/token-status"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["has_token"], true);
    assert_eq!(body["age_days"], 15);
    assert_eq!(body["days_until_expiry"], 85);
    assert_eq!(body["runner_connected"], false);
    let hint = body["hint"].as_str().expect("hint");
    assert!(
        hint.starts_with("rnrt_…") && token.ends_with(&hint["rnrt_…".len()..]),
        "{hint}"
    );
    let text = body.to_string();
    let hash = runner_relay::secret::hash_secret(&token);
    assert!(!text.contains(&token) && !text.contains(&hash));
    let status_text = relay.status(&id).await.to_string();
    assert!(!status_text.contains(&token) && !status_text.contains(&hash));
}
