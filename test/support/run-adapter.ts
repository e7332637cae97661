import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type {
  AnyRuntimeAdapter,
  RuntimeContextV1,
  RuntimeEventV1,
  RuntimeSessionV1,
} from '../../src/shared/runtime/v1/index.js';
import { spawnGroup } from '../../src/shared/process/spawn-group.js';
import { parseOrThrow } from '../../src/shared/contracts/zod-issues.js';
import { fileJournal } from '../../src/operation/file-journal.js';
import { makeRepo } from './git-repo.js';
import { tempDir } from './temp.js';

export interface AdapterRun {
  events: RuntimeEventV1[];
  workDir: string;
  logDir: string;
  root: string;
}

export interface RunAdapterOptions {
  /** Aborted by the test to cancel; the default never aborts. */
  signal?: AbortSignal;
  env?: Record<string, string | undefined>;
  prompt?: string;
  /** Called for each event as it arrives (to cancel after `runtime.started`, say). */
  onEvent?: (event: RuntimeEventV1) => void;
  workDir?: string;
  /** Called with the launched session before its events are read (to `send` to it). */
  onSession?: (session: RuntimeSessionV1) => void;
  /** Mission identity of the run (default `m-test` / `op-test`). */
  mission?: { missionId: string; operationId: string };
  /** The runtime journal file (default: `runtime-journal.json` in the fresh log dir), to re-run an operation. */
  journalPath?: string;
}

/**
 * Drive an adapter directly, with no pipeline: parse the config strictly, prepare, launch and
 * collect the raw event stream (not guarded, so tests see what the adapter really yields).
 * The work dir is a real git repository under a fresh temp root.
 */
export async function runAdapter(
  adapter: AnyRuntimeAdapter,
  configInput: unknown,
  options: RunAdapterOptions = {},
): Promise<AdapterRun> {
  const root = tempDir('uh-adapter-');
  const workDir = options.workDir ?? makeRepo({ 'README.md': '# work\n' }, join(root, 'work'));
  if (!options.workDir) mkdirSync(workDir, { recursive: true });
  const logDir = join(root, 'logs');
  mkdirSync(logDir, { recursive: true });
  const config = parseOrThrow(
    adapter.configSchema,
    { ...adapter.defaultConfig, ...(configInput as object) },
    'runtime_config',
  );
  const prompt = options.prompt ?? 'Say hello.';
  const mission = options.mission ?? { missionId: 'm-test', operationId: 'op-test' };
  const plan = await adapter.prepare({ config, prompt, workDir, mission });
  const ctx: RuntimeContextV1 = {
    workDir,
    logDir,
    signal: options.signal ?? new AbortController().signal,
    spawn: spawnGroup,
    fetch: globalThis.fetch,
    now: () => Date.now(),
    env: options.env ?? { ...process.env },
    journal: fileJournal(options.journalPath ?? join(logDir, 'runtime-journal.json')),
    mission: { ...mission, attempt: 1 },
  };
  const events: RuntimeEventV1[] = [];
  const session = adapter.launch(plan, ctx);
  options.onSession?.(session);
  for await (const event of session.events) {
    events.push(event);
    options.onEvent?.(event);
  }
  return { events, workDir, logDir, root };
}

export function terminalOf(events: RuntimeEventV1[]) {
  const last = events.at(-1);
  if (!last || last.type !== 'runtime.finished')
    throw new Error(`no terminal event; got ${events.map((e) => e.type).join(', ')}`);
  return last.data;
}
