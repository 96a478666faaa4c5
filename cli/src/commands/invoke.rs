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
    };
    let wait = Duration::from_secs(args.timeout.unwrap_or(DEFAULT_TIMEOUT_S)) + TIMEOUT_MARGIN;
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
    match (text("stdout"), text("stderr"), text("content"), text("encoding")) {
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
            &["command=echo a=b".into(), "limit:=10".into(), "flag:=true".into()],
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
        };
        assert_eq!(exit_code_of(&response(Some(3), None)), 3);
        assert_eq!(exit_code_of(&response(Some(300), None)), 255);
        assert_eq!(exit_code_of(&response(None, Some("boom"))), 1);
        assert_eq!(exit_code_of(&response(None, None)), 0);
    }
}
