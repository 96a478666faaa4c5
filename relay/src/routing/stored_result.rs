//! What the call journal keeps of a result: at most a configured number of
//! bytes (`serve --journal-result-max-kb`). The caller that waited for the
//! call got all of it; the journal is for a caller that lost its
//! connection, and for a repeated `call_id`. A result over the bound keeps
//! the **end** of each long text field (a command's last lines say how it
//! ended), marked, and says so in `journal_truncated`; one whose bulk is
//! not text is replaced by its size.

use serde_json::{json, Map, Value};

/// Default bound on one stored result, bytes of JSON.
pub const DEFAULT_RESULT_MAX_BYTES: usize = 256 * 1024;

/// The field a capped result carries: how many bytes of JSON the full one
/// had.
pub const TRUNCATED_FIELD: &str = "journal_truncated";

/// Bytes of `value`'s compact JSON, counted as it is written (nothing is
/// kept: every call's result is measured in the journal's writer and in
/// its audit entry).
pub fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail; a value that cannot be written
    // (never, for a `Value`) counts as too big.
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

/// Caps `result` to about `max_bytes` of JSON; whether it had to.
pub fn cap(result: &mut Value, max_bytes: usize) -> bool {
    let size = json_len(result);
    if size <= max_bytes {
        return false;
    }
    if let Value::Object(fields) = result {
        let long: Vec<(String, String)> = fields
            .iter()
            .filter_map(|(name, value)| {
                let text = value.as_str()?;
                (text.len() > max_bytes / 8).then(|| (name.clone(), text.to_owned()))
            })
            .collect();
        if !long.is_empty() {
            fields.insert(
                TRUNCATED_FIELD.to_owned(),
                json!({ "original_bytes": size }),
            );
            // Room for each long text, leaving an eighth for the rest; JSON
            // escapes can make the kept text longer than its bytes, so the
            // room shrinks by the overshoot until it fits.
            let mut each = (max_bytes - max_bytes / 8) / long.len();
            for _ in 0..4 {
                for (name, text) in &long {
                    fields.insert(name.clone(), Value::String(tail(text, each)));
                }
                let now = json_len(&*fields);
                if now <= max_bytes {
                    return true;
                }
                let over = now.saturating_sub(max_bytes);
                each = each.saturating_sub(over / long.len() + max_bytes / 64);
            }
        }
    }
    let mut replaced = Map::new();
    replaced.insert(
        TRUNCATED_FIELD.to_owned(),
        json!({ "original_bytes": size }),
    );
    *result = Value::Object(replaced);
    true
}

/// The last `keep` bytes of `text` (at a character boundary) after a line
/// saying how much was left out.
fn tail(text: &str, keep: usize) -> String {
    let marker_room = 96;
    let keep = keep.saturating_sub(marker_room);
    let mut start = text.len().saturating_sub(keep);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!(
        "[… {} bytes not kept by the relay's call journal …]\n{}",
        start,
        &text[start..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(value: &Value) -> usize {
        serde_json::to_vec(value).expect("encodes").len()
    }

    #[test]
    fn a_small_result_is_kept_as_it_is() {
        let mut result = json!({ "stdout": "hello\n", "stderr": "" });
        let before = result.clone();
        assert!(!cap(&mut result, 1024));
        assert_eq!(result, before);
    }

    #[test]
    fn long_output_keeps_its_end_within_the_bound() {
        let stdout: String = (0..20_000).map(|n| format!("line {n}\n")).collect();
        let mut result = json!({ "stdout": stdout, "stderr": "warning: é".repeat(3000) });
        assert!(cap(&mut result, 16 * 1024));
        assert!(size(&result) <= 16 * 1024, "{}", size(&result));
        let kept = result["stdout"].as_str().expect("text");
        assert!(kept.ends_with("line 19999\n"), "the end is kept");
        assert!(kept.starts_with("[… "), "{}", &kept[..40]);
        assert!(result["stderr"].as_str().expect("text").ends_with('é'));
        assert!(
            result[TRUNCATED_FIELD]["original_bytes"]
                .as_u64()
                .expect("size")
                > 100_000
        );
    }

    #[test]
    fn a_result_whose_bulk_is_not_text_is_replaced_by_its_size() {
        let mut result = json!({ "rows": vec![1_u32; 50_000] });
        assert!(cap(&mut result, 4096));
        assert_eq!(
            result
                .as_object()
                .expect("object")
                .keys()
                .collect::<Vec<_>>(),
            [TRUNCATED_FIELD]
        );
        let mut text = Value::String("x".repeat(10_000));
        assert!(cap(&mut text, 100));
        assert!(size(&text) <= 100);
    }

    #[test]
    fn every_bound_holds_for_multibyte_text() {
        for max in [200, 1000, 5000] {
            let mut result = json!({ "stdout": "ü😀".repeat(4000), "exit": 0 });
            assert!(cap(&mut result, max));
            assert!(size(&result) <= max, "{max}: {}", size(&result));
        }
    }
}
