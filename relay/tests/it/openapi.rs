//! The OpenAPI document covers every route the router serves.

use reqwest::{Method, StatusCode};

use crate::support::spawn_relay;

#[tokio::test]
async fn openapi_lists_every_route() {
    let relay = spawn_relay().await;
    let (status, document) = relay
        .request(Method::GET, "/openapi.json", None, None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(document["openapi"], "3.1.0");
    assert!(!runner_relay::http::ROUTES.is_empty());
    for (method, path) in runner_relay::http::ROUTES {
        let operation = &document["paths"][*path][method.as_str().to_lowercase()];
        assert!(
            operation.is_object(),
            "{method} {path} missing from /openapi.json"
        );

        // And the router really serves it (not the unknown-route fallback).
        let concrete = path.replace("{id}", "env_missing");
        let (_, body) = relay.request(method.clone(), &concrete, None, None).await;
        assert_ne!(body["error"]["code"], "route_not_found", "{method} {path}");
        assert_ne!(
            body["error"]["code"], "method_not_allowed",
            "{method} {path}"
        );
    }
}

/// Every `$ref` points at a schema the document has: the hand-written part
/// and the schemas generated from types refer to each other.
#[test]
fn every_reference_resolves() {
    fn refs(value: &serde_json::Value, found: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                if let Some(serde_json::Value::String(target)) = map.get("$ref") {
                    found.push(target.clone());
                }
                map.values().for_each(|child| refs(child, found));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|child| refs(child, found)),
            _ => {}
        }
    }
    let document = runner_relay::http::openapi::document();
    let mut found = Vec::new();
    refs(&document, &mut found);
    assert!(
        found.iter().any(|target| target.ends_with("/Session")),
        "{found:?}"
    );
    for target in found {
        let pointer = target.strip_prefix('#').unwrap_or(&target);
        assert!(
            document.pointer(pointer).is_some(),
            "{target} does not resolve"
        );
    }
}
