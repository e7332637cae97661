import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { FAKE_AGENT } from './cli.js';
import { tempDir } from './temp.js';

let counter = 0;

/** Write a mission for the fake agent against `repo`; `agentArgs` picks its scenario. */
export function writeMission(
  repo: string,
  agentArgs: string[],
  patch: Record<string, unknown> = {},
  format: 'yaml' | 'json' = 'yaml',
): { path: string; operationId: string } {
  const operationId = `op-${process.pid}-${++counter}`;
  const mission = {
    schema_version: 'uh.mission.v0',
    mission_id: 'm-test',
    operation_id: operationId,
    title: 'Test mission',
    objective: 'Do what the fake agent does.',
    repository: { url: repo, ref: 'main' },
    runtime: 'command',
    runtime_config_overrides: { command: { argv: [process.execPath, FAKE_AGENT, ...agentArgs], kill_grace_ms: 500 } },
    timeout_seconds: 60,
    ...patch,
  };
  const path = join(tempDir('uh-mission-'), `mission.${format}`);
  writeFileSync(path, format === 'json' ? JSON.stringify(mission) : stringify(mission));
  return { path, operationId };
}

const FAKE_CODEX = new URL('../fixtures/bin/fake-codex', import.meta.url).pathname;

/** `path`: a mission for the fake codex (its scenario from FAKE_CODEX_SCENARIO) that may create hello.txt in `repo`. */
export function writeCodexMission(path: string, repo: string, id: string): string {
  const mission = {
    schema_version: 'uh.mission.v0',
    mission_id: id.replace(/-\d+$/, ''),
    operation_id: id,
    title: 't',
    objective: 'Create hello.txt.',
    repository: { url: repo, ref: 'HEAD' },
    runtime: 'codex',
    runtime_config_overrides: { codex: { binary: FAKE_CODEX } },
    scope: { allowed_change_globs: ['hello.txt'] },
    timeout_seconds: 60,
  };
  writeFileSync(path, stringify(mission));
  return path;
}
