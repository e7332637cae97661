// The demo "agent": reads the prompt on stdin, writes greeting.txt, ends with the final-message block.
import { writeFileSync } from 'node:fs';

let prompt = '';
for await (const chunk of process.stdin) prompt += chunk;
writeFileSync('greeting.txt', 'Hello from Ultimate Harness!\n');
console.log(`read a prompt of ${prompt.length} characters`);
console.log('```uh-runtime-final-message\nCreated greeting.txt with a greeting.\n```');
