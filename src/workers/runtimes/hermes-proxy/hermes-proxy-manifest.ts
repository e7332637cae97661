import { HERMES_PROXY_DEFAULT_ENDPOINT, HERMES_PROXY_PLACEHOLDER_TOKEN } from './hermes-proxy-settings.js';

export interface HermesProxyManifestOptions {
  /** Manifest id (file name `.harness/adapters/<id>.yaml`); default `hermes-proxy`. */
  id?: string;
  /** Model id; default `hermes-4-405b` (run `uh adapter check <id>` to list the proxy's models). */
  model?: string;
  endpoint?: string;
  provider?: 'nous' | 'claude' | 'chatgpt' | 'supergrok';
}

/**
 * The text `uh adapter add hermes-proxy` writes to `.harness/adapters/<id>.yaml`: a valid
 * `uh.adapter.v0` manifest whose `runtime_config` parses with `HermesProxySettingsSchema`,
 * commented for the operator. Values are quoted so YAML never reinterprets them.
 */
export function hermesProxyManifestTemplate(options: HermesProxyManifestOptions = {}): string {
  const id = options.id ?? 'hermes-proxy';
  const q = (v: string) => JSON.stringify(v);
  return [
    '# Ultimate Harness adapter: a local `hermes proxy` (Hermes Agent >= 0.14), OpenAI-compatible HTTP.',
    '# Start the proxy first: hermes proxy start --provider nous   (see docs/runbooks/hermes-proxy.md)',
    'schema_version: uh.adapter.v0',
    `id: ${q(id)}`,
    'name: "Hermes proxy (OpenAI-compatible HTTP)"',
    'version: "0.1.0"',
    'runtime_kind: hermes-proxy',
    'capabilities:',
    '  non_interactive_run: true',
    '  structured_events: true',
    '  file_tools: false        # v1 has no tool channel: the reply is the artifact',
    'runtime_config:',
    '  # Proxy base URL including /v1; requests go to <endpoint>/chat/completions.',
    `  endpoint: ${q(options.endpoint ?? HERMES_PROXY_DEFAULT_ENDPOINT)}`,
    `  # Passed verbatim; "uh adapter check ${id}" lists what the upstream exposes.`,
    `  model: ${q(options.model ?? 'hermes-4-405b')}`,
    '  # Required by the proxy but ignored (it attaches its own credentials). Never logged.',
    `  auth_token: ${q(HERMES_PROXY_PLACEHOLDER_TOKEN)}`,
    '  # The proxy\'s --provider; names the "hermes auth status <provider>" re-auth hint.',
    `  provider: ${q(options.provider ?? 'nous')}`,
    '  temperature: 0',
    '  request_timeout_ms: 300000',
    '  stream: true',
    '  # system_prompt: "…"      # optional, sent as a system message',
    '  # max_tokens: 4096       # optional',
    '  # extra_headers: {}      # values are treated as secrets',
    '',
  ].join('\n');
}
