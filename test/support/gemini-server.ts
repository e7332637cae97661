/**
 * Start the scripted Gemini API server (test/fixtures/gemini-server/server.mjs) as its own process
 * on 127.0.0.1:0 and talk to its control API. See that file for the script format. Used to point
 * the real Gemini CLI at a model we script per test (GOOGLE_GEMINI_BASE_URL).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SERVER = fileURLToPath(new URL('../fixtures/gemini-server/server.mjs', import.meta.url));

export type GeminiStep =
  | { kind: 'text'; text: string; usage?: { promptTokenCount?: number; candidatesTokenCount?: number } }
  | {
      kind: 'function_calls';
      calls: Array<{ name: string; args: Record<string, unknown> }>;
      usage?: { promptTokenCount?: number; candidatesTokenCount?: number };
    }
  | { kind: 'error'; status: number; body?: unknown }
  | { kind: 'hang' };

export interface GeminiRequest {
  method: string;
  model: string;
  stream: boolean;
  roles: string[];
  function_responses: string[];
}

export interface GeminiServer {
  /** Base URL for GOOGLE_GEMINI_BASE_URL (no path). */
  readonly url: string;
  script(steps: GeminiStep[], apiKey?: string): Promise<void>;
  requests(): Promise<GeminiRequest[]>;
  close(): Promise<void>;
}

export async function startGeminiServer(): Promise<GeminiServer> {
  const child: ChildProcess = spawn(process.execPath, [SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const first = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.once('line', (line) => {
      rl.close();
      resolve(line);
    });
    child.once('exit', (code) => reject(new Error(`gemini server exited early (${code})`)));
    child.once('error', reject);
  });
  const { url } = JSON.parse(first) as { url: string };
  return {
    url,
    async script(steps, apiKey) {
      const res = await fetch(`${url}/__script`, {
        method: 'PUT',
        body: JSON.stringify({ steps, ...(apiKey ? { api_key: apiKey } : {}) }),
      });
      if (!res.ok) throw new Error(`script rejected: ${res.status}`);
    },
    async requests() {
      const res = await fetch(`${url}/__requests`);
      return ((await res.json()) as { requests: GeminiRequest[] }).requests;
    },
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
