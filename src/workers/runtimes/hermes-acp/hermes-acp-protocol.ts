/**
 * Hermes's dialect of ACP (`hermes acp`, a Python agent): the wire is plain ACP v1
 * (`../acp/acp-protocol.ts`); these are the Hermes-specific facts the adapter and its fake rely on.
 *
 * - initialize advertises `loadSession: true` and auth methods: the configured provider (an
 *   agent method, id = provider name) and `hermes-setup` (type `terminal`, never selected by us);
 *   with no provider configured only `hermes-setup` is offered.
 * - authenticate answers `{}` when it accepts the method and `null` when it does not.
 * - session/load answers `null` for an unknown session; history replay comes before the reply in
 *   current versions, after it in older ones.
 * - A prompt for an unknown session answers `stopReason: "refusal"`; a second prompt on a busy
 *   session is queued and answered `end_turn` at once (so we send one prompt at a time).
 * - session/request_permission for a dangerous command (acp_adapter/permissions.py) offers the
 *   options below (allow_always only when a permanent grant is possible); an edit approval
 *   (acp_adapter/edit_approval.py, at 6751a74c) offers only allow_once "Allow edit" and deny, under
 *   its own id `edit-approval-N`, with the path only in a `diff` content block and in
 *   rawInput `{tool, arguments: {path, …}}` (no locations). Anything but `selected` with one of
 *   the offered ids is a deny.
 * - Tool calls (acp_adapter/tools.py at df1f08ab) have ids `tc-<12 hex>` and no status until
 *   their `tool_call_update`.
 */
export const HERMES_TERMINAL_AUTH_METHOD_ID = 'hermes-setup';

/** Hermes's permission options, in the order it offers them, with their ACP kinds. */
export const HERMES_PERMISSION_OPTIONS = [
  { optionId: 'allow_once', kind: 'allow_once', name: 'Allow once' },
  { optionId: 'allow_session', kind: 'allow_always', name: 'Allow for session' },
  { optionId: 'allow_always', kind: 'allow_always', name: 'Allow always' },
  { optionId: 'deny', kind: 'reject_once', name: 'Deny' },
  { optionId: 'deny_always', kind: 'reject_always', name: 'Deny always' },
] as const;
