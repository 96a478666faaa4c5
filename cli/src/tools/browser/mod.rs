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

pub mod install;
mod lines;
pub mod session;

use runner_proto::tools;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::context::ToolContext;
use super::tool::{Running, Tool};
use super::toolbox::Toolbox;
use crate::call::{CallScope, ToolOutcome};
use session::{Browser, LOAD_TIMEOUT};

pub struct Browse;

/// The arguments of `browser`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BrowserArgs {
    pub action: Action,
    /// navigate: where to; other actions: navigate here first
    pub url: Option<String>,
    /// CSS selector (click, type; text/html of one element)
    pub selector: Option<String>,
    /// type: the text to insert
    pub text: Option<String>,
    /// evaluate: a JavaScript expression; its JSON value is returned
    pub expression: Option<String>,
    /// screenshot: the whole page, not only the viewport
    pub full_page: Option<bool>,
    #[schemars(range(min = 100, max = 8000))]
    pub width: Option<u64>,
    #[schemars(range(min = 100, max = 8000))]
    pub height: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Navigate,
    Text,
    Html,
    Screenshot,
    Click,
    Type,
    Evaluate,
    Close,
}

impl Tool for Browse {
    type Args = BrowserArgs;

    fn name(&self) -> &'static str {
        tools::BROWSER
    }

    fn description(&self) -> String {
        "Drive a headless Chromium on the runner's machine: navigate, text, html, screenshot (PNG base64), click/type by CSS selector, evaluate, close. The page persists between calls.".into()
    }

    fn offered(&self, toolbox: &Toolbox) -> bool {
        toolbox.binary("browser").is_some()
    }

    fn run<'a>(
        &'a self,
        args: BrowserArgs,
        context: &'a ToolContext,
        scope: &'a CallScope,
    ) -> Running<'a> {
        Box::pin(run(args, context, scope))
    }
}

async fn run(args: BrowserArgs, context: &ToolContext, scope: &CallScope) -> ToolOutcome {
    let Some(binary) = context.toolbox.binary("browser") else {
        return ToolOutcome::error("no Chromium found on this runner's PATH");
    };
    let work = async {
        let mut slot = context.toolbox.browser().browser.lock().await;
        let action = args.action;
        if action == Action::Close {
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
        let result = act(browser, action, &args, scope).await;
        if browser.cdp.closed() {
            *slot = None;
        }
        result
    };
    tokio::select! {
        result = work => ToolOutcome::from_result(result),
        () = scope.cancel.cancelled() => ToolOutcome::error("cancelled"),
        () = tokio::time::sleep(scope.timeout) => ToolOutcome::error(scope.limit.timed_out()),
    }
}

async fn act(
    browser: &Browser,
    action: Action,
    args: &BrowserArgs,
    scope: &CallScope,
) -> Result<Value, String> {
    let load_timeout = LOAD_TIMEOUT.min(scope.timeout);
    if let (Some(width), Some(height)) = (args.width, args.height) {
        browser
            .page(
                "Emulation.setDeviceMetricsOverride",
                json!({
                    "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false
                }),
            )
            .await?;
    }
    if let Some(url) = &args.url {
        browser.navigate(url, load_timeout).await?;
    } else if action == Action::Navigate {
        return Err("navigate needs a \"url\"".to_owned());
    }
    let selector = args.selector.as_deref();
    let mut result = match action {
        Action::Navigate | Action::Close => json!({}),
        Action::Text | Action::Html => {
            let property = if action == Action::Text {
                "innerText"
            } else {
                "outerHTML"
            };
            let expression = match selector {
                Some(selector) => format!(
                    "(() => {{ const el = document.querySelector({}); return el ? el.{property} : null; }})()",
                    js_string(selector)
                ),
                None if action == Action::Text => "document.body ? document.body.innerText : ''".to_owned(),
                None => "document.documentElement.outerHTML".to_owned(),
            };
            match browser.evaluate(&expression).await? {
                Value::Null => return Err(no_match(selector)),
                value if action == Action::Text => json!({ "text": value }),
                value => json!({ "html": value }),
            }
        }
        Action::Screenshot => {
            let full_page = args.full_page.unwrap_or(false);
            let shot = browser
                .page(
                    "Page.captureScreenshot",
                    json!({"format": "png", "captureBeyondViewport": full_page}),
                )
                .await?;
            let data = shot.get("data").and_then(Value::as_str).unwrap_or_default();
            json!({"png_base64": data, "encoded_bytes": data.len()})
        }
        Action::Click => {
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
        Action::Type => {
            let selector = selector.ok_or("type needs a \"selector\"")?;
            let text = args.text.as_deref().ok_or("type needs a \"text\"")?;
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
        Action::Evaluate => {
            let expression = args
                .expression
                .as_deref()
                .ok_or("evaluate needs an \"expression\"")?;
            json!({"value": browser.evaluate(expression).await?})
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_become_safe_javascript_strings() {
        assert_eq!(js_string("a[href=\"x\"]"), r#""a[href=\"x\"]""#);
        assert_eq!(js_string("</script>'"), r#""</script>'""#);
    }
}
