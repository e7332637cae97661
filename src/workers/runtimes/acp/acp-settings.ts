import { z } from 'zod';

const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name');

/** What an ACP runtime defaults to (the generic `acp` runtime and `hermes-acp` differ). */
export interface AcpDefaults {
  /** Absent: `command` is required. */
  command?: string[];
  authMode: 'upfront' | 'on_demand';
  loadSettleMs: number;
}

/** The fields every ACP runtime's `runtime_config` has. */
export function acpSettingsShape(defaults: AcpDefaults) {
  const command = z.array(z.string().min(1)).min(1, 'command needs at least the program');
  return {
    /** The agent's argv (never a shell string), e.g. `["qwen", "--acp"]`, `["opencode", "acp"]`. */
    command: defaults.command ? command.default(defaults.command) : command,
    /** Extra environment for the agent (values of secret-looking names are redacted everywhere). */
    env: z.record(EnvName, z.string()).default({}),
    /**
     * How permission requests are answered: `sandbox` allows a tool call whose every path is inside
     * the work dir (reads, searches, edits) and denies the rest (commands, fetches, outside paths);
     * `deny` denies everything; `ask` surfaces each request as a `runtime.permission` event and
     * waits for the answer through `send` ("allow", "deny" or an offered option id).
     */
    permission_policy: z.enum(['sandbox', 'deny', 'ask']).default('sandbox'),
    /** With `ask`: how long to wait for an answer before denying. */
    permission_timeout_ms: z.number().int().positive().max(86_400_000).default(300_000),
    /**
     * `upfront`: authenticate right after `initialize` with the selected method; `on_demand`: only
     * when `session/new` answers "auth required". A `terminal` method is never selected.
     */
    auth_mode: z.enum(['upfront', 'on_demand']).default(defaults.authMode),
    /** The auth method id to use; default: the first advertised method that is not `terminal`. */
    auth_method_id: z.string().min(1).optional(),
    /** Continue this agent session with `session/load` (needs the agent's `loadSession`). */
    session_id: z.string().min(1).optional(),
    /** Switch the session to this mode (`session/set_mode`) before prompting, e.g. `default`, `plan`. */
    session_mode: z.string().min(1).optional(),
    /** After a `session/load` reply, how long late history replay is still treated as replay. */
    load_settle_ms: z.number().int().nonnegative().max(10_000).default(defaults.loadSettleMs),
    /** Deadline for initialize, authenticate, session/new and session/load. */
    request_timeout_ms: z.number().int().positive().max(600_000).default(60_000),
    /** Deadline for one prompt turn (the mission timeout still applies); none by default. */
    turn_timeout_ms: z.number().int().positive().optional(),
    /** After `session/cancel`, how long the agent gets to answer `cancelled` before it is killed. */
    cancel_grace_ms: z.number().int().nonnegative().max(60_000).default(5000),
    /** Grace between closing the agent's stdin, SIGTERM and SIGKILL. */
    kill_grace_ms: z.number().int().nonnegative().max(60_000).default(2000),
    /** Keep an idle agent child alive this long for the next run in the same work dir. */
    idle_ms: z.number().int().nonnegative().max(3_600_000).default(0),
  };
}

export const AcpSettingsSchema = z.strictObject(acpSettingsShape({ authMode: 'on_demand', loadSettleMs: 0 }));
/** `runtime_config` of the generic `acp` runtime. */
export type AcpSettings = z.infer<typeof AcpSettingsSchema>;

/** What the shared ACP machinery reads; runtimes may add fields (`reasoning_level`). */
export type AcpCommonSettings = AcpSettings & { reasoning_level?: string | null };
