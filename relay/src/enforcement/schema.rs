//! Checking a call's arguments against the JSON Schema its tool announced,
//! so a malformed call is refused with a 400 naming the field at fault
//! before it reaches a runner.
//!
//! This is a validator for the subset of JSON Schema the runner's catalogue
//! uses: `type` (one or a list), `enum`, `const`, `required`, `properties`,
//! `additionalProperties` (false or a schema), `items`, `minimum`,
//! `maximum`, `minLength`, `maxLength`, `minItems`, `maxItems`, and
//! `anyOf`/`oneOf`/`allOf` of those. Other keywords (`pattern`, `format`,
//! `$ref`, …) are not checked here; the runner (or the relayed MCP server)
//! still checks every argument it uses. The `jsonschema` crate would cover
//! the whole standard, but brings a regex engine, URL and HTTP resolution
//! and an arbitrary-precision number stack into the relay's build for
//! keywords our catalogue does not use.

use serde_json::Value;

/// Deeper schemas or arguments are refused rather than walked (a stack
/// guard against hostile input).
pub const MAX_DEPTH: usize = 64;

/// Why arguments do not match a schema: the JSON path of the field and the
/// rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("argument {path}: {message}")]
pub struct SchemaError {
    /// `args`, `args.env.HOME`, `args.items[2]`, …
    pub path: String,
    pub message: String,
}

/// Checks `value` (a call's `args`) against `schema`. A schema that is not
/// an object (older runners announce none) accepts everything.
pub fn validate(schema: &Value, value: &Value) -> Result<(), SchemaError> {
    check(schema, value, "args", 0)
}

fn fail(path: &str, message: impl Into<String>) -> Result<(), SchemaError> {
    Err(SchemaError {
        path: path.to_owned(),
        message: message.into(),
    })
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_i64() || number.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(value: &Value, wanted: &str) -> bool {
    match wanted {
        "integer" => match value {
            Value::Number(number) => {
                number.is_i64()
                    || number.is_u64()
                    || number.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        "number" => value.is_number(),
        other => type_name(value) == other,
    }
}

fn check(schema: &Value, value: &Value, path: &str, depth: usize) -> Result<(), SchemaError> {
    let Value::Object(schema) = schema else {
        return Ok(());
    };
    if depth > MAX_DEPTH {
        return fail(path, format!("nested deeper than {MAX_DEPTH} levels"));
    }
    match schema.get("type") {
        Some(Value::String(wanted)) if !has_type(value, wanted) => {
            return fail(
                path,
                format!("must be of type {wanted}, not {}", type_name(value)),
            );
        }
        Some(Value::Array(types)) => {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            if !names.is_empty() && !names.iter().any(|wanted| has_type(value, wanted)) {
                return fail(
                    path,
                    format!(
                        "must be of type {}, not {}",
                        names.join(" or "),
                        type_name(value)
                    ),
                );
            }
        }
        _ => {}
    }
    if let Some(Value::Array(options)) = schema.get("enum") {
        if !options.contains(value) {
            let listed: Vec<String> = options.iter().map(Value::to_string).collect();
            return fail(
                path,
                format!("must be one of {}, not {value}", listed.join(", ")),
            );
        }
    }
    if let Some(constant) = schema.get("const") {
        if constant != value {
            return fail(path, format!("must be {constant}"));
        }
    }
    if let Some(number) = value.as_f64() {
        if let Some(minimum) = schema.get("minimum").and_then(Value::as_f64) {
            if number < minimum {
                return fail(path, format!("must be at least {minimum}, not {value}"));
            }
        }
        if let Some(maximum) = schema.get("maximum").and_then(Value::as_f64) {
            if number > maximum {
                return fail(path, format!("must be at most {maximum}, not {value}"));
            }
        }
    }
    if let Value::String(text) = value {
        let length = text.chars().count() as u64;
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64) {
            if length < min {
                return fail(path, format!("must be at least {min} characters long"));
            }
        }
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
            if length > max {
                return fail(path, format!("must be at most {max} characters long"));
            }
        }
    }
    if let Value::Array(items) = value {
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64) {
            if (items.len() as u64) < min {
                return fail(path, format!("must have at least {min} items"));
            }
        }
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
            if items.len() as u64 > max {
                return fail(path, format!("must have at most {max} items"));
            }
        }
        if let Some(item_schema) = schema.get("items") {
            for (index, item) in items.iter().enumerate() {
                check(item_schema, item, &format!("{path}[{index}]"), depth + 1)?;
            }
        }
    }
    if let Value::Object(fields) = value {
        if let Some(Value::Array(required)) = schema.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !fields.contains_key(name) {
                    return fail(&format!("{path}.{name}"), "is required");
                }
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        for (name, field) in fields {
            let field_path = format!("{path}.{name}");
            match properties.and_then(|properties| properties.get(name)) {
                Some(field_schema) => check(field_schema, field, &field_path, depth + 1)?,
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        let known: Vec<&str> = properties
                            .map(|properties| properties.keys().map(String::as_str).collect())
                            .unwrap_or_default();
                        return fail(
                            &field_path,
                            format!("is not a known argument (known: {})", known.join(", ")),
                        );
                    }
                    Some(extra @ Value::Object(_)) => check(extra, field, &field_path, depth + 1)?,
                    _ => {}
                },
            }
        }
    }
    if let Some(Value::Array(all)) = schema.get("allOf") {
        for sub in all {
            check(sub, value, path, depth + 1)?;
        }
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = schema.get(keyword) {
            let mut first_error = None;
            let mut matched = 0;
            for sub in options {
                match check(sub, value, path, depth + 1) {
                    Ok(()) => matched += 1,
                    Err(error) => {
                        first_error.get_or_insert(error);
                    }
                }
            }
            if matched == 0 {
                if let Some(error) = first_error {
                    return Err(error);
                }
            }
            if keyword == "oneOf" && matched > 1 {
                return fail(path, "matches more than one of the allowed shapes");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shell() -> Value {
        json!({
            "type": "object",
            "required": ["command"],
            "additionalProperties": false,
            "properties": {
                "command": {"type": "string"},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "timeout_s": {"type": "integer", "minimum": 1},
                "mode": {"enum": ["a", "b"]},
                "args": {"type": "array", "items": {"type": "string"}}
            }
        })
    }

    fn path_of(value: Value) -> Option<String> {
        validate(&shell(), &value).err().map(|error| error.path)
    }

    #[test]
    fn errors_name_the_field_at_fault() {
        assert_eq!(path_of(json!({"command": "ls"})), None);
        assert_eq!(path_of(json!({})).as_deref(), Some("args.command"));
        assert_eq!(
            path_of(json!({"command": 5})).as_deref(),
            Some("args.command")
        );
        assert_eq!(
            path_of(json!({"command": "x", "bogus": 1})).as_deref(),
            Some("args.bogus")
        );
        assert_eq!(
            path_of(json!({"command": "x", "env": {"A": 1}})).as_deref(),
            Some("args.env.A")
        );
        assert_eq!(
            path_of(json!({"command": "x", "timeout_s": 0})).as_deref(),
            Some("args.timeout_s")
        );
        assert_eq!(
            path_of(json!({"command": "x", "timeout_s": 1.5})).as_deref(),
            Some("args.timeout_s")
        );
        assert_eq!(path_of(json!({"command": "x", "timeout_s": 2.0})), None);
        assert_eq!(
            path_of(json!({"command": "x", "mode": "c"})).as_deref(),
            Some("args.mode")
        );
        assert_eq!(
            path_of(json!({"command": "x", "args": ["a", 2]})).as_deref(),
            Some("args.args[1]")
        );
        let message = validate(&shell(), &json!({"command": true}))
            .expect_err("bad")
            .to_string();
        assert_eq!(
            message,
            "argument args.command: must be of type string, not boolean"
        );
    }

    #[test]
    fn schemas_that_are_not_objects_accept_anything() {
        assert!(validate(&Value::Null, &json!({"x": 1})).is_ok());
        assert!(validate(&json!({"type": "object"}), &json!({"x": 1})).is_ok());
    }

    #[test]
    fn alternatives_and_depth() {
        let schema = json!({"anyOf": [{"type": "string"}, {"type": "integer"}]});
        assert!(validate(&schema, &json!("a")).is_ok());
        assert!(validate(&schema, &json!(1)).is_ok());
        assert!(validate(&schema, &json!([])).is_err());
        let mut deep = json!({"type": "array"});
        for _ in 0..100 {
            deep = json!({"type": "array", "items": deep});
        }
        let mut value = json!([]);
        for _ in 0..100 {
            value = json!([value]);
        }
        assert!(validate(&deep, &value).is_err());
    }
}
