//! Shared mode keeps members and environments in memory only while it
//! hears PostgreSQL's change feed: a change made by another process (here
//! a plain SQL statement, as `runner-relay admin` or another relay would)
//! applies on every relay long before the copies' time limit, also when
//! the feed's connection was cut meanwhile.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use sqlx::Connection;

use super::Cluster;

/// Well under the 5 s a kept environment lives and the 10 s of a member:
/// passing this bound shows the change feed, not the time limit, dropped
/// the copy.
const APPLIES_WITHIN: Duration = Duration::from_secs(3);

async fn database(cluster: &Cluster) -> sqlx::PgConnection {
    sqlx::PgConnection::connect(&cluster.database.url())
        .await
        .expect("database")
}

/// Calls `shell` `true` through `relay` until it answers `want`; how long
/// that took.
async fn until_answered(cluster: &Cluster, relay: usize, env: &str, want: StatusCode) -> Duration {
    let started = Instant::now();
    loop {
        let (status, body) = cluster
            .invoke(
                cluster.url(relay),
                env,
                json!({"tool_name": "shell", "args": {"command": "true"}}),
            )
            .await;
        if status == want {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "never answered {want}: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every relay answers `want` within [`APPLIES_WITHIN`]; `kept` says
/// what a relay that took longer held on to.
async fn applies_everywhere(cluster: &Cluster, env: &str, want: StatusCode, kept: &str) {
    for relay in 0..3 {
        let took = until_answered(cluster, relay, env, want).await;
        assert!(took < APPLIES_WITHIN, "relay {relay} {kept} for {took:?}");
    }
}

/// The relays' `runner_relay_change_feed_listening` gauges.
async fn listening(cluster: &Cluster, token: &str) -> Vec<String> {
    let mut gauges = Vec::new();
    for relay in 0..3 {
        let text = cluster
            .http
            .get(format!("{}/metrics", cluster.url(relay)))
            .bearer_auth(token)
            .send()
            .await
            .expect("scraped")
            .text()
            .await
            .expect("body");
        let gauge = text
            .lines()
            .find(|line| line.starts_with("runner_relay_change_feed_listening "))
            .unwrap_or("runner_relay_change_feed_listening missing")
            .to_owned();
        gauges.push(gauge);
    }
    gauges
}

#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn a_change_made_by_another_process_applies_on_every_relay_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token_file = dir.path().join("metrics-token");
    let token = "change-feed-scrape-token-0123456789abcdef";
    std::fs::write(&token_file, token).expect("token file");
    std::fs::set_permissions(
        &token_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .expect("chmod 600");
    let token_path = token_file.to_str().expect("UTF-8 path");
    let cluster = Cluster::start_with(&["--metrics-token-file", token_path]).await;
    let (env, _balancer, _runner) = cluster.runner_on_b("fed").await;
    let mut db = database(&cluster).await;
    let on = vec!["runner_relay_change_feed_listening 1".to_owned(); 3];
    assert_eq!(listening(&cluster, token).await, on, "every relay listens");

    // Every relay has used (and so kept) the environment and the key.
    for relay in 0..3 {
        until_answered(&cluster, relay, &env, StatusCode::OK).await;
    }

    // The policy is restricted behind the relays' backs.
    sqlx::query("UPDATE environments SET policy = $1 WHERE id = $2")
        .bind(
            r#"{"tools":{"mode":"list","tools":["ping"]},"file_paths":[],"approval_required":[]}"#,
        )
        .bind(&env)
        .execute(&mut db)
        .await
        .expect("update");
    applies_everywhere(&cluster, &env, StatusCode::FORBIDDEN, "used its old copy").await;

    // The feed's connections are cut; a change made while they reconnect
    // may go unheard, so every copy is dropped when they are back.
    let cut: i64 = sqlx::query_scalar(
        "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity \
         WHERE datname = current_database() AND query LIKE 'LISTEN%'",
    )
    .fetch_one(&mut db)
    .await
    .expect("terminate listeners");
    assert_eq!(cut, 3, "one listening connection per relay");
    sqlx::query("UPDATE environments SET policy = $1 WHERE id = $2")
        .bind(r#"{"tools":{"mode":"all"},"file_paths":[],"approval_required":[]}"#)
        .bind(&env)
        .execute(&mut db)
        .await
        .expect("update");
    applies_everywhere(&cluster, &env, StatusCode::OK, "used its old copy").await;
    assert_eq!(
        listening(&cluster, token).await,
        on,
        "every relay listens again"
    );

    // Deleting the admin's API keys locks them out everywhere.
    sqlx::query("DELETE FROM api_keys")
        .execute(&mut db)
        .await
        .expect("delete keys");
    applies_everywhere(
        &cluster,
        &env,
        StatusCode::UNAUTHORIZED,
        "kept a deleted key",
    )
    .await;
}
