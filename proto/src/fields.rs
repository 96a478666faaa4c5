//! The rules of the API's text fields, in one table read twice: the relay
//! validates a request with [`Text::check`], and the OpenAPI document
//! describes the same field with [`Text::schema`] (through
//! `#[schemars(schema_with = …)]` on the request types). A rule changed
//! here changes both; nothing else states a field's length or characters.
//!
//! Characters are counted as Unicode scalar values, as JSON Schema's
//! `maxLength` counts them. "Control" is `char::is_control` (Unicode `Cc`);
//! "whitespace" is `char::is_whitespace` (Unicode `White_Space`). The
//! patterns spell both sets out as ranges, because `\s` means different
//! sets in ECMA-262, Python and Rust.

use schemars::{Schema, SchemaGenerator};
use serde_json::{json, Map, Value};

/// Control characters (Unicode `Cc`), as a character-class body.
const CONTROL_CLASS: &str = r"\u0000-\u001f\u007f-\u009f";
/// Whitespace that is not a control character, as a character-class body
/// (`White_Space` less `Cc`: the rest of it is inside [`CONTROL_CLASS`]).
const SPACE_CLASS: &str = r" \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";
/// Whitespace that is a control character (tab to carriage return, NEL).
const CONTROL_SPACE_CLASS: &str = r"\t-\r\u0085";

/// What one text field accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Text {
    /// Longest value, in characters; `None`: only the body limit.
    pub max_chars: Option<usize>,
    /// `""` is accepted (a name the first runner fills in).
    pub empty: bool,
    /// A value of whitespace only is accepted.
    pub blank: bool,
    /// Control characters are accepted (free text: line breaks).
    pub control: bool,
    /// Whitespace is accepted anywhere.
    pub space: bool,
}

/// Why a value broke its [`Text`] rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextError {
    Empty,
    Blank,
    TooLong(usize),
    Control,
    Space,
}

impl std::fmt::Display for TextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Empty => f.write_str("must not be empty"),
            Self::Blank => f.write_str("must not be blank"),
            Self::TooLong(max) => write!(f, "must be at most {max} characters"),
            Self::Control => f.write_str("must not contain control characters"),
            Self::Space => f.write_str("must not contain whitespace"),
        }
    }
}

impl Text {
    /// Non-blank text without control characters, at most `max` characters.
    pub const fn label(max: usize) -> Self {
        Self {
            max_chars: Some(max),
            empty: false,
            blank: false,
            control: false,
            space: true,
        }
    }

    /// Checks `value` against the rule.
    pub fn check(&self, value: &str) -> Result<(), TextError> {
        if value.is_empty() {
            return if self.empty {
                Ok(())
            } else {
                Err(TextError::Empty)
            };
        }
        if !self.blank && value.chars().all(char::is_whitespace) {
            return Err(TextError::Blank);
        }
        if let Some(max) = self.max_chars {
            if value.chars().count() > max {
                return Err(TextError::TooLong(max));
            }
        }
        if !self.control && value.chars().any(char::is_control) {
            return Err(TextError::Control);
        }
        if !self.space && value.chars().any(char::is_whitespace) {
            return Err(TextError::Space);
        }
        Ok(())
    }

    /// The ECMA-262 pattern of the characters, `None` when any goes.
    pub fn pattern(&self) -> Option<String> {
        if self.control && self.space && self.blank {
            return None;
        }
        Some(format!("^{}$", self.unanchored()))
    }

    /// [`Text::pattern`] without its anchors, to build others from.
    fn unanchored(&self) -> String {
        // The characters every position may hold.
        let mut refused = String::new();
        if !self.control {
            refused.push_str(CONTROL_CLASS);
        }
        if !self.space {
            refused.push_str(SPACE_CLASS);
            if self.control {
                refused.push_str(CONTROL_SPACE_CLASS);
            }
        }
        let any = if refused.is_empty() {
            r"[\s\S]".to_owned()
        } else {
            format!("[^{refused}]")
        };
        let body = if self.blank || !self.space {
            // Without whitespace, every non-empty value is non-blank.
            format!("{any}+")
        } else {
            // At least one character that is not whitespace.
            let mut solid = format!("{SPACE_CLASS}{CONTROL_SPACE_CLASS}");
            if !self.control {
                solid.push_str(CONTROL_CLASS);
            }
            format!("{any}*[^{solid}]{any}*")
        };
        if self.empty {
            format!("(?:{body})?")
        } else {
            body
        }
    }

    /// This rule as a JSON Schema.
    pub fn schema(&self) -> Schema {
        Schema::from(self.schema_map())
    }

    fn schema_map(&self) -> Map<String, Value> {
        let mut schema = Map::new();
        schema.insert("type".into(), json!("string"));
        if !self.empty {
            schema.insert("minLength".into(), json!(1));
        }
        if let Some(max) = self.max_chars {
            schema.insert("maxLength".into(), json!(max));
        }
        if let Some(pattern) = self.pattern() {
            schema.insert("pattern".into(), json!(pattern));
        }
        schema
    }

    /// This rule, or `null` (a field left unchanged), as a JSON Schema.
    pub fn nullable_schema(&self) -> Schema {
        nullable(Value::Object(self.schema_map()))
    }

    /// A list of at most `max_items` values of this rule, as a JSON Schema.
    pub fn list_schema(&self, max_items: Option<usize>) -> Schema {
        let mut schema = Map::new();
        schema.insert("type".into(), json!("array"));
        schema.insert("items".into(), Value::Object(self.schema_map()));
        if let Some(max) = max_items {
            schema.insert("maxItems".into(), json!(max));
        }
        Schema::from(schema)
    }
}

/// `schema` or `null`.
fn nullable(schema: Value) -> Schema {
    let mut any_of = Map::new();
    any_of.insert("anyOf".into(), json!([schema, { "type": "null" }]));
    Schema::from(any_of)
}

/// An environment's name when it is created: blank is `""` only (the first
/// runner fills it with its hostname).
pub const ENVIRONMENT_NAME_AT_CREATION: Text = Text {
    empty: true,
    ..ENVIRONMENT_NAME
};
/// An environment's name.
pub const ENVIRONMENT_NAME: Text = Text::label(128);
/// An environment's description: free text, line breaks included.
pub const DESCRIPTION: Text = Text {
    max_chars: Some(4096),
    empty: true,
    blank: true,
    control: true,
    space: true,
};
/// An environment's `type` label.
pub const ENVIRONMENT_TYPE: Text = Text::label(64);
/// One routing tag (of an environment, or one a session prefers).
pub const TAG: Text = Text::label(64);
/// Most tags on one environment or session.
pub const MAX_TAGS: usize = 64;
/// A tool name (in a policy, an approval rule, or a call).
pub const TOOL_NAME: Text = Text {
    max_chars: None,
    ..Text::label(0)
};
/// A path of a policy's `file_paths`.
pub const FILE_PATH: Text = TOOL_NAME;
/// A member's or team's name: no whitespace, so it reads as one word on a
/// command line.
pub const MEMBER_NAME: Text = Text {
    space: false,
    ..Text::label(128)
};

/// A template's name: the rule of environment names.
pub const TEMPLATE_NAME: Text = ENVIRONMENT_NAME;
/// A template's `.env` text: free text. Its limit is in bytes
/// ([`crate::templates::MAX_ENV_TEXT_BYTES`]), which the relay checks; the
/// character count here is implied by it.
pub const ENV_TEXT: Text = Text {
    max_chars: Some(crate::templates::MAX_ENV_TEXT_BYTES),
    ..DESCRIPTION
};
/// A template's setup script, limited like [`ENV_TEXT`]
/// ([`crate::templates::MAX_SETUP_SCRIPT_BYTES`]).
pub const SETUP_SCRIPT: Text = Text {
    max_chars: Some(crate::templates::MAX_SETUP_SCRIPT_BYTES),
    ..DESCRIPTION
};
/// Longest domain name.
pub const MAX_DOMAIN_CHARS: usize = 253;
/// One label of a domain name: letters, digits and inner hyphens, 1–63.
const DOMAIN_LABEL: &str = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";

/// The pattern of a domain in an allowlist: dot-separated labels, no
/// trailing dot, no wildcard (a domain covers its subdomains).
pub fn domain_pattern() -> String {
    format!("^(?:{DOMAIN_LABEL}\\.)*{DOMAIN_LABEL}$")
}

/// Checks a domain of an allowlist against [`domain_pattern`] and
/// [`MAX_DOMAIN_CHARS`].
pub fn check_domain(domain: &str) -> Result<(), &'static str> {
    if domain.is_empty() {
        return Err("must not be empty");
    }
    if domain.len() > MAX_DOMAIN_CHARS {
        return Err("must be at most 253 characters");
    }
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        (1..=63).contains(&bytes.len())
            && bytes
                .iter()
                .all(|byte| byte.is_ascii_alphanumeric() || *byte == b'-')
            && bytes.first() != Some(&b'-')
            && bytes.last() != Some(&b'-')
    };
    if domain.split('.').all(label_ok) {
        Ok(())
    } else {
        Err("must be a domain name: labels of letters, digits and inner hyphens, separated by dots")
    }
}

/// The pattern of an environment's `scope`: `shared` or `team:<name>`
/// with a [`MEMBER_NAME`] (teams are named by the same rule).
pub fn scope_pattern() -> String {
    format!("^(?:shared|team:{})$", MEMBER_NAME.unanchored())
}

/// The schemas of the request types' fields, for `schema_with`.
/// Whole numbers as JSON Schema's `integer` has them: `60` and `60.0`
/// alike (a client that writes every number as a float is still valid),
/// anything with a fraction refused.
pub mod whole {
    use serde::{Deserialize, Deserializer};

    fn whole<E: serde::de::Error>(value: serde_json::Number) -> Result<i128, E> {
        if let Some(n) = value.as_i64() {
            return Ok(i128::from(n));
        }
        if let Some(n) = value.as_u64() {
            return Ok(i128::from(n));
        }
        match value.as_f64() {
            // Exact up to 2^53; larger floats are not whole seconds anyway.
            Some(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => Ok(n as i128),
            _ => Err(E::custom(format!("expected a whole number, got {value}"))),
        }
    }

    /// An optional `u64`.
    pub fn option_u64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
        match Option::<serde_json::Number>::deserialize(deserializer)? {
            None => Ok(None),
            Some(number) => u64::try_from(whole::<D::Error>(number)?)
                .map(Some)
                .map_err(|_| serde::de::Error::custom("expected a whole number ≥ 0")),
        }
    }

    /// An optional `i64`.
    pub fn option_i64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
        match Option::<serde_json::Number>::deserialize(deserializer)? {
            None => Ok(None),
            Some(number) => i64::try_from(whole::<D::Error>(number)?)
                .map(Some)
                .map_err(|_| serde::de::Error::custom("whole number out of range")),
        }
    }
}

pub mod schema {
    use super::*;

    pub fn environment_name_at_creation(_: &mut SchemaGenerator) -> Schema {
        ENVIRONMENT_NAME_AT_CREATION.schema()
    }
    pub fn environment_name(_: &mut SchemaGenerator) -> Schema {
        ENVIRONMENT_NAME.nullable_schema()
    }
    pub fn description(_: &mut SchemaGenerator) -> Schema {
        DESCRIPTION.schema()
    }
    pub fn nullable_description(_: &mut SchemaGenerator) -> Schema {
        DESCRIPTION.nullable_schema()
    }
    pub fn environment_type(_: &mut SchemaGenerator) -> Schema {
        ENVIRONMENT_TYPE.nullable_schema()
    }
    pub fn tags(_: &mut SchemaGenerator) -> Schema {
        TAG.list_schema(Some(MAX_TAGS))
    }
    pub fn nullable_tags(_: &mut SchemaGenerator) -> Schema {
        nullable(TAG.list_schema(Some(MAX_TAGS)).to_value())
    }
    pub fn tool_names(_: &mut SchemaGenerator) -> Schema {
        TOOL_NAME.list_schema(None)
    }
    pub fn file_paths(_: &mut SchemaGenerator) -> Schema {
        FILE_PATH.list_schema(None)
    }
    pub fn scope(_: &mut SchemaGenerator) -> Schema {
        nullable(json!({ "type": "string", "pattern": scope_pattern() }))
    }
    pub fn member_name(_: &mut SchemaGenerator) -> Schema {
        MEMBER_NAME.schema()
    }
    pub fn template_name(_: &mut SchemaGenerator) -> Schema {
        TEMPLATE_NAME.schema()
    }
    pub fn nullable_template_name(_: &mut SchemaGenerator) -> Schema {
        TEMPLATE_NAME.nullable_schema()
    }
    pub fn env_text(_: &mut SchemaGenerator) -> Schema {
        ENV_TEXT.schema()
    }
    pub fn nullable_env_text(_: &mut SchemaGenerator) -> Schema {
        ENV_TEXT.nullable_schema()
    }
    pub fn setup_script(_: &mut SchemaGenerator) -> Schema {
        SETUP_SCRIPT.schema()
    }
    pub fn nullable_setup_script(_: &mut SchemaGenerator) -> Schema {
        SETUP_SCRIPT.nullable_schema()
    }
    fn domain_list() -> Value {
        json!({
            "type": "array",
            "maxItems": crate::templates::MAX_ALLOWED_DOMAINS,
            "items": { "type": "string", "maxLength": MAX_DOMAIN_CHARS, "pattern": domain_pattern() }
        })
    }
    pub fn domains(_: &mut SchemaGenerator) -> Schema {
        Schema::from(match domain_list() {
            Value::Object(map) => map,
            _ => Map::new(),
        })
    }
    pub fn nullable_domains(_: &mut SchemaGenerator) -> Schema {
        nullable(domain_list())
    }
}

#[cfg(test)]
mod whole_tests {
    #[derive(Debug, serde::Deserialize)]
    struct Seconds {
        #[serde(default, deserialize_with = "super::whole::option_u64")]
        s: Option<u64>,
    }

    #[test]
    fn whole_numbers_read_as_integers_and_fractions_do_not() {
        let read = |text: &str| serde_json::from_str::<Seconds>(text).map(|seconds| seconds.s);
        assert_eq!(read(r#"{"s": 60}"#).ok(), Some(Some(60)));
        assert_eq!(read(r#"{"s": 60.0}"#).ok(), Some(Some(60)));
        assert_eq!(read(r#"{"s": null}"#).ok(), Some(None));
        assert_eq!(read(r#"{}"#).ok(), Some(None));
        assert!(read(r#"{"s": 60.5}"#).is_err());
        assert!(read(r#"{"s": -1}"#).is_err());
        assert!(read(r#"{"s": "60"}"#).is_err());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_check_what_they_say() {
        assert!(ENVIRONMENT_NAME_AT_CREATION.check("").is_ok());
        assert_eq!(ENVIRONMENT_NAME.check(""), Err(TextError::Empty));
        assert_eq!(ENVIRONMENT_NAME.check(" \u{3000}"), Err(TextError::Blank));
        assert_eq!(
            ENVIRONMENT_NAME_AT_CREATION.check("  "),
            Err(TextError::Blank)
        );
        assert!(ENVIRONMENT_NAME.check(&"a".repeat(128)).is_ok());
        assert_eq!(
            ENVIRONMENT_NAME.check(&"a".repeat(129)),
            Err(TextError::TooLong(128))
        );
        assert_eq!(TAG.check("a\u{7}b"), Err(TextError::Control));
        assert_eq!(ENVIRONMENT_TYPE.check("x\ny"), Err(TextError::Control));
        assert!(DESCRIPTION.check("line\nline\t").is_ok());
        assert!(DESCRIPTION.check("").is_ok());
        assert_eq!(MEMBER_NAME.check("a b"), Err(TextError::Space));
        assert_eq!(MEMBER_NAME.check("a\u{85}b"), Err(TextError::Control));
        assert!(TOOL_NAME.check(&"t".repeat(10_000)).is_ok());
    }

    #[test]
    fn domains_check_as_their_pattern_says() {
        let pattern = regex::Regex::new(&domain_pattern()).expect("pattern compiles");
        for (domain, ok) in [
            ("pypi.org", true),
            ("files.pythonhosted.org", true),
            ("localhost", true),
            ("a-b.c0", true),
            ("xn--bcher-kva.example", true),
            ("", false),
            ("-a.org", false),
            ("a-.org", false),
            ("a..org", false),
            ("pypi.org.", false),
            ("*.pypi.org", false),
            ("pypi.org:443", false),
            ("https://pypi.org", false),
            ("a b.org", false),
            ("bücher.example", false),
        ] {
            assert_eq!(check_domain(domain).is_ok(), ok, "{domain:?}");
            assert_eq!(pattern.is_match(domain), ok, "{domain:?} by pattern");
        }
        let label = "a".repeat(63);
        assert!(check_domain(&label).is_ok());
        assert!(check_domain(&"a".repeat(64)).is_err());
        assert!(!pattern.is_match(&"a".repeat(64)));
        let long = [label.as_str(); 4].join(".");
        assert_eq!(long.len(), 255);
        assert!(check_domain(&long).is_err(), "over 253 characters");
    }

    /// The pattern and the check agree on every character, alone, among
    /// others, and repeated (lengths are `maxLength`'s, checked above).
    #[test]
    fn patterns_match_exactly_what_checks_accept() {
        let rules = [
            ENVIRONMENT_NAME_AT_CREATION,
            ENVIRONMENT_NAME,
            DESCRIPTION,
            TAG,
            TOOL_NAME,
            MEMBER_NAME,
        ];
        for rule in rules {
            let unbounded = Text {
                max_chars: None,
                ..rule
            };
            let pattern = rule
                .pattern()
                .map(|p| regex::Regex::new(&p).expect("pattern compiles"));
            let agrees = |value: &str| {
                let by_schema = (rule.empty || !value.is_empty())
                    && pattern.as_ref().is_none_or(|p| p.is_match(value));
                assert_eq!(
                    unbounded.check(value).is_ok(),
                    by_schema,
                    "{rule:?} on {value:?} (pattern {:?})",
                    rule.pattern()
                );
            };
            agrees("");
            // Every character up to past the last whitespace (U+3000), and a
            // sample of the rest.
            let rest = (0x3100..=0x10_ffff_u32)
                .step_by(251)
                .chain([0xfeff, 0x10_ffff]);
            for c in (0..0x3100_u32).chain(rest).filter_map(char::from_u32) {
                let mut buffer = [0; 4];
                let alone = c.encode_utf8(&mut buffer);
                agrees(alone);
                agrees(&format!("a{c}b"));
                agrees(&format!("{c}{c}"));
            }
        }
    }
}
