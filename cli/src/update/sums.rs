//! Reading `SHA256SUMS` in the format `sha256sum` writes: one
//! `<64 hex digits><space><space or '*'><file name>` line per file.
//!
//! The file is signed, so it is parsed strictly: a malformed line is an
//! error rather than something to skip.

use super::UpdateError;

/// The lowercase hex SHA-256 that `sums` lists for `asset`.
pub fn expected_sha256(sums: &[u8], asset: &str, version: &str) -> Result<String, UpdateError> {
    let malformed = |line: usize, reason: &str| UpdateError::BadSums {
        version: version.to_owned(),
        reason: format!("line {line}: {reason}"),
    };
    let text = std::str::from_utf8(sums).map_err(|_| UpdateError::BadSums {
        version: version.to_owned(),
        reason: "not UTF-8 text".into(),
    })?;
    let mut found = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let (hash, rest) = line
            .split_once(' ')
            .ok_or_else(|| malformed(number, "no space after the hash"))?;
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(malformed(number, "the hash is not 64 hex digits"));
        }
        // ' ' marks text mode and '*' binary mode; the hash is the same.
        let name = rest
            .strip_prefix(' ')
            .or_else(|| rest.strip_prefix('*'))
            .ok_or_else(|| malformed(number, "expected two spaces or ' *' after the hash"))?;
        if name == asset {
            if found.is_some() {
                return Err(malformed(number, &format!("'{asset}' is listed twice")));
            }
            found = Some(hash.to_ascii_lowercase());
        }
    }
    found.ok_or_else(|| UpdateError::NoChecksum {
        version: version.to_owned(),
        asset: asset.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH_A: &str = "bd26333dad9ef54f5d9b8893cdcf088198cda1d06194ba3487d6224e0f0dda38";
    const HASH_B: &str = "0000000000000000000000000000000000000000000000000000000000000001";

    #[test]
    fn finds_the_line_for_the_asset_in_text_or_binary_mode() {
        let sums = format!("{HASH_B}  runner-macos-aarch64\n{HASH_A} *runner-linux-x86_64\n");
        assert_eq!(
            expected_sha256(sums.as_bytes(), "runner-linux-x86_64", "1").expect("found"),
            HASH_A
        );
        assert_eq!(
            expected_sha256(sums.as_bytes(), "runner-macos-aarch64", "1").expect("found"),
            HASH_B
        );
    }

    #[test]
    fn a_missing_asset_or_a_malformed_line_is_an_error() {
        let sums = format!("{HASH_A}  runner-linux-x86_64\n");
        let error =
            expected_sha256(sums.as_bytes(), "runner-linux-aarch64", "1").expect_err("absent");
        assert!(matches!(error, UpdateError::NoChecksum { .. }), "{error}");
        // A name that merely starts like the asset is a different file.
        assert!(expected_sha256(sums.as_bytes(), "runner-linux-x86", "1").is_err());
        for bad in [
            "xyz  runner-linux-x86_64",
            &format!("{HASH_A} runner-linux-x86_64"),
            "garbage",
        ] {
            let error = expected_sha256(bad.as_bytes(), "runner-linux-x86_64", "1").expect_err(bad);
            assert!(
                matches!(error, UpdateError::BadSums { .. }),
                "{bad}: {error}"
            );
        }
        let twice = format!("{HASH_A}  runner-linux-x86_64\n{HASH_B}  runner-linux-x86_64\n");
        assert!(expected_sha256(twice.as_bytes(), "runner-linux-x86_64", "1").is_err());
    }
}
