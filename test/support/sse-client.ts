/** A real SSE client over fetch + eventsource-parser, recording events and comments. */
import { createParser } from 'eventsource-parser';

export interface SseEvent {
  id: string | undefined;
  event: string | undefined;
  data: string;
}

export interface SseClient {
  events: SseEvent[];
  comments: string[];
  status: number;
  /** Resolves when the server ends the stream (or the client aborts). */
  done: Promise<void>;
  abort: () => void;
}

export async function openSse(url: string, headers: Record<string, string>): Promise<SseClient> {
  const controller = new AbortController();
  const response = await fetch(url, { headers, signal: controller.signal });
  const client: SseClient = {
    events: [],
    comments: [],
    status: response.status,
    done: Promise.resolve(),
    abort: () => controller.abort(),
  };
  if (response.status !== 200 || !response.body) {
    await response.body?.cancel();
    return client;
  }
  const parser = createParser({
    onEvent: (e) => client.events.push({ id: e.id, event: e.event, data: e.data }),
    onComment: (c) => client.comments.push(c),
  });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  client.done = (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        parser.feed(value);
      }
    } catch {
      // aborted
    }
  })();
  return client;
}

/** Poll a condition until it holds or the deadline passes. */
export async function until(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
