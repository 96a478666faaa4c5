//! `browser`: drives the machine's Chromium through the DevTools protocol
//! (CDP): navigate, read text or HTML, screenshot (PNG as base64), click and
//! type by CSS selector, evaluate an expression.
//!
//! # Why a small CDP client instead of chromiumoxide
//!
//! chromiumoxide is the well-kept crate for this, but it compiles the whole
//! generated protocol (`chromiumoxide_cdp`, every domain and type of CDP).
//! Measured on this project's 2-core machine (cold `cargo build --timings`
//! of a scratch crate with `chromiumoxide = { version = "0.9.1",
//! default-features = false }` and tokio, machine shared with other
//! builds): 600 s wall; `chromiumoxide_cdp` alone took 357 s and
//! `chromiumoxide` 140 s, one after the other. That is far over the ~3
//! minutes of CI time the project can spend on a browser. We use a handful
//! of CDP methods (`Target.createTarget`, `Target.attachToTarget`,
//! `Page.navigate`, `Page.captureScreenshot`, `Runtime.evaluate`,
//! `Input.insertText`, `Emulation.setDeviceMetricsOverride`), so this
//! module speaks them directly over tokio-tungstenite (already a
//! dependency for the relay connection) and serde_json.
//!
//! # Lifecycle
//!
//! The browser starts at the first call (headless, its own throw-away
//! profile directory, its own process group) and stays up with one page, so
//! an agent can navigate, then click, then screenshot across calls. Calls
//! are serialised on that page. If the browser dies, the next call starts a
//! new one; `{"action": "close"}` stops it. The DevTools URL is read from
//! Chromium's stderr (`--remote-debugging-port=0` picks a free port).

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt;
use tokio::sync::oneshot;
use tokio_tungstenite::tungstenite::Message;

use super::{
    optional_bool_arg, optional_string_arg, optional_u64_arg, CallScope, ToolContext, ToolOutcome,
};

/// Time for Chromium to start and print its DevTools URL.
pub const LAUNCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Time for one CDP command (a screenshot of a big page is the slow one).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time for a page to finish loading after navigate or click.
pub const LOAD_TIMEOUT: Duration = Duration::from_secs(30);
/// Poll interval while waiting for `document.readyState == "complete"`.
const LOAD_POLL: Duration = Duration::from_millis(50);

pub fn spec() -> runner_proto::ws::ToolSpec {
    runner_proto::ws::ToolSpec {
        name: "browser".into(),
        description: "Drive a headless Chromium on the runner's machine: navigate, text, html, screenshot (PNG base64), click/type by CSS selector, evaluate, close. The page persists between calls.".into(),
        input_schema: json!({
            "type": "object",
            "required": ["action"],
            "additionalProperties": false,
            "properties": {
                "action": {"enum": ["navigate", "text", "html", "screenshot", "click", "type", "evaluate", "close"]},
                "url": {"type": "string", "description": "navigate: where to; other actions: navigate here first"},
                "selector": {"type": "string", "description": "CSS selector (click, type; text/html of one element)"},
                "text": {"type": "string", "description": "type: the text to insert"},
                "expression": {"type": "string", "description": "evaluate: a JavaScript expression; its JSON value is returned"},
                "full_page": {"type": "boolean", "description": "screenshot: the whole page, not only the viewport"},
                "width": {"type": "integer", "minimum": 100, "maximum": 8000},
                "height": {"type": "integer", "minimum": 100, "maximum": 8000}
            }
        }),
    }
}

/// The runner's browser, started on first use.
#[derive(Default)]
pub struct Session {
    browser: tokio::sync::Mutex<Option<Browser>>,
}

pub async fn run(args: Value, context: &ToolContext, scope: &CallScope) -> ToolOutcome {
    let Some(binary) = context.toolbox.binary("browser") else {
        return ToolOutcome::error("no Chromium found on this runner's PATH");
    };
    let work = async {
        let mut slot = context.toolbox.browser().browser.lock().await;
        let action = super::string_arg(&args, "action")?.to_owned();
        if action == "close" {
            let was_running = slot.take().is_some();
            return Ok(json!({"closed": was_running}));
        }
        if slot.as_ref().is_some_and(|browser| browser.cdp.closed()) {
            *slot = None;
        }
        if slot.is_none() {
            *slot = Some(Browser::launch(&binary).await?);
        }
        let Some(browser) = slot.as_ref() else {
            return Err("the browser did not start".to_owned());
        };
        let result = act(browser, &action, &args, scope).await;
        if browser.cdp.closed() {
            *slot = None;
        }
        result
    };
    tokio::select! {
        result = work => ToolOutcome::from_result(result),
        () = scope.cancel.cancelled() => ToolOutcome::error("cancelled"),
        () = tokio::time::sleep(scope.timeout) => ToolOutcome::error(format!("timed out after {}s", scope.timeout.as_secs())),
    }
}

async fn act(
    browser: &Browser,
    action: &str,
    args: &Value,
    scope: &CallScope,
) -> Result<Value, String> {
    let load_timeout = LOAD_TIMEOUT.min(scope.timeout);
    if let (Some(width), Some(height)) = (
        optional_u64_arg(args, "width")?,
        optional_u64_arg(args, "height")?,
    ) {
        browser
            .page(
                "Emulation.setDeviceMetricsOverride",
                json!({
                    "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false
                }),
            )
            .await?;
    }
    let url = optional_string_arg(args, "url")?;
    if let Some(url) = url {
        browser.navigate(url, load_timeout).await?;
    } else if action == "navigate" {
        return Err("navigate needs a \"url\"".to_owned());
    }
    let selector = optional_string_arg(args, "selector")?;
    let mut result = match action {
        "navigate" => json!({}),
        "text" | "html" => {
            let property = if action == "text" {
                "innerText"
            } else {
                "outerHTML"
            };
            let expression = match selector {
                Some(selector) => format!(
                    "(() => {{ const el = document.querySelector({}); return el ? el.{property} : null; }})()",
                    js_string(selector)
                ),
                None if action == "text" => "document.body ? document.body.innerText : ''".to_owned(),
                None => "document.documentElement.outerHTML".to_owned(),
            };
            match browser.evaluate(&expression).await? {
                Value::Null => return Err(no_match(selector)),
                value => json!({ action: value }),
            }
        }
        "screenshot" => {
            let full_page = optional_bool_arg(args, "full_page")?.unwrap_or(false);
            let shot = browser
                .page(
                    "Page.captureScreenshot",
                    json!({"format": "png", "captureBeyondViewport": full_page}),
                )
                .await?;
            let data = shot.get("data").and_then(Value::as_str).unwrap_or_default();
            json!({"png_base64": data, "encoded_bytes": data.len()})
        }
        "click" => {
            let selector = selector.ok_or("click needs a \"selector\"")?;
            let expression = format!(
                "(() => {{ const el = document.querySelector({}); if (!el) return false; el.scrollIntoView({{block: 'center'}}); el.click(); return true; }})()",
                js_string(selector)
            );
            if browser.evaluate(&expression).await? != Value::Bool(true) {
                return Err(no_match(Some(selector)));
            }
            browser.wait_loaded(load_timeout).await?;
            json!({"clicked": selector})
        }
        "type" => {
            let selector = selector.ok_or("type needs a \"selector\"")?;
            let text = optional_string_arg(args, "text")?.ok_or("type needs a \"text\"")?;
            let expression = format!(
                "(() => {{ const el = document.querySelector({}); if (!el) return false; el.focus(); return true; }})()",
                js_string(selector)
            );
            if browser.evaluate(&expression).await? != Value::Bool(true) {
                return Err(no_match(Some(selector)));
            }
            browser
                .page("Input.insertText", json!({"text": text}))
                .await?;
            json!({"typed": text.chars().count(), "into": selector})
        }
        "evaluate" => {
            let expression = optional_string_arg(args, "expression")?
                .ok_or("evaluate needs an \"expression\"")?;
            json!({"value": browser.evaluate(expression).await?})
        }
        other => return Err(format!("unknown browser action {other:?}")),
    };
    let location = browser
        .evaluate("JSON.stringify([location.href, document.title])")
        .await
        .ok()
        .and_then(|value| {
            value
                .as_str()
                .and_then(|text| serde_json::from_str::<Value>(text).ok())
        });
    if let Some(Value::Array(parts)) = location {
        result["url"] = parts.first().cloned().unwrap_or(Value::Null);
        result["title"] = parts.get(1).cloned().unwrap_or(Value::Null);
    }
    Ok(result)
}

fn no_match(selector: Option<&str>) -> String {
    match selector {
        Some(selector) => format!("no element matches the selector {selector:?}"),
        None => "the page has no content".to_owned(),
    }
}

/// A JavaScript string literal (JSON's is one).
fn js_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// A running Chromium with one attached page.
struct Browser {
    /// Killed with its whole process group on drop.
    child: tokio::process::Child,
    _profile: tempfile::TempDir,
    cdp: Cdp,
    session_id: String,
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id().and_then(|id| i32::try_from(id).ok()) {
            // Chromium's renderer and zygote processes share its group.
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

impl Browser {
    async fn launch(binary: &Path) -> Result<Browser, String> {
        let profile = tempfile::Builder::new()
            .prefix("runner-browser-")
            .tempdir()
            .map_err(|error| format!("cannot make a browser profile directory: {error}"))?;
        let mut command = tokio::process::Command::new(binary);
        super::keep_secrets_from(&mut command);
        let mut child = command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--remote-debugging-port=0",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-quic",
                "--hide-scrollbars",
                "--mute-audio",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| format!("cannot start {}: {error}", binary.display()))?;
        let stderr = child.stderr.take().ok_or("no stderr from the browser")?;
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        let mut seen = Vec::new();
        let find_url = async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line
                    .split_whitespace()
                    .find(|word| word.starts_with("ws://"))
                {
                    if line.contains("DevTools listening on") {
                        return Some(url.to_owned());
                    }
                }
                if seen.len() < 20 {
                    seen.push(line);
                }
            }
            None
        };
        let url = match tokio::time::timeout(LAUNCH_TIMEOUT, find_url).await {
            Ok(Some(url)) => url,
            Ok(None) => {
                return Err(format!(
                    "{} exited before listening: {}",
                    binary.display(),
                    seen.join(" | ")
                ))
            }
            Err(_) => {
                return Err(format!(
                    "{} did not open its DevTools port within {} s",
                    binary.display(),
                    LAUNCH_TIMEOUT.as_secs()
                ))
            }
        };
        // Keep draining stderr so Chromium never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let cdp = Cdp::connect(&url).await?;
        let target = cdp
            .command("Target.createTarget", json!({"url": "about:blank"}), None)
            .await?;
        let target_id = target
            .get("targetId")
            .and_then(Value::as_str)
            .ok_or("Target.createTarget returned no targetId")?;
        let attached = cdp
            .command(
                "Target.attachToTarget",
                json!({"targetId": target_id, "flatten": true}),
                None,
            )
            .await?;
        let session_id = attached
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or("Target.attachToTarget returned no sessionId")?
            .to_owned();
        tracing::info!(browser = %binary.display(), "browser started");
        Ok(Browser {
            child,
            _profile: profile,
            cdp,
            session_id,
        })
    }

    /// A command on the page's session.
    async fn page(&self, method: &str, params: Value) -> Result<Value, String> {
        self.cdp
            .command(method, params, Some(&self.session_id))
            .await
    }

    async fn evaluate(&self, expression: &str) -> Result<Value, String> {
        let answer = self
            .page(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await?;
        if let Some(details) = answer.get("exceptionDetails") {
            let text = details
                .pointer("/exception/description")
                .or_else(|| details.get("text"))
                .and_then(Value::as_str)
                .unwrap_or("exception");
            return Err(format!("the page threw: {text}"));
        }
        Ok(answer
            .pointer("/result/value")
            .cloned()
            .unwrap_or(Value::Null))
    }

    async fn navigate(&self, url: &str, timeout: Duration) -> Result<(), String> {
        let answer = self.page("Page.navigate", json!({"url": url})).await?;
        if let Some(error) = answer.get("errorText").and_then(Value::as_str) {
            if !error.is_empty() {
                return Err(format!("navigating to {url} failed: {error}"));
            }
        }
        self.wait_loaded(timeout).await
    }

    /// Polls `document.readyState` until the page has loaded.
    async fn wait_loaded(&self, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            // Evaluation can fail while a navigation swaps the document.
            if let Ok(Value::String(state)) = self.evaluate("document.readyState").await {
                if state == "complete" {
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the page did not finish loading within {} s",
                    timeout.as_secs()
                ));
            }
            tokio::time::sleep(LOAD_POLL).await;
        }
    }
}

type WsSink = SplitSink<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    Message,
>;
type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;

/// A CDP connection: numbered commands, answers matched by id. Events are
/// not needed (page loads are polled) and are dropped.
struct Cdp {
    sink: tokio::sync::Mutex<WsSink>,
    pending: Pending,
    next_id: AtomicU64,
    closed: Arc<AtomicBool>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Cdp {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

fn lock(
    pending: &Pending,
) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Result<Value, String>>>> {
    // Only single inserts and removes happen under this lock.
    pending
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Cdp {
    async fn connect(url: &str) -> Result<Cdp, String> {
        let (socket, _) =
            tokio::time::timeout(LAUNCH_TIMEOUT, tokio_tungstenite::connect_async(url))
                .await
                .map_err(|_| format!("connecting to the browser at {url} timed out"))?
                .map_err(|error| format!("connecting to the browser at {url}: {error}"))?;
        let (sink, mut stream) = socket.split();
        let pending: Pending = Arc::default();
        let closed = Arc::new(AtomicBool::new(false));
        let reader = {
            let pending = Arc::clone(&pending);
            let closed = Arc::clone(&closed);
            tokio::spawn(async move {
                while let Some(Ok(message)) = stream.next().await {
                    let Message::Text(text) = message else {
                        continue;
                    };
                    let Ok(frame) = serde_json::from_str::<Value>(text.as_str()) else {
                        continue;
                    };
                    let Some(id) = frame.get("id").and_then(Value::as_u64) else {
                        continue;
                    };
                    let answer = match frame.get("error") {
                        Some(error) => Err(format!(
                            "browser: {}",
                            error
                                .get("message")
                                .and_then(Value::as_str)
                                .unwrap_or("error")
                        )),
                        None => Ok(frame.get("result").cloned().unwrap_or(Value::Null)),
                    };
                    if let Some(waiter) = lock(&pending).remove(&id) {
                        let _ = waiter.send(answer);
                    }
                }
                closed.store(true, Ordering::Relaxed);
                // Waiters see their channel close: "the browser went away".
                lock(&pending).clear();
            })
        };
        Ok(Cdp {
            sink: tokio::sync::Mutex::new(sink),
            pending,
            next_id: AtomicU64::new(1),
            closed,
            reader,
        })
    }

    fn closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    async fn command(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut frame = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            frame["sessionId"] = json!(session);
        }
        let (sender, answer) = oneshot::channel();
        lock(&self.pending).insert(id, sender);
        let sent = self
            .sink
            .lock()
            .await
            .send(Message::Text(frame.to_string().into()))
            .await;
        if let Err(error) = sent {
            lock(&self.pending).remove(&id);
            self.closed.store(true, Ordering::Relaxed);
            return Err(format!("browser connection lost: {error}"));
        }
        match tokio::time::timeout(COMMAND_TIMEOUT, answer).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err("the browser went away".to_owned()),
            Err(_) => {
                lock(&self.pending).remove(&id);
                Err(format!(
                    "{method} got no answer within {} s",
                    COMMAND_TIMEOUT.as_secs()
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_become_safe_javascript_strings() {
        assert_eq!(js_string("a[href=\"x\"]"), r#""a[href=\"x\"]""#);
        assert_eq!(js_string("</script>'"), r#""</script>'""#);
    }
}
