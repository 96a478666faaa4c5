//! Canonical JSON (object keys sorted, no spaces) and SHA-256, so that a
//! digest or hash is the same whichever order a client or a database gave
//! the keys in: the audit log's digests and chain, and the hash that binds
//! an approved call. And the masking of a call's `env` values, which
//! neither the audit log nor an approver is shown.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// What the values of a call's `env` argument are replaced with.
pub const MASK: &str = "***";

/// `value` as canonical JSON.
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                if let Some(value) = map.get(key) {
                    write(value, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::String(text) => write_string(text, out),
        // Numbers, booleans and null have one compact form.
        other => out.push_str(&other.to_string()),
    }
}

fn write_string(text: &str, out: &mut String) {
    // A string always serialises.
    out.push_str(&serde_json::to_string(text).unwrap_or_default());
}

/// Hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `args` with every value of its `env` object (environment variables the
/// call sets, often secrets) replaced by [`MASK`]; the names stay.
pub fn mask_env(args: &Value) -> Value {
    let mut args = args.clone();
    if let Some(Value::Object(env)) = args.get_mut("env") {
        for value in env.values_mut() {
            *value = Value::String(MASK.to_owned());
        }
    } else if let Some(env) = args.get_mut("env") {
        // Not an object (the tool will refuse it): nothing of it is kept.
        *env = Value::String(MASK.to_owned());
    }
    args
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keys_are_sorted_at_every_depth() {
        let value = json!({"b": 1, "a": {"d": [true, null, "x"], "c": 1.5}});
        assert_eq!(
            to_string(&value),
            r#"{"a":{"c":1.5,"d":[true,null,"x"]},"b":1}"#
        );
    }

    #[test]
    fn env_values_are_masked_names_kept() {
        let args = json!({"command": "deploy", "env": {"TOKEN": "s3cret", "MODE": "x"}});
        let masked = to_string(&mask_env(&args));
        assert!(!masked.contains("s3cret"), "{masked}");
        assert!(
            masked.contains("TOKEN") && masked.contains(MASK),
            "{masked}"
        );
        assert_eq!(
            to_string(&mask_env(&json!({"env": "A=b"}))),
            r#"{"env":"***"}"#
        );
    }
}
