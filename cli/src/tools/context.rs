//! What every tool call can see ([`ToolContext`]).

use std::sync::Arc;

use runner_policy::PermissionSet;
use runner_proto::ws::Policy;

use super::toolbox::Toolbox;
use crate::exec::Isolation;
use crate::gate::{Boundary, Gate};

/// What every tool call can see.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub boundary: Boundary,
    /// The local permission file; `None`: every command allowed (SPEC §5).
    pub permissions: Option<Arc<PermissionSet>>,
    /// The environment's policy as the relay sent it.
    pub policy: Arc<Policy>,
    /// What this machine offers (binaries found on PATH, MCP servers, the
    /// browser session).
    pub toolbox: Arc<Toolbox>,
    /// How a call's processes are kept together so that stopping the call
    /// stops them all (`run --call-cgroups`).
    pub isolation: Isolation,
}

impl ToolContext {
    /// The gate every call of this context passes.
    pub fn gate(&self) -> Gate<'_> {
        Gate {
            policy: &self.policy,
            boundary: &self.boundary,
            permissions: self.permissions.as_deref(),
        }
    }
}

#[cfg(test)]
impl ToolContext {
    /// A context allowing every tool and command, rooted at `root`.
    pub(crate) fn allowing_all(root: &std::path::Path) -> ToolContext {
        ToolContext {
            boundary: Boundary::new(root, vec![]).expect("root"),
            permissions: None,
            policy: Arc::new(Policy {
                tools: runner_proto::ws::ToolAccess::All,
                file_paths: vec![],
                approval_required: vec![],
            }),
            toolbox: Toolbox::empty(),
            isolation: Isolation::CgroupIfAvailable,
        }
    }
}
