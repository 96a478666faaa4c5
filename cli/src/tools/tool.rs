//! What a built-in tool is: a [`Tool`] with a name, a description, an
//! argument type and `run`. The argument type is both what the call's
//! `args` are deserialised into ([`parse`]) and where the JSON Schema the
//! runner announces for the tool comes from ([`schema_of`]), so the two
//! cannot drift apart.

use std::future::Future;
use std::pin::Pin;

use runner_proto::ws::ToolSpec;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::context::ToolContext;
use super::toolbox::Toolbox;
use crate::call::{CallScope, ToolOutcome};

/// A tool's answer, boxed: the call task holds it whatever the tool is,
/// so its size must not be the largest tool's state.
pub type Running<'a> = Pin<Box<dyn Future<Output = ToolOutcome> + Send + 'a>>;

/// One built-in tool.
pub trait Tool: Send + Sync {
    /// What the call's `args` are deserialised into; its JSON Schema is the
    /// one announced ([`schema_of`]).
    type Args: DeserializeOwned + JsonSchema;

    fn name(&self) -> &'static str;

    fn description(&self) -> String;

    /// Whether this machine offers the tool now (a binary it runs is on
    /// PATH); announced and callable only then.
    fn offered(&self, _toolbox: &Toolbox) -> bool {
        true
    }

    fn run<'a>(
        &'a self,
        args: Self::Args,
        context: &'a ToolContext,
        scope: &'a CallScope,
    ) -> Running<'a>;
}

/// A [`Tool`] with its argument type hidden, as the registry holds it.
pub trait Entry: Send + Sync {
    fn name(&self) -> &'static str;
    fn offered(&self, toolbox: &Toolbox) -> bool;
    /// The catalogue entry: name, description, and the schema derived from
    /// the argument type.
    fn spec(&self) -> ToolSpec;
    /// Deserialises `args` (an error names the field at fault) and runs.
    fn call<'a>(
        &'a self,
        args: Value,
        context: &'a ToolContext,
        scope: &'a CallScope,
    ) -> Running<'a>;
}

impl<T: Tool> Entry for T {
    fn name(&self) -> &'static str {
        Tool::name(self)
    }

    fn offered(&self, toolbox: &Toolbox) -> bool {
        Tool::offered(self, toolbox)
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: Tool::name(self).to_owned(),
            description: self.description(),
            input_schema: schema_of::<T::Args>(),
        }
    }

    fn call<'a>(
        &'a self,
        args: Value,
        context: &'a ToolContext,
        scope: &'a CallScope,
    ) -> Running<'a> {
        match parse::<T::Args>(args) {
            Ok(args) => self.run(args, context, scope),
            Err(message) => Box::pin(std::future::ready(ToolOutcome::error(message))),
        }
    }
}

/// The JSON Schema of an argument type, as announced: subschemas inline
/// (the relay's validator follows no `$ref`), without the meta-schema URI
/// and the type's own title and description (the tool has its own).
pub fn schema_of<A: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|settings| {
        settings.inline_subschemas = true;
        settings.meta_schema = None;
    });
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<A>()
        .to_value();
    if let Value::Object(object) = &mut schema {
        object.remove("title");
        object.remove("description");
    }
    schema
}

/// A call's `args` as `A`; the error names the argument at fault, as
/// `argument "NAME" …`.
pub fn parse<A: DeserializeOwned>(args: Value) -> Result<A, String> {
    if !args.is_object() {
        return Err("args must be a JSON object".to_owned());
    }
    serde_path_to_error::deserialize(args).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner().to_string();
        if let Some(field) = missing_field(&inner) {
            return format!("argument {field:?} is required");
        }
        if path == "." {
            format!("arguments: {inner}")
        } else {
            format!("argument {path:?}: {inner}")
        }
    })
}

/// The field serde's "missing field `NAME`" names.
fn missing_field(message: &str) -> Option<&str> {
    message.strip_prefix("missing field `")?.split('`').next()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Args {
        command: String,
        env: Option<HashMap<String, String>>,
    }

    #[test]
    fn ill_typed_arguments_are_refused_naming_the_field() {
        let error = |args: Value| match parse::<Args>(args) {
            Ok(_) => panic!("accepted"),
            Err(error) => error,
        };
        assert_eq!(error(json!({})), "argument \"command\" is required");
        let wrong = error(json!({"command": 5}));
        assert!(wrong.starts_with("argument \"command\": "), "{wrong}");
        let inner = error(json!({"command": "x", "env": {"A": 1}}));
        assert!(inner.starts_with("argument \"env.A\": "), "{inner}");
        let unknown = error(json!({"command": "x", "bogus": 1}));
        assert!(unknown.contains("bogus"), "{unknown}");
        assert_eq!(error(json!([1])), "args must be a JSON object");
    }
}
