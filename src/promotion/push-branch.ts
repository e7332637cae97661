/**
 * Push a promotion commit: `git push <remote> <commit>:refs/heads/<branch>` from the repository
 * that holds it, with the promoting process's environment (git's own credential helpers; no
 * prompt). A refusal carries the remote's own reason; no URL userinfo reaches any message.
 */
import { UhError } from '../shared/errors.js';
import { runGit, scrubText, scrubUrls } from './promotion-git.js';

/** The remote's reason for a rejected push, from `--porcelain` stdout and `remote:` lines. */
export function rejectionReason(stdout: string, stderr: string): string {
  const remoteLines = stderr
    .split('\n')
    .filter((l) => l.startsWith('remote:'))
    .map((l) => l.slice('remote:'.length).trim())
    .filter(Boolean);
  const refLine = stdout.split('\n').find((l) => l.startsWith('!\t'));
  const status = refLine?.split('\t')[2]?.trim();
  const fallback = stderr
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('remote:'))
    .slice(-2)
    .join(' ')
    .trim();
  return [remoteLines.join(' '), status ?? fallback].filter(Boolean).join(': ') || 'no reason given';
}

export async function pushBranch(
  gitDir: string,
  remote: string,
  commit: string,
  branch: string,
): Promise<{ remote: string; ref: string }> {
  if (remote.startsWith('-')) throw new UhError('invalid_input', `--push: remote "${remote}" must not start with "-"`);
  const ref = `refs/heads/${branch}`;
  const result = await runGit(['push', '--porcelain', '--', remote, `${commit}:${ref}`], {
    cwd: gitDir,
    network: true,
    okCodes: [1, 128],
  });
  if (result.code !== 0) {
    throw new UhError(
      'push_rejected',
      `push of ${branch} to ${scrubUrls(remote)} was rejected: ${scrubText(rejectionReason(result.stdout, result.stderr))}`,
      {
        hint: 'the branch exists locally; fix the cause (permissions, branch protection, credentials) and run uh mission promote again with --push',
      },
    );
  }
  return { remote: scrubUrls(remote), ref };
}
