import { describe, expect, it } from 'vitest';
import { loadAllRuntimeAdapters, loadRuntimeAdapter, RUNTIME_IDS } from '../../../src/workers/runtimes/registry.js';
import { RUNTIME_CATALOG } from '../../../src/workers/operation-ports.js';
import { catalogOf } from '../../../src/operation/ports.js';

describe('runtime registry (adapters loaded on first use)', () => {
  it('registers the nine runtimes, each id loading the adapter of that id', async () => {
    expect(RUNTIME_IDS).toEqual([
      'command',
      'acp',
      'hermes-acp',
      'codex',
      'codex-app-server',
      'pi',
      'oh-my-pi',
      'hermes',
      'hermes-proxy',
    ]);
    const adapters = await loadAllRuntimeAdapters();
    expect(adapters.map((a) => a.id)).toEqual(RUNTIME_IDS);
    // The same module instance every time: a second load is the first one's adapter.
    expect(await loadRuntimeAdapter('codex')).toBe(adapters[3]);
  });

  it('knows no other id, not even an Object.prototype key', async () => {
    for (const id of ['nope', 'toString', '__proto__', 'constructor', ''])
      expect(await loadRuntimeAdapter(id)).toBeUndefined();
    expect(await RUNTIME_CATALOG.load('hasOwnProperty')).toBeUndefined();
  });

  it('a catalog of adapters in hand answers the same way', async () => {
    const codex = (await loadRuntimeAdapter('codex'))!;
    const catalog = catalogOf([codex]);
    expect(catalog.ids).toEqual(['codex']);
    expect(await catalog.load('codex')).toBe(codex);
    expect(await catalog.load('pi')).toBeUndefined();
  });
});
