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
