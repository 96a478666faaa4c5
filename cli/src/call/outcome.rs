//! The answer of a call.

use serde_json::Value;

/// The answer of a tool.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutcome {
    pub result: Value,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
}

impl ToolOutcome {
    pub fn ok(result: Value) -> ToolOutcome {
        ToolOutcome {
            result,
            exit_code: None,
            error: None,
        }
    }

    pub fn error(message: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            result: Value::Null,
            exit_code: None,
            error: Some(message.into()),
        }
    }

    /// `Ok` → a result, `Err` → an error answer.
    pub fn from_result(result: Result<Value, String>) -> ToolOutcome {
        match result {
            Ok(value) => ToolOutcome::ok(value),
            Err(message) => ToolOutcome::error(message),
        }
    }
}
