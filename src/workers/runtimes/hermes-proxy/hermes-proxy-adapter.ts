/**
 * The `hermes-proxy` runtime: an HTTP client of a local `hermes proxy` (OpenAI-compatible, on
 * 127.0.0.1:8645/v1), which attaches the user's own subscription credentials upstream. No child
 * process: one `POST <endpoint>/chat/completions`, its reply streamed as events and to
 * `runtime.stdout.log`; the model does not touch the work dir in v1 (its message is the artifact).
 */
import { resolveFinalMessage } from '../../../shared/sentinel.js';
import { REDACTED } from '../../../shared/redact.js';
import type { RuntimeAdapterV1, RuntimeEventV1 } from '../../../shared/runtime/v1/index.js';
import { classifyHermesProxy } from './classify-hermes-proxy.js';
import { checkHermesProxy } from './check-hermes-proxy.js';
import { buildRequestBody, usageEvent } from './hermes-proxy-events.js';
import { requestHeaders } from './hermes-proxy-http.js';
import { runHermesProxyExchange } from './hermes-proxy-run.js';
import {
  HERMES_PROXY_DEFAULT_ENDPOINT,
  HERMES_PROXY_PLACEHOLDER_TOKEN,
  HermesProxySettingsSchema,
  type HermesProxySettings,
} from './hermes-proxy-settings.js';

/** Values that must never leave the process: the bearer and every extra header value. */
export function hermesProxySecrets(config: HermesProxySettings): string[] {
  return [config.auth_token, ...Object.values(config.extra_headers)].filter((v) => v !== '');
}

export const hermesProxyAdapter: RuntimeAdapterV1<HermesProxySettings> = {
  specificationVersion: 'v1',
  id: 'hermes-proxy',
  displayName: 'Hermes proxy (OpenAI-compatible HTTP)',
  capabilities: ['non_interactive_run', 'structured_events'],
  defaultConfig: {},
  /** What `uh adapter add hermes-proxy` writes. */
  exampleConfig: {
    endpoint: HERMES_PROXY_DEFAULT_ENDPOINT,
    model: 'hermes-4-405b',
    auth_token: HERMES_PROXY_PLACEHOLDER_TOKEN,
    provider: 'nous',
    temperature: 0,
    request_timeout_ms: 300_000,
    stream: true,
  },
  configSchema: HermesProxySettingsSchema,
  secretsOf: hermesProxySecrets,

  async check(config, ctx) {
    return checkHermesProxy(config, ctx);
  },

  async prepare({ config, prompt }) {
    const body = buildRequestBody(config, prompt);
    const url = `${config.endpoint}/chat/completions`;
    const headers = Object.fromEntries(
      Object.entries(requestHeaders(config)).map(([k, v]) => [
        k,
        k === 'authorization' ? `Bearer ${REDACTED}` : k in config.extra_headers ? REDACTED : v,
      ]),
    );
    return {
      config,
      prompt,
      describe: { command: `POST ${url}`, method: 'POST', url, headers, body: JSON.stringify(body, null, 2) },
    };
  },

  launch(plan, ctx) {
    const config = plan.config;
    async function* run(): AsyncGenerator<RuntimeEventV1> {
      yield {
        type: 'runtime.started',
        data: {
          endpoint: config.endpoint,
          url: `${config.endpoint}/chat/completions`,
          model: config.model,
          stream: config.stream,
        },
      };
      const result = yield* runHermesProxyExchange({
        config,
        body: buildRequestBody(config, plan.prompt),
        signal: ctx.signal,
        logDir: ctx.logDir,
        secrets: hermesProxySecrets(config),
        now: ctx.now,
        fetch: ctx.fetch,
      });
      const outcome = classifyHermesProxy(result.exchange);
      if (result.usage) yield usageEvent(result.usage);
      const completedWithoutSentinel = outcome.status === 'completed' && result.sentinel === null;
      if (completedWithoutSentinel) {
        yield {
          type: 'runtime.log',
          data: {
            level: 'warn',
            message:
              'no uh-runtime-final-message block in the reply; the final message is empty (full text in runtime.stdout.log)',
          },
        };
      }
      yield {
        type: 'runtime.finished',
        data: {
          outcome,
          // Spec: without a sentinel the final message is "" (the reply itself is in the log).
          ...resolveFinalMessage(result.sentinel, null),
          ...(result.responseId ? { session_id: result.responseId } : {}),
          ...(result.usage ? { usage: result.usage } : {}),
          http_status: result.exchange.httpStatus,
          finish_reason: result.exchange.finishReason,
          logs: result.logs,
        },
      };
    }
    return { events: run() };
  },
};
