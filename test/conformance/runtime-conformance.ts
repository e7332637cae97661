/**
 * The conformance suite every runtime adapter passes. Call `describeConformance` from a test
 * file with a subject: the adapter plus configs for a run that succeeds and a run that hangs
 * until cancelled (both pointing at fakes in test/fixtures).
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnyRuntimeAdapter, RuntimeEventV1 } from '../../src/shared/runtime/v1/index.js';
import { loadRuntimeAdapter } from '../../src/workers/runtimes/registry.js';
import { runAdapter, terminalOf } from '../support/run-adapter.js';
import { tempDir } from '../support/temp.js';

export interface ConformanceSubject {
  adapter: AnyRuntimeAdapter;
  /** Config (before strict parse) for a run that completes; it may edit files in the work dir. */
  successConfig: () => unknown;
  /** Config for a run that does not end by itself until the signal aborts. */
  hangingConfig: () => unknown;
  /** Secrets placed in those configs (or `env`); none may appear in any event. */
  secrets: string[];
  /** Extra environment for the runs (fake binaries on PATH, tokens). */
  env?: () => Record<string, string | undefined>;
  setup?: () => Promise<void>;
  teardown?: () => Promise<void>;
}

function withCancelAfterStart(reason: unknown) {
  const controller = new AbortController();
  return {
    signal: controller.signal,
    onEvent: (event: RuntimeEventV1) => {
      if (event.type === 'runtime.started') setTimeout(() => controller.abort(reason), 50);
    },
  };
}

export function describeConformance(name: string, subject: ConformanceSubject): void {
  describe(`conformance: ${name}`, () => {
    beforeAll(async () => subject.setup?.());
    afterAll(async () => subject.teardown?.());
    const env = () => ({ ...process.env, ...(subject.env?.() ?? {}) });

    it('is the adapter the registry loads for its id', async () => {
      expect(await loadRuntimeAdapter(subject.adapter.id)).toBe(subject.adapter);
    });

    it('ends a successful run with exactly one terminal event, last', async () => {
      const run = await runAdapter(subject.adapter, subject.successConfig(), { env: env() });
      const terminals = run.events.filter((e) => e.type === 'runtime.finished');
      expect(terminals).toHaveLength(1);
      expect(run.events.at(-1)?.type).toBe('runtime.finished');
      expect(terminalOf(run.events).outcome.status).toBe('completed');
    });

    it('ends as cancelled promptly when cancelled mid-run', async () => {
      const { signal, onEvent } = withCancelAfterStart({ kind: 'cancel', message: 'cancelled by test' });
      const started = Date.now();
      const run = await runAdapter(subject.adapter, subject.hangingConfig(), { env: env(), signal, onEvent });
      expect(terminalOf(run.events).outcome.status).toBe('cancelled');
      expect(run.events.filter((e) => e.type === 'runtime.finished')).toHaveLength(1);
      // "Promptly": well inside the kill grace plus process start, far from the hang.
      expect(Date.now() - started).toBeLessThan(15_000);
    });

    it('ends as failed with timed_out when the mission timeout aborts it', async () => {
      const { signal, onEvent } = withCancelAfterStart({
        kind: 'timeout',
        message: 'mission timed out after 1 s',
        timeoutMs: 1000,
      });
      const run = await runAdapter(subject.adapter, subject.hangingConfig(), { env: env(), signal, onEvent });
      const outcome = terminalOf(run.events).outcome;
      expect(outcome.status).toBe('failed');
      expect(outcome.timed_out).toBe(true);
    });

    it('writes nothing outside its work dir and log dir', async () => {
      const home = tempDir('uh-home-');
      writeFileSync(join(home, '.keep'), '');
      const run = await runAdapter(subject.adapter, subject.successConfig(), { env: { ...env(), HOME: home } });
      expect(readdirSync(run.root).sort()).toEqual(['logs', 'work']);
      expect(readdirSync(home)).toEqual(['.keep']);
    });

    it('never puts a secret in an event', async () => {
      const run = await runAdapter(subject.adapter, subject.successConfig(), { env: env() });
      const text = JSON.stringify(run.events);
      for (const secret of subject.secrets) expect(text).not.toContain(secret);
    });
  });
}
