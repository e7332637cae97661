/**
 * GitHub Actions step outputs: append `name=value` lines to `$GITHUB_OUTPUT`; a value with a
 * newline uses the heredoc form with a random delimiter that cannot occur in the value.
 */
import { appendFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';

export function formatGithubOutput(values: Record<string, string>): string {
  let out = '';
  for (const [name, value] of Object.entries(values)) {
    if (!value.includes('\n') && !value.includes('\r')) {
      out += `${name}=${value}\n`;
      continue;
    }
    let delimiter = `uh_${randomBytes(8).toString('hex')}`;
    while (value.includes(delimiter)) delimiter = `uh_${randomBytes(8).toString('hex')}`;
    out += `${name}<<${delimiter}\n${value}\n${delimiter}\n`;
  }
  return out;
}

export function writeGithubOutput(path: string, values: Record<string, string>): void {
  appendFileSync(path, formatGithubOutput(values));
}
