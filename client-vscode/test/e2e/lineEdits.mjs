// A workspace file whose lines were written by three agents and by the person, for the line-history e2e suite
// (issue 23): Pi's `edit` (oldText/newText, path relative to the cwd) wrote the docstring, Codex's `apply_patch`
// (custom tool call, `*** Update File:` relative to the cwd) rewrote the subtotal's return line, Claude Code's `Edit`
// (absolute file_path, old_string/new_string) rewrote the total's; the person wrote the comment on top and the
// rest. The record shapes are those of fileEdits.mjs (as the real agents write them: samples/history, trimmed to
// what the importers read; docs/formats.md). Times are recent, so that the annotation says "3 days ago".
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { claudeSession, codexSession, piSession } from './fileEdits.mjs';

export const LINE_FILE = 'src/pricing.py';

export const PI_PROMPT = 'Document what subtotal() returns in src/pricing.py.';
export const CODEX_PROMPT = 'Apply each item discount in subtotal(), please.';
export const CLAUDE_PROMPT = 'make the shipping cost part of the rounded total';

/** The final file, 0-based lines; who wrote each line that is checked. */
export const LINES = {
  person: '# Prices of the shop, in euros (written by hand, never by an agent).',
  pi: '    """The sum of the prices, after each item\'s own discount."""',
  codex: '    return sum(i.price * (1 - i.discount) for i in items)',
  claude: '    return round(subtotal(items) + shipping.cost_for(items), 2)',
};

const BEFORE = `${LINES.person}\ndef subtotal(items):\n    return sum(i.price for i in items)\n\n\ndef total(items, shipping):\n    return subtotal(items) + shipping\n`;
const AFTER = `${LINES.person}\ndef subtotal(items):\n${LINES.pi}\n${LINES.codex}\n\n\ndef total(items, shipping):\n${LINES.claude}\n`;

const write = (file, text) => {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
};

/** The 0-based line of `text` in the final file. */
export function lineOf(text) {
  const line = AFTER.split('\n').indexOf(text);
  if (line < 0) {
    throw new Error(`not a line of the fixture: ${text}`);
  }
  return line;
}

/**
 * Writes `<run>/workspace/shop` with src/pricing.py as the three edits left it, and their transcripts into `home`;
 * returns the workspace folder and the file.
 */
export function writeLineEditHistory(home) {
  const workspace = join(dirname(home), 'workspace', 'shop');
  const file = join(workspace, LINE_FILE);
  write(file, AFTER);
  write(join(workspace, 'README.md'), '# Shop\n');
  const day = 24 * 3600 * 1000;
  const at = (daysAgo) => Date.now() - daysAgo * day;
  // the edits in the order they were made; each one's old text is what the file held then (BEFORE, as changed)
  piSession(home, workspace, '01a2f111-2222-7333-8444-55556666cccc', at(5), PI_PROMPT, 'edit',
    { path: LINE_FILE, oldText: 'def subtotal(items):\n', newText: `def subtotal(items):\n${LINES.pi}\n` },
    'Added the docstring.');
  codexSession(home, workspace, '01a2f111-2222-7333-8444-55556666dddd', at(4), CODEX_PROMPT,
    `*** Begin Patch\n*** Update File: ${LINE_FILE}\n@@ def subtotal(items):\n${LINES.pi}\n-    return sum(i.price for i in items)\n+${LINES.codex}\n*** End Patch\n`,
    'Each item\'s discount is applied in subtotal() now.');
  claudeSession(home, workspace, '7c1e0d2a-4b5f-4e8a-9c3d-2f1a0b9e8d99', at(3), [
    { prompt: 'What does total() add?', reply: 'The subtotal and the shipping.' },
    { prompt: CLAUDE_PROMPT, tool: 'Edit',
      input: { file_path: file, old_string: '    return subtotal(items) + shipping', new_string: LINES.claude, replace_all: false },
      reply: 'The total now adds the shipping cost for the items and rounds to cents.' },
  ]);
  return { workspace, file, before: BEFORE };
}
