# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_runner_relay_global_optspecs
    string join \n log-format= access-log worker-threads= h/help V/version
end

function __fish_runner_relay_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_runner_relay_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_runner_relay_using_subcommand
    set -l cmd (__fish_runner_relay_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c runner-relay -n "__fish_runner_relay_needs_command" -l log-format -d 'Log format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c runner-relay -n "__fish_runner_relay_needs_command" -l worker-threads -d 'Threads that serve the API and the runners\' sockets (default: one per CPU). Fewer leave more of a small host to other processes' -r
complete -c runner-relay -n "__fish_runner_relay_needs_command" -l access-log -d 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay\'s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald\'s rate limit, which then drops the warnings that matter'
complete -c runner-relay -n "__fish_runner_relay_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner-relay -n "__fish_runner_relay_needs_command" -s V -l version -d 'Print version'
complete -c runner-relay -n "__fish_runner_relay_needs_command" -f -a "serve" -d 'Run the relay'
complete -c runner-relay -n "__fish_runner_relay_needs_command" -f -a "admin" -d 'Manage members, API keys and teams in the relay\'s store'
complete -c runner-relay -n "__fish_runner_relay_needs_command" -f -a "dev" -d 'Start a relay and a local runner in one command, for development'
complete -c runner-relay -n "__fish_runner_relay_needs_command" -f -a "generate-assets" -d 'Regenerate completions/ and man/ from these definitions (for developers)'
complete -c runner-relay -n "__fish_runner_relay_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l listen -d 'Address to listen on' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l data-dir -d 'Directory for the relay\'s data (default: the platform data directory)' -r -F
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l database-url -d 'Database URL (default: sqlite://<data-dir>/relay.db)' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l nats-url -d 'NATS server routing calls between relays (shared mode; needs a postgres:// database URL). Without it the relay runs alone' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l nats-subject-prefix -d 'First token of every NATS subject this deployment uses' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l instance-id -d 'This relay instance\'s id in shared mode (default: random per start)' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l drain-grace -d 'Seconds a stopping relay (SIGTERM) gives calls in flight before it sends its runners elsewhere' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l stream-keep-alive -d 'Seconds of silence after which a streamed call\'s body carries a keep-alive frame (SSE: a comment line), so proxies in front of the relay keep the connection. Keep it under their idle timeout' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l output-stall-timeout -d 'Seconds a streamed call\'s output waits for a caller that reads none of it before the call is cancelled (the runner\'s socket waits meanwhile, so this bounds how long one slow reader holds it)' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l session-idle-timeout -d 'Seconds a work session (`POST /sessions`) may stay unused before it expires; its calls then fail with `session_expired` (410). Counted from the last call, with up to 10 s of grace' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l approval-ttl -d 'Seconds an approval (a call to a tool that needs a person\'s approval, asked with `"on_approval": "wait"`) stays open; one not decided by then expires, which counts as denied' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l approval-webhook -d 'Post each new approval to this URL (JSON a chat tool can post, signed with HMAC-SHA256: docs/approvals.md). Needs --approval-webhook-secret-file. A chat webhook URL holds a token: set it in the environment (a 0600 env file), not on the command line; the relay never logs more than its origin' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l approval-webhook-secret-file -d 'File holding the webhook\'s signing secret (at least 16 characters; readable by its owner only, else the relay refuses to start)' -r -F
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l public-url -d 'The URL people and runners reach this relay at (e.g. behind a proxy), for the links the relay sends out (approval webhooks) and the console\'s setup commands. An `https` URL makes the console\'s cookie `Secure` (TLS ended at the proxy)' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l max-handshakes -d 'Runner connections allowed between their request and their `welcome` at once; more wait up to 5 s for a slot (at most 64 per slot), else are answered 503 with Retry-After (runners retry with backoff), so a reconnect storm never queues work the runners\' timeouts would throw away' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l releases-dir -d 'Serve a runner release mirror from DIR (`install.sh`, `releases/latest`, `releases/download/<version>/…`) and tell older runners in heartbeat answers that a newer version exists' -r -F
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l tls-cert -d 'Serve HTTPS with this PEM certificate chain (needs --tls-key)' -r -F
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l tls-key -d 'The PEM private key of --tls-cert' -r -F
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l audit-retention-days -d 'Days audit entries are kept; older ones are pruned daily (the rest still verifies)' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l metrics-addr -d 'Serve `GET /metrics` without a credential on its own listener, e.g. 127.0.0.1:9464. Only a loopback address, unless --metrics-addr-public' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l metrics-token-file -d 'Serve `GET /metrics` on the API port too, to requests bearing this file\'s content as `Authorization: Bearer` (at least 32 characters, e.g. `openssl rand -hex 32`; the file must not be readable by group or others). A file, so the secret is never in argv' -r -F
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l mcp-max-environments -d 'Above this many usable environments, `/mcp` lists the compact `list_tools` and `run_tool` instead of every environment\'s tools' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l mcp-allowed-host -d 'Accept `/mcp` requests only with this `Host` (repeatable, or comma-separated in the environment variable; `host` or `host:port`). Default: any host; the API key is what lets a request in' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l mcp-allowed-origin -d 'Accept `/mcp` requests from browser pages of this origin (repeatable; e.g. `https://console.example.com`). Default: none, so a page cannot call `/mcp` with a key it holds' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l console-docker-image -d 'The image the console\'s setup guide tells Docker to run (built from installers/Dockerfile). Default: runner:<this relay\'s version>' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l log-format -d 'Log format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l worker-threads -d 'Threads that serve the API and the runners\' sockets (default: one per CPU). Fewer leave more of a small host to other processes' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l no-audit -d 'Record nothing in the audit log (who invoked what, token, member and environment changes, failed authentications). On by default; see docs/audit.md'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l audit-arguments -d 'Keep each call\'s arguments in its audit entry (the values of the `env` argument masked), not only their SHA-256 digest'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l metrics-addr-public -d 'Let --metrics-addr listen beyond this machine (anyone who reaches it reads the metrics: no ids or secrets, but counts of your traffic)'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l no-metrics -d 'Record no metrics (every recording is skipped; `/metrics` answers 404)'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l no-mcp -d 'Do not serve `/mcp` (the relay as an MCP server; docs/mcp.md)'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l mcp-no-fast-path -d 'Serve every MCP request through the SDK\'s per-request service, even plain `tools/call`s (for comparing the two paths)'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l no-console -d 'Do not serve the web console at `/console` (docs/console.md)'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -l access-log -d 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay\'s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald\'s rate limit, which then drops the warnings that matter'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand serve" -s V -l version -d 'Print version'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and not __fish_seen_subcommand_from create-key add-to-team remove-from-team create-team audit help" -l data-dir -d 'Directory for the relay\'s data (default: the platform data directory)' -r -F
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and not __fish_seen_subcommand_from create-key add-to-team remove-from-team create-team audit help" -l database-url -d 'Database URL (default: sqlite://<data-dir>/relay.db)' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and not __fish_seen_subcommand_from create-key add-to-team remove-from-team create-team audit help" -l log-format -d 'Log format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and not __fish_seen_subcommand_from create-key add-to-team remove-from-team create-team audit help" -l worker-threads -d 'Threads that serve the API and the runners\' sockets (default: one per CPU). Fewer leave more of a small host to other processes' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and not __fish_seen_subcommand_from create-key add-to-team remove-from-team create-team audit help" -l create -d 'Create a new store if there is none at the data dir (or --database-url\'s SQLite file). Without it `admin` refuses, saying where it looked, rather than hand out a key of a store no relay serves'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and not __fish_seen_subcommand_from create-key add-to-team remove-from-team create-team audit help" -l access-log -d 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay\'s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald\'s rate limit, which then drops the warnings that matter'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and not __fish_seen_subcommand_from create-key add-to-team remove-from-team create-team audit help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and not __fish_seen_subcommand_from create-key add-to-team remove-from-team create-team audit help" -s V -l version -d 'Print version'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and not __fish_seen_subcommand_from create-key add-to-team remove-from-team create-team audit help" -f -a "create-key" -d 'Create a member with an API key and print the key (alone) on stdout'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and not __fish_seen_subcommand_from create-key add-to-team remove-from-team create-team audit help" -f -a "add-to-team" -d 'Add an existing member to a team (no-op if already in it)'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and not __fish_seen_subcommand_from create-key add-to-team remove-from-team create-team audit help" -f -a "remove-from-team" -d 'Remove a member from a team'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and not __fish_seen_subcommand_from create-key add-to-team remove-from-team create-team audit help" -f -a "create-team" -d 'Create a team (no-op if it exists)'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and not __fish_seen_subcommand_from create-key add-to-team remove-from-team create-team audit help" -f -a "audit" -d 'The audit log'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and not __fish_seen_subcommand_from create-key add-to-team remove-from-team create-team audit help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-key" -l team -d 'Add the member to this team (repeatable; the team must exist)' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-key" -l name -d 'The member\'s display name' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-key" -l data-dir -d 'Directory for the relay\'s data (default: the platform data directory)' -r -F
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-key" -l database-url -d 'Database URL (default: sqlite://<data-dir>/relay.db)' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-key" -l log-format -d 'Log format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-key" -l worker-threads -d 'Threads that serve the API and the runners\' sockets (default: one per CPU). Fewer leave more of a small host to other processes' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-key" -l admin -d 'Make the member an organisation admin'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-key" -l agent -d 'Make the member an agent (an API client acting for its teams, e.g. a coding agent or a CI pipeline) rather than a person'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-key" -l create -d 'Create a new store if there is none at the data dir (or --database-url\'s SQLite file). Without it `admin` refuses, saying where it looked, rather than hand out a key of a store no relay serves'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-key" -l access-log -d 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay\'s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald\'s rate limit, which then drops the warnings that matter'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-key" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-key" -s V -l version -d 'Print version'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from add-to-team" -l data-dir -d 'Directory for the relay\'s data (default: the platform data directory)' -r -F
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from add-to-team" -l database-url -d 'Database URL (default: sqlite://<data-dir>/relay.db)' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from add-to-team" -l log-format -d 'Log format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from add-to-team" -l worker-threads -d 'Threads that serve the API and the runners\' sockets (default: one per CPU). Fewer leave more of a small host to other processes' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from add-to-team" -l create -d 'Create a new store if there is none at the data dir (or --database-url\'s SQLite file). Without it `admin` refuses, saying where it looked, rather than hand out a key of a store no relay serves'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from add-to-team" -l access-log -d 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay\'s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald\'s rate limit, which then drops the warnings that matter'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from add-to-team" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from add-to-team" -s V -l version -d 'Print version'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from remove-from-team" -l data-dir -d 'Directory for the relay\'s data (default: the platform data directory)' -r -F
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from remove-from-team" -l database-url -d 'Database URL (default: sqlite://<data-dir>/relay.db)' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from remove-from-team" -l log-format -d 'Log format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from remove-from-team" -l worker-threads -d 'Threads that serve the API and the runners\' sockets (default: one per CPU). Fewer leave more of a small host to other processes' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from remove-from-team" -l create -d 'Create a new store if there is none at the data dir (or --database-url\'s SQLite file). Without it `admin` refuses, saying where it looked, rather than hand out a key of a store no relay serves'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from remove-from-team" -l access-log -d 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay\'s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald\'s rate limit, which then drops the warnings that matter'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from remove-from-team" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from remove-from-team" -s V -l version -d 'Print version'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-team" -l data-dir -d 'Directory for the relay\'s data (default: the platform data directory)' -r -F
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-team" -l database-url -d 'Database URL (default: sqlite://<data-dir>/relay.db)' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-team" -l log-format -d 'Log format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-team" -l worker-threads -d 'Threads that serve the API and the runners\' sockets (default: one per CPU). Fewer leave more of a small host to other processes' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-team" -l create -d 'Create a new store if there is none at the data dir (or --database-url\'s SQLite file). Without it `admin` refuses, saying where it looked, rather than hand out a key of a store no relay serves'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-team" -l access-log -d 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay\'s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald\'s rate limit, which then drops the warnings that matter'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-team" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from create-team" -s V -l version -d 'Print version'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from audit" -l data-dir -d 'Directory for the relay\'s data (default: the platform data directory)' -r -F
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from audit" -l database-url -d 'Database URL (default: sqlite://<data-dir>/relay.db)' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from audit" -l log-format -d 'Log format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from audit" -l worker-threads -d 'Threads that serve the API and the runners\' sockets (default: one per CPU). Fewer leave more of a small host to other processes' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from audit" -l create -d 'Create a new store if there is none at the data dir (or --database-url\'s SQLite file). Without it `admin` refuses, saying where it looked, rather than hand out a key of a store no relay serves'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from audit" -l access-log -d 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay\'s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald\'s rate limit, which then drops the warnings that matter'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from audit" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from audit" -s V -l version -d 'Print version'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from audit" -f -a "verify" -d 'Walk the audit log\'s hash chain from its oldest entry and check that no entry was changed or deleted. Exits 1 naming the first bad entry (changed row, broken link, missing rows); 0 when intact'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from audit" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from help" -f -a "create-key" -d 'Create a member with an API key and print the key (alone) on stdout'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from help" -f -a "add-to-team" -d 'Add an existing member to a team (no-op if already in it)'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from help" -f -a "remove-from-team" -d 'Remove a member from a team'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from help" -f -a "create-team" -d 'Create a team (no-op if it exists)'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from help" -f -a "audit" -d 'The audit log'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand admin; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand dev" -l listen -d 'Address to listen on' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand dev" -l data-dir -d 'Directory for everything (default: a new temporary directory, kept)' -r -F
complete -c runner-relay -n "__fish_runner_relay_using_subcommand dev" -l runner-bin -d 'The `runner` binary (default: next to this binary, else on PATH)' -r -F
complete -c runner-relay -n "__fish_runner_relay_using_subcommand dev" -l log-format -d 'Log format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c runner-relay -n "__fish_runner_relay_using_subcommand dev" -l worker-threads -d 'Threads that serve the API and the runners\' sockets (default: one per CPU). Fewer leave more of a small host to other processes' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand dev" -l access-log -d 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay\'s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald\'s rate limit, which then drops the warnings that matter'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand dev" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand dev" -s V -l version -d 'Print version'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand generate-assets" -l out -d 'Repository root to write into' -r -F
complete -c runner-relay -n "__fish_runner_relay_using_subcommand generate-assets" -l log-format -d 'Log format on stderr' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line'"
complete -c runner-relay -n "__fish_runner_relay_using_subcommand generate-assets" -l worker-threads -d 'Threads that serve the API and the runners\' sockets (default: one per CPU). Fewer leave more of a small host to other processes' -r
complete -c runner-relay -n "__fish_runner_relay_using_subcommand generate-assets" -l access-log -d 'Log every API request ("answered": method, path, status, ms) and every tool call ("call finished": environment, call id, tool, member, exit code, ms) at info, target `runner_relay::access`. Off by default: every call is in the relay\'s journal already (`GET /invocations/{call_id}`), and these lines would cost a busy relay a sixth of its instructions per call and run into journald\'s rate limit, which then drops the warnings that matter'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand generate-assets" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand generate-assets" -s V -l version -d 'Print version'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand help; and not __fish_seen_subcommand_from serve admin dev generate-assets help" -f -a "serve" -d 'Run the relay'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand help; and not __fish_seen_subcommand_from serve admin dev generate-assets help" -f -a "admin" -d 'Manage members, API keys and teams in the relay\'s store'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand help; and not __fish_seen_subcommand_from serve admin dev generate-assets help" -f -a "dev" -d 'Start a relay and a local runner in one command, for development'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand help; and not __fish_seen_subcommand_from serve admin dev generate-assets help" -f -a "generate-assets" -d 'Regenerate completions/ and man/ from these definitions (for developers)'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand help; and not __fish_seen_subcommand_from serve admin dev generate-assets help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand help; and __fish_seen_subcommand_from admin" -f -a "create-key" -d 'Create a member with an API key and print the key (alone) on stdout'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand help; and __fish_seen_subcommand_from admin" -f -a "add-to-team" -d 'Add an existing member to a team (no-op if already in it)'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand help; and __fish_seen_subcommand_from admin" -f -a "remove-from-team" -d 'Remove a member from a team'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand help; and __fish_seen_subcommand_from admin" -f -a "create-team" -d 'Create a team (no-op if it exists)'
complete -c runner-relay -n "__fish_runner_relay_using_subcommand help; and __fish_seen_subcommand_from admin" -f -a "audit" -d 'The audit log'
