// A workspace and the agents' transcripts that edited one of its files, written for the history e2e suite (in the
// temporary HOME and run folder only): one Claude Code session (`Edit`, absolute path), one Codex rollout
// (`apply_patch` custom tool call, `*** Update File:` relative to the cwd), one Pi session (`edit`, relative path),
// one Claude Code session that only `Read` the file, and a Pi session of another folder that edited a file of the
// same name there (which must not show up). Record shapes as the real agents write them (samples/history, trimmed
// to what the importers read; docs/formats.md).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export const FILE = 'src/cart.py';
export const CLAUDE_FIRST_PROMPT = 'Show me how the order lines are priced, all of it.';
const CLAUDE_FIRST_REPLY = `Here are the order lines:\n\n\`\`\`text\n${Array.from({ length: 80 }, (_, i) => `line ${i + 1}: 1 × book at 9.99`).join('\n')}\n\`\`\``;
export const CLAUDE_LAST_PROMPT = 'Thanks, that fixed it.';
export const CLAUDE_EDIT_PROMPT = 'The cart total is wrong for discounted items: fix total() in src/cart.py.';
export const CODEX_EDIT_PROMPT = 'Round the cart total to cents in src/cart.py, please.';
export const PI_EDIT_PROMPT = 'Add a docstring to total() in src/cart.py.';
export const CLAUDE_READ_PROMPT = 'What does src/cart.py compute? Just explain it.';
export const OTHER_PROMPT = 'Rename the cart module of the other project.';
/** A reply with a code block and text a careless renderer would turn into an element. */
export const CLAUDE_REPLY_HOSTILE = 'A product name such as <img src=x onerror=alert(1)> is shown as text.';
export const CLAUDE_REPLY = `Fixed: the discount was applied twice.\n\n\`\`\`python\ndef total(items):\n    return sum(i.price * (1 - i.discount) for i in items)\n\`\`\`\n\n${CLAUDE_REPLY_HOSTILE}`;

const CLAUDE_EDIT_ID = '7c1e0d2a-4b5f-4e8a-9c3d-2f1a0b9e8d71';
const CLAUDE_READ_ID = '7c1e0d2a-4b5f-4e8a-9c3d-2f1a0b9e8d72';
export const CODEX_ID = '01a2f111-2222-7333-8444-555566667777';
const PI_ID = '01a2f111-2222-7333-8444-55556666aaaa';
const PI_OTHER_ID = '01a2f111-2222-7333-8444-55556666bbbb';

const CART = `def total(items):\n    return sum(i.price for i in items)\n`;

const iso = (ms) => new Date(ms).toISOString();
const jsonl = (records) => records.map((r) => JSON.stringify(r) + '\n').join('');
const write = (file, text) => {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
};

/** A Claude Code session of `turns` ({prompt, tool?, input?, reply}), one minute apart (lineEdits.mjs writes some too). */
export function claudeSession(home, cwd, id, start, turns) {
  const common = { isSidechain: false, userType: 'external', cwd, sessionId: id, version: '2.1.332', gitBranch: 'main' };
  const records = [];
  let parentUuid = null;
  let n = 0;
  const add = (record, ts) => {
    n += 1;
    const uuid = `${id.slice(0, 8)}-0000-4000-8000-${String(n).padStart(12, '0')}`;
    records.push({ ...common, ...record, parentUuid, uuid, timestamp: iso(ts) });
    parentUuid = uuid;
  };
  turns.forEach(({ prompt, tool, input, reply }, t) => {
    const at = start + t * 60_000;
    add({ type: 'user', message: { role: 'user', content: prompt } }, at);
    if (tool !== undefined) {
      const callId = `toolu_0${t}`;
      add({ type: 'assistant', message: { id: `msg_${t}a`, type: 'message', role: 'assistant', model: 'claude-opus-5-5',
        content: [{ type: 'tool_use', id: callId, name: tool, input }], stop_reason: 'tool_use' } }, at + 1000);
      add({ type: 'user', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: callId, content: 'ok' }] },
        toolUseResult: { type: 'text' } }, at + 2000);
    }
    add({ type: 'assistant', message: { id: `msg_${t}b`, type: 'message', role: 'assistant', model: 'claude-opus-5-5',
      content: [{ type: 'text', text: reply }], stop_reason: 'end_turn' } }, at + 3000);
  });
  write(join(home, '.claude', 'projects', cwd.replaceAll('/', '-'), `${id}.jsonl`), jsonl(records));
}

export function piSession(home, cwd, id, start, prompt, tool, args, reply) {
  const records = [{ type: 'session', version: 3, id, timestamp: iso(start), cwd }];
  const message = (mid, parentId, ts, body) => ({ type: 'message', id: mid, parentId, timestamp: iso(ts), message: { ...body, timestamp: ts } });
  const assistant = { provider: 'mock-openai', model: 'mock-gpt', api: 'openai-completions' };
  records.push(message('a0000001', null, start, { role: 'user', content: [{ type: 'text', text: prompt }] }));
  records.push(message('a0000002', 'a0000001', start + 1000, { role: 'assistant', ...assistant, stopReason: 'toolUse',
    content: [{ type: 'toolCall', id: 'call_1', name: tool, arguments: args }] }));
  records.push(message('a0000003', 'a0000002', start + 2000, { role: 'toolResult', toolCallId: 'call_1', toolName: tool,
    content: [{ type: 'text', text: 'Successfully replaced text.' }], isError: false }));
  records.push(message('a0000004', 'a0000003', start + 3000, { role: 'assistant', ...assistant, stopReason: 'stop',
    content: [{ type: 'text', text: reply }] }));
  const folder = `--${cwd.replace(/^\//, '').replaceAll('/', '-')}--`;
  write(join(home, '.pi', 'agent', 'sessions', folder, `${iso(start).replaceAll(':', '-').replace('.', '-')}_${id}.jsonl`), jsonl(records));
}

export function codexSession(home, cwd, id, start, prompt, patch, reply) {
  const envelope = (n, type, payload) => ({ timestamp: iso(start + n * 100), ordinal: n, type, payload });
  const turnId = `${id.slice(0, 18)}0000-000000000001`;
  const records = [
    envelope(0, 'session_meta', { session_id: id, id, timestamp: iso(start), cwd, originator: 'codex_exec', cli_version: '0.171.0',
      source: 'exec', model_provider: 'mock' }),
    envelope(1, 'event_msg', { type: 'task_started', turn_id: turnId }),
    envelope(2, 'turn_context', { turn_id: turnId, cwd, approval_policy: 'never', model: 'gpt-5.5' }),
    envelope(3, 'response_item', { type: 'message', id: 'msg_u1', role: 'user', content: [{ type: 'input_text', text: prompt }] }),
    envelope(4, 'response_item', { type: 'custom_tool_call', id: 'ctc_1', status: 'completed', call_id: 'call_1', name: 'apply_patch', input: patch }),
    envelope(5, 'response_item', { type: 'custom_tool_call_output', call_id: 'call_1', output: 'Success. Updated the following files:\nM src/cart.py\n' }),
    envelope(6, 'response_item', { type: 'message', id: 'msg_a1', role: 'assistant', status: 'completed',
      content: [{ type: 'output_text', text: reply, annotations: [] }] }),
    envelope(7, 'event_msg', { type: 'task_complete', turn_id: turnId, last_agent_message: reply }),
  ];
  const d = new Date(start);
  const day = join(String(d.getUTCFullYear()), String(d.getUTCMonth() + 1).padStart(2, '0'), String(d.getUTCDate()).padStart(2, '0'));
  const stamp = iso(start).slice(0, 19).replaceAll(':', '-');
  write(join(home, '.codex', 'sessions', day, `rollout-${stamp}-${id}.jsonl`), jsonl(records));
}

/**
 * Writes the workspace `<run>/workspace/bookshop` (with src/cart.py) and the transcripts into `home`; returns the
 * workspace folder and the edited file.
 */
export function writeFileEditHistory(home) {
  const root = join(dirname(home), 'workspace');
  const workspace = join(root, 'bookshop');
  const other = join(root, 'other');
  write(join(workspace, FILE), CART);
  write(join(workspace, 'README.md'), '# Bookshop\n');
  write(join(other, FILE), CART);
  const file = join(workspace, FILE);
  const day = (d, h) => Date.UTC(2026, 10, d, h, 0, 0);

  claudeSession(home, workspace, CLAUDE_READ_ID, day(27, 9), [
    { prompt: CLAUDE_READ_PROMPT, tool: 'Read', input: { file_path: file }, reply: 'It adds up the prices of the items.' },
  ]);
  piSession(home, workspace, PI_ID, day(28, 10), PI_EDIT_PROMPT, 'edit',
    { path: FILE, oldText: 'def total(items):\n', newText: 'def total(items):\n    """The sum of the prices."""\n' },
    'Added the docstring.');
  codexSession(home, workspace, CODEX_ID, day(29, 11), CODEX_EDIT_PROMPT,
    `*** Begin Patch\n*** Update File: ${FILE}\n@@\n-    return sum(i.price for i in items)\n+    return round(sum(i.price for i in items), 2)\n*** End Patch\n`,
    'The total is now rounded to cents with `round(..., 2)`.');
  // the edit is the second of three turns, after a long one: the conversation must scroll down to it
  claudeSession(home, workspace, CLAUDE_EDIT_ID, day(30, 12), [
    { prompt: CLAUDE_FIRST_PROMPT, reply: CLAUDE_FIRST_REPLY },
    { prompt: CLAUDE_EDIT_PROMPT, tool: 'Edit', input: { file_path: file, old_string: 'i.price for', new_string: 'i.price * (1 - i.discount) for' },
      reply: CLAUDE_REPLY },
    { prompt: CLAUDE_LAST_PROMPT, reply: 'You are welcome.' },
  ]);
  piSession(home, other, PI_OTHER_ID, day(30, 13), OTHER_PROMPT, 'edit', { path: FILE, oldText: 'a', newText: 'b' }, 'Renamed.');
  return { workspace, file };
}
