//! `browser` against the machine's headless Chromium and a page served on
//! 127.0.0.1: navigate, text, click, type, screenshot (a real PNG).

use base64::Engine as _;
use serde_json::json;

use crate::support::{dev_env, Relay, Runner};
use crate::tools_support::serve;

const PAGE: &str = r#"<!doctype html>
<html><head><title>Runner test page</title></head>
<body style="background:#fff">
<h1 id="title">Hello from 127.0.0.1</h1>
<input id="name" value="">
<button id="go" onclick="document.getElementById('title').textContent = 'Clicked ' + document.getElementById('name').value">Go</button>
</body></html>"#;

#[tokio::test]
async fn browser_navigates_clicks_types_and_takes_a_real_png_screenshot() {
    crate::tools_support::require_chromium();
    let relay = Relay::spawn().await;
    let (env, _runner) = Runner::online(&relay, dev_env()).await;
    let names = crate::tools_support::tool_names(&relay, &env).await;
    assert!(names.contains(&"browser".to_owned()), "{names:?}");
    let base = serve(PAGE.as_bytes().to_vec(), "text/html; charset=utf-8").await;
    let browser = |args: serde_json::Value| {
        relay.invoke(
            &env,
            json!({"tool_name": "browser", "args": args, "timeout_s": 120}),
        )
    };

    let (status, body) =
        browser(json!({"action": "navigate", "url": format!("{base}/page")})).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["error"].is_null(), "{body}");
    assert_eq!(body["result"]["title"], "Runner test page", "{body}");

    let (_, body) = browser(json!({"action": "text", "selector": "#title"})).await;
    assert_eq!(body["result"]["text"], "Hello from 127.0.0.1", "{body}");

    let (_, body) = browser(json!({"action": "type", "selector": "#name", "text": "agent"})).await;
    assert!(body["error"].is_null(), "{body}");
    let (_, body) = browser(json!({"action": "click", "selector": "#go"})).await;
    assert!(body["error"].is_null(), "{body}");
    let (_, body) = browser(json!({"action": "text", "selector": "#title"})).await;
    assert_eq!(
        body["result"]["text"], "Clicked agent",
        "the page persists across calls: {body}"
    );

    let (_, body) = browser(json!({"action": "html"})).await;
    assert!(
        body["result"]["html"]
            .as_str()
            .unwrap_or_default()
            .contains("<h1 id=\"title\">"),
        "{body}"
    );

    let (_, body) = browser(json!({"action": "click", "selector": "#missing"})).await;
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("#missing"),
        "{body}"
    );

    let (_, body) = browser(json!({"action": "screenshot", "width": 640, "height": 480})).await;
    let data = body["result"]["png_base64"].as_str().expect("png_base64");
    let png = base64::engine::general_purpose::STANDARD
        .decode(data)
        .expect("base64");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&png[12..16], b"IHDR");
    let width = u32::from_be_bytes([png[16], png[17], png[18], png[19]]);
    let height = u32::from_be_bytes([png[20], png[21], png[22], png[23]]);
    assert_eq!((width, height), (640, 480), "IHDR size");
    assert!(
        png.len() > 1000,
        "a real image, not a stub: {} bytes",
        png.len()
    );

    let (_, body) = browser(json!({"action": "close"})).await;
    assert_eq!(body["result"]["closed"], true, "{body}");
}
