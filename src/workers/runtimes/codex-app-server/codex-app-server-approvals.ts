/**
 * The declared answer to the app server's approval requests (server→client JSON-RPC requests).
 * Pure. Policy `decline_outside_workdir` (default): accept a command whose cwd is inside the
 * worktree and a file change that asks for no extra root outside it; decline everything else.
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
      return isInside(workDir, cwd) ? accept(`command runs inside the worktree (${cwd})`) : decline(`command cwd ${cwd} is outside the worktree`);
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
      return { result: { permissions: {}, scope: 'turn' }, accepted: false, reason: 'extra permissions are never granted' };
    case 'execCommandApproval':
    case 'applyPatchApproval':
      // Legacy (v1) shapes: declined, whatever the policy.
      return { result: { decision: { denied: { rejection: 'declined by uh policy' } } }, accepted: false, reason: 'legacy approval request' };
    default:
      return null;
  }
}
