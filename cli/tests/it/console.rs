//! The web console in a real headless Chromium: sign-in, create, the setup
//! guide's commands run for real, live status, tool access, rotate and
//! revoke, the playground against `runner policy check`, team isolation,
//! sandbox templates, approvals, audit, sessions and a cross-site form
//! (tests/fixtures/console_browser.py). Screenshots of every page are kept
//! in `target/console-screenshots/`.

use std::path::PathBuf;

use crate::support::{runner_bin, Relay};

fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|path| path.exists())
}

#[tokio::test]
async fn a_person_runs_the_console_in_a_real_browser() {
    // `scripts/install-test-deps.sh` installs both; without them this test
    // fails rather than passing unseen.
    let chromium = chromium().expect("chromium is installed (scripts/install-test-deps.sh)");
    let playwright = std::process::Command::new("python3")
        .args(["-c", "import playwright.sync_api"])
        .status()
        .expect("python3 runs");
    assert!(
        playwright.success(),
        "Playwright for Python is installed (scripts/install-test-deps.sh)"
    );
    let relay = Relay::spawn().await;
    let link = relay
        .sign_in_link
        .clone()
        .expect("a first start prints a console sign-in link");
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("../console-screenshots");
    let work = tempfile::tempdir().expect("tempdir");
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/console_browser.py");
    let output = tokio::process::Command::new("python3")
        .arg(script)
        .env("RELAY_URL", &relay.url)
        .env("ADMIN_KEY", &relay.admin_key)
        .env("SIGN_IN_LINK", &link)
        .env("RUNNER_BIN", runner_bin())
        .env("WORK_DIR", work.path())
        .env("SCREENSHOTS", &shots)
        .env("CHROMIUM", &chromium)
        .output()
        .await
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for page in [
        "01-sign-in",
        "04-environments",
        "06-playground",
        "10-audit",
        "13-template",
    ] {
        let file = shots.join(format!("{page}.png"));
        assert!(file.exists(), "screenshot {} is missing", file.display());
    }
}
