# External Brain installer for Windows PowerShell 5.1+ and PowerShell 7.
#
#   $env:BRAIN_MCP_TOKEN = 'ebt_...'     # mint one at <server>/settings/tokens
#   & ([scriptblock]::Create((irm <server>/api/onboard.ps1))) -Client claude-code [-Profile cognibrain]
#
# -Profile cognibrain configures the cognibrain_* tools (/mcp/cognibrain, server entry "cognibrain").
# Same steps as onboard.sh: test the connection, configure the client (backup on change), record
# the installation (warnings only), print a first prompt. Safe to run again.
param(
  [ValidateSet('claude-code', 'cursor', 'windsurf', 'gemini', 'codex')]
  [string]$Client = 'claude-code',
  # Not named $Profile: that is PowerShell's automatic variable (the profile script's path).
  [Alias('Profile')]
  [ValidateSet('brain', 'cognibrain')]
  [string]$McpProfile = 'brain'
)
$ErrorActionPreference = 'Stop'
$InstallerVersion = '1'
# BRAIN_INSTALL_URL points the installer at another server; BRAIN_URL (the stdio bridge's) is not read.
$BrainUrl = if ($env:BRAIN_INSTALL_URL) { $env:BRAIN_INSTALL_URL } else { '__BRAIN_URL__' }
$BrainUrl = $BrainUrl.TrimEnd('/')
$McpUrl = "$BrainUrl/mcp"
$ServerName = 'brain'
$ProbeTool = 'brain_get_user_style'  # a read-only tool of the profile, called to prove the connection
if ($McpProfile -eq 'cognibrain') { $McpUrl = "$BrainUrl/mcp/cognibrain"; $ServerName = 'cognibrain'; $ProbeTool = 'cognibrain_health' }
$script:SessionId = $null
$script:Protocol = '2025-06-18'

# The wizard runs this file as a script block in the user's own session, where `exit` would close their window
# (taking the message with it): a failure throws, and the run ends with `return`.
function Fail([string]$Message) { Write-Host "error: $Message" -ForegroundColor Red; throw "External Brain installer stopped: $Message" }
function Step([string]$Message) { Write-Host "`n==> $Message" -ForegroundColor Cyan }

$Token = $env:BRAIN_MCP_TOKEN
if (-not $Token) {
  $secure = Read-Host -AsSecureString 'Paste your External Brain token'
  $Token = [Runtime.InteropServices.Marshal]::PtrToStringAuto([Runtime.InteropServices.Marshal]::SecureStringToBSTR($secure))
}
if (-not $Token) { Fail "no token: set `$env:BRAIN_MCP_TOKEN (mint one at $BrainUrl/settings/tokens)" }
if ($Token -notmatch '^[A-Za-z0-9_.-]+$') { Fail "the token contains unexpected characters; copy it again from $BrainUrl/settings/tokens" }

function Invoke-Mcp([hashtable]$Message, [string]$What, [switch]$Soft) {
  $headers = @{ Authorization = "Bearer $Token"; Accept = 'application/json, text/event-stream' }
  if ($script:SessionId) { $headers['Mcp-Session-Id'] = $script:SessionId; $headers['MCP-Protocol-Version'] = $script:Protocol }
  $body = $Message | ConvertTo-Json -Depth 10 -Compress
  try {
    $response = Invoke-WebRequest -Uri $McpUrl -Method Post -Headers $headers -ContentType 'application/json' -Body $body -UseBasicParsing -TimeoutSec 60
  } catch {
    if ($Soft) { throw }
    $status = $null
    if ($_.Exception.Response) { $status = [int]$_.Exception.Response.StatusCode }
    switch -Regex ("$status") {
      '^401$' { Fail "${What}: HTTP 401, the token was refused (mistyped, revoked or expired). Mint a new one at $BrainUrl/settings/tokens" }
      '^403$' { Fail "${What}: HTTP 403, the server refused this client: its Origin allow-list or the token's project scope" }
      '^404$' { Fail "${What}: HTTP 404, no MCP endpoint at $McpUrl; check the server URL" }
      '^5\d\d$' { Fail "${What}: HTTP $status, the server failed; look at its log and at $BrainUrl/readyz" }
      '^\d+$' { Fail "${What}: unexpected HTTP $status from $McpUrl" }
    }
    $text = "$($_.Exception.Message) $($_.Exception.InnerException.Message)"
    if ($text -match 'refused|actively refused') { Fail "${What}: connection refused at $BrainUrl; is the server running and is the port right?" }
    if ($text -match 'SSL|TLS|certificate|trust relationship') { Fail "${What}: TLS failed ($text); the server's certificate is not trusted here" }
    if ($text -match 'resolve|No such host') { Fail "${What}: cannot resolve the host of $BrainUrl" }
    Fail "${What}: $text"
  }
  $content = [string]$response.Content
  if ($response.Headers['Content-Type'] -match 'event-stream') {
    $content = ($content -split "`n" | Where-Object { $_ -like 'data:*' } | ForEach-Object { $_.Substring(5).Trim() }) -join ''
  }
  if ($response.Headers['Mcp-Session-Id']) { $script:SessionId = [string]$response.Headers['Mcp-Session-Id'] }
  if (-not $content) { return $null }
  return $content | ConvertFrom-Json
}

function Assert-Ok($Reply, [string]$What) {
  if ($null -ne $Reply.error) { Fail "${What}: the server answered with an error: $($Reply.error.message)" }
  if ($Reply.result.isError) { Fail "${What}: the tool reported an error: $($Reply.result.content[0].text)" }
}

function Test-Connection {
  Step "Testing the connection to $McpUrl"
  $init = Invoke-Mcp @{ jsonrpc = '2.0'; id = 1; method = 'initialize'; params = @{ protocolVersion = $script:Protocol; capabilities = @{}; clientInfo = @{ name = 'brain-onboard'; version = $InstallerVersion } } } 'initialize'
  Assert-Ok $init 'initialize'
  if ($init.result.protocolVersion) { $script:Protocol = $init.result.protocolVersion }
  [void](Invoke-Mcp @{ jsonrpc = '2.0'; method = 'notifications/initialized' } 'initialized notification')
  $tools = Invoke-Mcp @{ jsonrpc = '2.0'; id = 2; method = 'tools/list'; params = @{} } 'tools/list'
  Assert-Ok $tools 'tools/list'
  if (-not ($tools.result.tools | Where-Object { $_.name -eq $ProbeTool })) {
    Fail "tools/list: this server does not offer $ProbeTool yet; upgrade the server, then run this again"
  }
  $probe = Invoke-Mcp @{ jsonrpc = '2.0'; id = 3; method = 'tools/call'; params = @{ name = $ProbeTool; arguments = @{} } } $ProbeTool
  Assert-Ok $probe $ProbeTool
  Write-Host "ok: initialize, tools/list and $ProbeTool answered (protocol $($script:Protocol))"
}

function Merge-JsonConfig([string]$Path, [string]$Container, [hashtable]$Entry) {
  $dir = Split-Path -Parent $Path
  if (-not (Test-Path $dir)) { New-Item -ItemType Directory -Path $dir -Force | Out-Null }
  $data = [pscustomobject]@{}
  if ((Test-Path $Path) -and (Get-Item $Path).Length -gt 0) {
    # Read and written as UTF-8 without a byte-order mark: Windows PowerShell 5.1's Set-Content -Encoding UTF8 adds
    # one, which the clients' JSON parsers refuse, and its Get-Content misreads BOM-less UTF-8.
    try { $data = [IO.File]::ReadAllText($Path) | ConvertFrom-Json } catch { Fail "$Path is not valid JSON; fix or move it, then run again" }
  }
  $wanted = $Entry | ConvertTo-Json -Depth 10 -Compress
  $current = $null
  if ($data.PSObject.Properties[$Container] -and $data.$Container.PSObject.Properties[$ServerName]) {
    $current = $data.$Container.$ServerName | ConvertTo-Json -Depth 10 -Compress
  }
  if ($current -eq $wanted) { Write-Host "unchanged: $Path"; return }
  if (Test-Path $Path) {
    $backup = "$Path.bak-$(Get-Date -Format yyyyMMddHHmmss)"
    Copy-Item $Path $backup
    Write-Host "backup: $backup"
  }
  if (-not $data.PSObject.Properties[$Container]) { $data | Add-Member -NotePropertyName $Container -NotePropertyValue ([pscustomobject]@{}) }
  $data.$Container | Add-Member -NotePropertyName $ServerName -NotePropertyValue ([pscustomobject]$Entry) -Force
  [IO.File]::WriteAllText($Path, ($data | ConvertTo-Json -Depth 20), [Text.UTF8Encoding]::new($false))
  Write-Host "updated: $Path"
}

function Set-CodexConfig {
  $path = Join-Path $HOME '.codex\config.toml'
  $block = "[mcp_servers.$ServerName]`nurl = `"$McpUrl`"`nbearer_token_env_var = `"BRAIN_MCP_TOKEN`""
  $dir = Split-Path -Parent $path
  if (-not (Test-Path $dir)) { New-Item -ItemType Directory -Path $dir -Force | Out-Null }
  $text = if (Test-Path $path) { (Get-Content -Raw $path) -replace "`r`n", "`n" } else { '' }
  if ($text.Contains($block)) { Write-Host "unchanged: $path"; return }
  if ($text -match "(?m)^\[mcp_servers\.$ServerName\]") { Fail "$path already has [mcp_servers.$ServerName] with other settings; replace it with:`n$block" }
  if (Test-Path $path) { Copy-Item $path "$path.bak-$(Get-Date -Format yyyyMMddHHmmss)" }
  Add-Content -Path $path -Value "`n$block"
  Write-Host "updated: $path"
}

function Set-Client {
  Step "Configuring $Client"
  $envHeader = 'Bearer ${env:BRAIN_MCP_TOKEN}'
  switch ($Client) {
    'claude-code' {
      if (Get-Command claude -ErrorAction SilentlyContinue) {
        # Under 'Stop', Windows PowerShell 5.1 turns a native command's stderr line into a terminating error; the
        # first install has nothing to remove and says so on stderr.
        $ErrorActionPreference = 'Continue'
        & claude mcp remove --scope user $ServerName 2>$null | Out-Null
        $ErrorActionPreference = 'Stop'
        & claude mcp add --transport http --scope user $ServerName $McpUrl --header "Authorization: Bearer $Token"
        if ($LASTEXITCODE -ne 0) { Fail 'claude mcp add failed; see its message above' }
      } else {
        $claudeDir = if ($env:CLAUDE_CONFIG_DIR) { $env:CLAUDE_CONFIG_DIR } else { $HOME }
        Merge-JsonConfig (Join-Path $claudeDir '.claude.json') 'mcpServers' @{ type = 'http'; url = $McpUrl; headers = @{ Authorization = "Bearer $Token" } }
      }
    }
    'cursor' { Merge-JsonConfig (Join-Path $HOME '.cursor\mcp.json') 'mcpServers' @{ url = $McpUrl; headers = @{ Authorization = $envHeader } } }
    'windsurf' { Merge-JsonConfig (Join-Path $HOME '.codeium\windsurf\mcp_config.json') 'mcpServers' @{ serverUrl = $McpUrl; headers = @{ Authorization = $envHeader } } }
    'gemini' { Merge-JsonConfig (Join-Path $HOME '.gemini\settings.json') 'mcpServers' @{ httpUrl = $McpUrl; headers = @{ Authorization = 'Bearer ${BRAIN_MCP_TOKEN}' } } }
    'codex' { Set-CodexConfig }
  }
  if ($Client -ne 'claude-code') {
    # The client's config refers to BRAIN_MCP_TOKEN (as onboard.sh's env file does): kept in the user's environment,
    # which programs started from now on inherit.
    [Environment]::SetEnvironmentVariable('BRAIN_MCP_TOKEN', $Token, 'User')
    Write-Host "ok: BRAIN_MCP_TOKEN saved in your user environment; restart $Client to pick it up"
  }
}

function Send-InstallPing {
  Step 'Recording the installation'
  if ($McpProfile -eq 'cognibrain') { Write-Host 'skipped: the cognibrain profile records no installer session'; return }
  try {
    $clientType = $Client -replace '-', '_'
    $start = Invoke-Mcp @{ jsonrpc = '2.0'; id = 10; method = 'tools/call'; params = @{ name = 'brain_start_session'; arguments = @{ clientType = $clientType; prompt = "brain installer ping v$InstallerVersion" } } } 'brain_start_session' -Soft
    $sessionId = $start.result.structuredContent.sessionId
    if (-not $sessionId) { throw 'no sessionId' }
    $os = "Windows $([Environment]::OSVersion.Version) PowerShell $($PSVersionTable.PSVersion)"
    [void](Invoke-Mcp @{ jsonrpc = '2.0'; id = 11; method = 'tools/call'; params = @{ name = 'brain_log_event'; arguments = @{ sessionId = $sessionId; eventType = 'note'; payload = @{ installer_version = $InstallerVersion; os = $os } } } } 'brain_log_event' -Soft)
    $outcome = Invoke-Mcp @{ jsonrpc = '2.0'; id = 12; method = 'tools/call'; params = @{ name = 'brain_report_session_outcome'; arguments = @{ sessionId = $sessionId; success = $true } } } 'brain_report_session_outcome' -Soft
    if ($outcome.error -or $outcome.result.isError) { throw 'outcome refused' }
    Write-Host 'ok: installation recorded'
  } catch {
    Write-Warning 'could not record the installation; the connection itself works'
  }
}

Step 'Checking prerequisites'
if ($PSVersionTable.PSVersion.Major -lt 5) { Fail 'PowerShell 5.1 or newer is required' }
Write-Host "ok: PowerShell $($PSVersionTable.PSVersion)"
Test-Connection
Set-Client
Send-InstallPing
Step 'Done. Paste this into your agent to start:'
if ($McpProfile -eq 'cognibrain') {
  Write-Host '  Remember for this repo: never edit dist/** (it is generated); edit src/ instead.'
  Write-Host '(It calls cognibrain_memory_add; from then on cognibrain_guard blocks edits under dist/.)'
  return
}
Write-Host '  Remember for this project: run the test suite before every commit, and tell me if it fails.'
