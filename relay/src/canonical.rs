//! Canonical JSON (object keys sorted, no spaces) and SHA-256, so that a
//! digest or hash is the same whichever order a client or a database gave
//! the keys in: the audit log's digests and chain, and the hash that binds
//! an approved call. And the masking of a call's `env` values, which
//! neither the audit log nor an approver is shown.

use std::io::Write;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// What the values of a call's `env` argument are replaced with.
pub const MASK: &str = "***";

/// `value` as canonical JSON.
pub fn to_string(value: &Value) -> String {
    let mut out = Vec::new();
    // Writing into memory cannot fail.
    let _ = write(value, &mut out);
    // Only JSON of `str`s was written: always UTF-8.
    String::from_utf8(out)
        .unwrap_or_else(|bytes| String::from_utf8_lossy(bytes.as_bytes()).into_owned())
}

/// Hex SHA-256 of `value`'s canonical JSON.
pub fn sha256_hex_of(value: &Value) -> String {
    hex_of(&sha256_of(value))
}

/// SHA-256 of `value`'s canonical JSON, streamed into the hash (no copy
/// of the text is made).
pub fn sha256_of(value: &Value) -> [u8; 32] {
    let mut hasher = Sha256::new();
    // A hasher takes every write.
    let _ = write(value, &mut hasher);
    hasher.finalize().into()
}

fn write(value: &Value, out: &mut impl Write) -> std::io::Result<()> {
    match value {
        // A map whose keys come sorted (serde_json's default) is written
        // without a sorted copy of its keys.
        Value::Object(map) if map.keys().is_sorted() => write_object(map.iter(), out),
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_unstable_by_key(|(key, _)| *key);
            write_object(members.into_iter(), out)
        }
        Value::Array(items) => {
            out.write_all(b"[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                write(item, out)?;
            }
            out.write_all(b"]")
        }
        // Strings, numbers, booleans and null have one compact form.
        other => Ok(serde_json::to_writer(&mut *out, other)?),
    }
}

/// An object of `members`, in their order.
fn write_object<'a>(
    members: impl Iterator<Item = (&'a String, &'a Value)>,
    out: &mut impl Write,
) -> std::io::Result<()> {
    out.write_all(b"{")?;
    for (i, (key, value)) in members.enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, key)?;
        out.write_all(b":")?;
        write(value, out)?;
    }
    out.write_all(b"}")
}

/// Hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex_of(&Sha256::digest(bytes).into())
}

/// Lower-case hex of a SHA-256.
pub fn hex_of(digest: &[u8; 32]) -> String {
    let mut text = String::with_capacity(64);
    push_hex(&mut text, digest);
    text
}

/// Appends the lower-case hex of a SHA-256, without building it a
/// character at a time.
pub fn push_hex(out: &mut String, digest: &[u8; 32]) {
    let mut hex = [0u8; 64];
    // The buffer is exactly twice the input, and hex digits are ASCII.
    let _ = hex::encode_to_slice(digest, &mut hex);
    out.push_str(std::str::from_utf8(&hex).unwrap_or_default());
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
    fn the_streamed_digest_is_the_digest_of_the_text() {
        let value =
            json!({"z": "\u{1b}é\"", "a": [1, -2.5e-3, {"k": null}], "m": {"y": true, "x": false}});
        let text = to_string(&value);
        assert_eq!(sha256_hex_of(&value), sha256_hex(text.as_bytes()));
        assert_eq!(sha256_hex(b""), hex::encode(Sha256::digest(b"")));
        assert_eq!(
            text,
            r#"{"a":[1,-0.0025,{"k":null}],"m":{"x":false,"y":true},"z":"\u001bé\""}"#
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
