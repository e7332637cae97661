/**
 * Where a promotion commit is made: in the user's own repository for a local path (objects and
 * one new ref only), or in the repository's mirror for a remote URL (fetched when the base
 * commit is missing), from where it is pushed.
 */
import { existsSync } from 'node:fs';
import { isRemoteUrl } from '../../shared/contracts/load-mission.js';
import type { Receipt } from '../../shared/contracts/receipt.js';
import { UhError } from '../../shared/errors.js';
import type { PromoteRequest } from '../../promotion/promote-operation.js';
import { resolveInMirror } from '../sandbox/mirror-cache.js';

export async function promotionTarget(receipt: Receipt, cacheDir: string): Promise<PromoteRequest['repository']> {
  const url = receipt.repository.url;
  if (!isRemoteUrl(url)) {
    if (!existsSync(url)) {
      throw new UhError(
        'not_found',
        `repository ${url} of operation ${receipt.operation_id} does not exist on this host`,
        {
          hint: 'promote on the host that has the repository',
        },
      );
    }
    return { gitDir: url, kind: 'local', url };
  }
  const { mirror } = await resolveInMirror(cacheDir, url, receipt.repository.base_commit ?? receipt.repository.ref);
  return { gitDir: mirror.path, kind: 'mirror', url };
}
