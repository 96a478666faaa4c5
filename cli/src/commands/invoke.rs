//! `runner invoke [ENV] TOOL`: run a tool through the relay.

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::Result;
use reqwest::Method;
use runner_proto::api::{
    stream_frame, ErrorBody, InvokeRequest, InvokeResponse, DEFAULT_TIMEOUT_S, RUNNER_DISCONNECTED,
    STREAM_MEDIA_TYPE,
};
use runner_proto::approvals::{ApprovalTicket, OnApproval};
use runner_proto::ws::DENIED_BY_RUNNER_POLICY;
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
/// How long `invoke` keeps asking again after losing the relay mid-call
/// (connection refused or reset, a proxy's 502/503 while the relay
/// restarts): a restart, and the runner's reconnection to it (its backoff
/// grows to 60 s only after minutes of failures), fit well within it.
const RECOVERY_WINDOW: Duration = Duration::from_secs(90);
/// The first wait before asking again; it doubles up to [`MAX_RETRY_DELAY`].
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(500);
/// The longest wait between two attempts.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(5);

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
        // Always ours, so that a call whose answer was lost with the
        // connection can be asked for again without running twice.
        call_id: Some(
            flags
                .call_id
                .clone()
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
        ),
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

/// One `invoke-tool` call (of an environment or a session), printed as
/// asked. When the relay is lost before it answers, the same request (the
/// same call id: the relay never runs it twice) goes again, with backoff,
/// for up to [`RECOVERY_WINDOW`]: the relay answers with the call's
/// result, its failure, or waits for the runner still running it.
async fn invoke(
    client: &ApiClient,
    path: &str,
    args: &InvokeArgs,
    request: &InvokeRequest,
) -> Result<u8> {
    let wait = Duration::from_secs(args.timeout.unwrap_or(DEFAULT_TIMEOUT_S)) + TIMEOUT_MARGIN;
    let call_id = request.call_id.as_deref().unwrap_or_default();
    let mut recovery: Option<Recovery> = None;
    let mut streamed = [0u64; 2];
    loop {
        let attempt = Attempt {
            client,
            path,
            request,
            wait,
            args,
            recovering: recovery.is_some(),
        };
        let outcome = if args.stream {
            attempt.stream(&mut streamed).await
        } else {
            attempt.whole().await
        };
        let lost = match outcome {
            Ok(done) => return done,
            Err(lost) => lost,
        };
        let now = Instant::now();
        let recovery = recovery.get_or_insert_with(|| Recovery::new(now));
        let Some(delay) = recovery.next_delay(now) else {
            return Err(lost.give_up(call_id).into());
        };
        output::note(&format!(
            "lost the relay during call {call_id} ({}); asking again in {} ms with the same \
             call id, which never runs twice",
            lost.what,
            delay.as_millis()
        ));
        tokio::time::sleep(delay).await;
    }
}

/// Waits between attempts after the relay was lost.
#[derive(Debug)]
struct Recovery {
    deadline: Instant,
    next: Duration,
}

impl Recovery {
    /// Lost at `now`.
    fn new(now: Instant) -> Recovery {
        Recovery {
            deadline: now + RECOVERY_WINDOW,
            next: FIRST_RETRY_DELAY,
        }
    }

    /// The wait before the next attempt; `None` once the window is over.
    fn next_delay(&mut self, now: Instant) -> Option<Duration> {
        let left = self.deadline.saturating_duration_since(now);
        if left.is_zero() {
            return None;
        }
        let delay = self.next.min(left);
        self.next = (self.next * 2).min(MAX_RETRY_DELAY);
        Some(delay)
    }
}

/// The relay did not answer an attempt: the call may or may not be
/// running. Worth asking again.
#[derive(Debug)]
struct Lost {
    /// What happened, for the note on stderr.
    what: String,
    /// The error to end with when asking again stops: the relay's own
    /// answer when there was one, else "unreachable".
    answer: Option<ExitError>,
}

impl Lost {
    fn connection(error: &reqwest::Error) -> Lost {
        let what = if error.is_connect() {
            "could not connect"
        } else {
            "connection lost"
        };
        Lost {
            what: format!("{what}: {}", root_cause(error)),
            answer: None,
        }
    }

    /// The final error, naming the call so it can be fetched later.
    fn give_up(self, call_id: &str) -> ExitError {
        let fetch = format!(
            "run the same command with --call-id {call_id} to get the call's answer once the \
             relay and its runner are back (it is not run again)"
        );
        match self.answer {
            Some(answer) => answer.with_hint(fetch),
            None => ExitError::new(
                exit::UNREACHABLE,
                format!(
                    "lost the relay during call {call_id} and could not reach it again within {} s: {}",
                    RECOVERY_WINDOW.as_secs(),
                    self.what
                ),
            )
            .with_hint(fetch),
        }
    }
}

/// The innermost cause of a transport error ("Connection refused (os
/// error 111)"), which says what happened without reqwest's wrapping.
fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

/// A transport error of an attempt: the relay lost (ask again), unless it
/// is our own wait running out (the relay's 504 should have come first;
/// asking again would wait as long again), or the first attempt could not
/// connect at all (nothing was sent: a wrong URL, a relay that is not
/// running, a certificate refused are said at once, not after the whole
/// recovery window).
fn transport(
    url: &str,
    error: &reqwest::Error,
    recovering: bool,
) -> std::result::Result<Result<u8>, Lost> {
    if error.is_timeout() || (error.is_connect() && !recovering) {
        return Ok(Err(crate::client::unreachable(url, error)));
    }
    Err(Lost::connection(error))
}

/// An error answer: the relay's (final), or one that says the relay or
/// its runner is not back yet (ask again): a 502, 503 or 504 that is not
/// the relay's own (a proxy in front of a relay that is down), or, while
/// recovering, the relay's 503 `runner_not_connected` (restarted, and its
/// runner not reconnected yet).
fn error_answer(
    status: reqwest::StatusCode,
    body: &[u8],
    recovering: bool,
) -> std::result::Result<Result<u8>, Lost> {
    use reqwest::StatusCode;
    let code = serde_json::from_slice::<ErrorBody>(body)
        .ok()
        .map(|body| body.error.code);
    let answer = crate::client::status_error(status, body);
    let what = match (status, code.as_deref()) {
        (
            StatusCode::BAD_GATEWAY | StatusCode::SERVICE_UNAVAILABLE | StatusCode::GATEWAY_TIMEOUT,
            None,
        ) => format!("the relay's address answered {status}"),
        (StatusCode::SERVICE_UNAVAILABLE, Some("runner_not_connected")) if recovering => {
            "the runner has not reconnected to the relay yet".to_owned()
        }
        _ => return Ok(Err(answer.into())),
    };
    Err(Lost {
        what,
        answer: Some(answer),
    })
}

/// One attempt at the call.
struct Attempt<'a> {
    client: &'a ApiClient,
    path: &'a str,
    request: &'a InvokeRequest,
    wait: Duration,
    args: &'a InvokeArgs,
    /// An earlier attempt lost the relay.
    recovering: bool,
}

impl Attempt<'_> {
    /// The whole answer at once, printed as asked.
    async fn whole(&self) -> std::result::Result<Result<u8>, Lost> {
        let url = self.client.url(self.path);
        let sent = self
            .client
            .send(
                Method::POST,
                self.path,
                self.request,
                "application/json",
                self.wait,
            )
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(error) => return transport(&url, &error, self.recovering),
        };
        let status = response.status();
        let body = match response.bytes().await {
            Ok(body) => body,
            Err(error) => return transport(&url, &error, self.recovering),
        };
        if !status.is_success() {
            return error_answer(status, &body, self.recovering);
        }
        Ok(self.print_whole(&body).await)
    }

    async fn print_whole(&self, body: &[u8]) -> Result<u8> {
        let answer_or_ticket: Answer = serde_json::from_slice(body).map_err(|error| {
            anyhow::anyhow!("the relay's answer is not what this runner version expects: {error}")
        })?;
        let response = answer_or_ticket.settle(self.client, self.args).await?;
        answer(&response, self.args.api.json)
    }
    /// `--stream`: asks for the binary stream ([`STREAM_MEDIA_TYPE`]),
    /// writes the output to our stdout/stderr byte for byte as it arrives,
    /// and exits with the tool's code from the final result frame (printed
    /// as JSON with `--json`). A relay that does not stream answers with
    /// one JSON body, printed as without `--stream`. `streamed` counts the
    /// output bytes written, over every attempt.
    async fn stream(&self, streamed: &mut [u64; 2]) -> std::result::Result<Result<u8>, Lost> {
        let json = self.args.api.json;
        let url = self.client.url(self.path);
        let sent = self
            .client
            .send(
                Method::POST,
                self.path,
                self.request,
                STREAM_MEDIA_TYPE,
                self.wait,
            )
            .await;
        let mut response = match sent {
            Ok(response) => response,
            Err(error) => return transport(&url, &error, self.recovering),
        };
        let status = response.status();
        if !status.is_success() {
            return match response.bytes().await {
                Ok(body) => error_answer(status, &body, self.recovering),
                Err(error) => transport(&url, &error, self.recovering),
            };
        }
        let streamed_body = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with(STREAM_MEDIA_TYPE));
        if !streamed_body {
            // Not streamed: a relay that does not stream, or an approval to
            // wait for (an approved call's output comes whole, at its end).
            return match response.bytes().await {
                Ok(body) => Ok(self.print_whole(&body).await),
                Err(error) => transport(&url, &error, self.recovering),
            };
        }
        let mut frames = stream_frame::Reader::new(MAX_CONTROL_FRAME);
        let (mut stdout, mut stderr) =
            match (raw_output(std::io::stdout()), raw_output(std::io::stderr())) {
                (Ok(stdout), Ok(stderr)) => (stdout, stderr),
                (Err(error), _) | (_, Err(error)) => return Ok(Err(error)),
            };
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => {
                    // Cut short without an error: the relay went away.
                    return Err(Lost {
                        what: "the relay ended the stream without a result".to_owned(),
                        answer: None,
                    });
                }
                Err(error) => return transport(&url, &error, self.recovering),
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
                Err(stream_frame::ReadError::Output(error)) => return Ok(Err(error.into())),
                Err(error @ stream_frame::ReadError::ControlTooLarge { .. }) => {
                    return Ok(Err(ExitError::new(
                        exit::UNREACHABLE,
                        format!("the relay sent {error}"),
                    )
                    .into()))
                }
            };
            if let Some((kind, payload)) = control {
                return Ok(finish_frame(kind, &payload, json, *streamed));
            }
        }
    }
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

/// The exit of a streamed call from its last frame: the result, or the
/// relay's error.
fn finish_frame(kind: u8, payload: &[u8], json: bool, streamed: [u64; 2]) -> Result<u8> {
    if kind == stream_frame::RESULT {
        let response: InvokeResponse = serde_json::from_slice(payload).map_err(|error| {
            anyhow::anyhow!(
                "the relay's result frame is not what this runner version expects: {error}"
            )
        })?;
        if json {
            output::json(&response)?;
        } else {
            finish_stream(&response, streamed);
        }
        return Ok(exit_code_of(&response));
    }
    let code = serde_json::from_slice::<ErrorBody>(payload)
        .ok()
        .map(|body| body.error.code);
    let status = match code.as_deref() {
        Some("timeout") => reqwest::StatusCode::GATEWAY_TIMEOUT,
        Some(RUNNER_DISCONNECTED) => reqwest::StatusCode::SERVICE_UNAVAILABLE,
        Some(DENIED_BY_RUNNER_POLICY) => reqwest::StatusCode::FORBIDDEN,
        _ => reqwest::StatusCode::BAD_GATEWAY,
    };
    Err(crate::client::status_error(status, payload).into())
}

/// After a streamed call: what did not come live (streaming is best
/// effort), where the full output is kept, and the error if any. A stream
/// of which nothing came live (an answer asked for again after the relay
/// was lost comes without its output) is written from the result's
/// inline copy.
fn finish_stream(response: &InvokeResponse, streamed: [u64; 2]) {
    let result = &response.result;
    let text = |key: &str| result.get(key).and_then(Value::as_str);
    let bytes = |key: &str| result.get(key).and_then(Value::as_u64);
    for (index, name) in ["stdout", "stderr"].into_iter().enumerate() {
        let total = bytes(&format!("{name}_bytes"));
        let inline = text(name).filter(|inline| !inline.is_empty());
        if let (0, Some(inline)) = (streamed[index], inline) {
            let written = if index == 0 {
                std::io::stdout().write_all(inline.as_bytes())
            } else {
                std::io::stderr().write_all(inline.as_bytes())
            };
            // All of it: nothing to add. Otherwise (cut in the middle) the
            // note below says where the rest is.
            if written.is_ok() && total == Some(inline.len() as u64) {
                continue;
            }
        }
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
/// call without one exits 1. A call the runner stopped at its deadline
/// exits 75 like the relay's 504, whichever timeout it was (the call's or
/// the tool's own `timeout_s`): the killed process's 143 would read as the
/// command's own failure.
fn exit_code_of(response: &InvokeResponse) -> u8 {
    if response.error_code.as_deref() == Some(runner_proto::ws::TIMED_OUT) {
        return exit::TIMEOUT;
    }
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
    fn asking_again_backs_off_and_stops_after_the_window() {
        let lost = Instant::now();
        let mut recovery = Recovery::new(lost);
        let mut now = lost;
        let mut delays = Vec::new();
        while let Some(delay) = recovery.next_delay(now) {
            delays.push(delay);
            now += delay;
        }
        assert_eq!(
            delays[..4],
            [500, 1000, 2000, 4000].map(Duration::from_millis)
        );
        assert!(delays.iter().all(|delay| *delay <= MAX_RETRY_DELAY));
        assert_eq!(now - lost, RECOVERY_WINDOW, "bounded by the window");
        assert!(delays.len() < 25, "{} attempts", delays.len());
    }

    #[test]
    fn only_a_relay_that_is_not_back_yet_is_asked_again() {
        use reqwest::StatusCode;
        let ours = |code: &str| format!(r#"{{"error":{{"code":"{code}","message":"m"}}}}"#);
        // A proxy's answer while the relay is down.
        for status in [
            StatusCode::BAD_GATEWAY,
            StatusCode::SERVICE_UNAVAILABLE,
            StatusCode::GATEWAY_TIMEOUT,
        ] {
            assert!(
                error_answer(status, b"<html>down</html>", false).is_err(),
                "{status}"
            );
        }
        // The restarted relay before its runner is back: only while
        // recovering (otherwise the runner is just not there).
        let not_connected = ours("runner_not_connected");
        let status = StatusCode::SERVICE_UNAVAILABLE;
        assert!(error_answer(status, not_connected.as_bytes(), true).is_err());
        let answered = error_answer(status, not_connected.as_bytes(), false);
        assert!(matches!(answered, Ok(Err(_))), "{answered:?}");
        // The relay's own answers are final.
        for (status, code) in [
            (StatusCode::SERVICE_UNAVAILABLE, "runner_disconnected"),
            (StatusCode::GATEWAY_TIMEOUT, "timeout"),
            (StatusCode::FORBIDDEN, "denied_by_runner_policy"),
        ] {
            let answered = error_answer(status, ours(code).as_bytes(), true);
            assert!(matches!(answered, Ok(Err(_))), "{code}: {answered:?}");
        }
    }

    #[test]
    fn the_man_page_names_the_time_invoke_asks_again() {
        let unreachable = exit::TABLE
            .iter()
            .find(|(code, _)| *code == exit::UNREACHABLE)
            .map(|(_, text)| *text)
            .unwrap_or_default();
        let window = format!("{} s", RECOVERY_WINDOW.as_secs());
        assert!(unreachable.contains(&window), "{unreachable}");
    }

    #[test]
    fn exit_codes_follow_the_tool() {
        let response = |exit_code, error: Option<&str>| InvokeResponse {
            call_id: "c".into(),
            result: Value::Null,
            exit_code,
            error: error.map(str::to_owned),
            error_code: None,
            notice: None,
        };
        assert_eq!(exit_code_of(&response(Some(3), None)), 3);
        assert_eq!(exit_code_of(&response(Some(300), None)), 255);
        assert_eq!(exit_code_of(&response(None, Some("boom"))), 1);
        assert_eq!(exit_code_of(&response(None, None)), 0);
        let mut timed_out = response(Some(143), Some("timed out after 1s (the tool's timeout_s)"));
        timed_out.error_code = Some(runner_proto::ws::TIMED_OUT.to_owned());
        assert_eq!(exit_code_of(&timed_out), exit::TIMEOUT);
    }
}
