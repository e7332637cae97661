/**
 * Start the scripted Chat Completions server (test/fixtures/model-server/chat-server.mjs) as its
 * own process on 127.0.0.1:0 and talk to its control API. See that file for the script format.
 * Used to point the real pi (or any OpenAI-compatible agent) at a model we script per test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SERVER = fileURLToPath(new URL('../fixtures/model-server/chat-server.mjs', import.meta.url));

export interface ChatUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
}

export type ChatStep =
  | { kind: 'text'; text: string; usage?: ChatUsage }
  | { kind: 'tool_calls'; calls: Array<{ id?: string; name: string; arguments: unknown }>; usage?: ChatUsage }
  | { kind: 'error'; status: number; body?: unknown; headers?: Record<string, string> }
  | { kind: 'hang' };

export interface ChatRequest {
  model: string;
  stream: boolean;
  roles: string[];
  tools: string[];
  tool_results: string[];
  authorized: boolean;
}

export interface ChatServer {
  /** Base URL including `/v1`, for a provider's `baseUrl`. */
  readonly url: string;
  /** Replace the script (and the accepted API key); resets the recorded requests. */
  script(steps: ChatStep[], apiKey?: string): Promise<void>;
  /** Every `/v1/chat/completions` request since the last `script()`, in order. */
  requests(): Promise<ChatRequest[]>;
  close(): Promise<void>;
}

export async function startChatServer(): Promise<ChatServer> {
  const child: ChildProcess = spawn(process.execPath, [SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const first = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.once('line', (line) => {
      rl.close();
      resolve(line);
    });
    child.once('exit', (code) => reject(new Error(`chat server exited early (${code})`)));
    child.once('error', reject);
  });
  const { url } = JSON.parse(first) as { url: string };
  const origin = new URL(url).origin;
  return {
    url,
    async script(steps, apiKey) {
      const res = await fetch(`${origin}/__script`, {
        method: 'PUT',
        body: JSON.stringify({ steps, ...(apiKey ? { api_key: apiKey } : {}) }),
      });
      if (!res.ok) throw new Error(`script rejected: ${res.status}`);
    },
    async requests() {
      const res = await fetch(`${origin}/__requests`);
      return ((await res.json()) as { requests: ChatRequest[] }).requests;
    },
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
