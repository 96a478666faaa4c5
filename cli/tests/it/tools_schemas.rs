//! Every tool's schema the relay lists comes from its argument type: what
//! a real runner announces, read back through `GET
//! /execution-environments/{id}/tools`, is the schema `schemars` derives
//! from the type the tool deserialises its arguments into.

use serde_json::{json, Value};

use runner_cli::tools::registry::TOOLS;
use runner_cli::tools::tool::schema_of;

use crate::support::{dev_env, Relay};
use crate::tools_support::{listed_tools, online_with, wait_for_tools, BinDir};

#[tokio::test]
async fn every_listed_schema_is_the_one_derived_from_the_argument_type() {
    // Stand-ins for every binary a tool needs, so every tool is announced.
    let bin = BinDir::new();
    for name in [
        "git",
        "kubectl",
        "helm",
        "docker",
        "terraform",
        "chromium",
        "claude",
    ] {
        bin.script(name, "#!/bin/sh\nexit 0\n");
    }
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let relay = Relay::spawn().await;
    let (environment, _runner) = online_with(&relay, dev_env(), &[("PATH", &path)], &[]).await;
    wait_for_tools(&relay, &environment, "every tool is announced", |names| {
        TOOLS
            .iter()
            .all(|tool| names.iter().any(|name| name == tool.name()))
    })
    .await;
    let listed = listed_tools(&relay, &environment).await;
    for tool in TOOLS {
        let entry = listed
            .iter()
            .find(|entry| entry["name"] == tool.name())
            .unwrap_or_else(|| panic!("{} is not listed: {listed:?}", tool.name()));
        let schema = entry
            .get("input_schema")
            .or_else(|| entry.get("inputSchema"))
            .unwrap_or_else(|| panic!("{}: no schema in {entry}", tool.name()));
        assert_eq!(schema, &tool.spec().input_schema, "{}", tool.name());
        assert_ne!(schema, &Value::Null, "{}", tool.name());
    }
    // The derivation itself: one type, one schema (the shell's, in full).
    let shell = listed
        .iter()
        .find(|entry| entry["name"] == "shell")
        .expect("shell");
    let derived = schema_of::<runner_cli::tools::shell::ShellArgs>();
    assert_eq!(shell["input_schema"], derived);
    assert_eq!(derived["required"], json!(["command"]));
    assert_eq!(derived["additionalProperties"], json!(false));
    assert_eq!(derived["properties"]["timeout_s"]["minimum"], json!(1));
}
