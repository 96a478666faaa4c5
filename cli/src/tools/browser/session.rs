//! The machine's Chromium, started on first use and kept with one page,
//! and the small DevTools-protocol (CDP) client that drives it. See
//! [`super`] for why it is our own client and how long the browser lives.

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
use tokio::sync::oneshot;
use tokio_tungstenite::tungstenite::Message;

use super::lines::next_line;

/// Time for Chromium to start and print its DevTools URL.
pub const LAUNCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Time for one CDP command (a screenshot of a big page is the slow one).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time for a page to finish loading after navigate or click.
pub const LOAD_TIMEOUT: Duration = Duration::from_secs(30);
/// Poll interval while waiting for `document.readyState == "complete"`.
const LOAD_POLL: Duration = Duration::from_millis(50);

/// The runner's browser, started on first use.
#[derive(Default)]
pub struct Session {
    pub(super) browser: tokio::sync::Mutex<Option<Browser>>,
}

/// A running Chromium with one attached page.
pub(super) struct Browser {
    /// Killed with its whole process group on drop.
    child: tokio::process::Child,
    _profile: tempfile::TempDir,
    pub(super) cdp: Cdp,
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
    pub(super) async fn launch(binary: &Path) -> Result<Browser, String> {
        let profile = tempfile::Builder::new()
            .prefix("runner-browser-")
            .tempdir()
            .map_err(|error| format!("cannot make a browser profile directory: {error}"))?;
        // In the tools' view: a `file://` page must not show the runner's
        // files either.
        let mut command = crate::exec::tool_process(binary)?;
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
        let mut stderr = tokio::io::BufReader::new(stderr);
        let mut buffer = Vec::new();
        let mut seen = Vec::new();
        let find_url = async {
            while let Some(line) = next_line(&mut stderr, &mut buffer).await {
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
        tokio::spawn(async move { while next_line(&mut stderr, &mut buffer).await.is_some() {} });
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
    pub(super) async fn page(&self, method: &str, params: Value) -> Result<Value, String> {
        self.cdp
            .command(method, params, Some(&self.session_id))
            .await
    }

    pub(super) async fn evaluate(&self, expression: &str) -> Result<Value, String> {
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

    pub(super) async fn navigate(&self, url: &str, timeout: Duration) -> Result<(), String> {
        let answer = self.page("Page.navigate", json!({"url": url})).await?;
        if let Some(error) = answer.get("errorText").and_then(Value::as_str) {
            if !error.is_empty() {
                return Err(format!("navigating to {url} failed: {error}"));
            }
        }
        self.wait_loaded(timeout).await
    }

    /// Polls `document.readyState` until the page has loaded.
    pub(super) async fn wait_loaded(&self, timeout: Duration) -> Result<(), String> {
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
pub(super) struct Cdp {
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

    pub(super) fn closed(&self) -> bool {
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
