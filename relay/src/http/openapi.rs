//! The OpenAPI 3.1 description of the HTTP API, next to the route table (a
//! test checks that every route of the router is in it). The older routes'
//! schemas are written by hand; those of sessions, members and teams are
//! generated from their types ([`generated_schemas`]), so they cannot drift.

use runner_proto::api::{CreateEnvironment, Policy, UpdateEnvironment};
use runner_proto::approvals::{Approval, ApprovalList, ApprovalTicket, ApprovalWebhook, Decide};
use runner_proto::audit::AuditPage;
use runner_proto::fields;
use runner_proto::members::{AddTeamMember, MemberView, SetDefaultEnvironment, TeamList, TeamView};
use runner_proto::sessions::{CreateSession, Session, SessionList};
use runner_proto::templates::{CreateTemplate, Template, TemplateList, UpdateTemplate};
use schemars::generate::SchemaSettings;
use serde_json::{json, Map, Value};

/// The schemas of the types the newer routes take and answer, with their
/// references pointing into `#/components/schemas`.
fn generated_schemas() -> Map<String, Value> {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|settings| settings.definitions_path = "/components/schemas".into())
        .into_generator();
    generator.subschema_for::<CreateSession>();
    generator.subschema_for::<Session>();
    generator.subschema_for::<SessionList>();
    generator.subschema_for::<runner_proto::sandbox::SandboxList>();
    generator.subschema_for::<runner_proto::sandbox::SandboxInfo>();
    generator.subschema_for::<runner_proto::sandbox::Deploy>();
    generator.subschema_for::<MemberView>();
    generator.subschema_for::<TeamView>();
    generator.subschema_for::<TeamList>();
    generator.subschema_for::<SetDefaultEnvironment>();
    generator.subschema_for::<AddTeamMember>();
    generator.subschema_for::<ApprovalTicket>();
    generator.subschema_for::<Approval>();
    generator.subschema_for::<ApprovalList>();
    generator.subschema_for::<Decide>();
    generator.subschema_for::<ApprovalWebhook>();
    generator.subschema_for::<AuditPage>();
    generator.subschema_for::<CreateEnvironment>();
    generator.subschema_for::<UpdateEnvironment>();
    generator.subschema_for::<Policy>();
    generator.subschema_for::<Template>();
    generator.subschema_for::<TemplateList>();
    generator.subschema_for::<CreateTemplate>();
    generator.subschema_for::<UpdateTemplate>();
    generator.take_definitions(true)
}

fn name_parameter() -> Value {
    json!({ "name": "name", "in": "path", "required": true, "schema": { "type": "string" } })
}

/// The session, member and team routes.
fn session_and_member_paths(unauthorized: &Value) -> Value {
    let session_not_found =
        error_response("session_not_found: no such session, or not the caller's");
    json!({
        "/sessions": {
            "post": {
                "summary": "Start a session: `auto`, `sandbox` or an environment (id or name); absent: the agent's default, else its team's, else auto. The first call locks the environment",
                "requestBody": json_body("CreateSession"),
                "responses": {
                    "201": json_response("the session (not locked yet)", "Session"),
                    "400": error_response("bad tags or body"),
                    "401": unauthorized,
                    "403": error_response("the environment or agent is not the caller's to use"),
                    "404": error_response("no such environment or agent_not_found"),
                    "409": error_response("default_environment_deleted: the agent's or team's default environment was deleted")
                }
            },
            "get": {
                "summary": "Sessions the caller created or works for (every session for organisation admins), newest first",
                "parameters": [{ "name": "state", "in": "query", "required": false, "schema": { "enum": ["open", "ended", "expired"] } }],
                "responses": { "200": json_response("the sessions", "SessionList"), "401": unauthorized }
            }
        },
        "/sessions/{id}": {
            "parameters": [id_parameter()],
            "get": {
                "summary": "A session: its state, the environment it is locked to and that environment's status now, why it was chosen, who created it, when it was last used and expires",
                "responses": { "200": json_response("the session", "Session"), "401": unauthorized, "404": session_not_found.clone() }
            },
            "delete": {
                "summary": "End a session; later calls answer 410 session_ended",
                "responses": { "204": { "description": "ended" }, "401": unauthorized, "404": session_not_found.clone() }
            }
        },
        "/sessions/{id}/invoke-tool": {
            "parameters": [id_parameter()],
            "post": {
                "summary": "Run one tool where the session is locked (the first call picks and locks the environment); body and answers as invoke-tool, plus a `notice` when the environment is degraded and the x-runner-environment header",
                "requestBody": json_body("InvokeRequest"),
                "responses": {
                    "200": json_response("the tool ran", "InvokeResponse"),
                    "202": json_response("on_approval: wait, and the tool needs a person's approval", "ApprovalTicket"),
                    "400": error_response("malformed body"),
                    "401": unauthorized,
                    "403": error_response("not the session's creator or agent, or the policy refused"),
                    "404": session_not_found,
                    "410": error_response("session_ended, session_expired, session_environment_deleted or session_sandbox_gone (its host went away, or it stopped after its idle timeout or lifetime)"),
                    "503": error_response("session_environment_unavailable (never moved to another machine), environment_not_selectable, no_usable_runner, no_sandbox_host, sandbox_setup_failed (with the end of the setup log) or sandbox_not_connected"),
                    "504": error_response("timeout")
                }
            }
        },
        "/sandboxes": {
            "get": {
                "summary": "Sandboxes started for sessions, newest first (organisation admins: all; others: those of their sessions): host, template, state, why it ended, the setup script's outcome",
                "parameters": [{ "name": "live", "in": "query", "required": false, "schema": { "type": "boolean", "default": false }, "description": "only sandboxes that have not ended" }],
                "responses": { "200": json_response("the sandboxes", "SandboxList"), "400": error_response("malformed query"), "401": unauthorized }
            }
        },
        "/sandboxes/{id}": {
            "parameters": [id_parameter()],
            "get": {
                "summary": "One sandbox",
                "responses": { "200": json_response("the sandbox", "SandboxInfo"), "401": unauthorized, "404": error_response("sandbox_not_found") }
            }
        },
        "/approvals": {
            "get": {
                "summary": "Approvals the caller may see (the requester's own, and those of environments the caller may see), newest first",
                "parameters": [
                    { "name": "status", "in": "query", "required": false, "schema": { "enum": ["pending", "approved", "denied", "expired", "all"] } },
                    { "name": "environment", "in": "query", "required": false, "schema": { "type": "string" }, "description": "an environment id or name" },
                    { "name": "limit", "in": "query", "required": false, "schema": { "type": "integer", "minimum": 1, "maximum": 500, "default": 100 } }
                ],
                "responses": { "200": json_response("the approvals", "ApprovalList"), "400": error_response("unknown status"), "401": unauthorized }
            }
        },
        "/approvals/{id}": {
            "parameters": [id_parameter()],
            "get": {
                "summary": "An approval: the call (values of env masked), its hash, the rule, who asked and decided, and the approved call's end (outcome)",
                "parameters": [{ "name": "wait", "in": "query", "required": false, "schema": { "type": "integer", "minimum": 0, "maximum": 300 }, "description": "seconds to wait until it is settled: denied, expired, or approved and its call ended" }],
                "responses": { "200": json_response("the approval", "Approval"), "401": unauthorized, "404": error_response("no such approval, or not visible to the caller") }
            }
        },
        "/approvals/{id}/approve": {
            "parameters": [id_parameter()],
            "post": {
                "summary": "Approve: the stored call is sent once, exactly as asked (checked against the policy again). Approving again is a no-op. Persons who may manage the environment, never the requester",
                "requestBody": json_body("Decide"),
                "responses": {
                    "200": json_response("the approval", "Approval"),
                    "401": unauthorized,
                    "403": error_response("not_an_approver: the requester, an agent, or outside the environment's scope"),
                    "404": error_response("no such approval"),
                    "409": error_response("approval_decided (denied before), approval_expired or environment_deleted")
                }
            }
        },
        "/approvals/{id}/deny": {
            "parameters": [id_parameter()],
            "post": {
                "summary": "Deny: the call never runs. Persons who may manage the environment, never the requester",
                "requestBody": json_body("Decide"),
                "responses": {
                    "200": json_response("the approval", "Approval"),
                    "401": unauthorized,
                    "403": error_response("not_an_approver"),
                    "404": error_response("no such approval"),
                    "409": error_response("approval_decided (approved before) or approval_expired")
                }
            }
        },
        "/teams/{name}": {
            "parameters": [name_parameter()],
            "get": {
                "summary": "A team: members and default environment (admins and the team's members)",
                "responses": { "200": json_response("the team", "TeamView"), "401": unauthorized, "404": error_response("team_not_found") }
            },
            "patch": {
                "summary": "Set or clear the team's default environment (shared or the team's own)",
                "requestBody": json_body("SetDefaultEnvironment"),
                "responses": { "200": json_response("the team", "TeamView"), "400": error_response("environment not usable by the team"), "401": unauthorized, "404": error_response("team_not_found or environment not found") }
            }
        },
        "/teams/{name}/members": {
            "parameters": [name_parameter()],
            "post": {
                "summary": "Add an existing member to the team (organisation admins)",
                "requestBody": json_body("AddTeamMember"),
                "responses": { "200": json_response("already in it", "TeamView"), "201": json_response("added", "TeamView"), "401": unauthorized, "403": error_response("not an organisation admin"), "404": error_response("team_not_found or member_not_found"), "409": error_response("ambiguous_member: several members have that name; give the member id") }
            }
        },
        "/teams/{name}/members/{member}": {
            "parameters": [name_parameter(), { "name": "member", "in": "path", "required": true, "schema": { "type": "string" } }],
            "delete": {
                "summary": "Remove a member (id or unique name) from the team (organisation admins)",
                "responses": { "204": { "description": "removed" }, "401": unauthorized, "403": error_response("not an organisation admin"), "404": error_response("team_not_found, member_not_found or not_a_member"), "409": error_response("ambiguous_member: several members have that name; give the member id") }
            }
        },
        "/members/{id}": {
            "parameters": [id_parameter()],
            "get": {
                "summary": "A member: kind, teams, default environment and whether it still has runner tools (itself, admins, and an agent's teammates); `me` is the caller's own",
                "responses": { "200": json_response("the member", "MemberView"), "401": unauthorized, "404": error_response("member_not_found") }
            },
            "patch": {
                "summary": "Set or clear the member's default environment (one it may use)",
                "requestBody": json_body("SetDefaultEnvironment"),
                "responses": { "200": json_response("the member", "MemberView"), "400": error_response("environment not usable by the member"), "401": unauthorized, "404": error_response("member_not_found or environment not found") }
            }
        }
    })
}

fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
    })
}

/// `response` with its `Retry-After` header (whole seconds).
fn retry_after(mut response: Value) -> Value {
    response["headers"] = json!({
        "Retry-After": { "description": "seconds to wait before trying again", "schema": { "type": "integer", "minimum": 1 } }
    });
    response
}

fn json_response(description: &str, schema: &str) -> Value {
    json!({
        "description": description,
        "content": { "application/json": { "schema": { "$ref": format!("#/components/schemas/{schema}") } } }
    })
}

fn json_body(schema: &str) -> Value {
    json!({
        "required": true,
        "content": { "application/json": { "schema": { "$ref": format!("#/components/schemas/{schema}") } } }
    })
}

fn id_parameter() -> Value {
    json!({ "name": "id", "in": "path", "required": true, "schema": { "type": "string" } })
}

/// `GET /audit`.
fn audit_paths(unauthorized: &Value) -> Value {
    let query = |name: &str, description: &str| json!({ "name": name, "in": "query", "required": false, "description": description, "schema": { "type": "string" } });
    let time_query = |name: &str, description: &str| {
        json!({ "name": name, "in": "query", "required": false, "description": description, "schema": { "anyOf": [
        { "type": "string", "pattern": super::audit::UNIX_SECONDS_PATTERN },
        { "type": "string", "format": "date-time" }
    ] } })
    };
    json!({
        "/audit": {
            "get": {
                "summary": "The audit log (organisation admins only): who invoked which tool, changed which environment, token, member or team, and failed authentications; entries chained by hash. Oldest first unless order=desc; page with next_cursor",
                "parameters": [
                    query("environment", "environment id"),
                    query("actor", "member id"),
                    { "name": "action", "in": "query", "required": false, "schema": { "enum": runner_proto::audit::AuditAction::ALL.iter().map(|action| action.as_str()).collect::<Vec<_>>() } },
                    query("session", "work session id"),
                    query("tool", "tool name"),
                    time_query("since", "RFC 3339 or Unix seconds, inclusive"),
                    time_query("until", "RFC 3339 or Unix seconds, exclusive"),
                    { "name": "limit", "in": "query", "required": false, "schema": { "type": "integer", "minimum": 1, "maximum": 1000 } },
                    { "name": "cursor", "in": "query", "required": false, "description": "next_cursor of the previous page (opaque)", "schema": { "type": "string", "pattern": super::audit::CURSOR_PATTERN } },
                    { "name": "order", "in": "query", "required": false, "schema": { "enum": ["asc", "desc"] } }
                ],
                "responses": {
                    "200": json_response("a page of entries", "AuditPage"),
                    "400": error_response("bad filter, limit or cursor"),
                    "401": unauthorized,
                    "403": error_response("not an organisation admin")
                }
            }
        }
    })
}

/// What every template answer says about the variables' values.
const TEMPLATE_VALUES_ARE_VISIBLE: &str = "The values of env_text are stored and shown in plain text to every member who may use the template (and to organisation admins): they are configuration, not a place for secrets. Answers carry `warnings` for variables that look like secrets (a name containing TOKEN, SECRET, PASSWORD or KEY, or a value shaped like a known credential); the template is saved anyway.";

/// `/templates` and `/templates/{id}`.
fn template_paths(unauthorized: &Value) -> Value {
    let not_found =
        error_response("template_not_found: no such template, or not visible to the caller");
    let forbidden = error_response(
        "shared templates are managed by organisation admins, a team's by its members",
    );
    json!({
        "/templates": {
            "get": {
                "summary": "Sandbox templates the caller may see: shared ones and their teams' (every one for organisation admins), by name",
                "description": TEMPLATE_VALUES_ARE_VISIBLE,
                "responses": { "200": json_response("the templates", "TemplateList"), "401": unauthorized }
            },
            "post": {
                "summary": "Create a sandbox template: network, environment variables in .env form (at most 32 KiB; a parse error names the line), a bash setup script (at most 64 KiB), idle timeout and lifetime",
                "description": TEMPLATE_VALUES_ARE_VISIBLE,
                "requestBody": json_body("CreateTemplate"),
                "responses": {
                    "201": json_response("created, with warnings for secret-looking values", "Template"),
                    "400": error_response("invalid field, .env parse error (`env_text: line N: …`) or size over the limit"),
                    "401": unauthorized,
                    "403": error_response("shared scope needs an admin; team scope needs membership"),
                    "409": error_response("name taken")
                }
            }
        },
        "/templates/{id}": {
            "parameters": [{ "name": "id", "in": "path", "required": true, "schema": { "type": "string" }, "description": "the template's id or name" }],
            "get": {
                "summary": "Read a template",
                "description": TEMPLATE_VALUES_ARE_VISIBLE,
                "responses": { "200": json_response("the template", "Template"), "401": unauthorized, "403": forbidden.clone(), "404": not_found.clone() }
            },
            "patch": {
                "summary": "Update a template (not its scope); sandboxes started later use the new settings",
                "description": TEMPLATE_VALUES_ARE_VISIBLE,
                "requestBody": json_body("UpdateTemplate"),
                "responses": {
                    "200": json_response("updated, with warnings for secret-looking values", "Template"),
                    "400": error_response("invalid field or .env parse error"),
                    "401": unauthorized, "403": forbidden.clone(), "404": not_found.clone(),
                    "409": error_response("name taken")
                }
            },
            "delete": {
                "summary": "Delete a template; sessions that named it keep working, their new sandboxes use the default configuration",
                "responses": { "204": { "description": "deleted" }, "401": unauthorized, "403": forbidden, "404": not_found }
            }
        }
    })
}

/// `POST /mcp` and `/mcp/sessions/{id}`: MCP's own protocol (JSON-RPC
/// over streamable HTTP), described by the MCP specification, not here.
fn mcp_paths(unauthorized: &Value) -> Value {
    let operation = |summary: &str, parameters: Value| {
        json!({
            "post": {
                "summary": summary,
                "description": "MCP over streamable HTTP (stateless; JSON answers where the call allows). The body is a JSON-RPC message; send `Accept: application/json, text/event-stream`. See docs/mcp.md.",
                "parameters": parameters,
                "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object" } } } },
                "responses": {
                    "200": { "description": "a JSON-RPC answer (application/json or text/event-stream)" },
                    "202": { "description": "a notification or response was accepted" },
                    "401": unauthorized,
                    "403": { "description": "a browser Origin or a Host that is not allowed" }
                }
            }
        })
    };
    json!({
        "/mcp": operation("The relay as an MCP server: the tools of every environment the API key's member may use, and management tools", json!([])),
        "/mcp/sessions/{id}": operation("The MCP server of one work session: its environment's tools", json!([id_parameter()]))
    })
}

/// The document served at `/openapi.json`.
pub fn document() -> Value {
    let mut document = hand_written();
    let unauthorized = error_response("missing or invalid API key");
    if let Value::Object(paths) = session_and_member_paths(&unauthorized) {
        if let Some(Value::Object(into)) = document.get_mut("paths") {
            into.extend(paths);
        }
    }
    for extra in [
        audit_paths(&unauthorized),
        template_paths(&unauthorized),
        mcp_paths(&unauthorized),
    ] {
        if let Value::Object(paths) = extra {
            if let Some(Value::Object(into)) = document.get_mut("paths") {
                into.extend(paths);
            }
        }
    }
    if let Some(Value::Object(schemas)) = document.pointer_mut("/components/schemas") {
        schemas.extend(generated_schemas());
    }
    describe_bad_requests(&mut document);
    document
}

/// Every operation that reads a body or a query string answers 400 to one
/// that does not fit (the extractors do it before the handler runs); those
/// that do not say why already get the generic answer.
fn describe_bad_requests(document: &mut Value) {
    let Some(Value::Object(paths)) = document.get_mut("paths") else {
        return;
    };
    for item in paths.values_mut() {
        let path_query = item["parameters"]
            .as_array()
            .is_some_and(|parameters| parameters.iter().any(|p| p["in"] == "query"));
        let Value::Object(item) = item else { continue };
        for (method, operation) in item.iter_mut() {
            if method == "parameters" {
                continue;
            }
            let reads_query = path_query
                || operation["parameters"]
                    .as_array()
                    .is_some_and(|parameters| parameters.iter().any(|p| p["in"] == "query"));
            let reads_body = operation.get("requestBody").is_some();
            if !(reads_query || reads_body) {
                continue;
            }
            if let Some(Value::Object(responses)) = operation.get_mut("responses") {
                responses
                    .entry("400")
                    .or_insert_with(|| error_response("malformed body or query string"));
            }
        }
    }
}

fn hand_written() -> Value {
    let unauthorized = error_response("missing or invalid API key");
    let not_found = error_response("no such environment, or not visible to the caller");
    let forbidden = error_response("visible, but the caller may not do this");
    let bad_token = error_response("invalid, revoked or expired token");
    let token_limited = retry_after(error_response("too_many_failed_attempts: too many refused tokens from this address or for this environment; a valid token is never refused"));
    // `runner register` (POST) and `runner doctor` (GET) get the same answers.
    let token_check = json!({
        "200": json_response("the token's environment", "RegisterResponse"),
        "401": bad_token,
        "429": token_limited
    });
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "runner-relay",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "HTTP API of the runner relay: execution environments, registration tokens and tool calls. Every answer carries `x-runner-api-version: 1`; every error is `{\"error\":{\"code\",\"message\"}}`."
        },
        "components": {
            "securitySchemes": {
                "apiKey": { "type": "http", "scheme": "bearer", "description": "Organisation API key (rnrk_…)" },
                "registrationToken": { "type": "http", "scheme": "bearer", "description": "Environment registration token (rnrt_…)" },
                "scrapeToken": { "type": "http", "scheme": "bearer", "description": "The relay's metrics scrape token (serve --metrics-token-file)" }
            },
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": { "error": {
                        "type": "object",
                        "required": ["code", "message"],
                        "properties": {
                            "code": { "type": "string" },
                            "message": { "type": "string" },
                            "call_id": { "type": "string" }
                        }
                    } }
                },
                "Environment": {
                    "type": "object",
                    "required": ["id", "name", "type", "scope", "tier", "policy", "created_at"],
                    "properties": {
                        "id": { "type": "string" },
                        "name": { "type": "string", "maxLength": 128 },
                        "description": { "type": "string" },
                        "type": { "type": "string" },
                        "tags": { "type": "array", "items": { "type": "string" } },
                        "scope": { "type": "string", "description": "shared or team:<name>" },
                        "tier": { "enum": ["production", "development"] },
                        "install_browser_tools": { "type": "boolean" },
                        "policy": { "$ref": "#/components/schemas/Policy" },
                        "created_at": { "type": "string", "format": "date-time" },
                        "last_seen": { "type": ["string", "null"], "format": "date-time" },
                        "status": { "$ref": "#/components/schemas/Status" }
                    }
                },
                "EnvironmentList": {
                    "type": "object",
                    "properties": { "environments": { "type": "array", "items": { "$ref": "#/components/schemas/Environment" } } }
                },
                "EnvironmentStatus": {
                    "type": "object",
                    "properties": {
                        "id": { "type": "string" },
                        "name": { "type": "string" },
                        "status": { "enum": ["pending", "online", "degraded", "offline"] },
                        "reason": { "type": ["string", "null"] },
                        "connected": { "type": "boolean" },
                        "last_seen": { "type": ["string", "null"] },
                        "runner": { "type": ["object", "null"] },
                        "token": { "type": ["object", "null"] },
                        "runner_token": { "oneOf": [{ "$ref": "#/components/schemas/RunnerToken" }, { "type": "null" }] }
                    }
                },
                "RunnerToken": {
                    "type": "object",
                    "description": "the token the connected runner authenticated with",
                    "properties": {
                        "hint": { "type": "string" },
                        "current": { "type": "boolean", "description": "false: a previous token in its grace period" },
                        "valid_until": { "type": ["string", "null"], "description": "when a previous token stops working" }
                    }
                },
                "GeneratedToken": {
                    "type": "object",
                    "properties": {
                        "token": { "type": "string", "description": "shown once" },
                        "environment_id": { "type": "string" },
                        "hint": { "type": "string" },
                        "previous_valid_until": { "type": ["string", "null"] }
                    }
                },
                "TokenStatus": {
                    "type": "object",
                    "properties": {
                        "environment_id": { "type": "string" },
                        "has_token": { "type": "boolean" },
                        "hint": { "type": ["string", "null"] },
                        "created_at": { "type": ["string", "null"] },
                        "age_days": { "type": ["integer", "null"] },
                        "last_used_at": { "type": ["string", "null"] },
                        "days_until_expiry": { "type": ["integer", "null"] },
                        "runner_connected": { "type": "boolean" },
                        "runner_token": { "oneOf": [{ "$ref": "#/components/schemas/RunnerToken" }, { "type": "null" }] }
                    }
                },
                "RevokedTokens": {
                    "type": "object",
                    "properties": {
                        "environment_id": { "type": "string" },
                        "revoked_tokens": { "type": "integer" },
                        "runner_disconnected": { "type": "boolean" }
                    }
                },
                "ToolList": {
                    "type": "object",
                    "properties": {
                        "environment_id": { "type": "string" },
                        "runner_connected": { "type": "boolean" },
                        "tools": { "type": "array", "items": { "type": "object" } }
                    }
                },
                "InvokeRequest": {
                    "type": "object",
                    "required": ["tool_name"],
                    "additionalProperties": false,
                    "description": "a field sent as null is as if absent",
                    "properties": {
                        "tool_name": fields::TOOL_NAME.schema(),
                        "args": { "type": ["object", "null"] },
                        "timeout_s": { "type": ["integer", "null"], "minimum": 1, "maximum": runner_proto::api::MAX_TIMEOUT_S, "default": runner_proto::api::DEFAULT_TIMEOUT_S },
                        "call_id": { "type": ["string", "null"], "pattern": "^[A-Za-z0-9._:-]{1,128}$", "description": "idempotency key: a call_id already seen is not run again; the answer is the first call's answer (its result, its failure, or the wait for it). Send your own, and when the connection to the relay fails before the answer, send the same request again with backoff" },
                        "on_approval": { "enum": ["refuse", "wait", null], "default": "refuse", "description": "for a tool that needs a person's approval: refuse (403 approval_required) or ask for one (202 ApprovalTicket)" },
                        "approval_wait_s": { "type": ["integer", "null"], "minimum": 1, "maximum": runner_proto::approvals::MAX_APPROVAL_WAIT_S, "description": "with on_approval wait: hold the request this long for the decision and the call's end before answering 202" }
                    },
                    "if": { "required": ["approval_wait_s"], "properties": { "approval_wait_s": { "type": "integer" } } },
                    "then": { "required": ["on_approval"], "properties": { "on_approval": { "const": "wait" } } }
                },
                "Invocation": {
                    "type": "object",
                    "required": ["call_id", "environment_id", "tool_name", "state", "created_at"],
                    "properties": {
                        "call_id": { "type": "string" },
                        "environment_id": { "type": "string" },
                        "tool_name": { "type": "string" },
                        "state": { "enum": ["pending", "dispatched", "failed", "done"], "description": "failed: the runner's session ended before it answered (error_code runner_disconnected); a result the runner reports later still moves it to done" },
                        "epoch": { "type": ["integer", "null"], "description": "runner session epoch the call was dispatched to" },
                        "created_at": { "type": "string" },
                        "finished_at": { "type": ["string", "null"] },
                        "result": {},
                        "exit_code": { "type": ["integer", "null"] },
                        "error": { "type": ["string", "null"] },
                        "error_code": { "type": "string", "description": "the kind of error, when a caller should tell it apart: runner_disconnected, denied_by_runner_policy" }
                    }
                },
                "InvokeResponse": {
                    "type": "object",
                    "properties": {
                        "call_id": { "type": "string" },
                        "result": {},
                        "exit_code": { "type": ["integer", "null"] },
                        "error": { "type": ["string", "null"] },
                        "error_code": { "type": "string", "description": "timeout: the runner stopped the call at its deadline (the tool's own timeout_s, or the call's), as the 504's code; the output so far is in result" }
                    }
                },
                "RegisterResponse": {
                    "type": "object",
                    "properties": { "environment": { "type": "object", "properties": {
                        "id": { "type": "string" }, "name": { "type": "string" }, "tags": { "type": "array", "items": { "type": "string" } }
                    } },
                    "connected_runner": { "type": ["object", "null"], "description": "the runner connected now, which a runner started with this token replaces", "properties": {
                        "hostname": { "type": "string" }, "connected_since": { "type": "string" }
                    } } }
                }
            }
        },
        "security": [{ "apiKey": [] }],
        "paths": {
            "/execution-environments": {
                "get": {
                    "summary": "List the environments visible to the caller",
                    "responses": { "200": json_response("environments", "EnvironmentList"), "401": unauthorized }
                },
                "post": {
                    "summary": "Create an environment",
                    "requestBody": json_body("CreateEnvironment"),
                    "responses": {
                        "201": json_response("created", "Environment"),
                        "400": error_response("invalid field"),
                        "401": unauthorized,
                        "403": error_response("shared scope needs an admin; team scope needs membership"),
                        "409": error_response("name taken")
                    }
                }
            },
            "/execution-environments/{id}": {
                "parameters": [id_parameter()],
                "get": {
                    "summary": "Read an environment",
                    "responses": { "200": json_response("the environment", "Environment"), "401": unauthorized, "404": not_found }
                },
                "patch": {
                    "summary": "Update an environment (not its scope)",
                    "requestBody": json_body("UpdateEnvironment"),
                    "responses": {
                        "200": json_response("updated", "Environment"),
                        "400": error_response("invalid field, or scope given"),
                        "401": unauthorized, "403": forbidden, "404": not_found,
                        "409": error_response("name taken")
                    }
                },
                "delete": {
                    "summary": "Delete an environment and disconnect its runner",
                    "responses": { "204": { "description": "deleted" }, "401": unauthorized, "403": forbidden, "404": not_found }
                }
            },
            "/execution-environments/{id}/status": {
                "parameters": [id_parameter()],
                "get": {
                    "summary": "Live status, last heartbeat, runner and token hint",
                    "responses": { "200": json_response("status", "EnvironmentStatus"), "401": unauthorized, "404": not_found }
                }
            },
            "/execution-environments/{id}/generate-token": {
                "parameters": [id_parameter(), {
                    "name": "grace_hours", "in": "query", "required": false,
                    "schema": { "type": "integer", "minimum": 0, "maximum": 168, "default": 24 },
                    "description": "How long the previous token keeps working"
                }],
                "post": {
                    "summary": "Generate (rotate) the registration token; the plaintext is shown once",
                    "responses": {
                        "200": json_response("the new token", "GeneratedToken"),
                        "400": error_response("grace_hours out of range"),
                        "401": unauthorized, "403": forbidden, "404": not_found
                    }
                }
            },
            "/execution-environments/{id}/token-status": {
                "parameters": [id_parameter()],
                "get": {
                    "summary": "Token age, last use, days to expiry, runner connected (never the token)",
                    "responses": { "200": json_response("token status", "TokenStatus"), "401": unauthorized, "403": forbidden, "404": not_found }
                }
            },
            "/execution-environments/{id}/revoke-token": {
                "parameters": [id_parameter()],
                "post": {
                    "summary": "Invalidate every token and disconnect the runner",
                    "responses": { "200": json_response("revoked", "RevokedTokens"), "401": unauthorized, "403": forbidden, "404": not_found }
                }
            },
            "/execution-environments/{id}/deploy": {
                "parameters": [id_parameter()],
                "post": {
                    "summary": "Deploy: start a managed runner for the environment on the least loaded sandbox host, with a new token nobody sees (the previous one keeps working for grace_hours); answers once it is connected. Its state: provisioning/setting_up = deploying, ready = running, stopped, failed (with the reason)",
                    "requestBody": json_body("Deploy"),
                    "responses": { "200": json_response("running", "SandboxInfo"), "400": error_response("bad grace_hours, or a sandbox host or sandbox"), "401": unauthorized, "403": forbidden, "404": not_found, "409": error_response("already_deployed"), "503": error_response("no_sandbox_host, sandbox_setup_failed or sandbox_not_connected") }
                }
            },
            "/execution-environments/{id}/undeploy": {
                "parameters": [id_parameter()],
                "post": {
                    "summary": "Undeploy: the host stops the managed runner and removes everything of it",
                    "responses": { "200": json_response("stopped", "SandboxInfo"), "401": unauthorized, "403": forbidden, "404": not_found, "409": error_response("not_deployed") }
                }
            },
            "/execution-environments/{id}/deployment": {
                "parameters": [id_parameter()],
                "get": {
                    "summary": "The environment's newest deployment and its state",
                    "responses": { "200": json_response("the deployment", "SandboxInfo"), "401": unauthorized, "404": error_response("not found, or deployment_not_found") }
                }
            },
            "/execution-environments/{id}/tools": {
                "parameters": [id_parameter()],
                "get": {
                    "summary": "The runner's announced tools, filtered by the allow-list",
                    "responses": { "200": json_response("tools", "ToolList"), "401": unauthorized, "404": not_found }
                }
            },
            "/execution-environments/{id}/invoke-tool": {
                "parameters": [id_parameter()],
                "post": {
                    "summary": "Run one tool on the environment's runner",
                    "requestBody": json_body("InvokeRequest"),
                    "responses": {
                        "200": {
                            "description": "the tool ran (it may still have failed: see exit_code and error). By Accept: one JSON body; or streamed as produced: text/event-stream (output events {stream, data} with the bytes decoded as UTF-8, then one result or error event), or application/vnd.runner.stream (binary frames, output byte for byte: an 8-byte header of kind (0 keep-alive after 15 s of silence, 1 stdout, 2 stderr, 3 result JSON, 4 error JSON), three zero bytes and a big-endian u32 length, then the payload; the last frame is a result or an error)",
                            "content": {
                                "application/json": { "schema": { "$ref": "#/components/schemas/InvokeResponse" } },
                                "text/event-stream": { "schema": { "type": "string" } },
                                "application/vnd.runner.stream": { "schema": { "type": "string", "format": "binary" } }
                            }
                        },
                        "400": error_response("malformed body or timeout_s out of 1–3600"),
                        "401": unauthorized,
                        "202": json_response("on_approval: wait, and the tool needs a person's approval: the approval to wait for (GET /approvals/{id}?wait=N)", "ApprovalTicket"),
                        "403": error_response("tool_not_allowed, approval_required, path_not_allowed, approval_denied or approval_expired"),
                        "404": error_response("environment not found, or unknown_tool"),
                        "409": error_response("call_id_conflict: the call_id was used for another call"),
                        "503": error_response("runner_not_connected or runner_disconnected"),
                        "504": error_response("timeout; the runner was told to cancel; error.call_id names the call")
                    }
                }
            },
            "/invocations/{call_id}": {
                "parameters": [{ "name": "call_id", "in": "path", "required": true, "schema": { "type": "string" } }],
                "get": {
                    "summary": "A call's journal entry: pending, dispatched (to a session epoch), failed (its runner dropped first) or done with its result; fetch a result that arrived after the caller stopped waiting",
                    "responses": { "200": json_response("the call", "Invocation"), "401": unauthorized, "404": error_response("no such call, or its environment is not visible to the caller") }
                }
            },
            "/teams": {
                "get": {
                    "summary": "Teams the caller may manage (all for organisation admins)",
                    "responses": { "200": json_response("team names", "TeamList"), "401": unauthorized }
                },
                "post": {
                    "summary": "Create a team (organisation admins)",
                    "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object", "required": ["name"], "additionalProperties": false, "properties": { "name": fields::MEMBER_NAME.schema() } } } } },
                    "responses": { "201": { "description": "created" }, "400": error_response("bad name"), "401": unauthorized, "403": error_response("not an organisation admin"), "409": error_response("name taken") }
                }
            },
            "/members": {
                "post": {
                    "summary": "Create a member with an API key, shown once (organisation admins)",
                    "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object", "required": ["name"], "additionalProperties": false, "properties": { "name": fields::MEMBER_NAME.schema(), "admin": { "type": "boolean" }, "teams": { "type": "array", "items": { "type": "string" } }, "kind": { "enum": ["person", "agent", null] } } } } } },
                    "responses": { "201": { "description": "the member and its API key" }, "400": error_response("bad name"), "401": unauthorized, "403": error_response("not an organisation admin"), "404": error_response("team_not_found: a team named in teams does not exist"), "409": error_response("name taken") }
                }
            },
            "/runner/register": {
                "post": {
                    "summary": "Check a registration token (runner register)",
                    "security": [{ "registrationToken": [] }],
                    "responses": token_check
                },
                "get": {
                    "summary": "Check a registration token without registering: its use is not recorded (runner doctor)",
                    "security": [{ "registrationToken": [] }],
                    "responses": token_check
                }
            },
            "/runner/connect": {
                "get": {
                    "summary": "Runner WebSocket (protocol in runner_proto::ws); the token is checked before the upgrade",
                    "security": [{ "registrationToken": [] }],
                    "responses": {
                        "101": { "description": "switching protocols" },
                        "400": error_response("not a WebSocket upgrade"),
                        "401": bad_token,
                        "429": token_limited,
                        "503": retry_after(error_response("relay_busy: too many runners connecting at once; retry with backoff"))
                    }
                }
            },
            "/healthz": {
                "get": { "summary": "The process is up", "security": [], "responses": { "200": { "description": "ok" } } }
            },
            "/readyz": {
                "get": { "summary": "The store is reachable", "security": [], "responses": { "200": { "description": "ready" }, "503": error_response("store unreachable") } }
            },
            "/metrics": {
                "get": {
                    "summary": "Prometheus metrics in the OpenMetrics text format (docs/metrics.md); served on the API port only with a scrape token",
                    "security": [{ "scrapeToken": [] }],
                    "responses": { "200": { "description": "the exposition", "content": { "application/openmetrics-text": { "schema": { "type": "string" } } } }, "401": error_response("missing or wrong scrape token"), "404": error_response("metrics off, or no scrape token configured") }
                }
            },
            "/openapi.json": {
                "get": { "summary": "This document", "security": [], "responses": { "200": { "description": "OpenAPI 3.1" } } }
            }
        }
    })
}
