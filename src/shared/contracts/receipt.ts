import { z } from 'zod';
import { OutcomeSchema, RuntimeIdentitySchema, UsageSchema } from './runtime-result.js';
import { RuntimeStatusSchema, VerdictSchema } from './status.js';
import { MissionPromotionSchema } from './promotion.js';
import { LIMIT_NAMES } from '../process/mission-limits.js';

export const CheckResultSchema = z.lazy(() =>
  z.strictObject({
    name: z.string(),
    argv: z.array(z.string()),
    exit_code: z.number().int().nullable(),
    signal: z.string().nullable(),
    duration_ms: z.number().int().nonnegative(),
    timed_out: z.boolean(),
    passed: z.boolean(),
    output_bytes: z.number().int().nonnegative(),
    output_truncated: z.boolean(),
    /** Digest of the captured (capped) output. */
    output_digest: z.string(),
    /** Path of the full (capped) log on the host that ran the check; `collect` brings a copy back. */
    log: z.string(),
    /** The first few KiB of the output, secrets scrubbed, so a CI host sees why without the log. */
    output_head: z.string().default(''),
    /** The last few KiB of the output (empty when the head already holds all of it), secrets scrubbed. */
    output_tail: z.string().default(''),
  }),
);
export type CheckResult = z.infer<typeof CheckResultSchema>;

export const ChangedFileSchema = z.lazy(() =>
  z.strictObject({
    path: z.string(),
    status: z.enum(['added', 'modified', 'deleted', 'renamed', 'type_changed', 'copied']),
    /** For renames and copies: the path before. */
    from: z.string().optional(),
  }),
);
export type ChangedFile = z.infer<typeof ChangedFileSchema>;

/** Where the sandbox was and whether it is kept; which backend made it (absent in receipts written before there were two, and when none was made). */
const ReceiptSandboxSchema = z.strictObject({
  path: z.string().nullable(),
  retained: z.boolean(),
  backend: z.enum(['git-worktree', 'overlay']).optional(),
});

export const ScopeViolationSchema = z.lazy(() =>
  z.strictObject({
    path: z.string(),
    reason: z.enum([
      'outside_allowed',
      'forbidden',
      'nested_repository',
      'symlink_outside_worktree',
      'name_refused_by_git',
      'path_too_deep',
      'path_too_long',
    ]),
    glob: z.string().optional(),
  }),
);

export const PhaseTimingsSchema = z.lazy(() => z.record(z.string(), z.number().int().nonnegative()));

/** `uh.receipt.v0`: the immutable record of one operation, written for every terminal state. */
export const ReceiptSignatureSchema = z.lazy(() =>
  z.discriminatedUnion('alg', [
    z.strictObject({
      /** Ed25519 (the fleet's): anyone holding the public key verifies; only the workers sign. */
      alg: z.literal('ed25519'),
      /** The first 16 hex digits of sha256(SPKI DER of the public key): which key signed. */
      key_id: z.string().regex(/^[0-9a-f]{16}$/),
      value: z.string().regex(/^[0-9a-f]{128}$/),
    }),
    z.strictObject({
      /** HMAC-SHA256 (a single host's key): who verifies can also sign. */
      alg: z.literal('hmac-sha256'),
      /** The first 16 hex digits of sha256(key): which key signed, never the key. */
      key_id: z.string().regex(/^[0-9a-f]{16}$/),
      value: z.string().regex(/^[0-9a-f]{64}$/),
    }),
  ]),
);
export type ReceiptSignature = z.infer<typeof ReceiptSignatureSchema>;

/** The name of the hidden verifier's check in a receipt (`verification_hidden`). */
export const HIDDEN_CHECK = 'hidden-verifier';

/** How the runtime and checks were isolated: see the receipt's `isolation`. */
export const ReceiptIsolationSchema = z.lazy(() =>
  z.strictObject({
    kind: z.enum(['bwrap', 'none']),
    reason: z.string().nullable(),
    network: z.enum(['none', 'egress', 'host', 'on']),
    egress: z
      .strictObject({ allowed: z.array(z.string()), asked: z.array(z.string()), refused: z.array(z.string()) })
      .optional(),
  }),
);

/** `diff.patch` against the host's cap: see the receipt's `diff`. */
export const DiffCapSchema = z.lazy(() =>
  z.strictObject({
    truncated: z.boolean(),
    bytes_total: z.number().int().nonnegative(),
    cap_bytes: z.number().int().positive(),
  }),
);

/** A receipt's `limits` (src/workers/pipeline/limits-phase.ts limitsReceipt). */
export const ReceiptLimitsSchema = z.strictObject({
  /** What held processes and memory: a phase cgroup (v2 or v1), the rlimits, or the watcher alone (`none`). */
  backend: z.enum(['cgroup-v2', 'cgroup-v1', 'rlimit', 'none']),
  /** Why that backend (`cgroup v1 pids+memory writable (root)`, `no delegation: rlimits (…)`). */
  backend_reason: z.string().optional(),
  processes: z.number().int().positive(),
  memory_bytes: z.number().int().positive(),
  shm_bytes: z.number().int().positive(),
  worktree_bytes: z.number().int().positive(),
  worktree_files: z.number().int().positive(),
  held: z.record(z.enum(LIMIT_NAMES), z.enum(['cgroup', 'rlimit+watcher', 'watcher', 'tmpfs', 'none'])),
  exceeded: z
    .strictObject({
      limit: z.enum(LIMIT_NAMES),
      observed: z.number().nonnegative(),
      /** Who saw it: the kernel's cgroup (a refused fork, an OOM kill), the watcher, the walk after the agent. */
      by: z.enum(['cgroup', 'watcher', 'walk']).optional(),
    })
    .nullable(),
  /** On a cgroup backend: forks the pids controller refused and OOM kills, over every phase's cgroup. */
  kernel: z
    .strictObject({ forks_refused: z.number().int().nonnegative(), oom_kills: z.number().int().nonnegative() })
    .optional(),
  worktree: z.strictObject({ bytes: z.number().int().nonnegative(), files: z.number().int().nonnegative() }).nullable(),
});

export const ReceiptSchema = z.lazy(() =>
  z.strictObject({
    schema_version: z.literal('uh.receipt.v0'),
    operation_id: z.string(),
    mission_id: z.string(),
    title: z.string(),
    contract_digest: z.string(),
    prompt_digest: z.string(),
    repository: z.strictObject({ url: z.string(), ref: z.string(), base_commit: z.string().nullable() }),
    head_commit: z.string().nullable(),
    /** The git tree of the sandbox's final state (tracked + untracked, ignored excepted): the tree a promotion must reproduce. */
    final_tree: z.string().nullable().optional(),
    runtime: RuntimeIdentitySchema,
    attempt: z.number().int().positive(),
    worker: z.strictObject({ host: z.string(), pid: z.number().int(), mode: z.enum(['inline', 'queue']) }),
    started_at: z.string(),
    finished_at: z.string(),
    timings_ms: PhaseTimingsSchema,
    status: RuntimeStatusSchema,
    outcome: OutcomeSchema,
    verdict: VerdictSchema,
    changed_files: z.array(ChangedFileSchema),
    diff_digest: z.string(),
    /** Bytes of `diff.patch` as stored (what `diff_digest` covers). */
    diff_bytes: z.number().int().nonnegative(),
    /**
     * `diff.patch` against the host's cap (`UH_DIFF_CAP_BYTES`): `truncated` when it holds only the
     * first `cap_bytes` of the `bytes_total` the whole patch has, then a marker line. The changed
     * files and the scope check are complete either way; a truncated diff is never promoted.
     * Absent in receipts written before the cap, and when the run ended before the diff.
     */
    diff: DiffCapSchema.optional(),
    scope: z.strictObject({ ok: z.boolean(), violations: z.array(ScopeViolationSchema) }),
    checks: z.array(CheckResultSchema),
    /** The hidden verifier's reward, 0..1 (check `hidden-verifier`); absent without one, null when it wrote none. */
    reward: z.number().min(0).max(1).nullable().optional(),
    usage: UsageSchema,
    final_message: z.string(),
    final_message_source: z.enum(['sentinel', 'native', 'none']),
    exit_code: z.number().int(),
    sandbox: ReceiptSandboxSchema,
    /**
     * How the runtime and checks were isolated (`none` + reason when bwrap was unavailable or off) and
     * their network (`on` in receipts written before egress mode: the host's). `egress`: the allowlist
     * in force and the hosts asked for and refused (bounded).
     */
    isolation: ReceiptIsolationSchema.optional(),
    /**
     * The per-mission limits in force (the host's, lowered by the mission), how each held on this
     * host, the one exceeded (the outcome's `raw` names it too), and the worktree as measured after
     * the agent exited. Absent in receipts written before limits.
     */
    limits: ReceiptLimitsSchema.optional(),
    labels: z.record(z.string(), z.string()),
    /**
     * The mission's automatic promotion, under the signature: the results worker promotes (and
     * pushes) only what a verified receipt asks for, never what a record or artifact in Redis says.
     * Absent for `none`.
     */
    promotion: MissionPromotionSchema.optional(),
    /** HMAC-SHA256 over the canonical JSON of every other field (src/operation/receipt-signature.ts). */
    signature: ReceiptSignatureSchema.optional(),
  }),
);
export type Receipt = z.infer<typeof ReceiptSchema>;
