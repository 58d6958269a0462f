import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { load } from './load.mjs';

const t = load('agentTool.ts');
const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));

test('the tool the extension registers is the one package.json contributes', () => {
  const tools = manifest.contributes.languageModelTools.map((tool) => tool.name);
  assert.deepEqual(tools, [t.RECALL_TOOL]);
  // tests/test_vscode_lm_tool.py checks its description and schema against server/pimem/agent_tools.py
});

test('agentRecallParams passes the model\'s arguments on, with redact from the setting only', () => {
  const input = { entities: ['zeta_ratelimit', 'flamingo'], limit: 3, sources: ['pi'], cwd: '/tmp/pimem-demo' };
  assert.deepEqual(t.agentRecallParams(input, true), { ...input, redact: true });
  assert.deepEqual(t.agentRecallParams(input, false), { ...input, redact: false });
  // a model cannot turn masking off (or on) through its input
  assert.equal(t.agentRecallParams({ entities: ['x'], redact: false }, true).redact, true);
  assert.equal(t.agentRecallParams({ entities: ['x'], redact: 'no' }, true).redact, true);
  // anything else is the server's to validate (it names the field, as pimem mcp does)
  assert.deepEqual(t.agentRecallParams({ entities: [], limit: 99, extra: 1 }, true), { entities: [], limit: 99, extra: 1, redact: true });
});

test('agentRecallParams refuses an input that is not an object, with a message the model can act on', () => {
  for (const input of [undefined, null, 'flamingo', ['flamingo'], 3]) {
    assert.throws(() => t.agentRecallParams(input, true), /^Error: pimem_recall: the input must be an object such as \{"entities": \[.*call it again with 1 to 8 specific entities\.$/);
  }
});

test('toolFailureMessage tells the model what went wrong and what to do', () => {
  assert.equal(
    t.toolFailureMessage({ kind: 'input', message: 'pimem/agentRecall: invalid "limit": must be an integer from 1 to 20, got 21' }),
    'pimem_recall: invalid "limit": must be an integer from 1 to 20, got 21. Correct the input (see the tool\'s input schema) and call pimem_recall again.',
  );
  assert.equal(
    t.toolFailureMessage({ kind: 'notRunning', message: 'The Pi Memory server is not running: no usable Python.' }),
    'pimem_recall is unavailable: The Pi Memory server is not running: no usable Python. Do not retry now; tell the user ' +
      'that Pi Memory\'s server is not running ("Pi Memory: Show Status" in VS Code says why).',
  );
  assert.equal(
    t.toolFailureMessage({ kind: 'failed', message: 'pimem: the store is locked\n(busy for 5 s).' }),
    'pimem_recall could not search the memory: pimem: the store is locked (busy for 5 s). Do not retry; tell the user what failed.',
  );
});

test('invocationMessage names the entities as plain text', () => {
  assert.equal(t.invocationMessage({ entities: ['payroll', 'LangGraph'] }), 'Searching past conversations for payroll, LangGraph');
  assert.equal(t.invocationMessage({ entities: 'x' }), 'Searching past conversations');
  assert.equal(t.invocationMessage(null), 'Searching past conversations');
  const shown = t.invocationMessage({ entities: ['[run](command:workbench.action.terminal.new)', '$(zap)'] });
  assert.ok(!/\]\(|\$\(/.test(shown), shown);
});

test('masking is on by default and only the user can turn it off (a workspace cannot)', () => {
  const setting = manifest.contributes.configuration.properties['pimem.agents.redactSecrets'];
  assert.equal(setting.default, true);
  assert.equal(setting.scope, 'application');
  // src/config.ts reads the user value only (inspect().globalValue), whatever the scope
  const config = readFileSync(new URL('../../src/config.ts', import.meta.url), 'utf8');
  assert.match(config, /redactSecrets: c\.inspect<unknown>\('agents\.redactSecrets'\)\?\.globalValue !== false/);
});
