//! Sandboxes: isolated, temporary runners a sandbox host starts on the
//! relay's request (docs/sandboxes.md, wire types in
//! [`runner_proto::sandbox`]).
//!
//! - [`host`]: `runner sandbox-host`'s side: the two tools, the sandboxes
//!   it runs, what a previous instance left behind, its capacity.
//! - [`isolation`]: the root file system, the namespaces (bubblewrap in a
//!   private mount namespace: `runner sandbox-enter`), the cgroup limits,
//!   and the checks of what this machine lacks to do it.
//! - [`network`]: the host's filtering proxy and the bridge to it inside.
//! - [`init`]: `runner sandbox-init`, the sandbox's first process.
//! - [`layout`]: where each of these keeps its files.

pub mod host;
pub mod init;
pub mod isolation;
pub mod layout;
pub mod network;
