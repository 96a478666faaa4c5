//! `ping`: echoes its arguments, runs nothing (a health probe).

use runner_proto::tools;
use serde_json::Value;

use super::context::ToolContext;
use super::tool::{Running, Tool};
use crate::call::{CallScope, ToolOutcome};

pub struct Ping;

impl Tool for Ping {
    /// Any object.
    type Args = serde_json::Map<String, Value>;

    fn name(&self) -> &'static str {
        tools::PING
    }

    fn description(&self) -> String {
        "Echo the arguments back without running anything (health probe).".into()
    }

    fn run<'a>(&'a self, args: Self::Args, _: &'a ToolContext, _: &'a CallScope) -> Running<'a> {
        Box::pin(std::future::ready(ToolOutcome::ok(Value::Object(args))))
    }
}
