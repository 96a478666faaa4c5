//! `runner invoke ENV TOOL`: run a tool through the relay.

use std::io::Write;
use std::time::Duration;

use anyhow::Result;
use reqwest::Method;
use runner_proto::api::{InvokeRequest, InvokeResponse, DEFAULT_TIMEOUT_S};
use serde_json::{Map, Value};

use crate::args::InvokeArgs;
use crate::client::ApiClient;
use crate::config::Dirs;
use crate::exit::{self, ExitError};
use crate::output;

/// Extra time the HTTP request gets beyond the call's own timeout, so the
/// relay's 504 (which names the call) arrives before our client gives up.
const TIMEOUT_MARGIN: Duration = Duration::from_secs(15);

pub async fn run(dirs: &Dirs, args: InvokeArgs) -> Result<u8> {
    let tool_args = build_args(&args.args, args.args_json.as_deref())?;
    let client = ApiClient::from_args(dirs, &args.api).await?;
    let env = client.resolve_env(&args.env).await?;
    let request = InvokeRequest {
        tool_name: args.tool.clone(),
        args: tool_args,
        timeout_s: args.timeout,
        call_id: None,
    };
    let wait = Duration::from_secs(args.timeout.unwrap_or(DEFAULT_TIMEOUT_S)) + TIMEOUT_MARGIN;
    if args.stream {
        let path = format!("/execution-environments/{}/invoke-tool", env.id);
        return stream(&client, &path, &request, wait, args.api.json).await;
    }
    let response: InvokeResponse = client
        .request(
            Method::POST,
            &format!("/execution-environments/{}/invoke-tool", env.id),
            Some(&request),
            wait,
        )
        .await?;
    if args.api.json {
        output::json(&response)?;
    } else {
        print_result(&response)?;
    }
    Ok(exit_code_of(&response))
}

/// `--stream`: asks for Server-Sent Events, writes `output` events to our
/// stdout/stderr as they arrive, and exits with the tool's code from the
/// final `result` event (printed as JSON with `--json`).
async fn stream(
    client: &ApiClient,
    path: &str,
    request: &InvokeRequest,
    wait: Duration,
    json: bool,
) -> Result<u8> {
    let mut response = client
        .send_raw(Method::POST, path, request, "text/event-stream", wait)
        .await?;
    let mut events = EventParser::default();
    let mut streamed = [0u64; 2];
    loop {
        let chunk = response
            .chunk()
            .await
            .map_err(|error| anyhow::anyhow!("reading the event stream failed: {error}"))?;
        let Some(chunk) = chunk else {
            return Err(ExitError::new(
                exit::UNREACHABLE,
                "the relay ended the event stream without a result",
            )
            .into());
        };
        for (name, data) in events.push(&chunk) {
            match name.as_str() {
                "output" => {
                    let output: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
                    let text = output
                        .get("data")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if output.get("stream").and_then(Value::as_str) == Some("stderr") {
                        streamed[1] += text.len() as u64;
                        let mut stderr = std::io::stderr().lock();
                        stderr.write_all(text.as_bytes())?;
                        stderr.flush()?;
                    } else {
                        streamed[0] += text.len() as u64;
                        let mut stdout = std::io::stdout().lock();
                        stdout.write_all(text.as_bytes())?;
                        stdout.flush()?;
                    }
                }
                "result" => {
                    let response: InvokeResponse = serde_json::from_str(&data).map_err(|error| {
                        anyhow::anyhow!("the relay's result event is not what this runner version expects: {error}")
                    })?;
                    if json {
                        output::json(&response)?;
                    } else {
                        finish_stream(&response, streamed);
                    }
                    return Ok(exit_code_of(&response));
                }
                "error" => {
                    let status = match serde_json::from_str::<Value>(&data)
                        .ok()
                        .and_then(|body| {
                            body.pointer("/error/code")
                                .and_then(Value::as_str)
                                .map(str::to_owned)
                        })
                        .as_deref()
                    {
                        Some("timeout") => reqwest::StatusCode::GATEWAY_TIMEOUT,
                        Some("runner_disconnected") => reqwest::StatusCode::SERVICE_UNAVAILABLE,
                        _ => reqwest::StatusCode::BAD_GATEWAY,
                    };
                    return Err(crate::client::status_error(status, data.as_bytes()).into());
                }
                _ => {}
            }
        }
    }
}

/// After a streamed call: what did not come live (streaming is best
/// effort), where the full output is kept, and the error if any.
fn finish_stream(response: &InvokeResponse, streamed: [u64; 2]) {
    let result = &response.result;
    let text = |key: &str| result.get(key).and_then(Value::as_str);
    let bytes = |key: &str| result.get(key).and_then(Value::as_u64);
    for (index, name) in ["stdout", "stderr"].into_iter().enumerate() {
        let total = bytes(&format!("{name}_bytes"));
        if total.is_some_and(|total| total > streamed[index]) {
            let kept = text(&format!("{name}_file"))
                .map(|file| format!("; all of it is kept in {file} on the runner"))
                .unwrap_or_default();
            output::note(&format!(
                "note: {} of {} bytes of {name} arrived live{kept}",
                streamed[index],
                total.unwrap_or(0)
            ));
        }
    }
    let produced_output = bytes("stdout_bytes").is_some() || bytes("stderr_bytes").is_some();
    if !produced_output && !result.is_null() {
        // Tools without streamed output (file_read, http_local, …).
        let _ = print_result(response);
        return;
    }
    if let Some(error) = &response.error {
        output::note(&format!("error: {error}"));
    }
}

/// Splits a `text/event-stream` body into `(event, data)` pairs.
#[derive(Debug, Default)]
struct EventParser {
    buffer: String,
    carry: Vec<u8>,
}

impl EventParser {
    fn push(&mut self, bytes: &[u8]) -> Vec<(String, String)> {
        self.carry.extend_from_slice(bytes);
        let valid = match std::str::from_utf8(&self.carry) {
            Ok(text) => text.len(),
            Err(error) if error.error_len().is_none() => error.valid_up_to(),
            Err(_) => self.carry.len(),
        };
        self.buffer
            .push_str(&String::from_utf8_lossy(&self.carry[..valid]));
        self.carry.drain(..valid);
        let mut events = Vec::new();
        while let Some(end) = self.buffer.find("\n\n") {
            let block: String = self.buffer.drain(..end + 2).collect();
            let mut name = "message".to_owned();
            let mut data: Vec<&str> = Vec::new();
            for line in block.lines() {
                if let Some(value) = line.strip_prefix("event:") {
                    name = value.trim().to_owned();
                } else if let Some(value) = line.strip_prefix("data:") {
                    data.push(value.strip_prefix(' ').unwrap_or(value));
                }
            }
            if !data.is_empty() {
                events.push((name, data.join("\n")));
            }
        }
        events
    }
}

/// The tool's exit code, clamped to what a process can exit with; a failed
/// call without one exits 1.
fn exit_code_of(response: &InvokeResponse) -> u8 {
    match (response.exit_code, &response.error) {
        (Some(code), _) => u8::try_from(code.clamp(0, 255)).unwrap_or(exit::FAILURE),
        (None, Some(_)) => exit::FAILURE,
        (None, None) => exit::OK,
    }
}

fn print_result(response: &InvokeResponse) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    let result = &response.result;
    let text = |key: &str| result.get(key).and_then(Value::as_str);
    match (
        text("stdout"),
        text("stderr"),
        text("content"),
        text("encoding"),
    ) {
        (Some(out), err, _, _) => {
            stdout.write_all(out.as_bytes())?;
            stdout.flush()?;
            if let Some(err) = err {
                std::io::stderr().write_all(err.as_bytes())?;
            }
        }
        (None, _, Some(content), Some("utf-8")) => {
            stdout.write_all(content.as_bytes())?;
        }
        _ if result.is_null() => {}
        _ => {
            serde_json::to_writer_pretty(&mut stdout, result)?;
            writeln!(stdout)?;
        }
    }
    for name in ["stdout", "stderr", "body"] {
        if let Some(file) = text(&format!("{name}_file")) {
            output::note(&format!(
                "note: {name} was longer than the inline limit and is cut in the middle; all of it is kept in {file} on the runner"
            ));
        }
    }
    if let Some(error) = &response.error {
        output::note(&format!("error: {error}"));
    }
    Ok(())
}

/// `--arg k=v` (string) and `--arg k:=json`, merged over `--args-json`.
pub fn build_args(pairs: &[String], json: Option<&str>) -> Result<Value> {
    let mut map = match json {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(usage("--args-json must be a JSON object")),
            Err(error) => return Err(usage(&format!("--args-json is not valid JSON: {error}"))),
        },
    };
    for pair in pairs {
        let (key, value) = if let Some((key, raw)) = pair.split_once(":=") {
            let value = serde_json::from_str(raw)
                .map_err(|error| usage(&format!("--arg {key}:=… is not valid JSON: {error}")))?;
            (key, value)
        } else if let Some((key, raw)) = pair.split_once('=') {
            (key, Value::String(raw.to_owned()))
        } else {
            return Err(usage(&format!(
                "--arg {pair:?} must be KEY=VALUE or KEY:=JSON"
            )));
        };
        if key.is_empty() {
            return Err(usage(&format!("--arg {pair:?} has an empty key")));
        }
        map.insert(key.to_owned(), value);
    }
    Ok(Value::Object(map))
}

fn usage(message: &str) -> anyhow::Error {
    ExitError::new(exit::USAGE, message).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn args_merge_strings_json_and_the_base_object() {
        let args = build_args(
            &[
                "command=echo a=b".into(),
                "limit:=10".into(),
                "flag:=true".into(),
            ],
            Some(r#"{"limit": 1, "path": "x"}"#),
        )
        .expect("valid");
        assert_eq!(
            args,
            json!({"command": "echo a=b", "limit": 10, "flag": true, "path": "x"})
        );
    }

    #[test]
    fn bad_args_are_usage_errors() {
        for (pairs, json) in [
            (vec!["novalue".to_owned()], None),
            (vec!["=x".to_owned()], None),
            (vec!["n:=nope".to_owned()], None),
            (vec![], Some("[1]")),
            (vec![], Some("{")),
        ] {
            let error = build_args(&pairs, json).expect_err("must fail");
            let code = error.downcast_ref::<ExitError>().map(|e| e.code);
            assert_eq!(code, Some(exit::USAGE), "{pairs:?} {json:?}");
        }
    }

    #[test]
    fn event_streams_split_into_events_across_chunks() {
        let mut parser = EventParser::default();
        assert!(parser.push(b"event: output\ndata: {\"a\":").is_empty());
        let events = parser.push(b"1}\n\n: keep-alive\n\nevent: result\ndata: x\ndata: y\n\n");
        assert_eq!(
            events,
            vec![
                ("output".to_owned(), "{\"a\":1}".to_owned()),
                ("result".to_owned(), "x\ny".to_owned())
            ]
        );
        let euro = "€".as_bytes();
        assert!(parser
            .push(&[b"data: "[..].to_vec(), euro[..1].to_vec()].concat())
            .is_empty());
        let events = parser.push(&[euro[1..].to_vec(), b"\n\n".to_vec()].concat());
        assert_eq!(events, vec![("message".to_owned(), "€".to_owned())]);
    }

    #[test]
    fn exit_codes_follow_the_tool() {
        let response = |exit_code, error: Option<&str>| InvokeResponse {
            call_id: "c".into(),
            result: Value::Null,
            exit_code,
            error: error.map(str::to_owned),
        };
        assert_eq!(exit_code_of(&response(Some(3), None)), 3);
        assert_eq!(exit_code_of(&response(Some(300), None)), 255);
        assert_eq!(exit_code_of(&response(None, Some("boom"))), 1);
        assert_eq!(exit_code_of(&response(None, None)), 0);
    }
}
