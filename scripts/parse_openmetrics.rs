//! Runs scripts/parse-openmetrics.py (the Prometheus Python client's
//! OpenMetrics parser) on an exposition, for the metrics tests of both the
//! runner and the relay, which include this file with `#[path]`.

use std::process::{Command, Stdio};

use serde_json::Value;

/// The families of an exposition as the Python parser reads them, as JSON.
/// Fails (never skips) when the parser is not installed.
pub fn parse_json(text: &str) -> Value {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scripts/parse-openmetrics.py"
    );
    let candidates: Vec<String> = std::env::var("RUNNER_TEST_PYTHON")
        .into_iter()
        .chain(["/usr/bin/python3".to_owned(), "python3".to_owned()])
        .collect();
    for python in &candidates {
        let Ok(mut child) = Command::new(python)
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
        else {
            continue;
        };
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("stdin");
            stdin
                .write_all(text.as_bytes())
                .expect("exposition written");
        }
        let output = child.wait_with_output().expect("parser ran");
        match output.status.code() {
            Some(0) => return serde_json::from_slice(&output.stdout).expect("parser JSON"),
            // This python has no Prometheus client: try the next one.
            Some(3) => continue,
            _ => panic!(
                "the Prometheus parser rejected the exposition: {}\n{text}",
                String::from_utf8_lossy(&output.stderr)
            ),
        }
    }
    panic!(
        "no Python with the Prometheus client found (tried {candidates:?}): install \
         python3-prometheus-client (scripts/install-test-deps.sh), or point RUNNER_TEST_PYTHON \
         at a python3 that has it"
    );
}
