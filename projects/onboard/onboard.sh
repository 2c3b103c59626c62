#!/usr/bin/env bash
# External Brain installer: connects an MCP client to this server and proves the connection works.
#
#   export BRAIN_MCP_TOKEN='ebt_…'          # mint one at <server>/settings/tokens
#   curl -fsSL <server>/api/onboard.sh | bash -s -- --client claude-code [--profile cognibrain]
#
# Clients: claude-code (default), cursor, windsurf, gemini, codex. Profiles: brain (default; the brain_*
# tools at /mcp, server entry "brain") or cognibrain (the cognibrain_* tools at /mcp/cognibrain, server entry
# "cognibrain"), so both can be installed side by side. Safe to run again: it rewrites only what differs and
# keeps a timestamped backup of any config file it changes.
set -euo pipefail

INSTALLER_VERSION="2"
# The server this script was served by. BRAIN_INSTALL_URL points it at another one; BRAIN_URL is not read: it is
# what `brain mcp stdio` users export for their bridge, and it silently configured the wrong server.
BRAIN_URL="${BRAIN_INSTALL_URL:-__BRAIN_URL__}"
BRAIN_URL="${BRAIN_URL%/}"
if ! printf '%s' "$BRAIN_URL" | grep -Eq '^https?://[A-Za-z0-9.:[-]+\]?(:[0-9]+)?(/[A-Za-z0-9._~/-]*)?$'; then
  printf 'error: %s\n' "BRAIN_INSTALL_URL must be the server's address, e.g. https://brain.example.com; got: $BRAIN_URL" >&2
  exit 1
fi
MCP_URL="$BRAIN_URL/mcp"
SERVER_NAME="brain"
CLIENT="claude-code"
PROFILE="brain"
PROBE_TOOL="brain_get_user_style"  # a read-only tool of the profile, called to prove the connection
PROTOCOL="2025-06-18"
SESSION_ID=""
umask 077  # every file this script writes (the header file, configs, the env file) is private
WORK="$(mktemp -d)"
ENV_FILE="$HOME/.config/external-brain/env"
trap 'rm -rf "$WORK"' EXIT

say() { printf '%s\n' "$*"; }
step() { printf '\n==> %s\n' "$*"; }
warn() { printf 'warning: %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

usage() {
  say "usage: onboard.sh [--client claude-code|cursor|windsurf|gemini|codex] [--profile brain|cognibrain]"
  say "The token is read from BRAIN_MCP_TOKEN (or asked for on the terminal); the server is $BRAIN_URL."
}

parse_args() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --client) [ $# -ge 2 ] || die "--client needs a value"; CLIENT="$2"; shift 2 ;;
      --client=*) CLIENT="${1#--client=}"; shift ;;
      --profile) [ $# -ge 2 ] || die "--profile needs a value (brain or cognibrain)"; PROFILE="$2"; shift 2 ;;
      --profile=*) PROFILE="${1#--profile=}"; shift ;;
      -h|--help) usage; exit 0 ;;
      *) usage >&2; die "unknown argument: $1" ;;
    esac
  done
  case "$CLIENT" in
    claude-code|cursor|windsurf|gemini|codex) ;;
    *) die "unsupported client '$CLIENT'; the set-up page at $BRAIN_URL/settings/setup covers the others" ;;
  esac
  case "$PROFILE" in
    brain) ;;
    cognibrain) MCP_URL="$BRAIN_URL/mcp/cognibrain"; SERVER_NAME="cognibrain"; PROBE_TOOL="cognibrain_health" ;;
    *) die "unsupported profile '$PROFILE'; use brain (the brain_* tools) or cognibrain (the cognibrain_* tools)" ;;
  esac
}

read_token() {
  TOKEN="${BRAIN_MCP_TOKEN:-}"
  if [ -z "$TOKEN" ] && [ -r /dev/tty ] && [ -t 2 ]; then
    printf 'Paste your External Brain token (input hidden): ' >&2
    IFS= read -rs TOKEN </dev/tty || true
    printf '\n' >&2
  fi
  [ -n "$TOKEN" ] || die "no token: export BRAIN_MCP_TOKEN='ebt_…' (mint one at $BRAIN_URL/settings/tokens) and run again"
  case "$TOKEN" in
    *[!A-Za-z0-9_.-]*) die "the token contains unexpected characters; copy it again from $BRAIN_URL/settings/tokens" ;;
  esac
  # curl reads the header from this file: a token on a command line is visible to every user in `ps`.
  printf 'Authorization: Bearer %s\n' "$TOKEN" >"$WORK/auth"
}

check_prerequisites() {
  step "Checking prerequisites"
  command -v curl >/dev/null 2>&1 || die "curl is required; install it with your package manager"
  if needs_python && ! command -v python3 >/dev/null 2>&1; then
    die "python3 is required to merge the $CLIENT config file safely; install it, or follow $BRAIN_URL/settings/setup"
  fi
  say "ok: curl$(needs_python && printf ', python3')"
}

needs_python() {
  case "$CLIENT" in
    codex) return 1 ;;
    *) return 0 ;;
  esac
}

# One JSON-RPC request to the MCP endpoint. Sets HTTP_STATUS and CURL_RC; the body lands in $WORK/body.
mcp_post() {
  local payload="$1"
  local -a headers=(-H "Content-Type: application/json" -H "Accept: application/json, text/event-stream"
    -H "@$WORK/auth")
  if [ -n "$SESSION_ID" ]; then
    headers+=(-H "Mcp-Session-Id: $SESSION_ID" -H "MCP-Protocol-Version: $PROTOCOL")
  fi
  CURL_RC=0
  HTTP_STATUS="$(curl -sS --connect-timeout 10 --max-time 60 -o "$WORK/raw" -D "$WORK/headers" \
    -w '%{http_code}' "${headers[@]}" --data-binary "$payload" "$MCP_URL" 2>"$WORK/curl_err")" || CURL_RC=$?
  # A server may answer with an event stream: keep the data lines only.
  if grep -qi '^content-type: *text/event-stream' "$WORK/headers" 2>/dev/null; then
    sed -n 's/^data: *//p' "$WORK/raw" >"$WORK/body"
  else
    cp "$WORK/raw" "$WORK/body" 2>/dev/null || : >"$WORK/body"
  fi
}

diagnose() {
  local what="$1"
  case "$CURL_RC" in
    0) ;;
    6) die "$what: cannot resolve the host of $BRAIN_URL; check the server address and your DNS" ;;
    7) die "$what: connection refused at $BRAIN_URL; is the server running (brain serve) and is the port right?" ;;
    28) die "$what: no answer from $BRAIN_URL within the time limit; check firewalls and proxies" ;;
    35|51|53|54|58|59|60|64|66|77|80|82|83|90|91)
      die "$what: TLS failed ($(head -n 1 "$WORK/curl_err")); the server's certificate is not trusted here or the address is not HTTPS. Fix the certificate (or set CURL_CA_BUNDLE to your CA file)" ;;
    *) die "$what: curl failed with exit code $CURL_RC: $(head -n 1 "$WORK/curl_err")" ;;
  esac
  case "$HTTP_STATUS" in
    2??) ;;
    401) die "$what: HTTP 401, the token was refused (mistyped, revoked or expired). Mint a new one at $BRAIN_URL/settings/tokens" ;;
    403) die "$what: HTTP 403, the server refused this client: its Origin allow-list (BRAIN_MCP_ALLOWED_ORIGINS) or the token's project scope" ;;
    404) die "$what: HTTP 404, no MCP endpoint at $MCP_URL; check the server URL (a path prefix, or a proxy that does not forward /mcp)" ;;
    5??) die "$what: HTTP $HTTP_STATUS, the server failed; look at its log and at $BRAIN_URL/readyz" ;;
    *) die "$what: unexpected HTTP $HTTP_STATUS from $MCP_URL: $(head -c 300 "$WORK/body")" ;;
  esac
  if grep -q '"error" *: *{' "$WORK/body"; then
    die "$what: the server answered with an error: $(head -c 400 "$WORK/body")"
  fi
  if grep -q '"isError" *: *true' "$WORK/body"; then
    die "$what: the tool reported an error: $(head -c 400 "$WORK/body")"
  fi
}

json_field() { sed -n "s/.*\"$1\" *: *\"\\([^\"]*\\)\".*/\\1/p" "$WORK/body" | head -n 1; }

smoke_test() {
  step "Testing the connection to $MCP_URL"
  mcp_post '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"'"$PROTOCOL"'","capabilities":{},"clientInfo":{"name":"brain-onboard","version":"'"$INSTALLER_VERSION"'"}}}'
  diagnose "initialize"
  SESSION_ID="$(sed -n 's/^[Mm][Cc][Pp]-[Ss]ession-[Ii][Dd]: *\([^[:space:]]*\).*/\1/p' "$WORK/headers" | head -n 1)"
  PROTOCOL="$(json_field protocolVersion)"
  PROTOCOL="${PROTOCOL:-2025-06-18}"
  mcp_post '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  diagnose "initialized notification"
  mcp_post '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}'
  diagnose "tools/list"
  grep -q "\"$PROBE_TOOL\"" "$WORK/body" ||
    die "tools/list: this server does not offer $PROBE_TOOL yet; upgrade the server, then run this again"
  mcp_post '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"'"$PROBE_TOOL"'","arguments":{}}}'
  diagnose "$PROBE_TOOL"
  say "ok: initialize, tools/list and $PROBE_TOOL answered (protocol $PROTOCOL)"
}

# Ends the smoke test's MCP session (a Cognibrain session bound to it, if any, closes with it).
end_session() {
  [ -n "$SESSION_ID" ] || return 0
  curl -sS --connect-timeout 10 --max-time 30 -o /dev/null -X DELETE -H "@$WORK/auth" \
    -H "Mcp-Session-Id: $SESSION_ID" "$MCP_URL" 2>/dev/null || true
}

# Merges {"<container>": {"<server name>": <entry>}} into a JSON file; writes (with a backup) only on change.
merge_json() {
  local file="$1" container="$2" entry="$3"
  mkdir -p "$(dirname "$file")"
  BRAIN_FILE="$file" BRAIN_CONTAINER="$container" BRAIN_ENTRY="$entry" BRAIN_NAME="$SERVER_NAME" python3 - <<'PY'
import json, os, shutil, sys, time
# The file a symlink points to is the one rewritten (dotfile managers link configs in; replacing the link with a
# plain file cut it off from their copy).
path = os.path.realpath(os.environ["BRAIN_FILE"])
container, name = os.environ["BRAIN_CONTAINER"], os.environ["BRAIN_NAME"]
entry = json.loads(os.environ["BRAIN_ENTRY"])
data = {}
if os.path.exists(path) and os.path.getsize(path) > 0:
    try:
        with open(path) as f:
            data = json.load(f)
    except ValueError as exc:
        sys.exit(f"error: {path} is not valid JSON ({exc}); fix or move it, then run again")
if not isinstance(data, dict) or not isinstance(data.get(container, {}), dict):
    sys.exit(f"error: {path} has an unexpected shape; add the server by hand")
if data.get(container, {}).get(name) == entry:
    print(f"unchanged: {path}")
    sys.exit(0)
if os.path.exists(path):
    backup = f"{path}.bak-{time.strftime('%Y%m%d%H%M%S')}"
    shutil.copy2(path, backup)
    print(f"backup: {backup}")
data.setdefault(container, {})[name] = entry
tmp = path + ".tmp"
with open(tmp, "w") as f:
    json.dump(data, f, indent=2)
    f.write("\n")
os.chmod(tmp, 0o600)
os.replace(tmp, path)
print(f"updated: {path}")
PY
}

# The lines of the [mcp_servers.NAME] table in a Codex config, up to the next table header, blank lines dropped.
codex_table() {
  awk -v head="[mcp_servers.$SERVER_NAME]" '
    { line = $0; sub(/^[ \t]+/, "", line); sub(/[ \t]+$/, "", line) }
    line == head { inside = 1; print line; next }
    line ~ /^\[/ { inside = 0 }
    inside && line != "" { print line }' "$1"
}

configure_codex() {
  local file="${CODEX_HOME:-$HOME/.codex}/config.toml" block existing
  block="$(printf '[mcp_servers.%s]\nurl = "%s"\nbearer_token_env_var = "BRAIN_MCP_TOKEN"' "$SERVER_NAME" "$MCP_URL")"
  mkdir -p "$(dirname "$file")"
  existing=""
  if [ -f "$file" ]; then existing="$(codex_table "$file")"; fi
  if [ "$existing" = "$block" ]; then say "unchanged: $file"; return; fi
  if [ -n "$existing" ]; then
    die "$file already has [mcp_servers.$SERVER_NAME] with other settings; replace it with:
$block"
  fi
  if [ -f "$file" ]; then cp -p "$file" "$file.bak-$(date +%Y%m%d%H%M%S)"; fi
  printf '\n%s\n' "$block" >>"$file"
  say "updated: $file"
}

configure_client() {
  step "Configuring $CLIENT"
  # The clients expand these references when they start; this script must write them literally.
  # shellcheck disable=SC2016
  local env_header='Bearer ${env:BRAIN_MCP_TOKEN}' gemini_header='Bearer ${BRAIN_MCP_TOKEN}'
  case "$CLIENT" in
    # Claude Code's user scope lives in ~/.claude.json (mode 0600), or in $CLAUDE_CONFIG_DIR when the user moved
    # Claude Code's config there: the same entry `claude mcp add --scope user` writes; merged here so the token
    # never appears on a command line.
    claude-code) merge_json "${CLAUDE_CONFIG_DIR:-$HOME}/.claude.json" mcpServers \
      '{"type":"http","url":"'"$MCP_URL"'","headers":{"Authorization":"Bearer '"$TOKEN"'"}}' ;;
    cursor) merge_json "$HOME/.cursor/mcp.json" mcpServers \
      '{"url":"'"$MCP_URL"'","headers":{"Authorization":"'"$env_header"'"}}' ;;
    windsurf) merge_json "$HOME/.codeium/windsurf/mcp_config.json" mcpServers \
      '{"serverUrl":"'"$MCP_URL"'","headers":{"Authorization":"'"$env_header"'"}}' ;;
    gemini) merge_json "$HOME/.gemini/settings.json" mcpServers \
      '{"httpUrl":"'"$MCP_URL"'","headers":{"Authorization":"'"$gemini_header"'"}}' ;;
    codex) configure_codex ;;
  esac
  if [ "$CLIENT" != claude-code ]; then write_env_file; fi
}

# The clients that read BRAIN_MCP_TOKEN from the environment get it from a private file the shell profile
# sources (one line added to the profile, once), never from the profile itself.
write_env_file() {
  local profile line
  mkdir -p "$(dirname "$ENV_FILE")"
  printf "export BRAIN_MCP_TOKEN='%s'\n" "$TOKEN" >"$ENV_FILE.tmp"
  chmod 600 "$ENV_FILE.tmp" && mv "$ENV_FILE.tmp" "$ENV_FILE"
  say "updated: $ENV_FILE (mode 600)"
  case "${SHELL:-}" in */zsh) profile="$HOME/.zshrc" ;; *) profile="$HOME/.bashrc" ;; esac
  # shellcheck disable=SC2016
  line='[ -r "$HOME/.config/external-brain/env" ] && . "$HOME/.config/external-brain/env"'
  if [ -f "$profile" ] && grep -qF "$line" "$profile"; then
    say "unchanged: $profile"
  else
    printf '\n# External Brain token for MCP clients (the file is private to you)\n%s\n' "$line" >>"$profile"
    say "updated: $profile (sources $ENV_FILE; open a new terminal or run: . $ENV_FILE)"
  fi
}

client_version() {
  case "$CLIENT" in
    claude-code) claude --version 2>/dev/null | head -n 1 | tr -cd 'A-Za-z0-9 ._()/+-' || true ;;
    *) printf 'unknown' ;;
  esac
}

install_ping() {
  step "Recording the installation"
  if [ "$PROFILE" = cognibrain ]; then
    # The Cognibrain tools have no session tools to record it with: the smoke test's health call is the record.
    say "skipped: the cognibrain profile records no installer session"
    return 0
  fi
  local client_type os version session
  client_type="$(printf '%s' "$CLIENT" | tr '-' '_')"
  os="$(uname -sm 2>/dev/null | tr -cd 'A-Za-z0-9 ._-')"
  version="$(client_version)"
  # A new account has no project yet and a session would create one ("Default"): skip rather than create.
  mcp_post '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"brain_list_projects","arguments":{}}}'
  if [ "$CURL_RC" != 0 ] || [ "${HTTP_STATUS:0:1}" != 2 ] || grep -q '"projects" *: *\[ *\]' "$WORK/body"; then
    say "skipped: no project yet; your agent's first session creates or picks one"
    return 0
  fi
  mcp_post '{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"brain_start_session","arguments":{"clientType":"'"$client_type"'","prompt":"brain installer ping v'"$INSTALLER_VERSION"'"}}}'
  session="$(json_field sessionId)"
  if [ "$CURL_RC" != 0 ] || [ "${HTTP_STATUS:0:1}" != 2 ] || [ -z "$session" ]; then
    warn "could not record the installation (brain_start_session); the connection itself works"
    return 0
  fi
  mcp_post '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"brain_log_event","arguments":{"sessionId":"'"$session"'","eventType":"note","payload":{"installer_version":"'"$INSTALLER_VERSION"'","client_version":"'"${version:-unknown}"'","os":"'"$os"'"}}}}'
  if [ "$CURL_RC" != 0 ] || [ "${HTTP_STATUS:0:1}" != 2 ] || grep -q '"isError" *: *true' "$WORK/body"; then
    warn "brain_log_event failed; continuing"
  fi
  mcp_post '{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"brain_report_session_outcome","arguments":{"sessionId":"'"$session"'","success":true}}}'
  if [ "$CURL_RC" != 0 ] || [ "${HTTP_STATUS:0:1}" != 2 ] || grep -q '"isError" *: *true' "$WORK/body"; then
    warn "brain_report_session_outcome failed; continuing"
    return 0
  fi
  say "ok: installation recorded"
}

first_prompt() {
  step "Done. Paste this into your agent to start:"
  if [ "$PROFILE" = cognibrain ]; then
    say "  Remember for this repo: never edit dist/** (it is generated); edit src/ instead."
    say "(It calls cognibrain_memory_add; from then on cognibrain_guard blocks edits under dist/.)"
    return 0
  fi
  say "  Remember for this project: run the test suite before every commit, and tell me if it fails."
  say "(It calls brain_teach_knowledge; new sessions of any connected agent will then follow the rule.)"
}

main() {
  parse_args "$@"
  read_token
  check_prerequisites
  smoke_test
  configure_client
  install_ping
  end_session
  first_prompt
}

main "$@"
