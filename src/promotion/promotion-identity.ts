/**
 * Who a promotion commit names: author and committer, each `Name <email>`, from flags, else
 * `UH_PROMOTION_AUTHOR` / `UH_PROMOTION_COMMITTER`, else the harness's own identity. The
 * committer defaults to the author.
 */
import type { Person } from '../shared/contracts/promotion.js';
import { invalidInput } from '../shared/errors.js';

export const DEFAULT_AUTHOR: Person = { name: 'Ultimate Harness', email: 'uh@localhost' };

/** Parse `Name <email>`; `field` names the flag or variable at fault. */
export function parsePerson(text: string, field: string): Person {
  const match = /^\s*([^<>\n]+?)\s*<([^<>\s]+)>\s*$/.exec(text);
  if (!match)
    throw invalidInput(
      `${field}: "${text}" is not "Name <email>"`,
      [],
      `e.g. ${field} "Release Bot <bot@example.com>"`,
    );
  return { name: match[1] as string, email: match[2] as string };
}

export function promotionIdentity(
  flags: { author?: string | undefined; committer?: string | undefined },
  env: Readonly<Record<string, string | undefined>>,
): { author: Person; committer: Person } {
  const authorText = flags.author ?? env.UH_PROMOTION_AUTHOR;
  const author = authorText
    ? parsePerson(authorText, flags.author ? '--author' : 'UH_PROMOTION_AUTHOR')
    : DEFAULT_AUTHOR;
  const committerText = flags.committer ?? env.UH_PROMOTION_COMMITTER;
  const committer = committerText
    ? parsePerson(committerText, flags.committer ? '--committer' : 'UH_PROMOTION_COMMITTER')
    : author;
  return { author, committer };
}
