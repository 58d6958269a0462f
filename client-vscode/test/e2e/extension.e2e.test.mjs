// End-to-end test of the Pi Memory extension in a real VS Code (code-server) driven by headless Chromium:
// the built .vsix, the bundled Python server, and the real transcripts in samples/history as the user's HOME.
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import {
  clearNotifications,
  folderUrl,
  invokeLanguageModelTool,
  LM_PROBE,
  notification,
  notificationText,
  QUIET_WORKBENCH_SETTINGS,
  repoDir,
  resultsFrame,
  runCommand,
  screenshot,
  startVsCode,
} from './harness.mjs';
import { LONG_ENTITY, LONG_PROMPT, LONG_REPLY_END, SECRET_ENTITY, SECRET_PROMPT, SECRETS, writePlantedSession } from './planted.mjs';

const samples = join(repoDir, 'samples', 'history');
const WORKSPACE = '/tmp/pimem-demo/webshop';
const NOTES = 'flamingo-notes.txt';
const PI_WEBSHOP = '--tmp-pimem-demo-webshop--';

describe('Pi Memory in VS Code', { timeout: 600_000 }, () => {
  let vs;
  let page;
  let createdWorkspace = false;
  const dialogs = [];

  before(async () => {
    assert.ok(existsSync(samples), `${samples} is missing`);
    createdWorkspace = !existsSync(WORKSPACE);
    mkdirSync(WORKSPACE, { recursive: true });
    writeFileSync(join(WORKSPACE, NOTES), 'flamingo\n\nThe price cache goes stale again after an update.\n');
    vs = await startVsCode({
      name: 'extension',
      // calls the language-model tool as another extension would (vscode.lm.invokeTool)
      extraExtensions: [LM_PROBE],
      prepareHome: (home) => {
        cpSync(join(samples, 'claude'), join(home, '.claude'), { recursive: true });
        cpSync(join(samples, 'codex'), join(home, '.codex'), { recursive: true });
        cpSync(join(samples, 'pi'), join(home, '.pi'), { recursive: true });
        writePlantedSession(home);
      },
      settings: (dirs) => ({
        ...QUIET_WORKBENCH_SETTINGS,
        'editor.hover.delay': 200,
        // editUserSettings() types JSON into the settings editor: no automatic closing or indenting
        'editor.autoClosingBrackets': 'never',
        'editor.autoClosingQuotes': 'never',
        'editor.autoSurround': 'never',
        'editor.autoIndent': 'none',
        'editor.formatOnType': false,
        'pimem.dbPath': join(dirs.run, 'memory.db'),
      }),
    });
    page = vs.page;
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
  });

  let step = 0;
  afterEach(async () => {
    step += 1;
    await screenshot(page, `step-${step}.png`).catch(() => undefined); // what the screen showed, pass or fail
  });

  after(async () => {
    await vs?.stop();
    rmSync(join(WORKSPACE, NOTES), { force: true });
    if (createdWorkspace) {
      rmSync(WORKSPACE, { recursive: true, force: true });
    }
  });

  it('syncs the histories when the workspace opens and shows the turn count', async () => {
    await page.goto(folderUrl(vs.port, WORKSPACE));
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: NOTES }).waitFor({ timeout: 90_000 });
    const item = page.locator('.statusbar-item', { hasText: /^\s*\d+ turns?\s*$/ });
    await item.waitFor({ timeout: 120_000 });
    const turns = Number((await item.innerText()).trim().split(' ')[0]);
    assert.ok(turns >= 10, `expected the sample histories to give at least 10 turns, got ${turns}`);
    const dbPath = join(vs.dirs.run, 'memory.db');

    // the item opens the status, which agrees with it
    await item.click();
    const status = notification(page, /Pi Memory: \d+ turns? in \d+ sessions?/);
    await status.first().waitFor({ timeout: 30_000 });
    const statusText = await status.first().innerText();
    assert.ok(statusText.includes(`Pi Memory: ${turns} turns in `), statusText);
    assert.ok(statusText.includes(`Database: ${dbPath}.`), `the server uses pimem.dbPath: ${statusText}`);
    assert.ok(existsSync(dbPath), `${dbPath} exists`);
    await clearNotifications(page);
  });

  it('answers the language-model tool pimem_recall outside a chat, secrets masked', async () => {
    const manifest = JSON.parse(readFileSync(join(repoDir, 'client-vscode', 'package.json'), 'utf8'));
    const contributed = manifest.contributes.languageModelTools.find((t) => t.name === 'pimem_recall');
    const answer = await invokeLanguageModelTool(page, vs.dirs, 'pimem_recall', { entities: [SECRET_ENTITY], limit: 3 });
    assert.ok(answer.ok, `pimem_recall failed: ${answer.error}`);
    // the editor lists it with the manifest's schema (tests/test_vscode_lm_tool.py: the same as recall_memory's)
    assert.equal(answer.tool?.name, 'pimem_recall');
    assert.deepEqual(answer.tool.inputSchema, contributed.inputSchema);
    assert.equal(answer.parts.length, 1, 'one text part');
    assert.ok(answer.text.includes(SECRET_PROMPT), answer.text);
    assert.ok(answer.text.includes('AWS_ACCESS_KEY_ID=[REDACTED:aws-access-key-id]'), answer.text);
    assert.ok(answer.text.includes('GITHUB_TOKEN=[REDACTED:github-token]'), answer.text);
    for (const secret of SECRETS) {
      assert.ok(!answer.text.includes(secret), `a planted secret reached the model: ${answer.text}`);
    }
    await screenshot(page, 'lm-tool-recall.png');

    // a bad input is an error naming the field, and the tool keeps answering
    const bad = await invokeLanguageModelTool(page, vs.dirs, 'pimem_recall', { entities: [SECRET_ENTITY], limit: 21 });
    assert.equal(bad.ok, false);
    assert.match(bad.error, /^pimem_recall: invalid "limit": .*call pimem_recall again\.$/);
    const again = await invokeLanguageModelTool(page, vs.dirs, 'pimem_recall', { entities: ['flamingo'] });
    assert.ok(again.ok && /flamingo/i.test(again.text), again.error ?? again.text);
    await page.keyboard.press('Control+W');
  });

  it('offers a shortened turn whole (pimem/turn)', async () => {
    await runCommand(page, 'Pi Memory: Recall…');
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ state: 'visible' });
    await input.fill(LONG_ENTITY);
    await page.keyboard.press('Enter');
    const wv = resultsFrame(page);
    const row = wv.locator('article.result', { hasText: LONG_PROMPT });
    await row.first().waitFor({ timeout: 60_000 });
    assert.equal(await wv.locator('article.result').count(), 1);
    assert.equal(await row.locator('.matched').innerText(), `matched: ${LONG_ENTITY}`);
    await row.locator('p.shortened').waitFor();
    const reply = row.locator('.text.reply .body');
    assert.ok(!(await reply.textContent()).includes(LONG_REPLY_END), 'a recall row carries 4,000 characters of the reply');
    await row.locator('button.whole-turn').click();
    await row.locator('p.whole').waitFor({ timeout: 30_000 });
    assert.ok((await reply.textContent()).trimEnd().endsWith(LONG_REPLY_END), 'the whole reply, to its last line');
    assert.equal(await row.locator('button.whole-turn').count(), 0);
    assert.equal(await row.locator('button.expand').getAttribute('aria-expanded'), 'true', 'shown expanded');
    await screenshot(page, 'panel-whole-turn.png');
  });

  it('recalls turns by entity from the command palette into the results panel', async () => {
    await runCommand(page, 'Pi Memory: Recall…');
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ state: 'visible' });
    await input.fill('flamingo');
    await page.keyboard.press('Enter');

    const wv = resultsFrame(page);
    const results = wv.locator('article.result');
    // the panel still shows the previous test's rows until this answer replaces them all at once (loading
    // state in between): wait for a row only this answer has, not for any row
    await results.filter({ hasText: 'Why does the flamingo bug happen?' }).first().waitFor({ timeout: 60_000 });
    const csp = await wv.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'nonce-/);

    const texts = await results.allInnerTexts();
    const all = texts.join('\n');
    // one known turn of each agent (samples/history/MANIFEST.md: C1, X1, P1)
    assert.ok(all.includes('Why does the flamingo bug happen? Explain the cache invalidation in src/cache.py.'), all);
    assert.ok(all.includes('Why would the flamingo bug only show up after a price update?'), all);
    assert.ok(all.includes('The flamingo bug report is in BUGS.md.'), all);
    for (const text of texts) {
      assert.match(text, /flamingo/i, `every result mentions the entity: ${text}`);
    }
    const agents = new Set(await wv.locator('article.result .agent').allInnerTexts());
    assert.deepEqual([...agents].sort(), ['Claude Code', 'Codex', 'Pi']);
    const marks = await wv.locator('article.result mark').allInnerTexts();
    assert.ok(marks.length >= texts.length && marks.every((m) => m.toLowerCase() === 'flamingo'), marks.join(','));
    const cwds = await wv.locator('article.result .cwd').evaluateAll((els) => els.map((e) => e.getAttribute('title')));
    assert.ok(cwds.includes(WORKSPACE), cwds.join(','));

    // filter by agent, client-side
    const total = await results.count();
    const codex = await wv.locator('article.result[data-source="codex"]').count();
    assert.ok(codex >= 1);
    await wv.locator('#filters input[value="codex"]').uncheck();
    assert.equal(await wv.locator('article.result[data-source="codex"]').count(), 0);
    assert.equal(await results.count(), total - codex);
    await wv.locator('#filters input[value="codex"]').check();
    assert.equal(await results.count(), total);

    // long texts start collapsed and expand
    const classes = await results.evaluateAll((els) => els.map((e) => e.className));
    const collapsed = classes.findIndex((c) => c.includes('collapsed'));
    if (collapsed >= 0) {
      const article = results.nth(collapsed);
      await article.locator('button.expand').click();
      assert.equal(await article.locator('button.expand').getAttribute('aria-expanded'), 'true');
      assert.ok(!(await article.getAttribute('class')).includes('collapsed'));
    }
    await screenshot(page, 'panel-recall-flamingo.png');
  });

  it('shows recall results when hovering a selection', async () => {
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ state: 'visible' });
    await input.fill(NOTES);
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: NOTES }).first().waitFor();
    await page.keyboard.press('Enter');
    const word = page.locator('.editor-instance .view-lines .view-line span', { hasText: /^flamingo$/ }).first();
    await word.waitFor({ timeout: 30_000 });
    await word.dblclick();
    await page.locator('.editor-instance .selected-text').first().waitFor();
    const box = await word.boundingBox();
    await page.mouse.move(box.x + box.width + 200, box.y + 120);
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2, { steps: 5 });
    const hover = page.locator('.monaco-hover', { hasText: 'Pi Memory' });
    await hover.waitFor({ state: 'visible', timeout: 30_000 });
    const text = await hover.innerText();
    assert.match(text, /past turns about flamingo/);
    assert.match(text, /searched: flamingo \(about [\d,]+ turns?\)/, 'the term the server chose, with its estimate');
    assert.match(text, /matched: flamingo/);
    assert.match(text, /You: .*flamingo/i);
    assert.equal((text.match(/score \d+/g) ?? []).length, 3, text);
    await screenshot(page, 'hover-selection.png');

    // the link opens those three results in the panel
    await hover.locator('a', { hasText: 'Open in the Pi Memory panel' }).click();
    const wv = resultsFrame(page);
    await wv.locator('article.result').first().waitFor({ timeout: 30_000 });
    const deadline = Date.now() + 15_000;
    while ((await wv.locator('article.result').count()) !== 3 && Date.now() < deadline) {
      await page.waitForTimeout(250);
    }
    assert.equal(await wv.locator('article.result').count(), 3);

    // back in the editor, the selection is still there: Recall Selection fills the panel
    await page.locator('.tabs-container .tab', { hasText: NOTES }).click();
    await page.locator('.editor-instance .selected-text').first().waitFor();
    await runCommand(page, 'Pi Memory: Recall Selection');
    await page.locator('.tabs-container .tab.active', { hasText: 'Pi Memory: flamingo' }).waitFor({ timeout: 30_000 });
    await wv.locator('#filters').waitFor({ timeout: 30_000 });
    assert.match(await wv.locator('#searched').innerText(), /^searched: flamingo$/);
    const shown = await wv.locator('p.count').innerText();
    assert.match(shown, /^(\d+) of \1 shown$/);
    assert.ok(Number(shown.split(' ')[0]) > 3, shown);
  });

  it('migrates the Codex sessions of the folder to Pi sessions on disk', async () => {
    const piDir = join(vs.dirs.home, '.pi', 'agent', 'sessions', PI_WEBSHOP);
    const before = new Set(existsSync(piDir) ? readdirSync(piDir) : []);
    await runCommand(page, 'Pi Memory: Migrate Codex Sessions to Pi…');
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ state: 'visible', timeout: 60_000 });
    const question = await dialog.innerText();
    const m = /Migrate (\d+) Codex sessions? of webshop to Pi\?/.exec(question);
    assert.ok(m, question);
    const count = Number(m[1]);
    assert.ok(count >= 2, `at least two Codex sessions in ${WORKSPACE}: ${question}`);
    await dialog.locator('.dialog-buttons a.monaco-button, .dialog-buttons button', { hasText: 'Migrate' }).click();

    const done = notification(page, /migrated \d+ Codex sessions? of webshop to Pi/);
    await done.waitFor({ timeout: 60_000 });
    const message = await done.innerText();
    assert.match(message, new RegExp(`migrated ${count} Codex sessions? of webshop to Pi`));
    await screenshot(page, 'migrate-codex.png');
    await clearNotifications(page);

    const written = readdirSync(piDir).filter((f) => !before.has(f) && f.endsWith('.jsonl'));
    assert.equal(written.length, count, `new files in ${piDir}: ${written.join(', ')}`);
    for (const file of written) {
      const lines = readFileSync(join(piDir, file), 'utf8').split('\n').filter((l) => l.length > 0);
      const header = JSON.parse(lines[0]);
      assert.equal(header.type, 'session', file);
      assert.equal(header.cwd, WORKSPACE, file);
      assert.ok(lines.slice(1).some((l) => JSON.parse(l).type === 'message'), `${file} has messages`);
    }
  });

  it('rebuilds the memory after a modal confirmation', async () => {
    await runCommand(page, 'Pi Memory: Rebuild Memory');
    const dialog = page.locator('.monaco-dialog-box', { hasText: 'Rebuild Pi Memory?' });
    await dialog.waitFor({ state: 'visible', timeout: 30_000 });
    await dialog.locator('.dialog-buttons a.monaco-button, .dialog-buttons button', { hasText: 'Rebuild' }).click();
    const text = await notificationText(page, /Pi Memory: rebuilt from \d+ transcript files?: the memory holds \d+ turns? in \d+ sessions?/);
    const files = Number(/rebuilt from (\d+) transcript/.exec(text)[1]);
    assert.ok(files >= 10, `a rebuild reads every sample transcript: ${text}`);
    await page.locator('.statusbar-item', { hasText: /^\s*\d+ turns?\s*$/ }).waitFor({ timeout: 60_000 });
    await clearNotifications(page);
  });

  it('renders a transcript containing HTML as text, without creating elements', async () => {
    await runCommand(page, 'Pi Memory: Recall…');
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ state: 'visible' });
    await input.fill('onerror');
    await page.keyboard.press('Enter');
    const wv = resultsFrame(page);
    const hit = wv.locator('article.result', { hasText: '<img src=x onerror=alert(1)>' });
    await hit.first().waitFor({ timeout: 60_000 });
    assert.match(await hit.first().innerText(), /A product description containing <img src=x onerror=alert\(1\)> breaks the product page/);
    assert.equal(await wv.locator('img').count(), 0);
    assert.equal(await wv.locator('#results script, #results iframe, #results [onerror]').count(), 0);
    assert.deepEqual(dialogs, []);
    await screenshot(page, 'panel-recall-xss.png');

    // Copy resume command: the server's command for that session, on the clipboard; the notification does not
    // quote it (stored data in a notification could render as a command link)
    await hit.first().locator('button.copy').click();
    const copied = notification(page, 'resume command copied');
    await copied.first().waitFor({ timeout: 15_000 });
    assert.equal((await copied.first().locator('.notification-list-item-message').innerText()).trim(),
      'Pi Memory: resume command copied to the clipboard.');
    const clipboard = await page.evaluate(() => navigator.clipboard.readText());
    assert.match(clipboard, /claude --resume 1ed4dd9a-5989-4487-9ac3-d2b870816ee8/);
    await clearNotifications(page);

    // Open raw transcript: the Claude .jsonl beside the panel, cursor on that turn's user message
    await hit.first().locator('button.raw').click();
    const jsonl = '1ed4dd9a-5989-4487-9ac3-d2b870816ee8.jsonl';
    await page.locator('.tabs-container .tab.active', { hasText: jsonl }).waitFor({ timeout: 30_000 });
    const position = page.locator('.statusbar-item', { hasText: /^\s*Ln \d+, Col \d+/ }).first();
    await position.waitFor({ timeout: 15_000 });
    const line = Number(/Ln (\d+)/.exec(await position.innerText())[1]);
    const file = join(vs.dirs.home, '.claude', 'projects', '-tmp-pimem-demo-webshop', jsonl);
    const record = JSON.parse(readFileSync(file, 'utf8').split('\n')[line - 1]);
    assert.equal(record.type, 'user', `line ${line} of ${jsonl} is the user message`);
    assert.match(JSON.stringify(record.message), /onerror=alert\(1\)/);
    await page.keyboard.press('Control+W');
  });

  it('says so when nothing matches', async () => {
    await runCommand(page, 'Pi Memory: Recall…');
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ state: 'visible' });
    await input.fill('qwertyuiop');
    await page.keyboard.press('Enter');
    const empty = resultsFrame(page).locator('#empty');
    await empty.waitFor({ timeout: 30_000 });
    assert.equal(await empty.innerText(), 'No past turns match “qwertyuiop”.');
  });

  it('reports a missing interpreter once, with a button that opens the setting', async () => {
    // code-server does not notice outside edits of settings.json: edit it in VS Code, as a user would
    const settingsFile = join(vs.dirs.userData, 'User', 'settings.json');
    const original = readFileSync(settingsFile, 'utf8');
    await editUserSettings({ ...JSON.parse(original), 'pimem.python': '/nonexistent/python3' });
    const error = notification(page, 'Pi Memory needs Python 3.11 or newer');
    await error.first().waitFor({ timeout: 30_000 });
    assert.match(await error.first().innerText(), /"\/nonexistent\/python3" \(from the pimem\.python setting\) was not found/);
    await page.waitForTimeout(2000);
    assert.equal(await error.count(), 1);
    await page.locator('.statusbar-item', { hasText: 'Pi Memory' }).first().waitFor();
    assert.ok((await error.locator('a.monaco-button, button', { hasText: 'Open Setting' }).count()) >= 1);
    // Show Status says the server is not running and offers the setting that fixes it, first
    await runCommand(page, 'Pi Memory: Show Status');
    const status = notification(page, 'Pi Memory server not running: no usable Python');
    await status.first().waitFor({ timeout: 30_000 });
    const buttons = await status.first().locator('a.monaco-button, button').allInnerTexts();
    assert.deepEqual(buttons.map((b) => b.trim()).filter((b) => b.length > 0).slice(0, 3), ['Open Setting', 'Restart Server', 'Show Log']);
    await status.first().locator('a.monaco-button, button', { hasText: 'Open Setting' }).first().click();
    await page.locator('.settings-editor .setting-item', { hasText: /Python/ }).first().waitFor({ timeout: 15_000 });
    await screenshot(page, 'missing-interpreter.png');

    // back to a working interpreter: the server restarts and the count comes back
    await editUserSettings(JSON.parse(original));
    await page.locator('.statusbar-item', { hasText: /^\s*\d+ turns?\s*$/ }).waitFor({ timeout: 60_000 });
  });

  /** Replaces the user settings through "Preferences: Open User Settings (JSON)" (type, then save). */
  async function editUserSettings(settings) {
    await runCommand(page, 'Preferences: Open User Settings (JSON)');
    const lines = page.locator('.editor-instance .view-lines', { hasText: 'workbench.startupEditor' });
    await lines.waitFor({ timeout: 15_000 });
    await lines.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText(JSON.stringify(settings));
    await page.keyboard.press('Control+S');
    const file = join(vs.dirs.userData, 'User', 'settings.json');
    const wanted = JSON.stringify(settings);
    for (let i = 0; i < 50 && readFileSync(file, 'utf8') !== wanted; i++) {
      await page.waitForTimeout(200);
    }
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), settings);
    await page.keyboard.press('Control+W');
  }
});
