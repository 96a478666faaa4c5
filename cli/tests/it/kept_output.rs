//! Large outputs are kept in files under WORKSPACE/.runner/output, capped
//! by size (`runner run --kept-output-max-mb`): the oldest go first, the
//! call's own file stays, and `/metrics` shows what is held.

use serde_json::json;

use crate::support::Relay;
use crate::tools_support::online_with;

#[tokio::test]
async fn kept_output_stays_under_its_cap_oldest_first() {
    let relay = Relay::spawn().await;
    let health = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .to_string();
    let (env, runner) = online_with(
        &relay,
        json!({"name": "kept", "tier": "development"}),
        &[],
        &["--kept-output-max-mb", "3", "--health-addr", &health],
    )
    .await;
    // Each call writes 1.5 MiB to stdout: past the inline limit, so a file.
    let mut files = Vec::new();
    for n in 0..3 {
        let (status, body) = relay
            .invoke(
                &env,
                json!({"tool_name": "shell", "args": {"command": format!("head -c 1572864 /dev/zero | tr '\\0' '{n}'")}}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let file = body["result"]["stdout_file"]
            .as_str()
            .unwrap_or_else(|| panic!("a kept file: {body}"))
            .to_owned();
        files.push(runner.workspace().join(file));
        // Distinct modification times, oldest first.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // 3 × 1.5 MiB > 3 MiB: the first file went, the two newest stayed.
    assert!(!files[0].exists(), "the oldest kept file was removed");
    assert!(files[1].exists() && files[2].exists());
    let metrics = reqwest::get(format!("http://{health}/metrics"))
        .await
        .expect("scrape")
        .text()
        .await
        .expect("body");
    assert!(
        metrics.contains("runner_kept_output_bytes 3145728"),
        "{metrics}"
    );
    assert!(
        metrics.contains("runner_kept_output_cap_bytes 3145728"),
        "{metrics}"
    );
    assert!(
        metrics.contains("runner_kept_output_evicted_files 1"),
        "{metrics}"
    );
}
