import { hostname } from 'node:os';
import { costOf, type PriceTable } from '../shared/prices.js';
import type { Mission } from '../shared/contracts/mission.js';
import type { CheckResult, Receipt } from '../shared/contracts/receipt.js';
import type { Outcome, Usage } from '../shared/contracts/runtime-result.js';
import { exitCodeFor, type Verdict } from '../shared/contracts/status.js';
import { redact } from '../shared/redact.js';

export interface ReceiptInput {
  mission: Mission;
  contractDigest: string;
  promptDigest: string;
  baseCommit: string | null;
  runtime: Receipt['runtime'];
  /** Price table: `usage.cost_usd` from the tokens when both are known (docs/batch.md, Cost). */
  prices?: PriceTable;
  attempt: number;
  /** The worker that ran it (default: this process). */
  worker?: { host: string; pid: number };
  mode: 'inline' | 'queue';
  startedAt: Date;
  finishedAt: Date;
  timings: Record<string, number>;
  outcome: Outcome;
  usage: Usage;
  finalMessage: string;
  finalMessageSource: Receipt['final_message_source'];
  /** The captured diff (null when the run ended before diff capture). */
  diff: {
    changed: Receipt['changed_files'];
    bytes: number;
    digest: string;
    headCommit: string | null;
    tree: string | null;
    /** Against the host's cap (`capped-patch.ts`); absent: a diff made before the cap. */
    truncated?: boolean;
    bytesTotal?: number;
    capBytes?: number;
  } | null;
  violations: Receipt['scope']['violations'];
  checks: CheckResult[];
  /** The hidden verifier's reward: undefined without one (the receipt then has no `reward`). */
  reward?: number | null;
  /** Decided by the pipeline (src/workers/results/verdict.ts); the receipt records it, never re-decides. */
  verdict: Verdict;
  sandbox: Receipt['sandbox'];
  /** How the runtime and checks were isolated (absent for receipts synthesized without a run). */
  isolation?: Receipt['isolation'];
  /** The limits in force and how they held (absent for receipts synthesized without a run). */
  limits?: Receipt['limits'];
  secrets: readonly string[];
}

/** Token usage priced by the table (runtime id, adapter id, then model); unknown stays absent, never 0. */
function withCost(usage: Usage, prices: PriceTable, keys: readonly string[]): Usage {
  if (usage.cost_usd !== undefined) return usage;
  const cost = costOf(usage, prices, keys);
  return cost === null ? usage : { ...usage, cost_usd: cost };
}

/** What a price table is keyed by, in order: the runtime id, the adapter id, the model. */
export function priceKeys(runtime: Pick<Receipt['runtime'], 'adapter_id' | 'runtime_kind' | 'model'>): string[] {
  return [runtime.adapter_id, runtime.runtime_kind, ...(runtime.model ? [runtime.model] : [])];
}

/** The receipt's `diff` facts, when the capture measured them against a cap. */
function diffCap(diff: ReceiptInput['diff']): Pick<Receipt, 'diff'> {
  if (diff?.capBytes === undefined) return {};
  return {
    diff: { truncated: diff.truncated === true, bytes_total: diff.bytesTotal ?? diff.bytes, cap_bytes: diff.capBytes },
  };
}

/** The receipt of an operation, on every path: the exit code follows from status and verdict, secrets redacted. */
export function buildReceipt(input: ReceiptInput): Receipt {
  const { mission, verdict } = input;
  return redact(
    {
      schema_version: 'uh.receipt.v0',
      operation_id: mission.operation_id,
      mission_id: mission.mission_id,
      title: mission.title,
      contract_digest: input.contractDigest,
      prompt_digest: input.promptDigest,
      repository: { url: mission.repository.url, ref: mission.repository.ref, base_commit: input.baseCommit },
      head_commit: input.diff?.headCommit ?? null,
      final_tree: input.diff?.tree ?? null,
      runtime: input.runtime,
      attempt: input.attempt,
      worker: { host: input.worker?.host ?? hostname(), pid: input.worker?.pid ?? process.pid, mode: input.mode },
      started_at: input.startedAt.toISOString(),
      finished_at: input.finishedAt.toISOString(),
      timings_ms: input.timings,
      status: input.outcome.status,
      outcome: input.outcome,
      verdict,
      changed_files: input.diff?.changed ?? [],
      diff_digest: input.diff?.digest ?? 'none',
      diff_bytes: input.diff?.bytes ?? 0,
      ...diffCap(input.diff),
      scope: { ok: input.violations.length === 0, violations: input.violations },
      checks: input.checks,
      ...(input.reward !== undefined ? { reward: input.reward } : {}),
      usage: withCost(input.usage, input.prices ?? {}, priceKeys(input.runtime)),
      final_message: input.finalMessage,
      final_message_source: input.finalMessageSource,
      exit_code: exitCodeFor(input.outcome.status, verdict),
      sandbox: input.sandbox,
      ...(input.isolation ? { isolation: input.isolation } : {}),
      ...(input.limits ? { limits: input.limits } : {}),
      labels: mission.labels ?? {},
      ...(mission.promotion && mission.promotion !== 'none' ? { promotion: mission.promotion } : {}),
    },
    input.secrets,
  );
}
