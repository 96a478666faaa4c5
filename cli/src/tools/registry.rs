//! The registry of built-in tools ([`TOOLS`]): the catalogue the runner
//! announces and the dispatch of a call are both built from it.

use runner_proto::ws::ToolSpec;

use super::argv::Argv;
use super::browser::Browse;
use super::claude::{ClaudeCode, ClaudeSessions, ClaudeStatus};
use super::files::{FileRead, FileWrite};
use super::http::HttpLocal;
use super::ping::Ping;
use super::search::{Glob, Grep, List};
use super::shell::Shell;
use super::tool::Entry;
use super::toolbox::Toolbox;
use runner_proto::tools::ARGV_TOOLS;

/// Every built-in tool, in the catalogue's order. Relayed MCP servers'
/// tools are not here: their schemas are the servers' own.
pub static TOOLS: &[&dyn Entry] = &[
    &Ping,
    &Shell,
    &FileRead,
    &FileWrite,
    &List,
    &Glob,
    &Grep,
    &HttpLocal,
    &Argv(ARGV_TOOLS[0]),
    &Argv(ARGV_TOOLS[1]),
    &Argv(ARGV_TOOLS[2]),
    &Argv(ARGV_TOOLS[3]),
    &Argv(ARGV_TOOLS[4]),
    &Browse,
    &ClaudeCode,
    &ClaudeSessions,
    &ClaudeStatus,
];

/// The built-in tool called `name`.
pub fn find(name: &str) -> Option<&'static dyn Entry> {
    TOOLS.iter().copied().find(|tool| tool.name() == name)
}

impl Toolbox {
    /// The catalogue to announce now: every built-in tool this machine
    /// offers, then the MCP servers' tools; or only a runner variant's own
    /// ([`Toolbox::hosting`]).
    pub fn catalogue(&self) -> Vec<ToolSpec> {
        if let Some(hosted) = self.hosted() {
            return hosted.catalogue();
        }
        let mut tools: Vec<ToolSpec> = TOOLS
            .iter()
            .filter(|tool| tool.offered(self))
            .map(|tool| tool.spec())
            .collect();
        if let Some(mcp) = self.mcp() {
            tools.extend(mcp.tools());
        }
        tools
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_one_entry_and_an_object_schema() {
        let mut names: Vec<&str> = TOOLS.iter().map(|tool| tool.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TOOLS.len(), "a name twice: {names:?}");
        for tool in TOOLS {
            let schema = tool.spec().input_schema;
            assert_eq!(schema["type"], "object", "{}: {schema}", tool.name());
            let text = schema.to_string();
            assert!(!text.contains("$ref"), "{}: {text}", tool.name());
            assert!(!text.contains("$schema"), "{}: {text}", tool.name());
        }
    }

    #[test]
    fn every_argv_tool_is_registered() {
        for name in ARGV_TOOLS {
            assert!(find(name).is_some(), "{name}");
        }
    }
}
