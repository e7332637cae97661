/** Helpers for the real ACP agent tests. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { RuntimeEventV1 } from '../../src/shared/runtime/v1/index.js';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { tempDir } from '../support/temp.js';

/**
 * Cancel the run once the agent's prompt reached the scripted model (the model then hangs), so the
 * agent really has a turn in flight when `session/cancel` goes out. Polls with a deadline.
 */
export function cancelOnceModelCalled(requests: () => Promise<unknown[]>, deadlineMs = 60_000) {
  const controller = new AbortController();
  let polling = false;
  return {
    signal: controller.signal,
    onEvent: (event: RuntimeEventV1) => {
      if (polling || event.type !== 'runtime.started') return;
      polling = true;
      void (async () => {
        const deadline = Date.now() + deadlineMs;
        while (Date.now() < deadline && (await requests()).length === 0) await new Promise((r) => setTimeout(r, 50));
        controller.abort({ kind: 'cancel', message: 'cancelled by test' });
      })();
    },
  };
}

/**
 * One mission of the `acp` runtime through the real `uh mission run` (the built CLI), with the
 * host's isolation (bwrap here): returns the receipt and the CLI's result. The caller removes `created`.
 */
export async function acpMissionRun(
  acp: Record<string, unknown>,
  created: string[],
  objective = 'Answer in one sentence; change nothing.',
) {
  const repo = makeRepo({ 'README.md': '# real acp\n' });
  const dir = tempDir('uh-acp-mission-');
  const stateDir = tempDir('uh-acp-state-');
  const cacheDir = tempDir('uh-acp-cache-');
  created.push(repo, dir, stateDir, cacheDir);
  const mission = {
    schema_version: 'uh.mission.v0',
    mission_id: 'm-real-acp',
    operation_id: `op-real-acp-${process.pid}-${++missions}`,
    title: 'Real ACP agent',
    objective,
    repository: { url: repo, ref: 'main' },
    runtime: 'acp',
    runtime_config_overrides: { acp },
    timeout_seconds: 170,
  };
  writeFileSync(join(dir, 'mission.yaml'), stringify(mission));
  const r = await runCli(['mission', 'run', join(dir, 'mission.yaml'), '--json', '--state-dir', stateDir], {
    cwd: repo,
    env: { UH_CACHE_DIR: cacheDir },
  });
  return { ...r, receipt: JSON.parse(r.stdout) };
}
let missions = 0;
