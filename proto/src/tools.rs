//! Names of the built-in tools, and the lists of them both sides use: the
//! relay's default allow-list and file-path rules, the runner's catalogue
//! and the CLI's view of a policy.

/// Echoes its arguments; always allowed (health probe).
pub const PING: &str = "ping";
/// Runs a bash command line.
pub const SHELL: &str = "shell";
pub const FILE_READ: &str = "file_read";
pub const FILE_WRITE: &str = "file_write";
pub const LIST: &str = "list";
pub const GLOB: &str = "glob";
pub const GREP: &str = "grep";
/// HTTP requests to services on the runner's host.
pub const HTTP_LOCAL: &str = "http_local";
/// Headless Chromium.
pub const BROWSER: &str = "browser";
pub const CLAUDE_CODE: &str = "claude_code";
pub const CLAUDE_SESSIONS: &str = "claude_sessions";
pub const CLAUDE_STATUS: &str = "claude_status";

/// Tools that run a binary found on the runner's PATH with an argument
/// vector (no shell), announced only where the binary is installed.
pub const ARGV_TOOLS: [&str; 5] = ["git", "kubectl", "helm", "docker", "terraform"];

/// Tools whose `path` argument names a file or directory on the runner's
/// host, checked against the environment's file-access list.
pub const FILE_TOOLS: [&str; 5] = [FILE_READ, FILE_WRITE, LIST, GLOB, GREP];

/// Tools a new production environment allows (SPEC §4). `shell`,
/// `file_write`, `docker` and `terraform` stay off until allowed.
pub const DEFAULT_PRODUCTION_TOOLS: [&str; 9] = [
    "kubectl",
    "helm",
    "git",
    FILE_READ,
    HTTP_LOCAL,
    BROWSER,
    CLAUDE_CODE,
    CLAUDE_SESSIONS,
    CLAUDE_STATUS,
];

/// Separates a relayed MCP server's name from its tool's (`server__tool`).
pub const MCP_SEPARATOR: &str = "__";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_allow_list_leaves_the_dangerous_tools_off() {
        for off in [SHELL, FILE_WRITE, "docker", "terraform"] {
            assert!(!DEFAULT_PRODUCTION_TOOLS.contains(&off), "{off}");
        }
    }
}
