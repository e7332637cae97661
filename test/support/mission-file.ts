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
