//! The `tool` label, capped: runners announce their tools (MCP servers'
//! tools among them, `server__tool`), so their names are not a closed set.
//! The first [`MAX_TOOLS`] names a runner offered get their own series;
//! every later one, and every name no runner offered (a caller may send
//! any string), is counted as [`OTHER`].
//!
//! Each name's counters and histogram are resolved once, when it is first
//! seen; a call then costs one read-locked map lookup by `&str` (no label
//! set built, no allocation) and atomic increments.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;

use super::labels::{CallLabels, Outcome, ToolLabel};

/// Distinct tool names with their own series; see the module comment.
pub const MAX_TOOLS: usize = 200;
/// The `tool` label of every name past the cap, or never offered.
pub const OTHER: &str = "other";

/// One tool's series.
#[derive(Debug)]
pub struct ToolSeries {
    /// By [`Outcome::index`].
    pub calls: [Counter; Outcome::ALL.len()],
    pub duration: Histogram,
}

/// Names seen so far and their series.
#[derive(Debug)]
pub struct ToolNames {
    calls: Family<CallLabels, Counter>,
    durations: Family<ToolLabel, Histogram, fn() -> Histogram>,
    known: RwLock<HashMap<Arc<str>, Arc<ToolSeries>>>,
    other: Arc<ToolSeries>,
}

impl ToolNames {
    pub fn new(
        calls: Family<CallLabels, Counter>,
        durations: Family<ToolLabel, Histogram, fn() -> Histogram>,
    ) -> Self {
        let other = Arc::new(series(&calls, &durations, Arc::from(OTHER)));
        Self {
            calls,
            durations,
            known: RwLock::default(),
            other,
        }
    }

    /// The series of `tool`. `offered`: a connected runner offers it (only
    /// such a name may take one of the [`MAX_TOOLS`] places).
    pub fn series(&self, tool: &str, offered: bool) -> Arc<ToolSeries> {
        {
            let known = self.known.read().unwrap_or_else(|p| p.into_inner());
            if let Some(series) = known.get(tool) {
                return series.clone();
            }
            if !offered || known.len() >= MAX_TOOLS || tool == OTHER {
                return self.other.clone();
            }
        }
        let mut known = self.known.write().unwrap_or_else(|p| p.into_inner());
        if known.len() >= MAX_TOOLS {
            return self.other.clone();
        }
        let name: Arc<str> = Arc::from(tool);
        known
            .entry(name.clone())
            .or_insert_with(|| Arc::new(series(&self.calls, &self.durations, name)))
            .clone()
    }
}

fn series(
    calls: &Family<CallLabels, Counter>,
    durations: &Family<ToolLabel, Histogram, fn() -> Histogram>,
    tool: Arc<str>,
) -> ToolSeries {
    ToolSeries {
        calls: Outcome::ALL.map(|outcome| {
            calls.get_or_create_owned(&CallLabels {
                tool: tool.clone(),
                outcome,
            })
        }),
        duration: durations.get_or_create_owned(&ToolLabel { tool }),
    }
}
