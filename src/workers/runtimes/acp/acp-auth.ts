/**
 * Choosing an ACP auth method, pure. A `terminal` method needs a person at an interactive
 * terminal (Hermes advertises `hermes-setup` that way), so it is never selected: an agent that
 * offers only terminal methods is `blocked` until someone logs it in on the worker.
 */
import type { AuthMethod } from './acp-protocol.js';

export type AuthSelection = { method: AuthMethod } | { none: true } | { error: string };

export function isTerminalMethod(method: AuthMethod): boolean {
  return method.type === 'terminal';
}

/**
 * The method to authenticate with: the configured id when given (it must be advertised and not
 * a terminal method), else the first advertised non-terminal method. `none` when nothing is advertised.
 */
export function selectAuthMethod(methods: readonly AuthMethod[], configuredId: string | undefined): AuthSelection {
  const describe = () => methods.map((m) => `${m.id}${isTerminalMethod(m) ? ' (terminal)' : ''}`).join(', ');
  if (configuredId !== undefined) {
    const method = methods.find((m) => m.id === configuredId);
    if (!method)
      return { error: `auth method "${configuredId}" is not offered by the agent (offered: ${describe() || 'none'})` };
    if (isTerminalMethod(method))
      return { error: `auth method "${configuredId}" is a terminal method and needs a person at a terminal` };
    return { method };
  }
  if (methods.length === 0) return { none: true };
  const method = methods.find((m) => !isTerminalMethod(m));
  if (!method)
    return { error: `the agent offers only terminal auth methods (${describe()}): it is not logged in on this worker` };
  return { method };
}
