/**
 * Names of the worker's environment a model-calling runtime needs passed through (its provider
 * keys and endpoints). Only these, the base allowlist (src/shared/process/runtime-env.ts) and what
 * a mission declares reach a runtime; checks never get the provider keys.
 */
export const PROVIDER_ENV_NAMES = [
  'OPENAI_API_KEY',
  'OPENAI_BASE_URL',
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_BASE_URL',
  'GEMINI_API_KEY',
  'GOOGLE_API_KEY',
  'OPENROUTER_API_KEY',
  'GROQ_API_KEY',
  'MISTRAL_API_KEY',
  'XAI_API_KEY',
  'DEEPSEEK_API_KEY',
  'DASHSCOPE_API_KEY',
] as const;

/** The provider names plus a runtime's own home/state variables. */
export function providerEnv(...own: string[]): () => string[] {
  return () => [...own, ...PROVIDER_ENV_NAMES];
}
