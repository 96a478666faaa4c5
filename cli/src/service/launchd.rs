//! The launchd property list for macOS (a LaunchDaemon).

use super::ServiceSpec;
use crate::exit;

/// Label and file name.
pub const LABEL: &str = "dev.runner.runner";
/// Where it is installed.
pub const PLIST_PATH: &str = "/Library/LaunchDaemons/dev.runner.runner.plist";

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// launchd has no `EnvironmentFile` and no `RestartPreventExitStatus`: the
/// runner is started through a small shell wrapper that sources the env
/// file (settings stay in one place on both systems), forwards SIGTERM, and
/// turns "stopped by the relay" and "bad config" into exit 0, which
/// `KeepAlive { SuccessfulExit = false }` does not restart.
pub fn plist(spec: &ServiceSpec) -> String {
    let user = spec
        .run_as
        .as_ref()
        .map_or(super::SERVICE_USER, |run_as| run_as.name.as_str());
    let state = escape(&spec.state_dir.display().to_string());
    let command = format!(
        "set -a; . '{env}'; set +a; '{bin}' run & pid=$!; \
         trap 'kill -TERM \"$pid\" 2>/dev/null' TERM INT; \
         wait \"$pid\"; code=$?; \
         if kill -0 \"$pid\" 2>/dev/null; then wait \"$pid\"; code=$?; fi; \
         case $code in {stopped}|{config}) exit 0;; esac; exit $code",
        env = spec.env_file.display(),
        bin = spec.binary.display(),
        stopped = exit::STOPPED_BY_RELAY,
        config = exit::CONFIG,
    );
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>{LABEL}</string>
  <key>ProgramArguments</key>
  <array>
    <string>/bin/sh</string>
    <string>-c</string>
    <string>{command}</string>
  </array>
  <key>UserName</key>
  <string>{user}</string>
  <key>EnvironmentVariables</key>
  <dict>
    <key>RUNNER_STATE_DIR</key>
    <string>{state}</string>
    <key>RUNNER_CONFIG_DIR</key>
    <string>{state}/config</string>
    <key>RUNNER_WORKSPACE</key>
    <string>{state}/workspace</string>
    <key>RUNNER_CREDENTIAL_STORE</key>
    <string>file</string>
  </dict>
  <key>WorkingDirectory</key>
  <string>{state}</string>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <dict>
    <!-- Restart on failure; the wrapper exits 0 for codes {stopped} and {config} -->
    <key>SuccessfulExit</key>
    <false/>
  </dict>
  <key>ThrottleInterval</key>
  <integer>5</integer>
  <key>StandardErrorPath</key>
  <string>/var/log/runner.log</string>
  <key>StandardOutPath</key>
  <string>/var/log/runner.log</string>
  <key>Umask</key>
  <integer>63</integer>
</dict>
</plist>
"#,
        command = escape(&command),
        user = escape(user),
        stopped = exit::STOPPED_BY_RELAY,
        config = exit::CONFIG,
    )
}

#[cfg(test)]
mod tests {
    use super::super::{RunAs, ServiceSpec};
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn plist_names_the_user_the_binary_and_the_env_file() {
        let text = plist(&ServiceSpec {
            binary: PathBuf::from("/usr/local/bin/runner"),
            run_as: Some(RunAs {
                name: "bob".into(),
                home: PathBuf::from("/Users/bob"),
            }),
            state_dir: PathBuf::from("/var/lib/runner"),
            env_file: PathBuf::from("/etc/runner/env"),
        });
        assert!(text.contains("<string>bob</string>"));
        assert!(
            text.contains("'/usr/local/bin/runner' run &amp; pid=$!"),
            "{text}"
        );
        assert!(text.contains("case $code in 10|78) exit 0"), "{text}");
        assert!(text.contains(". '/etc/runner/env'"));
        assert!(text.contains("<key>KeepAlive</key>"));
        // Well-formed enough for plutil: every <dict> closes.
        assert_eq!(
            text.matches("<dict>").count(),
            text.matches("</dict>").count()
        );
    }
}
