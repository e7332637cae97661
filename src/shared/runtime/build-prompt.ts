import type { Mission } from '../contracts/mission.js';
import { runtimeFinalMessageInstruction } from '../sentinel.js';

/** The prompt every runtime receives: identity, objective, context, scope, checks, sentinel. */
export function buildMissionPrompt(mission: Mission): string {
  const parts: string[] = [
    `# Mission ${mission.mission_id}: ${mission.title}`,
    '',
    `Operation: ${mission.operation_id}`,
    '',
    '## Objective',
    '',
    mission.objective.trim(),
  ];
  const files = mission.context?.files ?? [];
  if (files.length > 0 || mission.context?.notes) {
    parts.push('', '## Context');
    if (files.length > 0) parts.push('', 'Read these files first:', ...files.map((f) => `- ${f}`));
    if (mission.context?.notes) parts.push('', mission.context.notes.trim());
  }
  const allowed = mission.scope.allowed_change_globs;
  if (!(allowed.length === 1 && allowed[0] === '**') || mission.scope.forbidden_globs.length > 0) {
    parts.push('', '## Scope', '', `Only change files matching: ${allowed.join(', ')}`);
    if (mission.scope.forbidden_globs.length > 0)
      parts.push(`Never change: ${mission.scope.forbidden_globs.join(', ')}`);
  }
  if (mission.verification.length > 0) {
    parts.push('', '## Verification', '', 'These checks will run after you finish:');
    for (const c of mission.verification) parts.push(`- ${c.name}: \`${c.argv.join(' ')}\``);
  }
  parts.push('', runtimeFinalMessageInstruction(), '');
  return parts.join('\n');
}
