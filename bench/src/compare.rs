//! `runner-bench compare A.json B.json`: every number found in both files,
//! by its key path, with B/A.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::Context;
use serde_json::Value;

pub fn run(a: &Path, b: &Path) -> anyhow::Result<()> {
    let load = |path: &Path| -> anyhow::Result<Value> {
        let text = fs_err::read_to_string(path)?;
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
    };
    let (a_value, b_value) = (load(a)?, load(b)?);
    let mut a_numbers = BTreeMap::new();
    let mut b_numbers = BTreeMap::new();
    flatten("", &a_value["sections"], &mut a_numbers);
    flatten("", &b_value["sections"], &mut b_numbers);
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "# A: {} ({})",
        a.display(),
        a_value["git_commit"].as_str().unwrap_or("?")
    )?;
    writeln!(
        out,
        "# B: {} ({})",
        b.display(),
        b_value["git_commit"].as_str().unwrap_or("?")
    )?;
    writeln!(out, "{:<78} {:>14} {:>14} {:>8}", "key", "A", "B", "B/A")?;
    for (key, a_number) in &a_numbers {
        let Some(b_number) = b_numbers.get(key) else {
            continue;
        };
        let ratio = if *a_number != 0.0 {
            format!("{:.2}", b_number / a_number)
        } else {
            "-".to_owned()
        };
        writeln!(
            out,
            "{key:<78} {a_number:>14.1} {b_number:>14.1} {ratio:>8}"
        )?;
    }
    for key in b_numbers.keys().filter(|key| !a_numbers.contains_key(*key)) {
        writeln!(
            out,
            "{key:<78} {:>14} {:>14.1} {:>8}",
            "-", b_numbers[key], "new"
        )?;
    }
    Ok(())
}

fn flatten(prefix: &str, value: &Value, out: &mut BTreeMap<String, f64>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&path, child, out);
            }
        }
        Value::Number(number) => {
            if let Some(number) = number.as_f64() {
                out.insert(prefix.to_owned(), number);
            }
        }
        _ => {}
    }
}
