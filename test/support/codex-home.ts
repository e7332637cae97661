/**
 * An isolated CODEX_HOME whose config.toml points codex at our scripted Responses server
 * (test/fixtures/model-server) through a custom provider that reads its key from `envKey`.
 * No retries: a scripted error reaches the client at once.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './temp.js';

export function makeCodexHome(serverUrl: string, envKey = 'UH_MOCK_API_KEY'): string {
  const home = tempDir('uh-codex-home-');
  mkdirSync(home, { recursive: true });
  writeFileSync(
    join(home, 'config.toml'),
    [
      'model = "uh-scripted"',
      'model_provider = "uhmock"',
      '[model_providers.uhmock]',
      'name = "uh scripted responses server"',
      `base_url = "${serverUrl}"`,
      'wire_api = "responses"',
      `env_key = "${envKey}"`,
      'request_max_retries = 0',
      'stream_max_retries = 0',
      '',
    ].join('\n'),
  );
  return home;
}
