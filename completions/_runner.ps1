
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'runner' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'runner'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'runner' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('register', 'register', [CompletionResultType]::ParameterValue, 'Check a registration token against the relay and store it for `runner run`')
            [CompletionResult]::new('unregister', 'unregister', [CompletionResultType]::ParameterValue, 'Remove the stored registration (config and token)')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Connect to the relay and execute tool calls until stopped')
            [CompletionResult]::new('login', 'login', [CompletionResultType]::ParameterValue, 'Store the relay URL and an API key for the admin commands')
            [CompletionResult]::new('logout', 'logout', [CompletionResultType]::ParameterValue, 'Forget the relay URL and API key `runner login` stored (the key is removed from the keychain and the credentials file). RUNNER_URL and RUNNER_API_KEY are not touched')
            [CompletionResult]::new('env', 'env', [CompletionResultType]::ParameterValue, 'Create, list, show, update and delete execution environments')
            [CompletionResult]::new('token', 'token', [CompletionResultType]::ParameterValue, 'Generate, inspect and revoke an environment''s registration token')
            [CompletionResult]::new('template', 'template', [CompletionResultType]::ParameterValue, 'Create, list, show, edit and delete sandbox templates')
            [CompletionResult]::new('session', 'session', [CompletionResultType]::ParameterValue, 'Start, list, show and end sessions: calls that stay on one machine')
            [CompletionResult]::new('approvals', 'approvals', [CompletionResultType]::ParameterValue, 'List, show, approve and deny calls that wait for a person''s approval')
            [CompletionResult]::new('audit', 'audit', [CompletionResultType]::ParameterValue, 'Read the relay''s audit log (organisation admins)')
            [CompletionResult]::new('tools', 'tools', [CompletionResultType]::ParameterValue, 'List the tools an environment offers (its runner''s catalogue, filtered by policy)')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show an environment''s status, or with --local this machine''s runner as it sees itself')
            [CompletionResult]::new('invoke', 'invoke', [CompletionResultType]::ParameterValue, 'Run a tool on an environment''s runner and print its output')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Explain what is wrong when the runner or the admin commands can''t reach the relay')
            [CompletionResult]::new('service', 'service', [CompletionResultType]::ParameterValue, 'Install, start, stop and inspect the runner as a system service')
            [CompletionResult]::new('update', 'update', [CompletionResultType]::ParameterValue, 'Update this binary from the release mirror (default: the registered relay)')
            [CompletionResult]::new('policy', 'policy', [CompletionResultType]::ParameterValue, 'Check commands against a permission file and lint permission files')
            [CompletionResult]::new('sandbox-host', 'sandbox-host', [CompletionResultType]::ParameterValue, 'Make this machine a sandbox host: start isolated, temporary runners (sandboxes) when the relay asks')
            [CompletionResult]::new('sandbox-enter', 'sandbox-enter', [CompletionResultType]::ParameterValue, 'Become bubblewrap in a private mount namespace with the sandbox''s root mounted (started by the sandbox host)')
            [CompletionResult]::new('sandbox-init', 'sandbox-init', [CompletionResultType]::ParameterValue, 'A sandbox''s first process (started by bubblewrap)')
            [CompletionResult]::new('tool-view', 'tool-view', [CompletionResultType]::ParameterValue, 'Make the namespace tools run in and hold it (started by `run`)')
            [CompletionResult]::new('generate-assets', 'generate-assets', [CompletionResultType]::ParameterValue, 'Regenerate completions/ and man/ from these definitions (for developers)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner;register' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Base URL of the relay, e.g. https://relay.example.com (required: this flag or RUNNER_URL)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'The registration token (prefer RUNNER_TOKEN or --token-stdin)')
            [CompletionResult]::new('--credential-store', '--credential-store', [CompletionResultType]::ParameterName, 'Where to keep the token')
            [CompletionResult]::new('--token-stdin', '--token-stdin', [CompletionResultType]::ParameterName, 'Read the token from standard input')
            [CompletionResult]::new('--replace', '--replace', [CompletionResultType]::ParameterName, 'Register even though a runner on another machine is connected to the environment: `runner run` here will replace it (it stops)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the result as JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;unregister' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;run' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL. With RUNNER_TOKEN also set in the environment, `run` needs no prior `register` (how the service and the container image run); otherwise the registration from `runner register` is used')
            [CompletionResult]::new('--workspace', '--workspace', [CompletionResultType]::ParameterName, 'Root directory for relative paths of file tools and the default working directory of `shell` (default: STATE_DIR/workspace)')
            [CompletionResult]::new('--permission-config', '--permission-config', [CompletionResultType]::ParameterName, 'Local permission file (YAML, key `permission`) checked before any command runs. Unset: every command is allowed. Set but missing or invalid: the runner refuses to start')
            [CompletionResult]::new('--call-log', '--call-log', [CompletionResultType]::ParameterName, 'Log every call that ran ("call finished": call id, tool, exit code, ms) at info, target `runner_cli::calls`: this machine''s own record of what ran on it, whoever runs the relay. `false` leaves it to the relay''s journal, for a runner taking thousands of calls a second (the line is a measurable share of a short call''s CPU, and journald''s rate limit drops every line of a service past 10,000 in 30 s). Calls that fail (refused by the permission file, bad arguments, a command that cannot start) are logged either way ("call failed")')
            [CompletionResult]::new('--max-concurrent-calls', '--max-concurrent-calls', [CompletionResultType]::ParameterName, 'Calls executed at once; more wait in a queue (reported as backlog)')
            [CompletionResult]::new('--kept-output-max-mb', '--kept-output-max-mb', [CompletionResultType]::ParameterName, 'Most MiB the files keeping large outputs (WORKSPACE/.runner/output) may hold; past it the oldest are removed when a new one is written (they are also removed after 7 days)')
            [CompletionResult]::new('--worker-threads', '--worker-threads', [CompletionResultType]::ParameterName, 'Threads that run the connection and the calls'' I/O. One is enough for most hosts and the fastest: commands run in their own processes, file and search tools on a separate pool, and one thread never has to wake another to hand a call on (`ping` 0.88× and 28 % less CPU per call than two threads, output streams as fast). Raise it for many large output streams at once')
            [CompletionResult]::new('--mcp-config', '--mcp-config', [CompletionResultType]::ParameterName, 'MCP servers to start and relay (YAML, key `servers`); their tools are announced as SERVER__TOOL. Set but unusable: the runner refuses to start')
            [CompletionResult]::new('--browser-install-command', '--browser-install-command', [CompletionResultType]::ParameterName, 'How to install Chromium when the environment asks for browser tools and no browser is on PATH: a program and its arguments separated by spaces (no quoting; run without a shell, as the runner''s user). Beats `browser_install_command` in config.yaml. Unset: the package manager on PATH (apt-get, dnf, apk, zypper, pacman), as root only')
            [CompletionResult]::new('--health-addr', '--health-addr', [CompletionResultType]::ParameterName, 'Serve /healthz (200 when connected, 503 otherwise), /status.json and /metrics (Prometheus) on this address, e.g. 127.0.0.1:9464, for load balancers, watchdogs and monitoring. `runner status --local` works without it')
            [CompletionResult]::new('--auto-update', '--auto-update', [CompletionResultType]::ParameterName, 'Install newer releases the relay announces (signature and SHA-256 verified, rolled back if the new binary does not connect). `false` only logs that an update exists')
            [CompletionResult]::new('--call-cgroups', '--call-cgroups', [CompletionResultType]::ParameterName, 'Give each process-running call a cgroup of its own where cgroup v2 is writable (the service unit delegates one), so that stopping the call also stops processes that left its process group and wiped their environment (`env -i setsid …`). Where the kernel allows `clone3`, the process is created inside its cgroup, and cgroups are reused between calls; elsewhere it moves itself in first (≈ 0.5 ms, more without cgroup2''s `favordynmods`: `runner doctor` says which). `false` keeps to the process group and the RUNNER_CALL_ID marker')
            [CompletionResult]::new('--hide-runner-files', '--hide-runner-files', [CompletionResultType]::ParameterName, 'Run tools with the runner''s config and state directories (the credential files among them), the service''s environment file and, when the keychain holds a runner secret, the session bus hidden from them, the workspace left visible: in a mount namespace (as root) or a user namespace mapping the runner''s own uid (otherwise; there setuid programs such as sudo do not raise privileges). `auto` does it where this host allows and says once where it does not, `on` refuses to start there; `runner doctor` says which applies')
            [CompletionResult]::new('--idle-exit-s', '--idle-exit-s', [CompletionResultType]::ParameterName, 'Exit (0) after this many seconds without a call: a sandbox''s runner, whose host then destroys the sandbox')
            [CompletionResult]::new('--max-lifetime-s', '--max-lifetime-s', [CompletionResultType]::ParameterName, 'Exit (0) this many seconds after start, whatever it is doing')
            [CompletionResult]::new('--relay-proxy', '--relay-proxy', [CompletionResultType]::ParameterName, 'HTTP proxy for the relay connection only, not passed to tools (a sandbox''s way out to its relay)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;login' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Base URL of the relay (required: this flag or RUNNER_URL)')
            [CompletionResult]::new('--credential-store', '--credential-store', [CompletionResultType]::ParameterName, 'Where to keep the API key')
            [CompletionResult]::new('--api-key-stdin', '--api-key-stdin', [CompletionResultType]::ParameterName, 'Read the API key from standard input')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;logout' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the result as JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;env' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create an environment')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the environments you can see')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one environment')
            [CompletionResult]::new('update', 'update', [CompletionResultType]::ParameterValue, 'Change an environment''s fields or policy')
            [CompletionResult]::new('delete', 'delete', [CompletionResultType]::ParameterValue, 'Delete an environment (cannot be undone; its runner stops)')
            [CompletionResult]::new('deploy', 'deploy', [CompletionResultType]::ParameterValue, 'Run the environment''s runner on a sandbox host (a managed runner with a new token nobody sees; the previous token keeps working for the grace period). Replaces a runner installed by hand')
            [CompletionResult]::new('undeploy', 'undeploy', [CompletionResultType]::ParameterValue, 'Stop the environment''s managed runner')
            [CompletionResult]::new('deployment', 'deployment', [CompletionResultType]::ParameterValue, 'Show the environment''s newest deployment and its state')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner;env;create' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'Unique name (≤128 characters); blank: the first runner''s hostname')
            [CompletionResult]::new('--description', '--description', [CompletionResultType]::ParameterName, 'description')
            [CompletionResult]::new('--scope', '--scope', [CompletionResultType]::ParameterName, '`shared` or `team:NAME`; fixed at creation')
            [CompletionResult]::new('--tier', '--tier', [CompletionResultType]::ParameterName, 'tier')
            [CompletionResult]::new('--tag', '--tag', [CompletionResultType]::ParameterName, 'Routing tag; repeat for several')
            [CompletionResult]::new('--type', '--type', [CompletionResultType]::ParameterName, 'Type label (default `Local`). `sandbox-host` makes a sandbox host''s environment (organisation admins, shared scope; its policy is the relay''s): run `runner sandbox-host` with its token')
            [CompletionResult]::new('--allow-tool', '--allow-tool', [CompletionResultType]::ParameterName, 'Allow this tool; repeat for several (replaces the list; `''''` allows none)')
            [CompletionResult]::new('--file-path', '--file-path', [CompletionResultType]::ParameterName, 'Directory under which file tools work (`*` for all); repeat for several (replaces the list; `''''` clears it)')
            [CompletionResult]::new('--require-approval', '--require-approval', [CompletionResultType]::ParameterName, 'Tool that needs a person''s approval; repeat for several (replaces the list; `''''` clears it)')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--allow-all-tools', '--allow-all-tools', [CompletionResultType]::ParameterName, 'Allow every tool the runner announces')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;env;list' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;env;show' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;env;update' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'name')
            [CompletionResult]::new('--description', '--description', [CompletionResultType]::ParameterName, 'description')
            [CompletionResult]::new('--tier', '--tier', [CompletionResultType]::ParameterName, 'tier')
            [CompletionResult]::new('--tag', '--tag', [CompletionResultType]::ParameterName, 'Replace the tags; repeat for several')
            [CompletionResult]::new('--allow-tool', '--allow-tool', [CompletionResultType]::ParameterName, 'Allow this tool; repeat for several (replaces the list; `''''` allows none)')
            [CompletionResult]::new('--file-path', '--file-path', [CompletionResultType]::ParameterName, 'Directory under which file tools work (`*` for all); repeat for several (replaces the list; `''''` clears it)')
            [CompletionResult]::new('--require-approval', '--require-approval', [CompletionResultType]::ParameterName, 'Tool that needs a person''s approval; repeat for several (replaces the list; `''''` clears it)')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--allow-all-tools', '--allow-all-tools', [CompletionResultType]::ParameterName, 'Allow every tool the runner announces')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;env;delete' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;env;deploy' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--grace-hours', '--grace-hours', [CompletionResultType]::ParameterName, 'Hours the previous token keeps working (0–168)')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;env;undeploy' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;env;deployment' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;env;help' {
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create an environment')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the environments you can see')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one environment')
            [CompletionResult]::new('update', 'update', [CompletionResultType]::ParameterValue, 'Change an environment''s fields or policy')
            [CompletionResult]::new('delete', 'delete', [CompletionResultType]::ParameterValue, 'Delete an environment (cannot be undone; its runner stops)')
            [CompletionResult]::new('deploy', 'deploy', [CompletionResultType]::ParameterValue, 'Run the environment''s runner on a sandbox host (a managed runner with a new token nobody sees; the previous token keeps working for the grace period). Replaces a runner installed by hand')
            [CompletionResult]::new('undeploy', 'undeploy', [CompletionResultType]::ParameterValue, 'Stop the environment''s managed runner')
            [CompletionResult]::new('deployment', 'deployment', [CompletionResultType]::ParameterValue, 'Show the environment''s newest deployment and its state')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner;env;help;create' {
            break
        }
        'runner;env;help;list' {
            break
        }
        'runner;env;help;show' {
            break
        }
        'runner;env;help;update' {
            break
        }
        'runner;env;help;delete' {
            break
        }
        'runner;env;help;deploy' {
            break
        }
        'runner;env;help;undeploy' {
            break
        }
        'runner;env;help;deployment' {
            break
        }
        'runner;env;help;help' {
            break
        }
        'runner;token' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('generate', 'generate', [CompletionResultType]::ParameterValue, 'Generate a new token (the previous one keeps working for the grace period); `rotate` is the same command')
            [CompletionResult]::new('rotate', 'rotate', [CompletionResultType]::ParameterValue, 'Generate a new token (the previous one keeps working for the grace period); `rotate` is the same command')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show the token''s age, last use and days to expiry (never the token)')
            [CompletionResult]::new('revoke', 'revoke', [CompletionResultType]::ParameterValue, 'Invalidate every token of the environment and disconnect its runner (asks first, as `env delete` does; --yes for scripts)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner;token;generate' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--grace-hours', '--grace-hours', [CompletionResultType]::ParameterName, 'Hours the previous token keeps working (0–168). 0 cuts the connected runner off at once, so it asks first (--yes for scripts)')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation before --grace-hours 0')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation before --grace-hours 0')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;token;rotate' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--grace-hours', '--grace-hours', [CompletionResultType]::ParameterName, 'Hours the previous token keeps working (0–168). 0 cuts the connected runner off at once, so it asks first (--yes for scripts)')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation before --grace-hours 0')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation before --grace-hours 0')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;token;status' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;token;revoke' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;token;help' {
            [CompletionResult]::new('generate', 'generate', [CompletionResultType]::ParameterValue, 'Generate a new token (the previous one keeps working for the grace period); `rotate` is the same command')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show the token''s age, last use and days to expiry (never the token)')
            [CompletionResult]::new('revoke', 'revoke', [CompletionResultType]::ParameterValue, 'Invalidate every token of the environment and disconnect its runner (asks first, as `env delete` does; --yes for scripts)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner;token;help;generate' {
            break
        }
        'runner;token;help;status' {
            break
        }
        'runner;token;help;revoke' {
            break
        }
        'runner;token;help;help' {
            break
        }
        'runner;template' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create a template')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the templates you can see')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one template (--json: with its variables and setup script)')
            [CompletionResult]::new('edit', 'edit', [CompletionResultType]::ParameterValue, 'Change a template''s fields (not its scope)')
            [CompletionResult]::new('delete', 'delete', [CompletionResultType]::ParameterValue, 'Delete a template (sessions using it keep working; their new sandboxes get the default configuration)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner;template;create' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--scope', '--scope', [CompletionResultType]::ParameterName, '`shared` or `team:NAME`; fixed at creation')
            [CompletionResult]::new('--description', '--description', [CompletionResultType]::ParameterName, 'description')
            [CompletionResult]::new('--network', '--network', [CompletionResultType]::ParameterName, 'Where sandboxes may connect (default for a new template: none)')
            [CompletionResult]::new('--allow-domain', '--allow-domain', [CompletionResultType]::ParameterName, 'A domain (and its subdomains) --network allowlist lets through; repeat for several (replaces the list; `''''` clears it)')
            [CompletionResult]::new('--env-file', '--env-file', [CompletionResultType]::ParameterName, 'Environment variables in `.env` form (KEY=value lines, comments, quoted values; at most 32 KiB); `-` reads standard input')
            [CompletionResult]::new('--setup-script', '--setup-script', [CompletionResultType]::ParameterName, 'Bash script run as root in each new sandbox before its first call (at most 64 KiB); `-` reads standard input, an empty file removes it')
            [CompletionResult]::new('--idle-timeout', '--idle-timeout', [CompletionResultType]::ParameterName, 'Stop a sandbox after this long without a call (e.g. 900, 15m, 2h; default for a new template: 15m)')
            [CompletionResult]::new('--max-lifetime', '--max-lifetime', [CompletionResultType]::ParameterName, 'Stop a sandbox after this long whatever it does (e.g. 8h, 2d; default for a new template: 8h)')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;template;list' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;template;show' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;template;edit' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'A new name')
            [CompletionResult]::new('--description', '--description', [CompletionResultType]::ParameterName, 'description')
            [CompletionResult]::new('--network', '--network', [CompletionResultType]::ParameterName, 'Where sandboxes may connect (default for a new template: none)')
            [CompletionResult]::new('--allow-domain', '--allow-domain', [CompletionResultType]::ParameterName, 'A domain (and its subdomains) --network allowlist lets through; repeat for several (replaces the list; `''''` clears it)')
            [CompletionResult]::new('--env-file', '--env-file', [CompletionResultType]::ParameterName, 'Environment variables in `.env` form (KEY=value lines, comments, quoted values; at most 32 KiB); `-` reads standard input')
            [CompletionResult]::new('--setup-script', '--setup-script', [CompletionResultType]::ParameterName, 'Bash script run as root in each new sandbox before its first call (at most 64 KiB); `-` reads standard input, an empty file removes it')
            [CompletionResult]::new('--idle-timeout', '--idle-timeout', [CompletionResultType]::ParameterName, 'Stop a sandbox after this long without a call (e.g. 900, 15m, 2h; default for a new template: 15m)')
            [CompletionResult]::new('--max-lifetime', '--max-lifetime', [CompletionResultType]::ParameterName, 'Stop a sandbox after this long whatever it does (e.g. 8h, 2d; default for a new template: 8h)')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;template;delete' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;template;help' {
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create a template')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the templates you can see')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one template (--json: with its variables and setup script)')
            [CompletionResult]::new('edit', 'edit', [CompletionResultType]::ParameterValue, 'Change a template''s fields (not its scope)')
            [CompletionResult]::new('delete', 'delete', [CompletionResultType]::ParameterValue, 'Delete a template (sessions using it keep working; their new sandboxes get the default configuration)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner;template;help;create' {
            break
        }
        'runner;template;help;list' {
            break
        }
        'runner;template;help;show' {
            break
        }
        'runner;template;help;edit' {
            break
        }
        'runner;template;help;delete' {
            break
        }
        'runner;template;help;help' {
            break
        }
        'runner;session' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Start a session and print its id (alone: `$(runner session create)`)')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List your sessions (every session for organisation admins)')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show a session: its environment and that environment''s status now, why it was chosen, last use and expiry')
            [CompletionResult]::new('end', 'end', [CompletionResultType]::ParameterValue, 'End a session; later calls through it fail')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner;session;create' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--env', '--env', [CompletionResultType]::ParameterName, '`auto` (an online runner you may use), `sandbox`, or an environment id or name. Default: the agent''s default environment, else its team''s, else `auto`')
            [CompletionResult]::new('--tag', '--tag', [CompletionResultType]::ParameterName, 'Tag `auto` prefers (an environment carrying all of them wins); repeat for several')
            [CompletionResult]::new('--agent', '--agent', [CompletionResultType]::ParameterName, 'The agent (member id or name) the session works for, whose default environment applies')
            [CompletionResult]::new('--template', '--template', [CompletionResultType]::ParameterName, 'The template (id or name) that prepares the session''s sandbox (with `--env sandbox`, or `auto` when it gets one)')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;session;list' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'Only sessions in this state')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;session;show' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;session;end' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;session;help' {
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Start a session and print its id (alone: `$(runner session create)`)')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List your sessions (every session for organisation admins)')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show a session: its environment and that environment''s status now, why it was chosen, last use and expiry')
            [CompletionResult]::new('end', 'end', [CompletionResultType]::ParameterValue, 'End a session; later calls through it fail')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner;session;help;create' {
            break
        }
        'runner;session;help;list' {
            break
        }
        'runner;session;help;show' {
            break
        }
        'runner;session;help;end' {
            break
        }
        'runner;session;help;help' {
            break
        }
        'runner;approvals' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List approvals you may see, newest first (default: pending ones)')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one approval: the call in full (values of `env` masked), who asked, the rule, the decision, the call''s end and the webhook''s delivery')
            [CompletionResult]::new('approve', 'approve', [CompletionResultType]::ParameterValue, 'Approve: the stored call runs once, exactly as asked. Approving again changes nothing')
            [CompletionResult]::new('deny', 'deny', [CompletionResultType]::ParameterValue, 'Deny: the call never runs; its requester''s invoke exits 66')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner;approvals;list' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--status', '--status', [CompletionResultType]::ParameterName, 'Only approvals in this state')
            [CompletionResult]::new('--env', '--env', [CompletionResultType]::ParameterName, 'Only approvals of this environment (id or name)')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;approvals;show' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Wait until the approval is settled (denied, expired, or approved and its call ended), up to this long: 90s, 10m, 1h')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;approvals;approve' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--comment', '--comment', [CompletionResultType]::ParameterName, 'Why, for the record (shown to the requester)')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;approvals;deny' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--comment', '--comment', [CompletionResultType]::ParameterName, 'Why, for the record (shown to the requester)')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;approvals;help' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List approvals you may see, newest first (default: pending ones)')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one approval: the call in full (values of `env` masked), who asked, the rule, the decision, the call''s end and the webhook''s delivery')
            [CompletionResult]::new('approve', 'approve', [CompletionResultType]::ParameterValue, 'Approve: the stored call runs once, exactly as asked. Approving again changes nothing')
            [CompletionResult]::new('deny', 'deny', [CompletionResultType]::ParameterValue, 'Deny: the call never runs; its requester''s invoke exits 66')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner;approvals;help;list' {
            break
        }
        'runner;approvals;help;show' {
            break
        }
        'runner;approvals;help;approve' {
            break
        }
        'runner;approvals;help;deny' {
            break
        }
        'runner;approvals;help;help' {
            break
        }
        'runner;audit' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--env', '--env', [CompletionResultType]::ParameterName, 'Only entries about this environment (id)')
            [CompletionResult]::new('--actor', '--actor', [CompletionResultType]::ParameterName, 'Only entries by this member (id)')
            [CompletionResult]::new('--action', '--action', [CompletionResultType]::ParameterName, 'Only this action, e.g. tool.invoke, token.generate, auth.failed')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Only calls through this session')
            [CompletionResult]::new('--tool', '--tool', [CompletionResultType]::ParameterName, 'Only calls of this tool')
            [CompletionResult]::new('--since', '--since', [CompletionResultType]::ParameterName, 'Only entries at or after this time (RFC 3339 or Unix seconds)')
            [CompletionResult]::new('--until', '--until', [CompletionResultType]::ParameterName, 'Only entries before this time (RFC 3339 or Unix seconds)')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'At most this many entries (default: 50 in the table, all with --json)')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--follow', '--follow', [CompletionResultType]::ParameterName, 'Keep printing new entries as they are recorded (polls every 2 s; stop with Ctrl-C)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;tools' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;status' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--local', '--local', [CompletionResultType]::ParameterName, 'Report the runner of this machine (its state directory): connected or not and why, relay, version, calls in flight and queued')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;invoke' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Run the tool where this session runs its calls (the first call of a session picks the machine). Default: RUNNER_SESSION')
            [CompletionResult]::new('--arg', '--arg', [CompletionResultType]::ParameterName, 'Argument as KEY=VALUE (a string) or KEY:=JSON (a number, bool, list…)')
            [CompletionResult]::new('--args-json', '--args-json', [CompletionResultType]::ParameterName, 'All arguments as one JSON object (merged under --arg)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Seconds before the relay gives up and cancels the call (1–3600)')
            [CompletionResult]::new('--wait-approval', '--wait-approval', [CompletionResultType]::ParameterName, 'When the tool needs a person''s approval, ask for one and wait up to DURATION (default 10m) for the decision and the call; its approval id goes to stderr. Denied or expired: exit 66; still pending: 75. Tools that need no approval run at once')
            [CompletionResult]::new('--call-id', '--call-id', [CompletionResultType]::ParameterName, 'The call''s id (1–128 of A-Z a-z 0-9 . _ : -): the relay runs a call id once, and answers it again with that call''s answer. Default: a fresh one, with which invoke asks again when it loses the relay mid-call; pass the id a lost invoke printed to fetch that call''s answer without running it twice')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--stream', '--stream', [CompletionResultType]::ParameterName, 'Print the tool''s output as it is produced, byte for byte (stdout to stdout, stderr to stderr: binary output can be piped), then exit with the tool''s exit code')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;doctor' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--permission-config', '--permission-config', [CompletionResultType]::ParameterName, 'Permission file to validate (as `runner run` would load it)')
            [CompletionResult]::new('--workspace', '--workspace', [CompletionResultType]::ParameterName, 'Workspace to check (default: STATE_DIR/workspace). Checked, never created')
            [CompletionResult]::new('--kept-output-max-mb', '--kept-output-max-mb', [CompletionResultType]::ParameterName, 'The cap `runner run` keeps large outputs under, to compare the workspace''s kept output with')
            [CompletionResult]::new('--browser-install-command', '--browser-install-command', [CompletionResultType]::ParameterName, 'The install command `runner run` would use for Chromium (as its `--browser-install-command`), to say whether it can install one')
            [CompletionResult]::new('--hide-runner-files', '--hide-runner-files', [CompletionResultType]::ParameterName, 'Whether `runner run` hides its files from tools (as it would be started), to check that this machine allows it')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: the one stored by `runner login`)')
            [CompletionResult]::new('--sandbox-host', '--sandbox-host', [CompletionResultType]::ParameterName, 'Also check that this machine can run sandboxes (`runner sandbox-host`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;service' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('install', 'install', [CompletionResultType]::ParameterValue, 'Write the service definition and /etc/runner/env, create the user, enable and start it')
            [CompletionResult]::new('uninstall', 'uninstall', [CompletionResultType]::ParameterValue, 'Stop and remove the service (keeps /etc/runner/env unless --purge)')
            [CompletionResult]::new('start', 'start', [CompletionResultType]::ParameterValue, 'Start the service')
            [CompletionResult]::new('stop', 'stop', [CompletionResultType]::ParameterValue, 'Stop the service')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show the service manager''s view of the service (where there is none, says so and how to run the runner instead)')
            [CompletionResult]::new('logs', 'logs', [CompletionResultType]::ParameterValue, 'Show the service''s logs')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner;service;install' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--run-as', '--run-as', [CompletionResultType]::ParameterName, 'Run as this existing user instead of a dedicated `runner` user (for their kubeconfig or docker group); home protection is relaxed for that user''s home only')
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'Write every file under DIR instead of / and do not touch users or services (for packaging and tests)')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (default: this user''s registration)')
            [CompletionResult]::new('--binary', '--binary', [CompletionResultType]::ParameterName, 'Path of the installed runner binary the service starts (default /usr/local/bin/runner); it must exist (under --root, or as given)')
            [CompletionResult]::new('--permission-config', '--permission-config', [CompletionResultType]::ParameterName, 'Permission file the service passes to `runner run`')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Print what would be written and run, change nothing')
            [CompletionResult]::new('--verify', '--verify', [CompletionResultType]::ParameterName, 'Check the token against the relay before installing, and refuse a token it refuses. The default checks whenever the relay answers and only warns when it cannot be reached; --verify also refuses then')
            [CompletionResult]::new('--no-verify', '--no-verify', [CompletionResultType]::ParameterName, 'Install without checking the token against the relay')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;service;uninstall' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'Remove files under DIR instead of /')
            [CompletionResult]::new('--purge', '--purge', [CompletionResultType]::ParameterName, 'Also remove /etc/runner/env (the runner''s token and settings); asks first, --yes for scripts')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation before --purge')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation before --purge')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;service;start' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;service;stop' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;service;status' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;service;logs' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'How many recent lines to show')
            [CompletionResult]::new('--lines', '--lines', [CompletionResultType]::ParameterName, 'How many recent lines to show')
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'Keep printing new lines')
            [CompletionResult]::new('--follow', '--follow', [CompletionResultType]::ParameterName, 'Keep printing new lines')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;service;help' {
            [CompletionResult]::new('install', 'install', [CompletionResultType]::ParameterValue, 'Write the service definition and /etc/runner/env, create the user, enable and start it')
            [CompletionResult]::new('uninstall', 'uninstall', [CompletionResultType]::ParameterValue, 'Stop and remove the service (keeps /etc/runner/env unless --purge)')
            [CompletionResult]::new('start', 'start', [CompletionResultType]::ParameterValue, 'Start the service')
            [CompletionResult]::new('stop', 'stop', [CompletionResultType]::ParameterValue, 'Stop the service')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show the service manager''s view of the service (where there is none, says so and how to run the runner instead)')
            [CompletionResult]::new('logs', 'logs', [CompletionResultType]::ParameterValue, 'Show the service''s logs')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner;service;help;install' {
            break
        }
        'runner;service;help;uninstall' {
            break
        }
        'runner;service;help;start' {
            break
        }
        'runner;service;help;stop' {
            break
        }
        'runner;service;help;status' {
            break
        }
        'runner;service;help;logs' {
            break
        }
        'runner;service;help;help' {
            break
        }
        'runner;update' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--mirror', '--mirror', [CompletionResultType]::ParameterName, 'Release mirror serving releases/latest and releases/download/ (default: the registered relay URL)')
            [CompletionResult]::new('--check', '--check', [CompletionResultType]::ParameterName, 'Only compare this version with the mirror''s latest; change nothing. Exits 0 when up to date, 11 when an update is available')
            [CompletionResult]::new('--rollback', '--rollback', [CompletionResultType]::ParameterName, 'Restore the binary the last update replaced (runner.previous)')
            [CompletionResult]::new('--service-step', '--service-step', [CompletionResultType]::ParameterName, 'The root half of a service''s self-update, run by the systemd unit''s `ExecStartPre=` before each start: install the release the runner asked for (verified again, newer only), or roll back an update that failed its probation. Does nothing when nothing was asked. Always exits 0, so it can never keep the service from starting')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask for confirmation on a terminal')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask for confirmation on a terminal')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the result as JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;policy' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Check one command against a permission file: exit 0 allowed, 1 denied, 2 the file was refused')
            [CompletionResult]::new('lint', 'lint', [CompletionResultType]::ParameterValue, 'Load a permission file and report errors and rules that can never decide anything: exit 0 clean, 1 warnings, 2 refused')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner;policy;check' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'The permission file (YAML with a top-level `permission` mapping)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the decision as one JSON object on stdout')
            [CompletionResult]::new('--stdin', '--stdin', [CompletionResultType]::ParameterName, 'Read the command from standard input instead of the arguments')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;policy;lint' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the result as one JSON object on stdout')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;policy;help' {
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Check one command against a permission file: exit 0 allowed, 1 denied, 2 the file was refused')
            [CompletionResult]::new('lint', 'lint', [CompletionResultType]::ParameterValue, 'Load a permission file and report errors and rules that can never decide anything: exit 0 clean, 1 warnings, 2 refused')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner;policy;help;check' {
            break
        }
        'runner;policy;help;lint' {
            break
        }
        'runner;policy;help;help' {
            break
        }
        'runner;sandbox-host' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'Relay URL (with RUNNER_TOKEN in the environment; otherwise the registration''s)')
            [CompletionResult]::new('--slots', '--slots', [CompletionResultType]::ParameterName, 'Sandboxes run at once at most (default: eight per CPU, at most one per 256 MiB of memory, at least one)')
            [CompletionResult]::new('--sandbox-memory-mb', '--sandbox-memory-mb', [CompletionResultType]::ParameterName, 'A sandbox''s memory limit, MiB, unless the relay''s request sets one')
            [CompletionResult]::new('--sandbox-pids', '--sandbox-pids', [CompletionResultType]::ParameterName, 'A sandbox''s limit of processes and threads, unless the request sets one')
            [CompletionResult]::new('--sandbox-cpus', '--sandbox-cpus', [CompletionResultType]::ParameterName, 'A sandbox''s CPU quota in CPUs (1.5: one and a half), unless the request sets one. Default: no quota')
            [CompletionResult]::new('--base-image', '--base-image', [CompletionResultType]::ParameterName, 'A full root file system (made by mmdebstrap or debootstrap) to use as every sandbox''s read-only lower layer, instead of the host-derived base (the host''s /usr and a filtered copy of /etc)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;sandbox-enter' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--plan', '--plan', [CompletionResultType]::ParameterName, 'plan')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;sandbox-init' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;tool-view' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;generate-assets' {
            [CompletionResult]::new('--config-dir', '--config-dir', [CompletionResultType]::ParameterName, 'Directory holding config.yaml and (when no keychain is usable) the credential files')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Directory for run-time state: the single-instance lock, the default workspace')
            [CompletionResult]::new('--ca-file', '--ca-file', [CompletionResultType]::ParameterName, 'Also trust the CA certificates in this PEM file for the relay connection (added to the system''s roots)')
            [CompletionResult]::new('--insecure-skip-tls-verify', '--insecure-skip-tls-verify', [CompletionResultType]::ParameterName, 'Do not verify the relay''s TLS certificate (control connection only). Use only inside a trusted network; `=false` turns verification back on over RUNNER_INSECURE_SKIP_TLS_VERIFY')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format on stderr')
            [CompletionResult]::new('--out', '--out', [CompletionResultType]::ParameterName, 'Repository root to write into')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'runner;help' {
            [CompletionResult]::new('register', 'register', [CompletionResultType]::ParameterValue, 'Check a registration token against the relay and store it for `runner run`')
            [CompletionResult]::new('unregister', 'unregister', [CompletionResultType]::ParameterValue, 'Remove the stored registration (config and token)')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Connect to the relay and execute tool calls until stopped')
            [CompletionResult]::new('login', 'login', [CompletionResultType]::ParameterValue, 'Store the relay URL and an API key for the admin commands')
            [CompletionResult]::new('logout', 'logout', [CompletionResultType]::ParameterValue, 'Forget the relay URL and API key `runner login` stored (the key is removed from the keychain and the credentials file). RUNNER_URL and RUNNER_API_KEY are not touched')
            [CompletionResult]::new('env', 'env', [CompletionResultType]::ParameterValue, 'Create, list, show, update and delete execution environments')
            [CompletionResult]::new('token', 'token', [CompletionResultType]::ParameterValue, 'Generate, inspect and revoke an environment''s registration token')
            [CompletionResult]::new('template', 'template', [CompletionResultType]::ParameterValue, 'Create, list, show, edit and delete sandbox templates')
            [CompletionResult]::new('session', 'session', [CompletionResultType]::ParameterValue, 'Start, list, show and end sessions: calls that stay on one machine')
            [CompletionResult]::new('approvals', 'approvals', [CompletionResultType]::ParameterValue, 'List, show, approve and deny calls that wait for a person''s approval')
            [CompletionResult]::new('audit', 'audit', [CompletionResultType]::ParameterValue, 'Read the relay''s audit log (organisation admins)')
            [CompletionResult]::new('tools', 'tools', [CompletionResultType]::ParameterValue, 'List the tools an environment offers (its runner''s catalogue, filtered by policy)')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show an environment''s status, or with --local this machine''s runner as it sees itself')
            [CompletionResult]::new('invoke', 'invoke', [CompletionResultType]::ParameterValue, 'Run a tool on an environment''s runner and print its output')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Explain what is wrong when the runner or the admin commands can''t reach the relay')
            [CompletionResult]::new('service', 'service', [CompletionResultType]::ParameterValue, 'Install, start, stop and inspect the runner as a system service')
            [CompletionResult]::new('update', 'update', [CompletionResultType]::ParameterValue, 'Update this binary from the release mirror (default: the registered relay)')
            [CompletionResult]::new('policy', 'policy', [CompletionResultType]::ParameterValue, 'Check commands against a permission file and lint permission files')
            [CompletionResult]::new('sandbox-host', 'sandbox-host', [CompletionResultType]::ParameterValue, 'Make this machine a sandbox host: start isolated, temporary runners (sandboxes) when the relay asks')
            [CompletionResult]::new('sandbox-enter', 'sandbox-enter', [CompletionResultType]::ParameterValue, 'Become bubblewrap in a private mount namespace with the sandbox''s root mounted (started by the sandbox host)')
            [CompletionResult]::new('sandbox-init', 'sandbox-init', [CompletionResultType]::ParameterValue, 'A sandbox''s first process (started by bubblewrap)')
            [CompletionResult]::new('tool-view', 'tool-view', [CompletionResultType]::ParameterValue, 'Make the namespace tools run in and hold it (started by `run`)')
            [CompletionResult]::new('generate-assets', 'generate-assets', [CompletionResultType]::ParameterValue, 'Regenerate completions/ and man/ from these definitions (for developers)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'runner;help;register' {
            break
        }
        'runner;help;unregister' {
            break
        }
        'runner;help;run' {
            break
        }
        'runner;help;login' {
            break
        }
        'runner;help;logout' {
            break
        }
        'runner;help;env' {
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create an environment')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the environments you can see')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one environment')
            [CompletionResult]::new('update', 'update', [CompletionResultType]::ParameterValue, 'Change an environment''s fields or policy')
            [CompletionResult]::new('delete', 'delete', [CompletionResultType]::ParameterValue, 'Delete an environment (cannot be undone; its runner stops)')
            [CompletionResult]::new('deploy', 'deploy', [CompletionResultType]::ParameterValue, 'Run the environment''s runner on a sandbox host (a managed runner with a new token nobody sees; the previous token keeps working for the grace period). Replaces a runner installed by hand')
            [CompletionResult]::new('undeploy', 'undeploy', [CompletionResultType]::ParameterValue, 'Stop the environment''s managed runner')
            [CompletionResult]::new('deployment', 'deployment', [CompletionResultType]::ParameterValue, 'Show the environment''s newest deployment and its state')
            break
        }
        'runner;help;env;create' {
            break
        }
        'runner;help;env;list' {
            break
        }
        'runner;help;env;show' {
            break
        }
        'runner;help;env;update' {
            break
        }
        'runner;help;env;delete' {
            break
        }
        'runner;help;env;deploy' {
            break
        }
        'runner;help;env;undeploy' {
            break
        }
        'runner;help;env;deployment' {
            break
        }
        'runner;help;token' {
            [CompletionResult]::new('generate', 'generate', [CompletionResultType]::ParameterValue, 'Generate a new token (the previous one keeps working for the grace period); `rotate` is the same command')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show the token''s age, last use and days to expiry (never the token)')
            [CompletionResult]::new('revoke', 'revoke', [CompletionResultType]::ParameterValue, 'Invalidate every token of the environment and disconnect its runner (asks first, as `env delete` does; --yes for scripts)')
            break
        }
        'runner;help;token;generate' {
            break
        }
        'runner;help;token;status' {
            break
        }
        'runner;help;token;revoke' {
            break
        }
        'runner;help;template' {
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create a template')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the templates you can see')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one template (--json: with its variables and setup script)')
            [CompletionResult]::new('edit', 'edit', [CompletionResultType]::ParameterValue, 'Change a template''s fields (not its scope)')
            [CompletionResult]::new('delete', 'delete', [CompletionResultType]::ParameterValue, 'Delete a template (sessions using it keep working; their new sandboxes get the default configuration)')
            break
        }
        'runner;help;template;create' {
            break
        }
        'runner;help;template;list' {
            break
        }
        'runner;help;template;show' {
            break
        }
        'runner;help;template;edit' {
            break
        }
        'runner;help;template;delete' {
            break
        }
        'runner;help;session' {
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Start a session and print its id (alone: `$(runner session create)`)')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List your sessions (every session for organisation admins)')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show a session: its environment and that environment''s status now, why it was chosen, last use and expiry')
            [CompletionResult]::new('end', 'end', [CompletionResultType]::ParameterValue, 'End a session; later calls through it fail')
            break
        }
        'runner;help;session;create' {
            break
        }
        'runner;help;session;list' {
            break
        }
        'runner;help;session;show' {
            break
        }
        'runner;help;session;end' {
            break
        }
        'runner;help;approvals' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List approvals you may see, newest first (default: pending ones)')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one approval: the call in full (values of `env` masked), who asked, the rule, the decision, the call''s end and the webhook''s delivery')
            [CompletionResult]::new('approve', 'approve', [CompletionResultType]::ParameterValue, 'Approve: the stored call runs once, exactly as asked. Approving again changes nothing')
            [CompletionResult]::new('deny', 'deny', [CompletionResultType]::ParameterValue, 'Deny: the call never runs; its requester''s invoke exits 66')
            break
        }
        'runner;help;approvals;list' {
            break
        }
        'runner;help;approvals;show' {
            break
        }
        'runner;help;approvals;approve' {
            break
        }
        'runner;help;approvals;deny' {
            break
        }
        'runner;help;audit' {
            break
        }
        'runner;help;tools' {
            break
        }
        'runner;help;status' {
            break
        }
        'runner;help;invoke' {
            break
        }
        'runner;help;doctor' {
            break
        }
        'runner;help;service' {
            [CompletionResult]::new('install', 'install', [CompletionResultType]::ParameterValue, 'Write the service definition and /etc/runner/env, create the user, enable and start it')
            [CompletionResult]::new('uninstall', 'uninstall', [CompletionResultType]::ParameterValue, 'Stop and remove the service (keeps /etc/runner/env unless --purge)')
            [CompletionResult]::new('start', 'start', [CompletionResultType]::ParameterValue, 'Start the service')
            [CompletionResult]::new('stop', 'stop', [CompletionResultType]::ParameterValue, 'Stop the service')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show the service manager''s view of the service (where there is none, says so and how to run the runner instead)')
            [CompletionResult]::new('logs', 'logs', [CompletionResultType]::ParameterValue, 'Show the service''s logs')
            break
        }
        'runner;help;service;install' {
            break
        }
        'runner;help;service;uninstall' {
            break
        }
        'runner;help;service;start' {
            break
        }
        'runner;help;service;stop' {
            break
        }
        'runner;help;service;status' {
            break
        }
        'runner;help;service;logs' {
            break
        }
        'runner;help;update' {
            break
        }
        'runner;help;policy' {
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Check one command against a permission file: exit 0 allowed, 1 denied, 2 the file was refused')
            [CompletionResult]::new('lint', 'lint', [CompletionResultType]::ParameterValue, 'Load a permission file and report errors and rules that can never decide anything: exit 0 clean, 1 warnings, 2 refused')
            break
        }
        'runner;help;policy;check' {
            break
        }
        'runner;help;policy;lint' {
            break
        }
        'runner;help;sandbox-host' {
            break
        }
        'runner;help;sandbox-enter' {
            break
        }
        'runner;help;sandbox-init' {
            break
        }
        'runner;help;tool-view' {
            break
        }
        'runner;help;generate-assets' {
            break
        }
        'runner;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
