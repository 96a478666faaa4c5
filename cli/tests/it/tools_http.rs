//! `http_local`: a request from the runner's machine; bounded body kept
//! whole in a file.

use serde_json::json;

use crate::support::{dev_env, Relay, Runner};
use crate::tools_support::serve;

#[tokio::test]
async fn http_local_returns_status_headers_and_body() {
    let relay = Relay::spawn().await;
    let (env, runner) = Runner::online(&relay, dev_env()).await;
    let base = serve(b"{\"hello\":\"world\"}".to_vec(), "application/json").await;
    let (status, body) = relay
        .invoke(&env, json!({"tool_name": "http_local", "args": {"url": format!("{base}/api"), "method": "post", "body": "x", "headers": {"x-a": "b"}}}))
        .await;
    assert_eq!(status, 200, "{body}");
    let result = &body["result"];
    assert_eq!(result["status"], 200, "{body}");
    assert_eq!(result["headers"]["x-test"], "yes");
    assert_eq!(result["body"], "{\"hello\":\"world\"}");
    assert_eq!(result["truncated"], false);

    // A 3 MiB body: head and tail inline, all of it in the kept file.
    let big: Vec<u8> = (0..3 * 1024 * 1024)
        .map(|i| b'a' + (i % 26) as u8)
        .collect();
    let base = serve(big.clone(), "text/plain").await;
    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "http_local", "args": {"url": base}}),
        )
        .await;
    let result = &body["result"];
    assert_eq!(result["truncated"], true, "{}", result["body_bytes"]);
    assert_eq!(result["body_bytes"], big.len());
    let kept = result["body_file"].as_str().expect("body_file");
    assert_eq!(
        std::fs::read(runner.workspace().join(kept)).expect("kept"),
        big
    );

    // A small binary body comes back exactly, base64-encoded.
    let base = serve(vec![0, 159, 146, 150, 255], "application/octet-stream").await;
    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "http_local", "args": {"url": base}}),
        )
        .await;
    assert_eq!(body["result"]["body_encoding"], "base64", "{body}");
    assert_eq!(body["result"]["body"], "AJ+Slv8=", "{body}");

    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "http_local", "args": {"url": "file:///etc/passwd"}}),
        )
        .await;
    assert!(
        body["error"].as_str().unwrap_or_default().contains("http"),
        "{body}"
    );
    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "http_local", "args": {"url": "http://127.0.0.1:1/"}}),
        )
        .await;
    assert!(
        body["error"].is_string(),
        "a refused connection is an error answer: {body}"
    );
}
