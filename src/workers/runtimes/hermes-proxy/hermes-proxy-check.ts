import type { AdapterCheckV1, CheckContextV1 } from '../../../shared/runtime/v1/index.js';
import { redactString } from '../../../shared/redact.js';
import { bodyText, networkErrorOf, requestHeaders } from './hermes-proxy-http.js';
import { ModelListSchema, parseErrorEnvelope } from './hermes-proxy-protocol.js';
import type { HermesProxySettings } from './hermes-proxy-settings.js';

/** `uh adapter check` budget: fixed, apart from the mission's request_timeout_ms, so the check stays snappy. */
export const HERMES_PROXY_CHECK_TIMEOUT_MS = 5000;

/**
 * `GET <endpoint>/models` and the spec's check table. A proxy whose upstream is logged out is
 * reported as "configured but locked" (reachable, needs re-auth), not as broken. Never throws.
 */
export async function checkHermesProxy(
  config: HermesProxySettings,
  ctx: Pick<CheckContextV1, 'signal'>,
  budgetMs: number = HERMES_PROXY_CHECK_TIMEOUT_MS,
): Promise<AdapterCheckV1> {
  const endpoint = config?.endpoint;
  if (!endpoint) {
    return { ok: false, summary: 'missing endpoint in runtime_config', errors: ['missing endpoint in runtime_config'], hint: 'set runtime_config.endpoint, e.g. http://127.0.0.1:8645/v1' };
  }
  const provider = config.provider ?? 'nous';
  const secrets = [config.auth_token, ...Object.values(config.extra_headers ?? {})];
  /** `error` is the raw cause (the envelope, the socket error); the summary when there is none. */
  const fail = (summary: string, hint?: string, details?: Record<string, unknown>, error?: string): AdapterCheckV1 => {
    const clean = redactString(summary, secrets);
    return { ok: false, summary: clean, errors: [redactString(error ?? summary, secrets)], ...(hint ? { hint } : {}), ...(details ? { details } : {}) };
  };
  const unreachable = `endpoint unreachable: ${endpoint} (is "hermes proxy start" running?)`;
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, budgetMs);
  const onAbort = () => controller.abort();
  ctx.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const { request } = await import('undici');
    const res = await request(`${endpoint}/models`, {
      method: 'GET',
      headers: requestHeaders(config, 'application/json'),
      signal: controller.signal,
    });
    const text = await bodyText(res.body, 4 * 1024 * 1024);
    const status = res.statusCode;
    const envelope = parseErrorEnvelope(text);
    const verbatim = envelope ? `${envelope.type ?? 'error'}: ${envelope.message}` : text.trim().slice(0, 500) || '(empty body)';
    if (status === 200) {
      let json: unknown = null;
      try {
        json = JSON.parse(text);
      } catch {
        // reported below
      }
      const list = ModelListSchema.safeParse(json);
      if (!list.success) return fail(`proxy at ${endpoint} answered /models with an unexpected body: ${text.slice(0, 200)}`);
      const models = list.data.data.map((m) => m.id);
      const listed = models.includes(config.model);
      return {
        ok: true,
        summary: `proxy reachable at ${endpoint} (${models.length} models available)`,
        errors: [],
        ...(listed ? {} : { hint: `model "${config.model}" is not in the proxy's list; pick one of: ${models.slice(0, 10).join(', ')}` }),
        details: { models, model_listed: listed, state: 'ready' },
      };
    }
    if (status === 401 || status === 403) {
      const locked = envelope?.type === 'upstream_auth_failed';
      return fail(
        locked
          ? `proxy reachable at ${endpoint}, configured but locked: upstream logged out (${envelope.message})`
          : `proxy at ${endpoint} refused the request (HTTP ${status}): ${verbatim}`,
        `run "hermes auth status ${provider}" and re-authenticate`,
        { state: locked ? 'locked' : 'refused', http_status: status },
        `HTTP ${status} ${verbatim}`,
      );
    }
    if (status === 404) {
      return fail(`proxy version may not forward /models (HTTP 404: ${verbatim})`, 'check that runtime_config.endpoint includes /v1 and that Hermes is ≥ 0.14', { http_status: status });
    }
    return fail(`proxy at ${endpoint} answered HTTP ${status}: ${verbatim}`, undefined, { http_status: status });
  } catch (error) {
    if (timedOut) return fail(`adapter check timed out after ${budgetMs} ms`, `is ${endpoint} the proxy? "hermes proxy status" shows its upstreams`);
    if (controller.signal.aborted) return fail('adapter check cancelled');
    const net = networkErrorOf(error);
    const hint = `start the proxy with "hermes proxy start --provider ${provider}" or fix runtime_config.endpoint`;
    if (net.code === 'ECONNREFUSED') return fail(unreachable, hint, { code: net.code }, net.message);
    return fail(`${unreachable}: ${net.code ? `${net.code} ` : ''}${net.message}`, hint, { code: net.code });
  } finally {
    clearTimeout(timer);
    ctx.signal?.removeEventListener('abort', onAbort);
  }
}
