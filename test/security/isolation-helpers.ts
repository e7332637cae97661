/**
 * Shared by the isolation and process suites: hostile missions for the `command` runtime (a
 * `sh -c` script), a bwrap presence check that fails loudly, and fingerprints of what must not
 * change.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { probeBwrap } from '../../src/workers/sandbox/isolation.js';
import { tempDir } from '../support/temp.js';

let counter = 0;

/** Fails (never skips) when bwrap is missing: CI installs it (.ci/run). */
export function requireBwrap(): void {
  const probe = probeBwrap(process.env.PATH);
  if (!probe.ok)
    throw new Error(
      `these tests need bubblewrap: ${probe.reason}. Install it (apt-get install bubblewrap; .ci/run does).`,
    );
}

/** A mission whose agent is `sh -c script`; `patch` merges over the mission. */
export function hostileMission(
  repo: string,
  script: string,
  patch: Record<string, unknown> = {},
): { path: string; operationId: string } {
  const operationId = `op-sec-${process.pid}-${++counter}`;
  const mission = {
    schema_version: 'uh.mission.v0',
    mission_id: 'm-sec',
    operation_id: operationId,
    title: 'Hostile agent',
    objective: 'Try to escape.',
    repository: { url: repo, ref: 'main' },
    runtime: 'command',
    runtime_config_overrides: { command: { argv: ['sh', '-c', script], kill_grace_ms: 500 } },
    timeout_seconds: 60,
    ...patch,
  };
  const path = join(tempDir('uh-sec-mission-'), 'mission.yaml');
  writeFileSync(path, stringify(mission));
  return { path, operationId };
}

/** Every file under `dir` (path, size, content digest), sorted; symlinks by target. */
export function treeFingerprint(dir: string, skip: (rel: string) => boolean = () => false): string {
  const out: string[] = [];
  const walk = (rel: string) => {
    const abs = join(dir, rel);
    for (const name of readdirSync(abs).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      if (skip(r)) continue;
      const st = statSync(join(dir, r), { throwIfNoEntry: false });
      if (!st) out.push(`${r} (dangling)`);
      else if (st.isDirectory()) walk(r);
      else
        out.push(
          `${r} ${st.size} ${createHash('sha256')
            .update(readFileSync(join(dir, r)))
            .digest('hex')
            .slice(0, 16)}`,
        );
    }
  };
  if (existsSync(dir)) walk('');
  return out.join('\n');
}

/** Host processes whose command line contains `token`. */
export function processesWith(token: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmd.includes(token) && Number(entry) !== process.pid) found.push(Number(entry));
    } catch {
      // gone
    }
  }
  return found;
}
