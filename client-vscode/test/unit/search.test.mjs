// The pure parts of the sidebar search and of the result cards: snippets, Markdown highlighting, paging,
// the resume command, and the validation of what the webviews send.
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { test } from 'node:test';
import { load } from './load.mjs';

const snippet = load('snippet.ts');
const render = load('render.ts');
const model = load('searchModel.ts');
const resume = load('resumeArgs.ts');
const panelProtocol = load('panelProtocol.ts');
const searchProtocol = load('searchProtocol.ts');

const text = (segments) => segments.map((s) => s.text).join('');
const hits = (segments) => segments.filter((s) => s.hit).map((s) => s.text);

test('a snippet is cut around the first match, not the first lines', () => {
  const long = `${'intro words '.repeat(30)}the flamingo cache breaks here ${'outro words '.repeat(30)}`;
  const segs = snippet.snippetSegments(long, ['flamingo'], 20);
  const shown = text(segs);
  assert.ok(shown.startsWith('… '), shown);
  assert.ok(shown.endsWith(' …'), shown);
  assert.ok(shown.includes('the flamingo cache breaks'), shown);
  assert.ok(shown.length < 80, `about 20 characters each side: ${shown}`);
  assert.deepEqual(hits(segs), ['flamingo']);
  assert.ok(!shown.includes('intro words intro words intro words'), 'the beginning is left out');
});

test('a snippet has a window per matched term, merged where they overlap, in text order', () => {
  const t = `alpha ${'x '.repeat(100)}beta ${'y '.repeat(100)}gamma`;
  const segs = snippet.snippetSegments(t, ['gamma', 'alpha'], 10);
  assert.deepEqual(hits(segs), ['alpha', 'gamma']);
  assert.equal((text(segs).match(/…/g) ?? []).length, 1, text(segs)); // alpha starts the text, gamma ends it
  const near = snippet.snippetSegments('one flamingo two cache three', ['flamingo', 'cache'], 10);
  assert.equal(text(near), 'one flamingo two cache three');
  assert.deepEqual(hits(near), ['flamingo', 'cache']);
});

test('a snippet of a text without a match is its beginning; whitespace is one space; no split characters', () => {
  assert.equal(text(snippet.snippetSegments('short\n\nreply', ['absent'])), 'short reply');
  assert.deepEqual(snippet.snippetSegments('', ['x']), []);
  const emoji = '🦩'.repeat(50) + ' flamingo ' + '🦩'.repeat(50);
  const shown = text(snippet.snippetSegments(emoji, ['flamingo'], 7));
  assert.ok(!/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(shown), `no lone surrogate: ${shown}`);
  assert.deepEqual(snippet.firstMatch('A FLAMINGO', 'flamingo'), { start: 2, end: 10 });
  assert.equal(snippet.firstMatch('none', 'flamingo'), undefined);
});

test('hover Markdown: the bold goes around letters and digits, so that no literal asterisks show', () => {
  // CommonMark: "**" between a letter and punctuation is no delimiter (x**\_price**y showed its asterisks)
  assert.equal(render.highlightMarkdown('validatePriceIds', ['price'], 100), 'validate**Price**Ids');
  assert.equal(render.highlightMarkdown('x_price_y', ['_price'], 100), 'x\\_**price**\\_y');
  assert.equal(render.highlightMarkdown('a100%b', ['100%'], 100), 'a**100**\\%b');
  assert.equal(render.highlightMarkdown('see __init__.py', ['__init__'], 100), 'see \\_\\_**init**\\_\\_\\.py');
  assert.equal(render.highlightMarkdown('x %% y', ['%%'], 100), 'x \\%\\% y', 'a match without letters stays plain');
  assert.equal(render.highlightMarkdown('中文缓存失效', ['缓存'], 100), '中文**缓存**失效');
  assert.equal(render.highlightMarkdown('f(price) [price]', ['(price)', '[price]'], 100), 'f\\(**price**\\) \\[**price**\\]');
});

test('the hover has a second link to the sidebar search when given, still nothing from the transcript', () => {
  const row = {
    turnId: 't', sessionId: 'claude:s', source: 'claude', cwd: '/w', ts: 0, userText: '[x](command:evil) flamingo', replyText: '',
    toolNames: [], hits: 2, jsonlPath: '/j', line: 1, resumeCommand: null, matched: ['flamingo'], truncated: false,
  };
  const md = render.hoverMarkdown(['flamingo'], [row], { showResultsUri: 'command:pimem.showResults?a', searchUri: 'command:pimem.focusSearch?a' });
  assert.ok(md.endsWith('[Open in the Pi Memory panel](command:pimem.showResults?a) · [Search in the sidebar](command:pimem.focusSearch?a)'), md);
  assert.equal([...md.matchAll(/(?<!\\)\]\((?!\\)/g)].length, 2, md);
});

test('the search box: commas make entities, anything else is free text', () => {
  assert.deepEqual(model.parseSearch('  '), { kind: 'empty' });
  assert.deepEqual(model.parseSearch('why does the cache break'), { kind: 'text', text: 'why does the cache break' });
  assert.deepEqual(model.parseSearch('flamingo, price cache'), { kind: 'entities', entities: ['flamingo', 'price cache'] });
  assert.deepEqual(model.parseSearch(' , '), { kind: 'empty' });
  assert.equal(model.parseSearch('a,b,c,d,e,f,g,h,i').kind, 'invalid');
  assert.deepEqual(model.queryParams({ kind: 'text', text: 'x' }), { text: 'x' });
});

test('paging with a server that counts: offset pages, "25 turns", "1,000+ turns", done at the total', () => {
  let p = model.firstPaging(20, 25, false);
  assert.equal(p.mode, 'offset');
  assert.equal(model.countText(p), '25 turns');
  assert.equal(p.done, false);
  const w = model.nextWindow(p);
  assert.deepEqual(w, { offset: 20, limit: 20 });
  p = model.afterMore(p, w, 5);
  assert.equal(p.shown, 25);
  assert.equal(p.done, true);
  const capped = model.firstPaging(20, 1000, true);
  assert.equal(model.countText(capped), '1,000+ turns');
  assert.equal(capped.done, false);
  assert.deepEqual(model.nextWindow({ ...capped, shown: 990 }), { offset: 990, limit: 10 }, 'offset + limit stays within 1,000');
  assert.equal(model.afterMore({ ...capped, shown: 980 }, { offset: 980, limit: 20 }, 20).done, true);
  assert.equal(model.countText(model.firstPaging(1, 1, false)), '1 turn');
  assert.equal(model.firstPaging(3, 3, false).done, true);
});

test('paging with a server without total: the limit grows to 50, "20+ turns" until the end is known', () => {
  let p = model.firstPaging(20, undefined, undefined);
  assert.equal(p.mode, 'limit');
  assert.equal(model.countText(p), '20+ turns');
  let w = model.nextWindow(p);
  assert.deepEqual(w, { offset: 0, limit: 40 });
  p = model.afterMore(p, w, 40);
  assert.equal(p.done, false);
  w = model.nextWindow(p);
  assert.deepEqual(w, { offset: 0, limit: 50 });
  p = model.afterMore(p, w, 50);
  assert.equal(p.done, true, 'recall gives at most 50');
  assert.equal(model.countText(p), '50+ turns');
  const fewer = model.afterMore(model.firstPaging(20, undefined, undefined), { offset: 0, limit: 40 }, 31);
  assert.equal(fewer.done, true);
  assert.equal(model.countText(fewer), '31 turns');
  assert.equal(model.firstPaging(7, undefined, undefined).done, true);
  // several folders at once: one request each, merged, so the limit grows even when the server counts
  assert.equal(model.firstPaging(20, 60, false, 2).mode, 'limit');
});

test('mergeRows: best score, then newest, each turn once, cut to the limit', () => {
  const r = (turnId, hits, ts) => ({ turnId, hits, ts });
  const merged = model.mergeRows([[r('a', 4, 1), r('b', 2, 5)], [r('a', 4, 1), r('c', 4, 9), r('d', 1, 0)]], 3);
  assert.deepEqual(merged.map((x) => x.turnId), ['c', 'a', 'b']);
});

test('resume in terminal: the agent and its arguments from validated ids, never a shell string', () => {
  const uuid = '1ed4dd9a-5989-4487-9ac3-d2b870816ee8';
  assert.deepEqual(resume.resumeCommand({ source: 'claude', sessionId: `claude:${uuid}`, cwd: '/w/shop', jsonlPath: '/j.jsonl' }),
    { program: 'claude', args: ['--resume', uuid], cwd: '/w/shop' });
  assert.deepEqual(resume.resumeCommand({ source: 'codex', sessionId: `codex:${uuid}`, cwd: '', jsonlPath: '/j' }),
    { program: 'codex', args: ['resume', uuid], cwd: undefined });
  assert.deepEqual(resume.resumeCommand({ source: 'pi', sessionId: 'pi:abc', cwd: '/w', jsonlPath: "/h/.pi/it's here.jsonl" }),
    { program: 'pi', args: ['--session', "/h/.pi/it's here.jsonl"], cwd: '/w' }, 'a quote in a path is an argument, not syntax');
  assert.deepEqual(resume.resumeCommand({ source: 'gemini', sessionId: `gemini:${uuid}`, cwd: '/w', jsonlPath: '/j' }),
    { program: 'gemini', args: ['--resume', uuid], cwd: '/w' });
  assert.deepEqual(resume.resumeCommand({ source: 'opencode', sessionId: 'opencode:ses_db3cc199bffeqUVIlffB7rLM8o', cwd: '/w', jsonlPath: '/d.db' }),
    { program: 'opencode', args: ['--session', 'ses_db3cc199bffeqUVIlffB7rLM8o'], cwd: '/w' });
  assert.deepEqual(resume.resumeCommand({ source: 'copilot-cli', sessionId: `copilot-cli:${uuid}`, cwd: '', jsonlPath: '/j' }),
    { program: 'copilot', args: [`--resume=${uuid}`], cwd: undefined }, "--resume's value is optional: one argument");
  for (const bad of [
    { source: 'claude', sessionId: 'claude:--help', cwd: '/w', jsonlPath: '/j' },
    { source: 'claude', sessionId: `claude:${uuid}; rm -rf ~`, cwd: '/w', jsonlPath: '/j' },
    { source: 'claude', sessionId: `claude:${uuid}`, cwd: 'relative', jsonlPath: '/j' },
    { source: 'codex', sessionId: `claude:${uuid}`, cwd: '/w', jsonlPath: '/j' },
    { source: 'pi', sessionId: 'pi:x', cwd: '/w', jsonlPath: 'relative.jsonl' },
    { source: 'pi', sessionId: 'pi:x', cwd: '/w', jsonlPath: '/a\u001b]0;x\u0007.jsonl' },
    { source: 'gemini', sessionId: 'gemini:--yolo', cwd: '/w', jsonlPath: '/j' },
    { source: 'opencode', sessionId: 'opencode:ses_abc; rm -rf ~', cwd: '/w', jsonlPath: '/j' },
    { source: 'opencode', sessionId: 'opencode:--session', cwd: '/w', jsonlPath: '/j' },
    { source: 'copilot-cli', sessionId: 'copilot-cli:$(id)', cwd: '/w', jsonlPath: '/j' },
    { source: 'cursor', sessionId: `cursor:${uuid}`, cwd: '/w', jsonlPath: '/j' },
    { source: 'gemini', sessionId: `gemini:${uuid}`, cwd: '', jsonlPath: '/j' }, // found only from its project folder
    { source: 'copilot-chat', sessionId: `copilot-chat:${uuid}`, cwd: '/w', jsonlPath: '/j' },
  ]) {
    assert.equal(resume.resumeCommand(bad), undefined, JSON.stringify(bad));
  }
  assert.equal(resume.resumeCommand({ source: 'pi', sessionId: 'pi:x', cwd: '/a\nb', jsonlPath: '/j' }).cwd, undefined);
});

test('resume action: a terminal for the CLIs, VS Code\'s chat for this window\'s Copilot Chat logs, else the conversation', () => {
  const uuid = '1ed4dd9a-5989-4487-9ac3-d2b870816ee8';
  const ws = '/h/.config/Code/User/workspaceStorage/8f1e';
  const storage = { workspace: ws, global: '/h/.config/Code/User/globalStorage' };
  const chat = (jsonlPath, id = uuid) => ({ source: 'copilot-chat', sessionId: `copilot-chat:${id}`, cwd: '/w', jsonlPath, resumeCommand: null });
  const opened = resume.resumeAction(chat(`${ws}/chatSessions/${uuid}.jsonl`), storage, '/');
  // LocalChatSessionUri.forSession: the id's UTF-8 bytes, base64url without padding
  assert.deepEqual(opened, { kind: 'chat', sessionId: uuid, uriPath: '/MWVkNGRkOWEtNTk4OS00NDg3LTlhYzMtZDJiODcwODE2ZWU4' });
  assert.equal(Buffer.from(opened.uriPath.slice(1), 'base64url').toString(), uuid);
  assert.equal(resume.resumeLabel(opened), 'Open in Copilot Chat');
  assert.equal(resume.resumeAction(chat(`${ws}/chatSessions/${uuid}.json`), storage, '/').kind, 'chat');
  for (const other of [
    chat(`/h/.config/Code/User/workspaceStorage/other/chatSessions/${uuid}.jsonl`), // another workspace's: not in this window's store
    chat(`${ws}/GitHub.copilot-chat/transcripts/${uuid}.jsonl`), // a transcript only: VS Code has no log to restore
    chat(`${ws}/chatSessions/${uuid}.jsonl`, `${uuid}/../x`),
    chat(`${ws}/chatSessions/x.jsonl`, 'x'),
    chat(`/h/.config/Code/User/globalStorage/emptyWindowChatSessions/${uuid}.jsonl`), // a workspace window
    { source: 'cursor', sessionId: `cursor:${uuid}`, cwd: '/w', jsonlPath: '/h/.cursor/state.vscdb', resumeCommand: null },
  ]) {
    assert.deepEqual(resume.resumeAction(other, storage, '/'), { kind: 'conversation' }, other.jsonlPath);
  }
  const empty = { workspace: undefined, global: '/h/.config/Code/User/globalStorage' };
  assert.equal(resume.resumeAction(chat(`/h/.config/Code/User/globalStorage/emptyWindowChatSessions/${uuid}.jsonl`), empty, '/').kind, 'chat');
  const cli = resume.resumeAction({ source: 'copilot-cli', sessionId: `copilot-cli:${uuid}`, cwd: '/w', jsonlPath: '/e.jsonl', resumeCommand: 'x' }, storage, '/');
  assert.deepEqual(cli, { kind: 'terminal', command: { program: 'copilot', args: [`--resume=${uuid}`], cwd: '/w' } });
  assert.equal(resume.resumeLabel(cli), 'Resume in terminal');
  // the server gave no command: nothing to run
  assert.equal(resume.resumeAction({ source: 'claude', sessionId: `claude:${uuid}`, cwd: '/w', jsonlPath: '/j', resumeCommand: null }, storage, '/'), undefined);
});

test('planResume: Gemini CLI, like Claude Code, resumes only in the session\'s folder', () => {
  const uuid = '1ed4dd9a-5989-4487-9ac3-d2b870816ee8';
  const gemini = resume.resumeCommand({ source: 'gemini', sessionId: `gemini:${uuid}`, cwd: '/w/gone', jsonlPath: '/j' });
  assert.deepEqual(resume.planResume(gemini, '/usr/bin/gemini', () => false), { kind: 'folderGone' });
  const plan = resume.planResume(gemini, '/usr/bin/gemini', () => true);
  assert.deepEqual(plan.options.shellArgs, ['--resume', uuid]);
  assert.equal(plan.options.cwd, '/w/gone');
  const opencode = resume.resumeCommand({ source: 'opencode', sessionId: 'opencode:ses_db3cc199bffeqUVIlffB7rLM8o', cwd: '/w/gone', jsonlPath: '/d.db' });
  assert.equal(resume.planResume(opencode, '/usr/bin/opencode', () => false).options.cwd, undefined);
});

test('findExecutable: the first on PATH, never a relative entry or one inside the workspace', () => {
  const files = new Set(['/ws/bin/claude', '/usr/bin/claude', '/opt/c/claude.cmd']);
  const probe = { isExecutableFile: (f) => files.has(f), realpath: (f) => f };
  assert.equal(resume.findExecutable('claude', 'bin:/ws/bin:/usr/bin', ['/ws'], probe, 'linux'), '/usr/bin/claude');
  assert.equal(resume.findExecutable('claude', '/nowhere', [], probe, 'linux'), undefined);
  assert.equal(resume.findExecutable('claude', '/opt/c', [], probe, 'win32', '.EXE;.CMD'), '/opt/c/claude.cmd');
});

test('a Windows batch file gets only arguments that cmd.exe cannot read as syntax', () => {
  assert.equal(resume.argumentsPassIntact('/usr/bin/pi', ['--session', '/a b&c.jsonl']), true);
  assert.equal(resume.argumentsPassIntact('C:\\npm\\claude.cmd', ['--resume', '1ed4dd9a-5989-4487-9ac3-d2b870816ee8']), true);
  assert.equal(resume.argumentsPassIntact('C:\\npm\\pi.CMD', ['--session', 'C:\\Users\\me\\a&calc.jsonl']), false);
  assert.equal(resume.argumentsPassIntact('C:\\npm\\pi.bat', ['--session', 'C:\\My Sessions\\x.jsonl']), false);
});

test('a restored panel state is checked field by field', () => {
  assert.deepEqual(panelProtocol.parseRestorable({ restore: { query: 'q', fromText: true, request: { text: 'q', limit: 20, sources: ['pi', 'evil'], cwd: '/w' } } }),
    { query: 'q', fromText: true, request: { text: 'q', limit: 20, sources: ['pi'], cwd: '/w' } });
  assert.deepEqual(panelProtocol.parseRestorable({ restore: { query: 'a, b', fromText: false, request: { entities: ['a', 'b'] } } }).request, { entities: ['a', 'b'] });
  for (const bad of [undefined, null, {}, { restore: 1 }, { restore: { query: 1, fromText: true, request: { text: 'x' } } },
    { restore: { query: 'q', fromText: true, request: { entities: [1] } } }, { restore: { query: 'q', fromText: true, request: null } }]) {
    assert.equal(panelProtocol.parseRestorable(bad), undefined, JSON.stringify(bad));
  }
  assert.deepEqual(panelProtocol.parseFromWebview({ type: 'resume', index: 2 }), { type: 'resume', index: 2 });
});

test('messages from the search webview are validated', () => {
  const p = searchProtocol.parseFromSearchView;
  // Source names of the right shape pass (the view keeps those the server listed); anything else is dropped.
  assert.deepEqual(p({ type: 'search', query: 'x', workspaceOnly: true, sources: ['codex', 'gemini', 'No!', '../x', 3, 'a'.repeat(40)] }),
    { type: 'search', query: 'x', workspaceOnly: true, sources: ['codex', 'gemini'], scope: 'local' });
  assert.deepEqual(p({ type: 'row', action: 'resume', index: 0 }), { type: 'row', action: 'resume', index: 0 });
  for (const bad of [null, 'x', { type: 'row', action: 'exec', index: 0 }, { type: 'row', action: 'open', index: -1 },
    { type: 'row', action: 'open', index: 1.5 }, { type: 'search', query: 1, workspaceOnly: true, sources: [] },
    { type: 'search', query: 'x', workspaceOnly: 'yes', sources: [] }, { type: 'command', command: 'workbench.action.terminal.new' }]) {
    assert.equal(p(bad), undefined, JSON.stringify(bad));
  }
});

test('the scope of a search: one of the four, local when an older page sends none, anything else refused', () => {
  const p = searchProtocol.parseFromSearchView;
  const search = (scope) => ({ type: 'search', query: 'x', workspaceOnly: false, sources: ['pi'], ...(scope === undefined ? {} : { scope }) });
  for (const scope of ['local', 'mine', 'team', 'all']) {
    assert.equal(p(search(scope))?.scope, scope);
  }
  assert.equal(p(search())?.scope, 'local');
  for (const bad of ['everyone', '', 'TEAM', 1, null, ['team']]) {
    assert.equal(p(search(bad)), undefined, JSON.stringify(bad));
  }
});

test('the author of a shared row is one short plain line; a local row has none', () => {
  const a = searchProtocol.authorLabel;
  assert.equal(a('ana', 'laptop'), 'ana on laptop');
  assert.equal(a('ana', null), 'ana');
  assert.equal(a(undefined, 'build-box'), 'build-box');
  assert.equal(a(undefined, undefined), null);
  assert.equal(a('  ', ''), null);
  assert.equal(a(42, {}), null);
  // another member's row may hold anything: escape sequences, bidirectional overrides, newlines, a huge name
  const hostile = a('\u001b]8;;http://evil\u0007bob\u202e\nmallory', 'x'.repeat(10_000));
  assert.deepEqual([...hostile].filter((c) => c.codePointAt(0) < 0x20 || c === '\u202e'), [], JSON.stringify(hostile));
  assert.ok(hostile.startsWith(']8;;http://evil bob mallory on '), JSON.stringify(hostile));
  assert.ok(hostile.length <= 64 + 4 + 64);
});

test('a missing shared part of an answer is said; an answer without one says nothing', () => {
  assert.equal(searchProtocol.sharedNote(undefined), undefined);
  assert.equal(searchProtocol.sharedNote({ state: 'ok' }), undefined);
  assert.match(searchProtocol.sharedNote({ state: 'timeout' }), /did not answer in time: this machine's turns only/);
  assert.match(searchProtocol.sharedNote({ state: 'unreachable' }), /cannot be reached/);
  assert.match(searchProtocol.sharedNote({ state: 'something new' }), /this machine's turns only/);
});

test('the status bar keeps showing a finished sync until the new count is known (no "0 turns" flash)', () => {
  const { SyncState } = load('syncState.ts');
  const status = (syncing) => ({ syncing, filesDone: 1, filesTotal: 2, turnsIndexed: 0, turnsToIndex: 0, force: false, token: 't' });
  const s = new SyncState();
  assert.equal(s.update(status(true)), undefined);
  const ended = s.update(status(false));
  assert.notEqual(s.current, undefined, 'still "syncing" while pimem/status is asked for the count');
  s.countKnown(ended);
  assert.equal(s.current, undefined, 'then the count');
  // a newer sync began before the old one's count came: it keeps showing
  s.update(status(true));
  const first = s.update(status(false));
  s.update(status(true));
  s.countKnown(first);
  assert.notEqual(s.current, undefined);
  s.clear();
  assert.equal(s.current, undefined);
});

test('open raw: a SQLite database (OpenCode, Cursor) is recognised by its header, never opened as text', async () => {
  const raw = load('rawTranscript.ts');
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pimem-raw-'));
  const db = path.join(dir, 'opencode.db');
  fs.writeFileSync(db, Buffer.concat([Buffer.from('SQLite format 3\0', 'latin1'), Buffer.alloc(84)]));
  const vscdb = path.join(dir, 'state.vscdb');
  fs.copyFileSync(db, vscdb);
  const jsonl = path.join(dir, 'rollout.jsonl');
  fs.writeFileSync(jsonl, '{"type":"session_meta"}\n');
  const named = path.join(dir, 'looks.db'); // a text file named like a database is text
  fs.writeFileSync(named, 'SQLite format 2 is not this\n');
  assert.equal(raw.isDatabaseFile(db), true);
  assert.equal(raw.isDatabaseFile(vscdb), true);
  assert.equal(raw.isDatabaseFile(jsonl), false);
  assert.equal(raw.isDatabaseFile(named), false);
  assert.equal(raw.isDatabaseFile(path.join(dir, 'gone.db')), false);
  assert.equal(raw.isDatabaseFile(dir), false, 'a folder');
  fs.rmSync(dir, { recursive: true });
});
