//! What this machine offers: the [`Toolbox`] owns the binaries found on
//! PATH, the relayed MCP servers and the browser session, and builds the
//! catalogue the runner announces.
//!
//! A tool backed by a binary (`kubectl`, `chromium`, `claude`, …) is
//! announced only while the binary is on PATH. [`Toolbox::refresh`] looks
//! again (the session calls it every [`REFRESH_INTERVAL`]), and an MCP
//! server that starts, crashes or comes back notifies [`Toolbox::changed`],
//! so a new catalogue is announced without reconnecting.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use runner_proto::ws::ToolSpec;
use serde_json::json;
use tokio::sync::Notify;

use super::{argv, browser, claude, files, http, mcp, search, shell};

/// How often PATH is searched again for tool binaries.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(2);
/// Browser binaries, in order of preference.
pub const BROWSER_NAMES: [&str; 5] = [
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "chrome",
];

/// The machine's tools. Shared by every call of every session.
pub struct Toolbox {
    /// Tool name (`git`, …, `claude`, `browser`) → the binary found.
    found: Mutex<BTreeMap<String, PathBuf>>,
    mcp: Option<Arc<mcp::Manager>>,
    browser: browser::Session,
    changed: Arc<Notify>,
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolbox")
            .field("found", &*self.lock())
            .field("mcp", &self.mcp.is_some())
            .finish()
    }
}

impl Toolbox {
    /// Searches PATH and starts the MCP servers of `mcp_config` (their
    /// tools appear as each server comes up).
    pub async fn start(mcp_config: Option<&Path>) -> Result<Arc<Toolbox>, mcp::ConfigError> {
        let changed = Arc::new(Notify::new());
        let mcp = match mcp_config {
            Some(path) => Some(mcp::Manager::start(path, Arc::clone(&changed)).await?),
            None => None,
        };
        let toolbox = Toolbox {
            found: Mutex::new(discover()),
            mcp,
            browser: browser::Session::default(),
            changed,
        };
        Ok(Arc::new(toolbox))
    }

    /// The binaries on PATH now, no MCP servers. Found once, not
    /// refreshed from empty: a refresh logs the change, which for a
    /// command that only reads the catalogue (`runner doctor`) is noise.
    pub fn discovered() -> Arc<Toolbox> {
        let toolbox = Toolbox::empty();
        *toolbox.lock() = discover();
        toolbox
    }

    /// No binaries, no MCP servers (unit tests).
    pub fn empty() -> Arc<Toolbox> {
        Arc::new(Toolbox {
            found: Mutex::default(),
            mcp: None,
            browser: browser::Session::default(),
            changed: Arc::new(Notify::new()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, PathBuf>> {
        // Only whole-map replacement happens under this lock.
        self.found
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Searches PATH again; true when what was found changed.
    pub fn refresh(&self) -> bool {
        let now = discover();
        let mut found = self.lock();
        if *found == now {
            return false;
        }
        tracing::info!(tools = ?now.keys().collect::<Vec<_>>(), "tool binaries on PATH changed");
        *found = now;
        true
    }

    /// The binary behind a tool, if it was found.
    pub fn binary(&self, tool: &str) -> Option<PathBuf> {
        self.lock().get(tool).cloned()
    }

    /// Notified when an MCP server's tools appear or go away.
    pub fn changed(&self) -> Arc<Notify> {
        Arc::clone(&self.changed)
    }

    pub fn mcp(&self) -> Option<&Arc<mcp::Manager>> {
        self.mcp.as_ref()
    }

    pub fn browser(&self) -> &browser::Session {
        &self.browser
    }

    /// The catalogue to announce now.
    pub fn catalogue(&self) -> Vec<ToolSpec> {
        let mut tools = vec![
            ToolSpec {
                name: "ping".into(),
                description: "Echo the arguments back without running anything (health probe)."
                    .into(),
                input_schema: json!({"type": "object"}),
            },
            shell::spec(),
            files::read_spec(),
            files::write_spec(),
            search::list_spec(),
            search::glob_spec(),
            search::grep_spec(),
            http::spec(),
        ];
        let found = self.lock().clone();
        for name in argv::TOOLS {
            if found.contains_key(name) {
                tools.push(argv::spec(name));
            }
        }
        if found.contains_key("browser") {
            tools.push(browser::spec());
        }
        if found.contains_key("claude") {
            tools.extend(claude::specs());
        }
        if let Some(mcp) = &self.mcp {
            tools.extend(mcp.tools());
        }
        tools
    }
}

/// Every tool binary on PATH now.
fn discover() -> BTreeMap<String, PathBuf> {
    let mut found = BTreeMap::new();
    for name in argv::TOOLS {
        if let Some(path) = find_on_path(name) {
            found.insert(name.to_owned(), path);
        }
    }
    if let Some(path) = BROWSER_NAMES.iter().find_map(|name| find_on_path(name)) {
        found.insert("browser".to_owned(), path);
    }
    if let Some(path) = find_on_path("claude") {
        found.insert("claude".to_owned(), path);
    }
    found
}

/// The first executable file called `name` in a PATH directory.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// Whether `path` is a file some user may execute.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalogue_entry_has_an_object_schema() {
        for tool in Toolbox::empty().catalogue() {
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
        }
        for name in argv::TOOLS {
            assert_eq!(argv::spec(name).input_schema["type"], "object");
        }
        assert_eq!(browser::spec().input_schema["type"], "object");
        for spec in claude::specs() {
            assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
        }
    }

    #[test]
    fn tools_without_binaries_are_not_announced() {
        let names: Vec<String> = Toolbox::empty()
            .catalogue()
            .into_iter()
            .map(|tool| tool.name)
            .collect();
        assert!(names.contains(&"shell".to_owned()));
        assert!(!names.contains(&"kubectl".to_owned()));
        assert!(!names.contains(&"browser".to_owned()));
    }
}
