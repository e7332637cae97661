/**
 * The one place runtimes are registered. Adding a runtime: its folder under
 * `src/workers/runtimes/<id>/` and one line here.
 */
import type { AnyRuntimeAdapter } from '../../shared/runtime/v1/index.js';
import { commandAdapter } from './command/command-adapter.js';
import { acpAdapter } from './acp/acp-adapter.js';
import { hermesAcpAdapter } from './hermes-acp/hermes-acp-adapter.js';
import { codexAdapter } from './codex/codex-adapter.js';
import { codexAppServerAdapter } from './codex-app-server/codex-app-server-adapter.js';
import { piAdapter } from './pi/pi-adapter.js';
import { ohMyPiAdapter } from './oh-my-pi/oh-my-pi-adapter.js';
import { hermesAdapter } from './hermes/hermes-adapter.js';
import { hermesProxyAdapter } from './hermes-proxy/hermes-proxy-adapter.js';

export const RUNTIME_ADAPTERS: readonly AnyRuntimeAdapter[] = [
  commandAdapter,
  acpAdapter,
  hermesAcpAdapter,
  codexAdapter,
  codexAppServerAdapter,
  piAdapter,
  ohMyPiAdapter,
  hermesAdapter,
  hermesProxyAdapter,
];

export function findRuntimeAdapter(kind: string): AnyRuntimeAdapter | undefined {
  return RUNTIME_ADAPTERS.find((a) => a.id === kind);
}
