/**
 * The declared answer to the app server's approval requests (server→client JSON-RPC requests).
 * Pure. Policy `decline_outside_workdir` (default): accept a command only when its cwd is inside
 * the worktree, it asks for no network, and every absolute (or `~`, or `..`-climbing) path in it
 * lies inside the worktree — an approved command may run outside codex's sandbox, and codex
 * reports the thread cwd even for `touch /etc/x`; accept a file change that asks for no extra
 * root outside the worktree; decline everything else.
 * Policy `decline_all`: decline every request. A request we do not know is never accepted:
 * approval-shaped ones are declined, the rest answered "method not found" by the caller.
 */
import { isAbsolute, relative, resolve } from 'node:path';
import { CommandApprovalParamsSchema, FileChangeApprovalParamsSchema } from './codex-app-server-protocol.js';
import type { CodexAppServerSettings } from './codex-app-server-settings.js';

export interface ApprovalAnswer {
  /** The JSON-RPC result to send back. */
  result: Record<string, unknown>;
  accepted: boolean;
  reason: string;
}

export function isInside(root: string, path: string): boolean {
  const rel = relative(resolve(root), resolve(root, path));
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** The paths a shell command names: absolute, home-relative or climbing out with `..`. */
export function pathsIn(command: string): string[] {
  const out: string[] = [];
  for (const m of command.matchAll(/(?:^|[\s'"=:<>|;&(])((?:\/|~|\.\.)[^\s'"|;&<>()]*)/g)) out.push(m[1]!);
  return out;
}

/** The inner commands of a request (`commandActions[].command`), else the command without its `bash -lc` wrapper. */
function innerCommands(params: { command?: string | null | undefined; commandActions?: unknown }): string[] {
  const actions = Array.isArray(params.commandActions) ? params.commandActions : [];
  const inner = actions
    .map((a) => (a as { command?: unknown }).command)
    .filter((c): c is string => typeof c === 'string');
  if (inner.length > 0) return inner;
  const command = params.command ?? '';
  return [command.replace(/^\S*\/(?:ba|z)?sh\s+-l?c\s+/, '')];
}

const decline = (reason: string): ApprovalAnswer => ({ result: { decision: 'decline' }, accepted: false, reason });
const accept = (reason: string): ApprovalAnswer => ({ result: { decision: 'accept' }, accepted: true, reason });

/** The answer to one request, or null when the method is not an approval we answer. */
export function decideApproval(
  method: string,
  params: unknown,
  workDir: string,
  policy: CodexAppServerSettings['approvals'],
): ApprovalAnswer | null {
  switch (method) {
    case 'item/commandExecution/requestApproval': {
      const p = CommandApprovalParamsSchema.safeParse(params);
      if (!p.success) return decline('malformed approval request');
      if (policy === 'decline_all') return decline('policy decline_all');
      const cwd = p.data.cwd ?? workDir;
      if (!isInside(workDir, cwd)) return decline(`command cwd ${cwd} is outside the worktree`);
      if (p.data.networkApprovalContext) return decline('asks for network access');
      const outside = innerCommands(p.data)
        .flatMap(pathsIn)
        .find((path) => path.startsWith('~') || !isInside(workDir, resolve(cwd, path)));
      return outside
        ? decline(`command names ${outside}, outside the worktree`)
        : accept(`command stays inside the worktree (${cwd})`);
    }
    case 'item/fileChange/requestApproval': {
      const p = FileChangeApprovalParamsSchema.safeParse(params);
      if (!p.success) return decline('malformed approval request');
      if (policy === 'decline_all') return decline('policy decline_all');
      const root = p.data.grantRoot;
      if (root && !isInside(workDir, root)) return decline(`asks to write under ${root}, outside the worktree`);
      return accept('file change inside the worktree');
    }
    case 'item/permissions/requestApproval':
      // Extra permissions widen the sandbox beyond the worktree: never granted.
      return {
        result: { permissions: {}, scope: 'turn' },
        accepted: false,
        reason: 'extra permissions are never granted',
      };
    case 'execCommandApproval':
    case 'applyPatchApproval':
      // Legacy (v1) shapes: declined, whatever the policy.
      return {
        result: { decision: { denied: { rejection: 'declined by uh policy' } } },
        accepted: false,
        reason: 'legacy approval request',
      };
    default:
      return null;
  }
}
