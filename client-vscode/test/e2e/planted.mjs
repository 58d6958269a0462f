// A Pi session the e2e suite adds to the sample history (in the temporary HOME only): one turn with planted
// secrets, which the language-model tool must mask, and one turn longer than a recall row carries (4,000
// characters, docs/lsp-extensions.md "Limits"), which the panel must offer whole. Written as a real Pi v3
// session file, like tests/mcp_server/history.py.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const PLANTED_CWD = '/tmp/pimem-demo/zephyr';
const SESSION_ID = '01a2f000-0000-7000-8000-00000000c1a1';

// Fake, real-shaped secrets, put together at run time so that the repository holds no string a secret scanner
// would flag. None of them is a real credential.
export const AWS_KEY_ID = ['AK', 'IA'].join('') + 'Q7ZX3M9TW2KD5RB8';
export const GITHUB_TOKEN = ['gh', 'p_'].join('') + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8';
export const SECRETS = [AWS_KEY_ID, GITHUB_TOKEN];

export const SECRET_ENTITY = 'zephyr_cache';
export const SECRET_PROMPT = 'The zephyr_cache deploy fails with 403 Forbidden.';

export const LONG_ENTITY = 'quokka_migration';
export const LONG_PROMPT = 'How far did the quokka_migration get? Paste the whole migration log.';
/** The last words of the long reply: beyond what a recall row carries, so only the whole turn shows them. */
export const LONG_REPLY_END = 'END OF THE QUOKKA MIGRATION LOG';
const LONG_REPLY =
  Array.from({ length: 120 }, (_, i) => `step ${String(i + 1).padStart(3, '0')}: copied table batch ${i + 1} of 120, checksums match.`)
    .join('\n') + `\n${LONG_REPLY_END}`;

const TURNS = [
  [
    `${SECRET_PROMPT} The CI log shows AWS_ACCESS_KEY_ID=${AWS_KEY_ID} and GITHUB_TOKEN=${GITHUB_TOKEN}. What is wrong?`,
    `The ${SECRET_ENTITY} deploy used an expired key: rotate ${AWS_KEY_ID} and store the new one in the repository secrets.`,
  ],
  [LONG_PROMPT, LONG_REPLY],
];

/** Writes the session under `home`/.pi/agent/sessions (where Pi keeps it). */
export function writePlantedSession(home) {
  const folder = join(home, '.pi', 'agent', 'sessions', `--${PLANTED_CWD.replace(/^\//, '').replaceAll('/', '-')}--`);
  mkdirSync(folder, { recursive: true });
  const start = Date.UTC(2026, 5, 1, 10, 0, 0);
  const records = [{ type: 'session', version: 3, id: SESSION_ID, timestamp: new Date(start).toISOString(), cwd: PLANTED_CWD }];
  let parent = null;
  TURNS.forEach(([user, reply], number) => {
    for (const [role, text, offset] of [['user', user, 0], ['assistant', reply, 1]]) {
      const id = `${role[0]}${String(number).padStart(7, '0')}`;
      const ts = start + number * 60_000 + offset * 1000;
      const message = { role, content: [{ type: 'text', text }], timestamp: ts };
      if (role === 'assistant') {
        Object.assign(message, { provider: 'mock', model: 'mock-gpt', stopReason: 'stop' });
      }
      records.push({ type: 'message', id, parentId: parent, timestamp: new Date(ts).toISOString(), message });
      parent = id;
    }
  });
  writeFileSync(join(folder, `2026-06-01T10-00-00-000Z_${SESSION_ID}.jsonl`), records.map((r) => JSON.stringify(r) + '\n').join(''));
}
