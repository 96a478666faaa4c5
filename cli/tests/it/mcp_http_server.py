#!/usr/bin/env python3
"""A small MCP server over streamable HTTP for the runner's tests.

Usage: mcp_http_server.py PORT TOKEN [EXTRA_TOOL]

Listens on 127.0.0.1:PORT (0: any free port) and prints
"listening on http://127.0.0.1:<port>/mcp" once it accepts connections.
Every request must carry "Authorization: Bearer TOKEN" (401 otherwise), so
the test sees that configured headers are sent. `initialize` opens a session
(Mcp-Session-Id); other requests need a known session (404 otherwise, as the
protocol says). `tools/list` is answered with a JSON body and `tools/call`
with a server-sent event stream, so both response kinds are exercised.
GET (a standalone event stream) is not offered: 405. Tools: `echo`, `add`,
`pid`, and EXTRA_TOOL when given (to see a changed tool list announced).
"""
import http.server
import json
import os
import sys
import threading
import uuid

PORT = int(sys.argv[1])
TOKEN = sys.argv[2]
EXTRA = sys.argv[3] if len(sys.argv) > 3 else None

TOOLS = [
    {"name": "echo", "description": "Echo the text back.",
     "inputSchema": {"type": "object", "required": ["text"],
                     "properties": {"text": {"type": "string"}}}},
    {"name": "add", "description": "Add two integers.",
     "inputSchema": {"type": "object", "required": ["a", "b"],
                     "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}},
    {"name": "pid", "description": "This server's process id.",
     "inputSchema": {"type": "object", "properties": {}}},
]
if EXTRA:
    TOOLS.append({"name": EXTRA, "description": "Present only in this run.",
                  "inputSchema": {"type": "object", "properties": {}}})

SESSIONS = set()
LOCK = threading.Lock()


def text(value, is_error=False):
    return {"content": [{"type": "text", "text": value}], "isError": is_error}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body=None, content_type="application/json", headers=None):
        data = b"" if body is None else body.encode()
        self.send_response(status)
        if body is not None:
            self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def authorised(self):
        if self.headers.get("authorization") == "Bearer " + TOKEN:
            return True
        self.send(401, json.dumps({"error": "unauthorised"}),
                  headers={"www-authenticate": 'Bearer realm="test"'})
        return False

    def do_GET(self):
        if self.authorised():
            self.send(405, json.dumps({"error": "no standalone stream"}))

    def do_DELETE(self):
        if self.authorised():
            with LOCK:
                SESSIONS.discard(self.headers.get("mcp-session-id"))
            self.send(200, "{}")

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        if not self.authorised():
            return
        try:
            message = json.loads(body)
        except ValueError:
            self.send(400, json.dumps({"error": "not JSON"}))
            return
        method = message.get("method")
        message_id = message.get("id")
        session = self.headers.get("mcp-session-id")
        if method == "initialize":
            session = uuid.uuid4().hex
            with LOCK:
                SESSIONS.add(session)
            params = message.get("params") or {}
            result = {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "http-fixture", "version": "1.0"},
            }
            self.reply(message_id, result, headers={"mcp-session-id": session})
            return
        with LOCK:
            known = session in SESSIONS
        if not known:
            self.send(404 if session else 400, json.dumps({"error": "unknown session"}))
            return
        if message_id is None or method is None:
            self.send(202)  # notifications (initialized, cancelled) and responses
            return
        if method == "tools/list":
            self.reply(message_id, {"tools": TOOLS})
        elif method == "tools/call":
            params = message.get("params") or {}
            name = params.get("name")
            args = params.get("arguments") or {}
            if name == "echo":
                result = text(args.get("text", ""))
            elif name == "add":
                result = text(str(args["a"] + args["b"]))
            elif name == "pid":
                result = text(str(os.getpid()))
            elif name == EXTRA:
                result = text(EXTRA)
            else:
                result = text("no such tool: %s" % name, True)
            event = {"jsonrpc": "2.0", "id": message_id, "result": result}
            self.send(200, "event: message\ndata: %s\n\n" % json.dumps(event),
                      content_type="text/event-stream")
        elif method == "ping":
            self.reply(message_id, {})
        else:
            error = {"code": -32601, "message": "method not found: %s" % method}
            self.send(200, json.dumps({"jsonrpc": "2.0", "id": message_id, "error": error}))

    def reply(self, message_id, result, headers=None):
        self.send(200, json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}),
                  headers=headers)


server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
print("listening on http://127.0.0.1:%d/mcp" % server.server_address[1], flush=True)
server.serve_forever()
