/** Helpers for tests that drive the ACP adapters against the scripted fake agent. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RuntimeEventV1 } from '../../../../src/shared/runtime/v1/index.js';
import { tempDir } from '../../../support/temp.js';

export const FAKE_ACP_AGENT = fileURLToPath(new URL('../../../fixtures/fake-acp-agent/agent.mjs', import.meta.url));
export const FIXTURE_BIN = fileURLToPath(new URL('../../../fixtures/bin', import.meta.url));

/** The fake's argv for a scenario. */
export const fakeCommand = (scenario: string) => [process.execPath, FAKE_ACP_AGENT, scenario];

/** A fresh journal file path; the fake appends every message it receives there. */
export function newJournal(): string {
  return join(tempDir('uh-acp-journal-'), 'journal.jsonl');
}

export function readJournal(path: string): Record<string, any>[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, any>);
}

export const requestsOf = (journal: Record<string, any>[], method: string) =>
  journal.filter((m) => m.method === method);

export function ofType<T extends RuntimeEventV1['type']>(
  events: RuntimeEventV1[],
  type: T,
): Extract<RuntimeEventV1, { type: T }>[] {
  return events.filter((e): e is Extract<RuntimeEventV1, { type: T }> => e.type === type);
}

export const assistantText = (events: RuntimeEventV1[]) =>
  ofType(events, 'runtime.message')
    .filter((e) => e.data.role === 'assistant')
    .map((e) => e.data.text)
    .join('');

/** Abort with the given reason as soon as an event matches. */
export function abortWhen(match: (event: RuntimeEventV1) => boolean, reason: unknown) {
  const controller = new AbortController();
  return {
    signal: controller.signal,
    onEvent: (event: RuntimeEventV1) => {
      if (!controller.signal.aborted && match(event)) controller.abort(reason);
    },
  };
}
