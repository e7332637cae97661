/**
 * `uh adapter check hermes-proxy`: `GET <endpoint>/models` through the context's fetch, then the
 * spec's check table. States: request (budgeted) → read the answer | read the failure.
 */
import type { AdapterCheckV1, CheckContextV1 } from '../../../shared/runtime/v1/index.js';
import { redactString } from '../../../shared/redact.js';
import { runtimeFetch } from '../../../shared/transport/http-fetch.js';
import { bodyText, networkErrorOf, requestHeaders } from './hermes-proxy-http.js';
import { ModelListSchema, parseErrorEnvelope } from './hermes-proxy-protocol.js';
import type { HermesProxySettings } from './hermes-proxy-settings.js';

/** `uh adapter check` budget: fixed, apart from the mission's request_timeout_ms, so the check stays snappy. */
export const HERMES_PROXY_CHECK_TIMEOUT_MS = 5000;

/** What the check states share. */
interface CheckRun {
  config: HermesProxySettings;
  endpoint: string;
  provider: string;
  budgetMs: number;
  /** `error` is the raw cause (the envelope, the socket error); the summary when there is none. */
  fail: (summary: string, hint?: string, details?: Record<string, unknown>, error?: string) => AdapterCheckV1;
}

/**
 * `GET <endpoint>/models` and the spec's check table. A proxy whose upstream is logged out is
 * reported as "configured but locked" (reachable, needs re-auth), not as broken. Never throws.
 * `ctx.fetch` defaults to {@link runtimeFetch}.
 */
export async function checkHermesProxy(
  config: HermesProxySettings,
  ctx: Partial<Pick<CheckContextV1, 'signal' | 'fetch'>>,
  budgetMs: number = HERMES_PROXY_CHECK_TIMEOUT_MS,
): Promise<AdapterCheckV1> {
  const endpoint = config?.endpoint;
  if (!endpoint) {
    return {
      ok: false,
      summary: 'missing endpoint in runtime_config',
      errors: ['missing endpoint in runtime_config'],
      hint: 'set runtime_config.endpoint, e.g. http://127.0.0.1:8645/v1',
    };
  }
  const secrets = [config.auth_token, ...Object.values(config.extra_headers ?? {})];
  const fail: CheckRun['fail'] = (summary, hint, details, error) => {
    const clean = redactString(summary, secrets);
    return {
      ok: false,
      summary: clean,
      errors: [redactString(error ?? summary, secrets)],
      ...(hint ? { hint } : {}),
      ...(details ? { details } : {}),
    };
  };
  const run: CheckRun = { config, endpoint, provider: config.provider ?? 'nous', budgetMs, fail };
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, budgetMs);
  const onAbort = () => controller.abort();
  ctx.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const res = await (ctx.fetch ?? runtimeFetch)(`${endpoint}/models`, {
      method: 'GET',
      headers: requestHeaders(config, 'application/json'),
      signal: controller.signal,
      redirect: 'manual',
    });
    const text = await bodyText((res.body ?? []) as AsyncIterable<Uint8Array>, 4 * 1024 * 1024);
    return readAnswer(run, res.status, text);
  } catch (error) {
    return readFailure(run, error, timedOut, controller.signal.aborted);
  } finally {
    clearTimeout(timer);
    ctx.signal?.removeEventListener('abort', onAbort);
  }
}

/** The answer's status and body against the check table. */
function readAnswer(run: CheckRun, status: number, text: string): AdapterCheckV1 {
  const { endpoint, fail } = run;
  const envelope = parseErrorEnvelope(text);
  const verbatim = envelope
    ? `${envelope.type ?? 'error'}: ${envelope.message}`
    : text.trim().slice(0, 500) || '(empty body)';
  if (status === 200) return readModels(run, text);
  if (status === 401 || status === 403) {
    const locked = envelope?.type === 'upstream_auth_failed';
    return fail(
      locked
        ? `proxy reachable at ${endpoint}, configured but locked: upstream logged out (${envelope.message})`
        : `proxy at ${endpoint} refused the request (HTTP ${status}): ${verbatim}`,
      `run "hermes auth status ${run.provider}" and re-authenticate`,
      { state: locked ? 'locked' : 'refused', http_status: status },
      `HTTP ${status} ${verbatim}`,
    );
  }
  if (status === 404) {
    return fail(
      `proxy version may not forward /models (HTTP 404: ${verbatim})`,
      'check that runtime_config.endpoint includes /v1 and that Hermes is ≥ 0.14',
      { http_status: status },
    );
  }
  return fail(`proxy at ${endpoint} answered HTTP ${status}: ${verbatim}`, undefined, { http_status: status });
}

function readModels(run: CheckRun, text: string): AdapterCheckV1 {
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    // reported below
  }
  const list = ModelListSchema.safeParse(json);
  if (!list.success)
    return run.fail(`proxy at ${run.endpoint} answered /models with an unexpected body: ${text.slice(0, 200)}`);
  const models = list.data.data.map((m) => m.id);
  const listed = models.includes(run.config.model);
  return {
    ok: true,
    summary: `proxy reachable at ${run.endpoint} (${models.length} models available)`,
    errors: [],
    ...(listed
      ? {}
      : {
          hint: `model "${run.config.model}" is not in the proxy's list; pick one of: ${models.slice(0, 10).join(', ')}`,
        }),
    details: { models, model_listed: listed, state: 'ready' },
  };
}

/** No answer: the budget, a cancel, or the network. */
function readFailure(run: CheckRun, error: unknown, timedOut: boolean, aborted: boolean): AdapterCheckV1 {
  const { endpoint, fail } = run;
  if (timedOut)
    return fail(
      `adapter check timed out after ${run.budgetMs} ms`,
      `is ${endpoint} the proxy? "hermes proxy status" shows its upstreams`,
    );
  if (aborted) return fail('adapter check cancelled');
  const unreachable = `endpoint unreachable: ${endpoint} (is "hermes proxy start" running?)`;
  const net = networkErrorOf(error);
  const hint = `start the proxy with "hermes proxy start --provider ${run.provider}" or fix runtime_config.endpoint`;
  if (net.code === 'ECONNREFUSED') return fail(unreachable, hint, { code: net.code }, net.message);
  return fail(`${unreachable}: ${net.code ? `${net.code} ` : ''}${net.message}`, hint, { code: net.code });
}
