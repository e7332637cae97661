/**
 * Permission decisions for `session/request_permission`, pure. The policy decides allow or deny;
 * the answer then picks an offered option by its KIND first (allow_once, then allow_always; for a
 * deny reject_once, then reject_always), then by well-known option ids, and answers `cancelled`
 * when nothing fits (which every ACP agent, Hermes included, reads as a deny).
 */
import { isAbsolute, relative, resolve } from 'node:path';
import type {
  PermissionOption,
  RequestPermissionRequest,
  RequestPermissionResponse,
  ToolCallFields,
} from './acp-protocol.js';

export type PermissionPolicy = 'sandbox' | 'deny' | 'ask';

export interface PermissionDecision {
  allow: boolean;
  /** One line for the audit event. */
  reason: string;
}

/** Tool kinds whose effect is bounded by the paths they name. */
const PATH_BOUNDED_KINDS = new Set(['read', 'edit', 'delete', 'move', 'search', 'think']);
/** Kinds that change files: they must name at least one path to be allowed. */
const WRITING_KINDS = new Set(['edit', 'delete', 'move']);
const PATH_KEYS = new Set([
  'path',
  'file_path',
  'filePath',
  'filename',
  'file',
  'target',
  'target_file',
  'destination',
  'dest',
  'source',
  'src',
  'cwd',
  'dir',
  'directory',
  'notebook_path',
  'old_path',
  'new_path',
  'paths',
  'files',
]);

/** Every path a tool call names (locations and path-like members of rawInput), as absolute paths. */
export function toolCallPaths(toolCall: ToolCallFields, workDir: string): string[] {
  const raw: string[] = [];
  for (const location of toolCall.locations ?? []) raw.push(location.path);
  const input = toolCall.rawInput;
  pathMembers(input, raw);
  // Hermes wraps the tool's own arguments: rawInput {tool, arguments: {path, …}}.
  if (isRecord(input)) pathMembers(input.arguments, raw);
  const all = raw.filter((p) => p.trim() !== '').map((p) => (p.startsWith('~') ? p : resolve(workDir, p)));
  return [...new Set(all)];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function pathMembers(input: unknown, into: string[]): void {
  if (!isRecord(input)) return;
  for (const [key, value] of Object.entries(input)) {
    if (!PATH_KEYS.has(key)) continue;
    if (typeof value === 'string') into.push(value);
    else if (Array.isArray(value)) for (const v of value) if (typeof v === 'string') into.push(v);
  }
}

export function isInside(path: string, workDir: string): boolean {
  if (path.startsWith('~')) return false;
  const rel = relative(resolve(workDir), path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** The `sandbox` and `deny` policies (`ask` is answered by a person through `send`). */
export function decidePermission(
  policy: Exclude<PermissionPolicy, 'ask'>,
  toolCall: ToolCallFields,
  workDir: string,
): PermissionDecision {
  if (policy === 'deny') return { allow: false, reason: 'policy deny: every permission is denied' };
  const kind = toolCall.kind ?? 'other';
  if (!PATH_BOUNDED_KINDS.has(kind))
    return { allow: false, reason: `policy sandbox: tool kind "${kind}" is not bounded by the work dir` };
  const paths = toolCallPaths(toolCall, workDir);
  if (paths.length === 0 && WRITING_KINDS.has(kind))
    return { allow: false, reason: `policy sandbox: a "${kind}" that names no path` };
  const outside = paths.find((p) => !isInside(p, workDir));
  if (outside !== undefined) return { allow: false, reason: `policy sandbox: ${outside} is outside the work dir` };
  return {
    allow: true,
    reason: paths.length
      ? `policy sandbox: ${paths.length} path(s) inside the work dir`
      : `policy sandbox: a "${kind}" naming no path`,
  };
}

const ALLOW_KINDS = ['allow_once', 'allow_always'];
const REJECT_KINDS = ['reject_once', 'reject_always'];
const ALLOW_IDS = [
  'allow_once',
  'allow',
  'approve',
  'proceed_once',
  'yes',
  'allow_session',
  'allow_always',
  'proceed_always',
];
const REJECT_IDS = ['reject_once', 'reject', 'deny', 'no', 'cancel', 'reject_always', 'deny_always'];

/** The option to select for an allow or a deny, by kind first, then by id; null when none fits. */
export function pickOption(options: readonly PermissionOption[], allow: boolean): PermissionOption | null {
  for (const kind of allow ? ALLOW_KINDS : REJECT_KINDS) {
    const found = options.find((o) => o.kind === kind);
    if (found) return found;
  }
  for (const id of allow ? ALLOW_IDS : REJECT_IDS) {
    const found = options.find((o) => o.optionId.toLowerCase() === id);
    if (found) return found;
  }
  return null;
}

/** The exact wire answer: `{outcome: {outcome: "selected", optionId}}` or `{outcome: {outcome: "cancelled"}}`. */
export function permissionAnswer(options: readonly PermissionOption[], allow: boolean): RequestPermissionResponse {
  const option = pickOption(options, allow);
  if (!option) return { outcome: { outcome: 'cancelled' } };
  return { outcome: { outcome: 'selected', optionId: option.optionId } };
}

/**
 * A person's reply through `send` to a pending request: `allow`/`yes`, `deny`/`no`, or an offered
 * option id. Null when the reply is none of these (it is then not taken as an answer).
 */
export function answerFromReply(reply: string, request: RequestPermissionRequest): RequestPermissionResponse | null {
  const text = reply.trim();
  const offered = request.options.find((o) => o.optionId === text);
  if (offered) return { outcome: { outcome: 'selected', optionId: offered.optionId } };
  const word = text.toLowerCase();
  if (['allow', 'yes', 'y', 'approve'].includes(word)) return permissionAnswer(request.options, true);
  if (['deny', 'no', 'n', 'reject'].includes(word)) return permissionAnswer(request.options, false);
  return null;
}

/** Did this answer grant the request (for the audit event)? */
export function answerAllows(answer: RequestPermissionResponse, options: readonly PermissionOption[]): boolean {
  if (answer.outcome.outcome !== 'selected') return false;
  const { optionId } = answer.outcome;
  const option = options.find((o) => o.optionId === optionId);
  if (!option) return false;
  if (option.kind) return option.kind.startsWith('allow');
  return ALLOW_IDS.includes(option.optionId.toLowerCase());
}
