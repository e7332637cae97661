/**
 * The one place runtimes are registered. Adding a runtime: its folder under
 * `src/workers/runtimes/<id>/` and one line here.
 *
 * Each adapter module loads on first use: a CLI run builds the protocol and settings schemas of
 * the one runtime it runs, not of all nine (~24 ms of every inline run, docs/benchmarks.md).
 */
import type { AnyRuntimeAdapter } from '../../shared/runtime/v1/index.js';

const LOADERS: Readonly<Record<string, () => Promise<AnyRuntimeAdapter>>> = {
  command: async () => (await import('./command/command-adapter.js')).commandAdapter,
  acp: async () => (await import('./acp/acp-adapter.js')).acpAdapter,
  'hermes-acp': async () => (await import('./hermes-acp/hermes-acp-adapter.js')).hermesAcpAdapter,
  codex: async () => (await import('./codex/codex-adapter.js')).codexAdapter,
  'codex-app-server': async () =>
    (await import('./codex-app-server/codex-app-server-adapter.js')).codexAppServerAdapter,
  pi: async () => (await import('./pi/pi-adapter.js')).piAdapter,
  'oh-my-pi': async () => (await import('./oh-my-pi/oh-my-pi-adapter.js')).ohMyPiAdapter,
  hermes: async () => (await import('./hermes/hermes-adapter.js')).hermesAdapter,
  'hermes-proxy': async () => (await import('./hermes-proxy/hermes-proxy-adapter.js')).hermesProxyAdapter,
};

/** Every registered runtime id, in registration order. */
export const RUNTIME_IDS: readonly string[] = Object.keys(LOADERS);

/** The adapter registered as `id` (loaded on first use), or undefined for an unknown id. */
export async function loadRuntimeAdapter(id: string): Promise<AnyRuntimeAdapter | undefined> {
  const load = Object.hasOwn(LOADERS, id) ? LOADERS[id] : undefined;
  if (!load) return undefined;
  const adapter = await load();
  if (adapter.id !== id) throw new Error(`runtime registry: "${id}" loads the adapter "${adapter.id}"`);
  return adapter;
}

/** Every registered adapter, loaded (`uh doctor`, `uh adapter list`). */
export function loadAllRuntimeAdapters(): Promise<AnyRuntimeAdapter[]> {
  return Promise.all(RUNTIME_IDS.map(async (id) => (await loadRuntimeAdapter(id))!));
}
