/**
 * `uh mission submit --api <url>`: the fleet through `uh api start` (docs/http-api.md) instead of
 * Redis, so a CI runner needs only HTTPS and a bearer token. Submit, follow the operation's SSE
 * stream, collect the receipt, diff and final message into <state-dir>/collected/<operation>/,
 * check the receipt's signature against this host's keyring, and report it as the Redis path does.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { UhConfig } from '../../shared/config.js';
import type { Mission } from '../../shared/contracts/mission.js';
import { ReceiptSchema, type Receipt } from '../../shared/contracts/receipt.js';
import { EXIT } from '../../shared/contracts/status.js';
import { UhError } from '../../shared/errors.js';
import { ensureStateDir } from '../../operation/operation-files.js';
import { reportReceipt, reportUnsettled } from '../ci/ci-report.js';
import type { UhClient } from '../client/client-types.js';
import { writeJson } from './cli-kit.js';
import { printReceiptSummary, receiptJson } from './receipt-view.js';
import { checkReceiptText, reportSignature, untrustedLine } from './receipt-check.js';

export interface CollectedReceipt {
  receiptText: string | null;
  receipt: Receipt | null;
  dir: string;
}

export interface ReportTarget {
  id: string;
  attached: boolean;
  json: boolean;
  junit: string | undefined;
}

/** A collected receipt, reported only once its signature holds: an unsigned or forged one fails (exit 6). */
export function reportCollected(config: UhConfig, o: ReportTarget, got: CollectedReceipt): number {
  if (got.receiptText === null) throw new Error(`operation ${o.id} settled without a receipt`);
  const trust = checkReceiptText(got.receiptText, config);
  if (trust.state !== 'valid' || !got.receipt) {
    const shown = {
      ...trust,
      state: trust.state === 'valid' ? 'invalid' : trust.state,
      reason: got.receipt ? trust.reason : 'not a receipt',
    };
    if (o.json)
      writeJson({
        operation_id: o.id,
        attached: o.attached,
        signature: shown,
        untrusted_receipt: got.receipt ?? got.receiptText,
      });
    reportUnsettled(config.ci, o.id, 'untrusted', untrustedLine(o.id, shown), o.junit);
    return reportSignature(shown, o.json, o.id) ?? EXIT.tampered;
  }
  reportReceipt(got.receipt, config.ci, { dir: got.dir, junit: o.junit, json: o.json });
  if (o.json) writeJson({ ...receiptJson(got.receipt, got.dir), attached: o.attached, signature: trust });
  else printReceiptSummary(got.receipt, got.dir, o.attached);
  reportSignature(trust, o.json, o.id);
  return got.receipt.exit_code;
}

export interface ApiSubmitOptions {
  apiUrl: string;
  token: string | undefined;
  runtime: string | undefined;
  stateDir: string;
  wait: boolean;
  json: boolean;
  junit: string | undefined;
  timeoutS: number | undefined;
  detach: boolean;
  requireWorker: boolean;
}

/** No live worker serves the runtime (GET /v1/workers): a warning, or with --require-worker exit 3. */
async function checkServedOverApi(o: ApiSubmitOptions, runtime: string): Promise<void> {
  const headers: Record<string, string> = o.token ? { authorization: `Bearer ${o.token}` } : {};
  const res = await fetch(`${o.apiUrl.replace(/\/+$/, '')}/v1/workers`, { headers }).catch(() => null);
  if (!res?.ok) return; // the submit itself says why the API cannot be used
  const { workers } = (await res.json()) as { workers: { runtimes: string[] }[] };
  if (workers.some((w) => w.runtimes.includes(runtime))) return;
  const message = `no live worker serves runtime ${runtime} (${workers.length} live worker(s))`;
  const hint = `start one: uh worker start --runtime ${runtime}`;
  if (o.requireWorker) throw new UhError('runtime_unavailable', message, { hint });
  process.stderr.write(`uh: warning: ${message}; the mission waits on its queue until one starts\nhint: ${hint}\n`);
}

async function collectOverApi(client: UhClient, id: string, stateDir: string): Promise<CollectedReceipt> {
  ensureStateDir(stateDir);
  const dir = join(stateDir, 'collected', id);
  await client.collect(id, dir);
  const receiptText = readFileSync(join(dir, 'receipt.json'), 'utf8');
  let receipt: Receipt | null;
  try {
    receipt = ReceiptSchema.parse(JSON.parse(receiptText));
  } catch {
    receipt = null; // reportCollected refuses it: not a receipt
  }
  return { receiptText, receipt, dir };
}

export async function submitOverApi(mission: Mission, config: UhConfig, o: ApiSubmitOptions): Promise<number> {
  const { httpClient } = await import('../client/http-client.js');
  const client = httpClient({ apiUrl: o.apiUrl, ...(o.token ? { token: o.token } : {}) });
  await checkServedOverApi(o, o.runtime ?? [mission.runtime].flat()[0] ?? '');
  const submitted = await client.submit(mission, o.runtime ? { runtime: o.runtime } : {});
  const id = submitted.operationId;
  const verb = submitted.attached ? 'attached to existing' : 'queued';
  if (!o.wait) {
    if (o.json) writeJson({ operation_id: id, attached: submitted.attached, state: submitted.state });
    else process.stdout.write(`${verb} ${id} via ${o.apiUrl} (state ${submitted.state})\n`);
    return EXIT.ok;
  }
  if (!o.json) process.stderr.write(`uh: ${verb} ${id} via ${o.apiUrl}; waiting…\n`);
  const target = { id, attached: submitted.attached, json: o.json, junit: o.junit };
  const abort = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (abort.signal.aborted) process.exit(EXIT.cancelled);
    abort.abort(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const settled = await client.wait(id, {
      signal: abort.signal,
      ...(o.timeoutS !== undefined ? { timeoutMs: o.timeoutS * 1000 } : {}),
    });
    if (abort.signal.aborted) return await abortOverApi(client, config, o, target, String(abort.signal.reason));
    if (settled.state !== 'finished') {
      const message =
        settled.state === 'unknown'
          ? `operation ${id} is unknown: dispatch cannot be proven`
          : `operation ${id} is still running after ${o.timeoutS} s (it keeps running)`;
      if (o.json) writeJson({ operation_id: id, state: settled.state });
      else process.stderr.write(`uh: ${message}\n`);
      reportUnsettled(config.ci, id, settled.state, message, o.junit);
      return EXIT.unknown;
    }
    return reportCollected(config, target, await collectOverApi(client, id, o.stateDir));
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** The wait was interrupted (a cancelled job): cancel over the API unless detaching, report what is known, exit 4. */
async function abortOverApi(
  client: UhClient,
  config: UhConfig,
  o: ApiSubmitOptions,
  target: ReportTarget,
  signal: string,
): Promise<number> {
  const id = target.id;
  if (o.detach) {
    process.stderr.write(`uh: ${signal}: stopped waiting; ${id} keeps running\n`);
    reportUnsettled(config.ci, id, 'detached', `${signal}: stopped waiting; ${id} keeps running`, o.junit);
    return EXIT.cancelled;
  }
  const outcome = await client.cancel(id, `${signal} to uh mission submit --wait`);
  process.stderr.write(`uh: ${signal}: ${id}: ${outcome}\n`);
  const settled = await client.wait(id, { timeoutMs: 5000 });
  if (settled.state === 'finished') reportCollected(config, target, await collectOverApi(client, id, o.stateDir));
  else reportUnsettled(config.ci, id, 'cancelled', `${signal}: cancel sent to ${id}`, o.junit);
  return EXIT.cancelled;
}
