//! Answers of the HTTP API as MCP tool results.
//!
//! A tool call goes through `invoke-tool` itself, so its answer is the
//! API's; here it becomes what a model reads:
//!
//! * a process tool's output as text (stdout, then stderr, then the exit
//!   code), `isError` when it exited non-zero or failed; long output is
//!   the runner's head/tail preview and names the file that keeps it all;
//! * a browser screenshot as an image;
//! * a relayed MCP server's result as that server gave it;
//! * anything else as its JSON;
//! * a call waiting for a person's approval as an error result naming the
//!   approval and how to wait for it; every other refusal or failure as an
//!   error result with the API's code and message.

use axum::body::to_bytes;
use axum::http::StatusCode;
use axum::response::Response;
use rmcp::model::{CallToolResult, ContentBlock};
use runner_proto::api::{ErrorBody, InvokeResponse};
use runner_proto::approvals::ApprovalTicket;
use serde::Serialize;
use serde_json::Value;

use crate::http::error::ApiError;

/// Largest answer read back from `invoke-tool` (its results are bounded by
/// the runner's inline output limits, far below this).
const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;

/// The MCP result of an `invoke-tool` answer.
async fn from_invoke(response: Response) -> CallToolResult {
    let status = response.status();
    let Ok(body) = to_bytes(response.into_body(), MAX_ANSWER_BYTES).await else {
        return failure("internal", "the call's answer could not be read", None);
    };
    match status {
        StatusCode::OK => match serde_json::from_slice::<InvokeResponse>(&body) {
            Ok(answer) => completed(answer),
            Err(_) => failure("internal", "the call's answer could not be read", None),
        },
        StatusCode::ACCEPTED => match serde_json::from_slice::<ApprovalTicket>(&body) {
            Ok(ticket) => approval_pending(&ticket),
            Err(_) => failure("internal", "the approval's ticket could not be read", None),
        },
        _ => match serde_json::from_slice::<ErrorBody>(&body) {
            Ok(ErrorBody { error }) => {
                failure(&error.code, &error.message, error.call_id.as_deref())
            }
            Err(_) => failure("internal", &format!("the call failed ({status})"), None),
        },
    }
}

/// The MCP result of `invoke-tool`'s answer or refusal.
pub async fn from_answer(answer: Result<Response, ApiError>) -> CallToolResult {
    match answer {
        Ok(response) => from_invoke(response).await,
        Err(error) => from_error(&error),
    }
}

/// The MCP result of an API error.
pub fn from_error(error: &ApiError) -> CallToolResult {
    failure(error.code, &error.message, error.call_id.as_deref())
}

/// A management tool's answer: its JSON, as text and as structured content.
pub fn structured(value: &impl Serialize) -> CallToolResult {
    match serde_json::to_value(value) {
        Ok(value) => CallToolResult::structured(value),
        Err(_) => failure("internal", "the answer could not be written as JSON", None),
    }
}

/// An error result: `code: message`, and the call id when there is one.
pub fn failure(code: &str, message: &str, call_id: Option<&str>) -> CallToolResult {
    let mut text = format!("{code}: {message}");
    if let Some(call_id) = call_id {
        text.push_str(&format!(" (call {call_id})"));
    }
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(serde_json::json!({
        "error": {"code": code, "message": message, "call_id": call_id}
    }));
    result
}

fn approval_pending(ticket: &ApprovalTicket) -> CallToolResult {
    let text = format!(
        "approval_pending: this call needs a person's approval. Approval {id} ({status}) \
         expires at {expires}. {message} To wait for the decision and the call's result, \
         call the tool `get_approval` with {{\"approval_id\": \"{id}\", \"wait_s\": 300}}; \
         the approved call runs once, under call id {call}.",
        id = ticket.approval_id,
        status = ticket.status.as_str(),
        expires = ticket.expires_at,
        message = ticket.message.trim_end(),
        call = ticket.call_id,
    );
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = serde_json::to_value(ticket).ok();
    result
}

/// A result that came back from the runner.
fn completed(answer: InvokeResponse) -> CallToolResult {
    let failed = answer.error.is_some() || answer.exit_code.is_some_and(|code| code != 0);
    let mut content = match relayed_content(&answer.result) {
        Some(Ok(relayed)) => return relayed,
        Some(Err(())) | None => content_of(&answer.result),
    };
    if let Some(code) = answer.exit_code {
        content.push(ContentBlock::text(format!("[exit code {code}]")));
    }
    if let Some(error) = &answer.error {
        content.push(ContentBlock::text(format!("[error] {error}")));
    }
    if let Some(notice) = &answer.notice {
        content.push(ContentBlock::text(format!("[notice] {notice}")));
    }
    if failed {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

/// A relayed MCP server's result (`content`, `is_error`,
/// `structured_content`), if `result` is one; `Err` if it claims to be and
/// is not.
fn relayed_content(result: &Value) -> Option<Result<CallToolResult, ()>> {
    let content = result.get("content")?.as_array()?;
    let blocks: Result<Vec<ContentBlock>, _> = content
        .iter()
        .map(|block| serde_json::from_value(block.clone()))
        .collect();
    let Ok(blocks) = blocks else {
        return Some(Err(()));
    };
    let is_error = result
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut relayed = if is_error {
        CallToolResult::error(blocks)
    } else {
        CallToolResult::success(blocks)
    };
    relayed.structured_content = result.get("structured_content").cloned();
    Some(Ok(relayed))
}

/// What a model reads of a built-in tool's result.
fn content_of(result: &Value) -> Vec<ContentBlock> {
    if let Some(png) = result.get("png_base64").and_then(Value::as_str) {
        return vec![ContentBlock::image(png, "image/png")];
    }
    if result.get("stdout").is_some() || result.get("stderr").is_some() {
        return process_output(result);
    }
    if let Some(text) = result.get("content").and_then(Value::as_str) {
        return vec![ContentBlock::text(text)];
    }
    vec![ContentBlock::text(
        serde_json::to_string_pretty(result).unwrap_or_else(|_| result.to_string()),
    )]
}

/// stdout, stderr (labelled), and what the runner said about cut output.
fn process_output(result: &Value) -> Vec<ContentBlock> {
    let text = |key: &str| result.get(key).and_then(Value::as_str).unwrap_or("");
    let mut content = Vec::new();
    if !text("stdout").is_empty() {
        content.push(ContentBlock::text(text("stdout")));
    }
    if !text("stderr").is_empty() {
        content.push(ContentBlock::text(format!("[stderr]\n{}", text("stderr"))));
    }
    for (key, stream) in [("stdout_file", "stdout"), ("stderr_file", "stderr")] {
        if !text(key).is_empty() {
            content.push(ContentBlock::text(format!(
                "[the whole {stream} is kept in {}]",
                text(key)
            )));
        }
    }
    if !text("note").is_empty() {
        content.push(ContentBlock::text(format!("[note] {}", text("note"))));
    }
    content
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn texts(result: &CallToolResult) -> Vec<String> {
        result
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(text) => Some(text.text.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn process_output_reads_as_text_and_a_non_zero_exit_is_an_error() {
        let answer = InvokeResponse {
            call_id: "c".into(),
            result: json!({"stdout": "hi\n", "stderr": "warn\n", "stdout_file": ".runner/out/c.stdout",
                           "truncated": true, "note": "cut"}),
            exit_code: Some(3),
            error: None,
            error_code: None,
            notice: None,
        };
        let result = completed(answer);
        assert_eq!(result.is_error, Some(true));
        let texts = texts(&result);
        assert_eq!(texts[0], "hi\n");
        assert_eq!(texts[1], "[stderr]\nwarn\n");
        assert!(texts[2].contains(".runner/out/c.stdout"), "{texts:?}");
        assert!(
            texts.iter().any(|text| text == "[exit code 3]"),
            "{texts:?}"
        );
    }

    #[test]
    fn screenshots_are_images_and_relayed_results_pass_through() {
        let shot = completed(InvokeResponse {
            call_id: "c".into(),
            result: json!({"png_base64": "iVBORw0KGgo=", "encoded_bytes": 12}),
            exit_code: None,
            error: None,
            error_code: None,
            notice: None,
        });
        assert_eq!(shot.is_error, Some(false));
        assert!(
            matches!(&shot.content[0], ContentBlock::Image(image) if image.mime_type == "image/png")
        );
        let relayed = completed(InvokeResponse {
            call_id: "c".into(),
            result: json!({"content": [{"type": "text", "text": "issue #4"}], "is_error": true}),
            exit_code: None,
            error: None,
            error_code: None,
            notice: None,
        });
        assert_eq!(relayed.is_error, Some(true));
        assert_eq!(texts(&relayed), ["issue #4"]);
    }

    #[test]
    fn failures_carry_the_api_code() {
        let result = failure("tool_not_allowed", "no", Some("c1"));
        assert_eq!(result.is_error, Some(true));
        assert_eq!(texts(&result), ["tool_not_allowed: no (call c1)"]);
    }
}
