//! `runner invoke [ENV] TOOL`: run a tool through the relay.

use std::io::Write;
use std::time::Duration;

use anyhow::Result;
use reqwest::Method;
use runner_proto::api::{
    stream_frame, InvokeRequest, InvokeResponse, DEFAULT_TIMEOUT_S, STREAM_MEDIA_TYPE,
};
use runner_proto::approvals::{ApprovalTicket, OnApproval};
use serde_json::{Map, Value};

use crate::args::InvokeArgs;
use crate::client::ApiClient;
use crate::config::Dirs;
use crate::env_vars;
use crate::exit::{self, ExitError};
use crate::output;

/// Extra time the HTTP request gets beyond the call's own timeout, so the
/// relay's 504 (which names the call) arrives before our client gives up.
const TIMEOUT_MARGIN: Duration = Duration::from_secs(15);

pub async fn run(dirs: &Dirs, args: InvokeArgs) -> Result<u8> {
    let target = Target::of(
        &args.target,
        args.session.as_deref(),
        std::env::var(env_vars::SESSION).ok(),
        std::env::var(env_vars::ENV).ok(),
    )?;
    let tool_args = build_args(&args.args, args.args_json.as_deref())?;
    let client = ApiClient::from_args(dirs, &args.api).await?;
    let (env, tool) = match target {
        Target::Session { session, tool } => {
            let request = invoke_request(tool, tool_args, &args);
            let path = format!("/sessions/{session}/invoke-tool");
            return invoke(&client, &path, &args, &request).await;
        }
        Target::Environment { env, tool } => (env, tool),
    };
    let request = invoke_request(tool, tool_args, &args);
    let path = |id: &str| format!("/execution-environments/{id}/invoke-tool");
    // An id goes straight into the invoke (one request, not two); only a
    // name needs looking up first.
    if !env.starts_with("env_") {
        let found = client.resolve_env(&env).await?;
        return invoke(&client, &path(&found.id), &args, &request).await;
    }
    match invoke(&client, &path(&env), &args, &request).await {
        Err(error) if exit_code(&error) == Some(exit::NOT_FOUND) => {
            // Nothing ran. A name that merely looks like an id, or an
            // unknown tool: the lookup tells which.
            let found = client.resolve_env(&env).await?;
            if found.id == env {
                return Err(error);
            }
            invoke(&client, &path(&found.id), &args, &request).await
        }
        other => other,
    }
}

fn invoke_request(tool: String, args: Value, flags: &InvokeArgs) -> InvokeRequest {
    InvokeRequest {
        tool_name: tool,
        args,
        timeout_s: flags.timeout,
        call_id: None,
        on_approval: if flags.wait_approval.is_some() {
            OnApproval::Wait
        } else {
            OnApproval::Refuse
        },
        approval_wait_s: None,
    }
}

/// What an `invoke-tool` answers with success: the call's answer, or (with
/// `"on_approval": "wait"`) the approval it waits for.
#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
enum Answer {
    Approval(ApprovalTicket),
    Done(InvokeResponse),
}

impl Answer {
    /// The call's answer, after waiting for its approval if it needs one.
    async fn settle(self, client: &ApiClient, args: &InvokeArgs) -> Result<InvokeResponse> {
        match self {
            Answer::Done(response) => Ok(response),
            Answer::Approval(ticket) => {
                // Only sent for --wait-approval, so it is set.
                let wait = args.wait_approval.unwrap_or(Duration::from_secs(
                    runner_proto::approvals::DEFAULT_APPROVAL_TTL_S,
                ));
                crate::commands::approvals::wait_for_call(client, &ticket, wait).await
            }
        }
    }
}

/// Where a call goes.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    Environment { env: String, tool: String },
    Session { session: String, tool: String },
}

impl Target {
    /// `ENV TOOL`; or `TOOL` with `--session`, else `RUNNER_SESSION`, else
    /// `RUNNER_ENV`. A named environment wins over both variables;
    /// `--session` with a named environment is a contradiction.
    fn of(
        target: &[String],
        session_flag: Option<&str>,
        session_var: Option<String>,
        env_var: Option<String>,
    ) -> Result<Target> {
        let set = |value: Option<String>| value.filter(|value| !value.trim().is_empty());
        match (target, session_flag) {
            ([env, _], Some(session)) => Err(ExitError::new(
                exit::USAGE,
                format!("both a session ({session}) and an environment ({env:?}) were given"),
            )
            .with_hint("a session's calls run where the session runs: drop ENV or --session")
            .into()),
            ([tool], Some(session)) => Ok(Target::Session {
                session: session.to_owned(),
                tool: tool.clone(),
            }),
            ([tool], None) => {
                if let Some(session) = set(session_var) {
                    return Ok(Target::Session {
                        session,
                        tool: tool.clone(),
                    });
                }
                let (env, tool) = env_and_tool(target, set(env_var))?;
                Ok(Target::Environment { env, tool })
            }
            _ => {
                let (env, tool) = env_and_tool(target, None)?;
                Ok(Target::Environment { env, tool })
            }
        }
    }
}

/// `ENV TOOL`, or `TOOL` alone with the environment from `RUNNER_ENV`
/// (flag over environment: a named environment wins).
fn env_and_tool(target: &[String], default_env: Option<String>) -> Result<(String, String)> {
    match target {
        [env, tool] => Ok((env.clone(), tool.clone())),
        [tool] => match default_env.filter(|env| !env.trim().is_empty()) {
            Some(env) => Ok((env, tool.clone())),
            None => Err(ExitError::new(
                exit::USAGE,
                format!("no environment named for tool {tool:?}"),
            )
            .with_hint(format!(
                "name it first (`runner invoke ENV {tool}`) or set {}",
                env_vars::ENV
            ))
            .into()),
        },
        _ => Err(ExitError::new(
            exit::USAGE,
            "give the environment and the tool: `runner invoke ENV TOOL`",
        )
        .into()),
    }
}

fn exit_code(error: &anyhow::Error) -> Option<u8> {
    error.downcast_ref::<ExitError>().map(|error| error.code)
}

/// One `invoke-tool` request (of an environment or a session), printed as
/// asked.
async fn invoke(
    client: &ApiClient,
    path: &str,
    args: &InvokeArgs,
    request: &InvokeRequest,
) -> Result<u8> {
    let wait = Duration::from_secs(args.timeout.unwrap_or(DEFAULT_TIMEOUT_S)) + TIMEOUT_MARGIN;
    if args.stream {
        return stream(client, path, request, wait, args).await;
    }
    let answer_or_ticket: Answer = client
        .request(Method::POST, path, Some(request), wait)
        .await?;
    let response = answer_or_ticket.settle(client, args).await?;
    answer(&response, args.api.json)
}

/// Prints a whole (not streamed) answer, as JSON with `--json`, and gives
/// the exit code.
fn answer(response: &InvokeResponse, json: bool) -> Result<u8> {
    if json {
        output::json(response)?;
    } else {
        if let Some(notice) = &response.notice {
            output::note(notice);
        }
        print_result(response)?;
    }
    Ok(exit_code_of(response))
}

/// `--stream`: asks for the binary stream ([`STREAM_MEDIA_TYPE`]), writes
/// the output to our stdout/stderr byte for byte as it arrives, and exits
/// with the tool's code from the final result frame (printed as JSON with
/// `--json`). A relay that does not stream answers with one JSON body,
/// printed as without `--stream`.
async fn stream(
    client: &ApiClient,
    path: &str,
    request: &InvokeRequest,
    wait: Duration,
    args: &InvokeArgs,
) -> Result<u8> {
    let json = args.api.json;
    let mut response = client
        .send_raw(Method::POST, path, request, STREAM_MEDIA_TYPE, wait)
        .await?;
    let streamed_body = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with(STREAM_MEDIA_TYPE));
    if !streamed_body {
        let bytes = response
            .bytes()
            .await
            .map_err(|error| anyhow::anyhow!("reading the answer failed: {error}"))?;
        // Not streamed: a relay that does not stream, or an approval to
        // wait for (an approved call's output comes whole, at its end).
        let answer_or_ticket: Answer = serde_json::from_slice(&bytes).map_err(|error| {
            anyhow::anyhow!("the relay's answer is not what this runner version expects: {error}")
        })?;
        let response = answer_or_ticket.settle(client, args).await?;
        return answer(&response, json);
    }
    let mut frames = stream_frame::Reader::new(MAX_CONTROL_FRAME);
    let mut streamed = [0u64; 2];
    let mut stdout = raw_output(std::io::stdout())?;
    let mut stderr = raw_output(std::io::stderr())?;
    loop {
        let chunk = response
            .chunk()
            .await
            .map_err(|error| anyhow::anyhow!("reading the stream failed: {error}"))?;
        let Some(chunk) = chunk else {
            return Err(ExitError::new(
                exit::UNREACHABLE,
                "the relay ended the stream without a result",
            )
            .into());
        };
        let control = frames.push(&chunk, |kind, piece| match kind {
            stream_frame::STDOUT => {
                streamed[0] += piece.len() as u64;
                stdout.write_all(piece)
            }
            stream_frame::STDERR => {
                streamed[1] += piece.len() as u64;
                stderr.write_all(piece)
            }
            // A kind from a newer relay.
            _ => Ok(()),
        });
        let control = match control {
            Ok(control) => control,
            Err(stream_frame::ReadError::Output(error)) => return Err(error.into()),
            Err(error @ stream_frame::ReadError::ControlTooLarge { .. }) => {
                return Err(
                    ExitError::new(exit::UNREACHABLE, format!("the relay sent {error}")).into(),
                )
            }
        };
        if let Some((kind, payload)) = control {
            match kind {
                stream_frame::RESULT => {
                    let response: InvokeResponse = serde_json::from_slice(&payload).map_err(|error| {
                        anyhow::anyhow!("the relay's result frame is not what this runner version expects: {error}")
                    })?;
                    if json {
                        output::json(&response)?;
                    } else {
                        finish_stream(&response, streamed);
                    }
                    return Ok(exit_code_of(&response));
                }
                _ => {
                    let code = serde_json::from_slice::<Value>(&payload)
                        .ok()
                        .and_then(|body| {
                            body.pointer("/error/code")
                                .and_then(Value::as_str)
                                .map(str::to_owned)
                        });
                    let status = match code.as_deref() {
                        Some("timeout") => reqwest::StatusCode::GATEWAY_TIMEOUT,
                        Some("runner_disconnected") => reqwest::StatusCode::SERVICE_UNAVAILABLE,
                        Some("denied_by_runner_policy") => reqwest::StatusCode::FORBIDDEN,
                        _ => reqwest::StatusCode::BAD_GATEWAY,
                    };
                    return Err(crate::client::status_error(status, &payload).into());
                }
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

/// Our stdout or stderr without std's line buffering (which copies binary
/// output and splits it at every newline): each frame is one `write`, so
/// output still appears as it arrives.
fn raw_output(stream: impl std::os::fd::AsFd) -> Result<std::fs::File> {
    Ok(std::fs::File::from(stream.as_fd().try_clone_to_owned()?))
}

/// Largest result or error frame this client accepts (results are
/// bounded by the runner's 16 MiB frame limit). Output frames are not held
/// whole, so their size does not matter.
const MAX_CONTROL_FRAME: usize = 64 * 1024 * 1024;

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
    fn the_environment_comes_from_the_command_line_then_runner_env() {
        let words = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        let pair = |env: &str, tool: &str| (env.to_owned(), tool.to_owned());
        assert_eq!(
            env_and_tool(&words(&["box", "shell"]), Some("other".into())).expect("named"),
            pair("box", "shell")
        );
        assert_eq!(
            env_and_tool(&words(&["shell"]), Some("dev".into())).expect("from RUNNER_ENV"),
            pair("dev", "shell")
        );
        for unset in [None, Some(String::new())] {
            let error = env_and_tool(&words(&["shell"]), unset).expect_err("no environment");
            let error = error.downcast_ref::<ExitError>().expect("an exit error");
            assert_eq!(error.code, exit::USAGE);
            assert!(error
                .hint
                .as_deref()
                .unwrap_or_default()
                .contains("RUNNER_ENV"));
        }
    }

    #[test]
    fn the_session_flag_then_a_named_environment_then_the_variables() {
        let words = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        let session = |id: &str| Target::Session {
            session: id.to_owned(),
            tool: "shell".to_owned(),
        };
        let env = |name: &str| Target::Environment {
            env: name.to_owned(),
            tool: "shell".to_owned(),
        };
        let of = |target: &[&str], flag: Option<&str>, var: Option<&str>, env_var: Option<&str>| {
            Target::of(
                &words(target),
                flag,
                var.map(str::to_owned),
                env_var.map(str::to_owned),
            )
        };
        assert_eq!(
            of(&["shell"], Some("ses_f"), Some("ses_v"), Some("dev")).expect("flag"),
            session("ses_f")
        );
        assert_eq!(
            of(&["shell"], None, Some("ses_v"), Some("dev")).expect("variable"),
            session("ses_v")
        );
        assert_eq!(
            of(&["box", "shell"], None, Some("ses_v"), None).expect("named wins"),
            env("box")
        );
        assert_eq!(
            of(&["shell"], None, Some(" "), Some("dev")).expect("blank is unset"),
            env("dev")
        );
        let error = of(&["box", "shell"], Some("ses_f"), None, None).expect_err("both");
        let error = error.downcast_ref::<ExitError>().expect("an exit error");
        assert_eq!(error.code, exit::USAGE);
    }

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
    fn exit_codes_follow_the_tool() {
        let response = |exit_code, error: Option<&str>| InvokeResponse {
            call_id: "c".into(),
            result: Value::Null,
            exit_code,
            error: error.map(str::to_owned),
            notice: None,
        };
        assert_eq!(exit_code_of(&response(Some(3), None)), 3);
        assert_eq!(exit_code_of(&response(Some(300), None)), 255);
        assert_eq!(exit_code_of(&response(None, Some("boom"))), 1);
        assert_eq!(exit_code_of(&response(None, None)), 0);
    }
}
