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

use tokio::sync::Notify;

use super::browser::session::Session;
use super::hosted::HostedTools;
use super::mcp;
use crate::exec::program::find_on_path;
use runner_proto::tools::ARGV_TOOLS;

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
    browser: Session,
    changed: Arc<Notify>,
    /// A runner variant's own tools, announced instead of all others.
    hosted: Option<Arc<dyn HostedTools>>,
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
            browser: Session::default(),
            changed,
            hosted: None,
        };
        Ok(Arc::new(toolbox))
    }

    /// Only `hosted`'s tools: no binary on PATH, no MCP server.
    pub fn hosting(hosted: Arc<dyn HostedTools>) -> Arc<Toolbox> {
        Arc::new(Toolbox {
            found: Mutex::default(),
            mcp: None,
            browser: Session::default(),
            changed: Arc::new(Notify::new()),
            hosted: Some(hosted),
        })
    }

    /// The variant's own tools, when this runner serves only those.
    pub fn hosted(&self) -> Option<&Arc<dyn HostedTools>> {
        self.hosted.as_ref()
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
            browser: Session::default(),
            changed: Arc::new(Notify::new()),
            hosted: None,
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
        if self.hosted.is_some() {
            return false;
        }
        let now = discover();
        let mut found = self.lock();
        if *found == now {
            return false;
        }
        tracing::info!(tools = %now.keys().map(String::as_str).collect::<Vec<_>>().join(","), "tool binaries on PATH changed");
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

    pub fn browser(&self) -> &Session {
        &self.browser
    }
}

/// The first browser of [`BROWSER_NAMES`] on PATH now.
pub fn find_browser() -> Option<PathBuf> {
    BROWSER_NAMES.iter().find_map(|name| find_on_path(name))
}

/// Every tool binary on PATH now.
fn discover() -> BTreeMap<String, PathBuf> {
    let mut found = BTreeMap::new();
    for name in ARGV_TOOLS {
        if let Some(path) = find_on_path(name) {
            found.insert(name.to_owned(), path);
        }
    }
    if let Some(path) = find_browser() {
        found.insert("browser".to_owned(), path);
    }
    if let Some(path) = find_on_path("claude") {
        found.insert("claude".to_owned(), path);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalogue_entry_has_an_object_schema() {
        for tool in Toolbox::empty().catalogue() {
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
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
