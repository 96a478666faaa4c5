//! The API's validation and its OpenAPI document agree (the findings of
//! scripts/api-fuzz.sh): a body that is not an object is refused, the
//! rules the document states are the ones the relay applies, a query that
//! does not fit is a JSON 400, and the runner endpoints' 429 is documented.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{spawn_relay, TestRelay};

async fn raw(relay: &TestRelay, method: Method, path: &str, body: &str) -> (StatusCode, Value) {
    let response = relay
        .http
        .request(method, format!("{}{path}", relay.url))
        .bearer_auth(&relay.admin_key)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .expect("request");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn created(relay: &TestRelay, name: &str) -> String {
    let (status, body) = relay
        .post("/execution-environments", json!({ "name": name }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["id"].as_str().expect("id").to_owned()
}

/// serde reads a struct from an array of its fields: `[]` created an
/// environment and `[null, null]` was an empty PATCH.
#[tokio::test]
async fn bodies_that_are_not_objects_are_refused() {
    let relay = spawn_relay().await;
    for body in ["[]", "[\"x\"]", " [null, null]", "null", "1", "\"x\"", ""] {
        let (status, answer) = raw(&relay, Method::POST, "/execution-environments", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body:?}: {answer}");
        assert_eq!(answer["error"]["code"], "bad_request", "{body:?}");
    }
    let (_, list) = relay.get("/execution-environments").await;
    assert_eq!(list["environments"], json!([]), "nothing was created");

    let id = created(&relay, "kept").await;
    let path = format!("/execution-environments/{id}");
    for body in ["[null,null]", "[]", "[\"renamed\"]"] {
        let (status, answer) = raw(&relay, Method::PATCH, &path, body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body:?}: {answer}");
    }
    for path in ["/sessions", "/teams", "/members", "/templates"] {
        let (status, answer) = raw(&relay, Method::POST, path, "[]").await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {answer}");
    }
    let (status, _) = relay.post("/templates", json!({"name": "kept"})).await;
    assert_eq!(status, StatusCode::CREATED);
    for body in ["[null,null]", "[]", "[\"renamed\"]"] {
        let (status, answer) = raw(&relay, Method::PATCH, "/templates/kept", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body:?}: {answer}");
    }
    // An object with whitespace before it is still an object.
    let (status, answer) = raw(&relay, Method::PATCH, &path, "\n\t {\"description\":\"d\"}").await;
    assert_eq!(status, StatusCode::OK, "{answer}");
}

/// `type` and tags refuse control characters, as the document's pattern
/// says; a description keeps its line breaks.
#[tokio::test]
async fn labels_refuse_control_characters() {
    let relay = spawn_relay().await;
    for body in [
        json!({"name": "a", "type": "Lo\u{7}cal"}),
        json!({"name": "a", "type": "two\nlines"}),
        json!({"name": "a", "tags": ["ok", "b\u{1b}[31m"]}),
        json!({"name": "a", "tags": ["\u{85}"]}),
        json!({"name": "a\u{0}"}),
    ] {
        let (status, answer) = relay.post("/execution-environments", body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
    }
    let id = created(&relay, "labelled").await;
    let path = format!("/execution-environments/{id}");
    for body in [json!({"type": "x\ty"}), json!({"tags": ["\u{9f}"]})] {
        let (status, answer) = relay
            .request(
                Method::PATCH,
                &path,
                Some(&relay.admin_key),
                Some(body.clone()),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
    }
    let (status, answer) = relay
        .request(
            Method::PATCH,
            &path,
            Some(&relay.admin_key),
            Some(
                json!({"description": "line one\nline two\t.", "type": "Docker", "tags": ["gpu"]}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let (status, answer) = relay
        .post(
            "/sessions",
            json!({"environment": "auto", "tags": ["a\u{1}"]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
}

/// What the document allows the relay accepts (an empty description or
/// name at creation, `null` for an unchanged field, a member of an unknown
/// team is a 404 not a 400), and what it refuses (blank `type`, empty tag)
/// the document refuses too.
#[tokio::test]
async fn the_document_states_the_rules_the_relay_applies() {
    let relay = spawn_relay().await;
    let document = runner_relay::http::openapi::document();
    let create = &document["components"]["schemas"]["CreateEnvironment"]["properties"];
    assert_eq!(create["type"]["anyOf"][0]["minLength"], 1, "{create}");
    assert_eq!(create["type"]["anyOf"][0]["maxLength"], 64);
    let pattern = create["type"]["anyOf"][0]["pattern"]
        .as_str()
        .expect("pattern");
    assert!(pattern.contains(r"\u0000-\u001f"), "{pattern}");
    assert_eq!(create["tags"]["items"]["minLength"], 1);
    assert_eq!(create["tags"]["maxItems"], 64);
    assert_eq!(create["name"]["maxLength"], 128);
    assert!(
        create["name"].get("minLength").is_none(),
        "\"\" is allowed at creation"
    );
    assert_eq!(create["description"]["maxLength"], 4096);
    let update = &document["components"]["schemas"]["UpdateEnvironment"];
    assert!(update["properties"].get("scope").is_none(), "{update}");
    assert_eq!(update["additionalProperties"], false);

    // Allowed by the document, accepted by the relay.
    let (status, answer) = relay
        .post(
            "/execution-environments",
            json!({"name": "", "description": "", "type": null, "scope": null, "tags": []}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let id = answer["id"].as_str().expect("id").to_owned();
    let (status, answer) = relay
        .request(
            Method::PATCH,
            &format!("/execution-environments/{id}"),
            Some(&relay.admin_key),
            Some(json!({"name": null, "tags": null, "type": null, "description": ""})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");

    // Refused by both.
    for body in [
        json!({"type": ""}),
        json!({"type": " "}),
        json!({"tags": [""]}),
        json!({"scope": ""}),
        json!({"scope": "team: "}),
        json!({"policy": {"tools": {"mode": "list", "tools": ["a\u{7}"]}}}),
    ] {
        let (status, answer) = relay.post("/execution-environments", body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
    }

    // A well-formed request naming what does not exist: 404, not 400.
    let (status, answer) = relay
        .post("/members", json!({"name": "m", "teams": ["nobody"]}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    assert_eq!(answer["error"]["code"], "team_not_found");
}

/// A query string that does not fit is a JSON 400 (it was axum's plain
/// text), and out-of-range values are refused rather than clamped.
#[tokio::test]
async fn bad_query_strings_are_json_400s() {
    let relay = spawn_relay().await;
    for path in [
        "/sessions?state=null",
        "/approvals/apr_x?wait=null",
        "/approvals?limit=x",
        "/approvals?limit=0",
        "/approvals?limit=501",
        "/approvals/apr_x?wait=301",
        "/audit?cursor=%2B5",
        "/audit?action=",
    ] {
        let response = relay
            .http
            .get(format!("{}{path}", relay.url))
            .bearer_auth(&relay.admin_key)
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{path}");
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
            .to_owned();
        assert!(
            content_type.starts_with("application/json"),
            "{path}: {content_type}"
        );
        let body: Value = response.json().await.expect("JSON");
        assert_eq!(body["error"]["code"], "bad_request", "{path}");
    }
    let (status, answer) = relay.get("/audit?since=99999999999999999999999").await;
    assert_eq!(status, StatusCode::OK, "Unix seconds saturate: {answer}");
}

/// 429 with Retry-After on the runner endpoints, 400 wherever a body or
/// query is read, and the answers the relay gives there are in the
/// document.
#[tokio::test]
async fn the_document_lists_the_statuses_the_relay_answers() {
    let relay = spawn_relay().await;
    let document = runner_relay::http::openapi::document();
    for (path, method) in [("/runner/register", "post"), ("/runner/connect", "get")] {
        let answer = &document["paths"][path][method]["responses"]["429"];
        assert!(answer.is_object(), "{path}");
        assert!(answer["headers"]["Retry-After"].is_object(), "{path}");
    }
    assert!(
        document["paths"]["/runner/connect"]["get"]["responses"]["503"]["headers"]["Retry-After"]
            .is_object()
    );
    for (path, item) in document["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("item") {
            if operation.get("requestBody").is_some() {
                assert!(operation["responses"]["400"].is_object(), "{method} {path}");
            }
        }
    }

    // The relay really answers 429 there once an address keeps failing.
    let mut last = StatusCode::OK;
    let mut retry_after = None;
    for _ in 0..(runner_relay::ratelimit::PER_ADDRESS + 2) {
        let response = relay
            .http
            .post(format!("{}/runner/register", relay.url))
            .bearer_auth("rnrt_wrong")
            .send()
            .await
            .expect("request");
        last = response.status();
        retry_after = response.headers().get("retry-after").cloned();
    }
    assert_eq!(last, StatusCode::TOO_MANY_REQUESTS);
    assert!(retry_after.is_some());

    // Two members of one name: naming one is a 409, which is documented.
    for _ in 0..2 {
        let (status, _) = relay.post("/members", json!({"name": "twin"})).await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let (status, _) = relay.post("/teams", json!({"name": "pair"})).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, answer) = relay
        .request(
            Method::DELETE,
            "/teams/pair/members/twin",
            Some(&relay.admin_key),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert_eq!(answer["error"]["code"], "ambiguous_member");
    assert!(
        document["paths"]["/teams/{name}/members/{member}"]["delete"]["responses"]["409"]
            .is_object()
    );
}
