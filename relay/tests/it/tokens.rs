//! Registration tokens: rotation grace, idle expiry, status (on the clock).

use reqwest::StatusCode;
use serde_json::json;
use time::Duration;

use crate::support::{hello, spawn_relay, FakeRunner};

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

#[tokio::test]
async fn failed_token_attempts_are_rate_limited_per_source_address() {
    let relay = spawn_relay().await;
    let (_, token) = relay.dev_env("guarded").await;
    for attempt in 0..runner_relay::ratelimit::PER_ADDRESS {
        let (status, _) = relay.register(&format!("rnrt_guess{attempt}")).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "attempt {attempt}");
    }
    // Over the limit: a valid token still gets in (hosts behind one NAT
    // share the address); another guess is answered 429.
    assert_eq!(relay.register(&token).await.0, StatusCode::OK);
    let response = relay
        .http
        .post(format!("{}/runner/register", relay.url))
        .bearer_auth("rnrt_one_more_guess")
        .send()
        .await
        .expect("answer");
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After header");
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    let body: serde_json::Value = response.json().await.expect("json");
    assert!(!body.to_string().contains("rnrt_one_more_guess"));
    // The window ends on the relay's clock: a guess is a plain 401 again.
    relay.clock.advance(Duration::seconds(61));
    assert_eq!(
        relay.register("rnrt_after_the_window").await.0,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn failures_with_an_expired_token_are_limited_per_environment_without_locking_out_its_runner()
{
    use runner_relay::ratelimit::{PER_ADDRESS, PER_ENVIRONMENT};
    let relay = spawn_relay().await;
    let (env, old) = relay.dev_env("rotating").await;
    let (status, body) = relay
        .post(
            &format!("/execution-environments/{env}/generate-token?grace_hours=0"),
            serde_json::json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let new = body["token"].as_str().expect("token").to_owned();
    // Spread the failures over several loopback source addresses so no
    // single address reaches its own limit first.
    let per_source = PER_ADDRESS - 1;
    let sources = PER_ENVIRONMENT.div_ceil(per_source) + 1;
    let mut statuses = Vec::new();
    for source in 0..sources {
        let client = reqwest::Client::builder()
            .local_address(std::net::IpAddr::from([127, 0, 0, 2 + source as u8]))
            .build()
            .expect("client");
        for _ in 0..per_source {
            let response = client
                .post(format!("{}/runner/register", relay.url))
                .bearer_auth(&old)
                .send()
                .await
                .expect("answer");
            statuses.push(response.status());
        }
    }
    let refused = statuses
        .iter()
        .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
        .count();
    let first_refusal = statuses
        .iter()
        .position(|s| *s == StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        first_refusal,
        Some(PER_ENVIRONMENT as usize - 1),
        "{statuses:?}"
    );
    assert!(refused > 0);
    // The environment's own runner, with its valid token, still gets in.
    assert_eq!(relay.register(&new).await.0, StatusCode::OK);
}

/// After a rotation the connected runner keeps the token it connected
/// with: status and token-status say which one and until when, next to
/// the new current token.
#[tokio::test]
async fn status_says_which_token_the_connected_runner_uses() {
    let relay = spawn_relay().await;
    let (id, old) = relay.dev_env("rotating").await;
    let (_, before) = relay
        .get(&format!("/execution-environments/{id}/status"))
        .await;
    assert!(before["runner_token"].is_null(), "no runner yet: {before}");
    let _runner = FakeRunner::connect(&relay, &old, hello("h", "i1", &["shell"])).await;
    let (_, current) = relay
        .get(&format!("/execution-environments/{id}/status"))
        .await;
    let old_hint = current["token"]["hint"].clone();
    assert_eq!(
        current["runner_token"],
        json!({"hint": old_hint, "current": true, "valid_until": null})
    );

    let (status, rotated) = relay
        .post(
            &format!("/execution-environments/{id}/generate-token?grace_hours=2"),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    for path in ["status", "token-status"] {
        let (status, body) = relay
            .get(&format!("/execution-environments/{id}/{path}"))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            body["runner_token"],
            json!({
                "hint": old_hint,
                "current": false,
                "valid_until": rotated["previous_valid_until"],
            }),
            "{path}: {body}"
        );
    }
    let (_, status) = relay
        .get(&format!("/execution-environments/{id}/status"))
        .await;
    assert_eq!(status["token"]["hint"], rotated["hint"]);
}
