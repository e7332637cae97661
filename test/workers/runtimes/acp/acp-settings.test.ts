import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { AdapterManifestSchema } from '../../../../src/shared/contracts/adapter-manifest.js';
import { acpAdapter } from '../../../../src/workers/runtimes/acp/acp-adapter.js';
import { hermesAcpAdapter } from '../../../../src/workers/runtimes/hermes-acp/hermes-acp-adapter.js';
import { loadRuntimeAdapter } from '../../../../src/workers/runtimes/registry.js';

const docYaml = (page: string) => {
  const text = readFileSync(fileURLToPath(new URL(`../../../../docs/runtimes/${page}`, import.meta.url)), 'utf8');
  return parse(/```yaml\n([\s\S]*?)```/.exec(text)![1]!) as unknown;
};

describe('ACP runtime settings', () => {
  it('are registered', async () => {
    expect(await loadRuntimeAdapter('acp')).toBe(acpAdapter);
    expect(await loadRuntimeAdapter('hermes-acp')).toBe(hermesAcpAdapter);
  });

  it('acp needs a command; hermes-acp defaults to `hermes acp` with its own defaults', () => {
    expect(acpAdapter.configSchema.safeParse({}).success).toBe(false);
    const hermes = hermesAcpAdapter.configSchema.parse({});
    expect(hermes).toMatchObject({
      command: ['hermes', 'acp'],
      auth_mode: 'upfront',
      load_settle_ms: 500,
      reasoning_level: null,
      permission_policy: 'sandbox',
    });
    expect(acpAdapter.configSchema.parse({ command: ['qwen', '--acp'] })).toMatchObject({
      auth_mode: 'on_demand',
      load_settle_ms: 0,
      idle_ms: 0,
    });
  });

  it.each([
    ['an unknown key', { command: ['a'], comand: ['b'] }],
    ['a shell string', { command: 'qwen --acp' }],
    ['an empty argv', { command: [] }],
    ['an unknown policy', { command: ['a'], permission_policy: 'yolo' }],
    ['reasoning on the generic runtime', { command: ['a'], reasoning_level: 'high' }],
  ])('acp rejects %s', (_name, config) => {
    expect(acpAdapter.configSchema.safeParse(config).success).toBe(false);
  });

  it.each([
    ['acp.md', acpAdapter],
    ['hermes-acp.md', hermesAcpAdapter],
  ])('the manifest example in docs/runtimes/%s parses', (page, adapter) => {
    const manifest = AdapterManifestSchema.parse(docYaml(page));
    expect(manifest.runtime_kind).toBe(adapter.id);
    expect(adapter.configSchema.safeParse({ ...adapter.defaultConfig, ...manifest.runtime_config }).success).toBe(true);
  });

  it.each([acpAdapter, hermesAcpAdapter])('$id has an `uh adapter add` template that parses strictly', (adapter) => {
    expect(adapter.configSchema.safeParse({ ...adapter.defaultConfig, ...adapter.exampleConfig }).success).toBe(true);
  });

  it('redacts secret env values and describes a dry run without them', async () => {
    const config = acpAdapter.configSchema.parse({
      command: ['qwen', '--acp'],
      env: { OPENAI_API_KEY: 'sk-abcdef123', OPENAI_MODEL: 'm' },
    });
    expect(acpAdapter.secretsOf(config)).toEqual(['sk-abcdef123']);
    const plan = await acpAdapter.prepare({
      config,
      prompt: 'p',
      workDir: '/w',
      mission: { missionId: 'm', operationId: 'o' },
    });
    expect(JSON.stringify(plan.describe)).not.toContain('sk-abcdef123');
    expect(plan.describe).toMatchObject({ argv: ['qwen', '--acp'], env: ['OPENAI_API_KEY', 'OPENAI_MODEL'] });
  });

  it('check() says how to install a missing agent, never throwing', async () => {
    const ctx = {
      spawn: (() => {
        throw new Error('unused');
      }) as never,
      fetch: globalThis.fetch,
      now: Date.now,
      env: process.env,
    };
    const missing = await hermesAcpAdapter.check(
      hermesAcpAdapter.configSchema.parse({ command: ['uh-no-such-hermes'] }),
      ctx,
    );
    expect(missing).toMatchObject({ ok: false, summary: 'program not found: uh-no-such-hermes' });
    expect(missing.hint).toContain('install Hermes');
  });
});
