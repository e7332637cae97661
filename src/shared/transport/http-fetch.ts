/**
 * The default `fetch` of the runtime context: undici's fetch through an agent with no
 * headers or body timeout, because every HTTP adapter runs its own timer (its
 * `request_timeout_ms`, the mission timeout, the run's signal) and a model may think for longer
 * than undici's 300 s defaults before the first byte. Redirects are the caller's choice.
 * undici is imported on the first request, so a run that never speaks HTTP (codex, command, pi)
 * never loads it (about a third of `uh mission run`'s start-up, docs/benchmarks.md).
 */
import type { Agent } from 'undici';

/** The shape adapters call: the WHATWG `fetch`. */
export type FetchFunction = typeof globalThis.fetch;

let undici: Promise<typeof import('undici')> | undefined;
let agent: Agent | undefined;

/** WHATWG fetch over undici with the adapter's timers as the only budget. */
export const runtimeFetch: FetchFunction = async (input, init) => {
  const { Agent: UndiciAgent, fetch: undiciFetch } = await (undici ??= import('undici'));
  agent ??= new UndiciAgent({ headersTimeout: 0, bodyTimeout: 0 });
  return undiciFetch(input as Parameters<typeof undiciFetch>[0], {
    ...(init as Parameters<typeof undiciFetch>[1]),
    dispatcher: agent,
  }) as unknown as Promise<Response>;
};
