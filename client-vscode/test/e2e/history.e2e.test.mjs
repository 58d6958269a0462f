// End-to-end test of the views of the past (issue 15) in a real VS Code (code-server + headless Chromium): the
// Sessions tree, the File History view and the CodeLens of a file that three agents edited, the rendered
// conversation beside the code editor, the raw transcript at a turn's line, and Continue in Pi on a Codex session.
// The history is written by fileEdits.mjs: transcripts of Claude Code, Codex and Pi whose tool calls edited
// src/cart.py of the workspace (plus one that only read it, and one of another folder).
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import {
  CLAUDE_EDIT_PROMPT,
  CLAUDE_FIRST_PROMPT,
  CLAUDE_READ_PROMPT,
  CLAUDE_REPLY_HOSTILE,
  CODEX_EDIT_PROMPT,
  CODEX_ID,
  OTHER_PROMPT,
  PI_EDIT_PROMPT,
  writeFileEditHistory,
} from './fileEdits.mjs';
import {
  clearNotifications,
  EXTENSION_ID,
  folderUrl,
  notification,
  QUIET_WORKBENCH_SETTINGS,
  runCommand,
  screenshot,
  startVsCode,
} from './harness.mjs';

describe('Pi Memory sessions, file history and conversations in VS Code', { timeout: 600_000 }, () => {
  let vs;
  let page;
  let fixture;
  const dialogs = [];
  // a stub `pi` on PATH that records its working directory and arguments ("Resume in Terminal" after Continue in Pi)
  const stubs = mkdtempSync('/tmp/pimem-stubs-');
  const originalPath = process.env.PATH;

  before(async () => {
    writeFileSync(join(stubs, 'pi'), `#!/bin/sh\n{ printf 'cwd=%s\\n' "$(pwd -P)"; for a in "$@"; do printf 'arg=%s\\n' "$a"; done; } > '${stubs}/pi.argv'\nsleep 30\n`);
    chmodSync(join(stubs, 'pi'), 0o755);
    process.env.PATH = `${stubs}:${originalPath}`; // code-server and its extension host inherit it
    vs = await startVsCode({
      name: 'history',
      prepareHome: (home) => {
        fixture = writeFileEditHistory(home);
        writeFileSync(join(home, '.profile'), `export PATH="${stubs}:$PATH"\n`); // the extension host's PATH comes from the login shell
      },
      settings: (dirs) => ({ ...QUIET_WORKBENCH_SETTINGS, 'pimem.dbPath': join(dirs.run, 'memory.db') }),
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
    await screenshot(page, `history-step-${step}.png`).catch(() => undefined);
  });

  after(async () => {
    await vs?.stop();
    process.env.PATH = originalPath;
    rmSync(stubs, { recursive: true, force: true });
  });

  const pane = (title) => page.locator('.pane', { has: page.locator('.pane-header h3.title', { hasText: new RegExp(`^${title}$`, 'i') }) });
  const rows = (title) => pane(title).locator('.pane-body .monaco-list-row');
  /** Each row as "label · description" (a group: "2026-11-30 · 1"). */
  const rowTexts = (title) =>
    rows(title).evaluateAll((els) =>
      els.map((el) => {
        const part = (selector) => (el.querySelector(selector)?.textContent ?? '').replace(/\s+/g, ' ').trim();
        const description = part('.label-description');
        return description === '' ? part('.label-name') : `${part('.label-name')} · ${description}`;
      }),
    );
  /** Waits until the rows of a view satisfy `check` (a view refreshes after the sync). */
  async function waitForRows(title, check, timeout = 60_000) {
    const deadline = Date.now() + timeout;
    let texts = [];
    while (Date.now() < deadline) {
      texts = await rowTexts(title);
      if (check(texts)) {
        return texts;
      }
      await page.waitForTimeout(250);
    }
    throw new Error(`the ${title} view never showed what was expected: ${JSON.stringify(texts)}`);
  }
  /** Drags the sash at the sidebar's right edge by `dx` pixels. */
  async function resizeSidebar(dx) {
    const sidebar = await page.locator('.part.sidebar').boundingBox();
    await page.mouse.move(sidebar.x + sidebar.width + 1, sidebar.y + sidebar.height / 2);
    await page.mouse.down();
    await page.mouse.move(sidebar.x + sidebar.width + 1 + dx, sidebar.y + sidebar.height / 2, { steps: 8 });
    await page.mouse.up();
  }
  async function quickOpen(name) {
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ state: 'visible' });
    await input.fill(name);
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: name }).first().waitFor();
    await page.keyboard.press('Enter');
    await page.locator('.tabs-container .tab.active', { hasText: name }).waitFor({ timeout: 30_000 });
  }
  const conversationFrame = () =>
    // the conversation is an editor panel; the sidebar's search view is a webview too (purpose=webviewView)
    page
      .frameLocator(`iframe.webview.ready[src*="extensionId=${EXTENSION_ID}"]:not([src*="purpose=webviewView"])`)
      .frameLocator('iframe#active-frame');

  it('lists the sessions of the workspace folder in the Sessions view, by day and by agent', async () => {
    await page.goto(folderUrl(vs.port, fixture.workspace));
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'README.md' }).waitFor({ timeout: 90_000 });
    await page.locator('.statusbar-item', { hasText: /^\s*\d+ turns?\s*$/ }).waitFor({ timeout: 120_000 });
    await runCommand(page, 'View: Show Pi Memory');
    await pane('Sessions').waitFor({ timeout: 30_000 });
    await resizeSidebar(240); // wider, so that the screenshots show the rows' descriptions (agent, what was done, when)

    // by day (the default): one group per day, newest first, each session labelled with its first prompt and agent
    const byDay = await waitForRows('Sessions', (t) => t.some((r) => r.includes(PI_EDIT_PROMPT)) && t.length >= 8);
    const groups = byDay.filter((t) => /^\d{4}-\d{2}-\d{2} · \d+$/.test(t)).map((t) => t.split(' ')[0]);
    assert.deepEqual(groups, ['2026-11-30', '2026-11-29', '2026-11-28', '2026-11-27'], byDay.join(' | '));
    // (a session is labelled with its first prompt: the Claude Code session that edited the file began otherwise)
    for (const [prompt, agent] of [[CLAUDE_FIRST_PROMPT, 'Claude Code'], [CODEX_EDIT_PROMPT, 'Codex'], [PI_EDIT_PROMPT, 'Pi'], [CLAUDE_READ_PROMPT, 'Claude Code']]) {
      const row = byDay.find((t) => t.includes(prompt));
      assert.ok(row !== undefined && row.includes(` · ${agent} · `), `${prompt} with ${agent}: ${byDay.join(' | ')}`);
    }
    assert.ok(!byDay.some((t) => t.includes(OTHER_PROMPT)), 'a session of another folder is not listed');
    assert.equal(byDay.length, 8, `4 days and 4 sessions: ${byDay.join(' | ')}`);

    // the title toggle groups them by agent
    await pane('Sessions').locator('.pane-header').hover();
    await pane('Sessions').locator('.pane-header .action-label[aria-label="Group by Agent"]').click();
    const byAgent = await waitForRows('Sessions', (t) => t[0]?.startsWith('Claude Code'));
    assert.deepEqual(byAgent.filter((t) => /^(Claude Code|Codex|Pi) · \d+$/.test(t)), ['Claude Code · 2', 'Codex · 1', 'Pi · 1'], byAgent.join(' | '));
    await pane('Sessions').locator('.pane-header').hover();
    await pane('Sessions').locator('.pane-header .action-label[aria-label="Group by Day"]').waitFor({ timeout: 10_000 });

    // a session expands into its turns
    const codexRow = rows('Sessions').filter({ hasText: CODEX_EDIT_PROMPT }).first();
    await codexRow.locator('.monaco-tl-twistie').click();
    const expanded = await waitForRows('Sessions', (t) => t.filter((r) => r.includes(CODEX_EDIT_PROMPT)).length === 2);
    const turnRow = expanded.filter((r) => r.includes(CODEX_EDIT_PROMPT))[1];
    assert.match(turnRow, /\d{2}:\d{2} · apply_patch/, 'the turn row names its time and tools');
    await screenshot(page, 'sidebar-sessions.png');
  });

  it('lists the conversations that touched the active file in File History and counts the edits in a CodeLens', async () => {
    await quickOpen('cart.py');

    const lens = page.locator('.editor-instance .codelens-decoration', { hasText: 'past conversations edited this file' });
    await lens.first().waitFor({ timeout: 60_000 });
    assert.equal((await lens.first().innerText()).trim(), '3 past conversations edited this file');
    // the CodeLens opens the File History view (focus moves from the editor into it)
    const focusedPane = () => page.evaluate(() => document.activeElement?.closest('.pane')?.querySelector('.pane-header h3.title')?.textContent ?? null);
    assert.equal(await focusedPane(), null, 'the editor has the focus');
    await lens.first().locator('a').first().click();
    for (let i = 0; i < 40 && (await focusedPane()) !== 'File History'; i++) {
      await page.waitForTimeout(250);
    }
    assert.equal(await focusedPane(), 'File History');

    await pane('File History').waitFor({ timeout: 30_000 });
    const history = await waitForRows('File History', (t) => t.length === 4);
    // one per agent that edited it, newest first, plus the one that only read it
    assert.match(history[0], new RegExp(`${escape(CLAUDE_EDIT_PROMPT)}.*Claude Code · edited`));
    assert.match(history[1], new RegExp(`${escape(CODEX_EDIT_PROMPT)}.*Codex · edited`));
    assert.match(history[2], new RegExp(`${escape(PI_EDIT_PROMPT)}.*Pi · edited`));
    assert.match(history[3], new RegExp(`${escape(CLAUDE_READ_PROMPT)}.*Claude Code · read`));
    assert.ok(!history.some((t) => t.includes(OTHER_PROMPT)), 'the other folder\'s cart.py is another file');
    const message = await pane('File History').locator('.pane-body .message').innerText();
    assert.equal(message.trim(), 'cart.py: 4 past conversations touched it, 3 edited it.');
    await screenshot(page, 'sidebar-file-history.png');

    // another file: the view follows the active editor; nothing touched README.md, so no CodeLens either
    await quickOpen('README.md');
    await pane('File History').locator('.welcome-view-content', { hasText: 'No past conversation touched this file.' }).waitFor({ timeout: 30_000 });
    assert.equal(await page.locator('.editor-instance .codelens-decoration', { hasText: 'past conversation' }).count(), 0);
    await page.locator('.tabs-container .tab', { hasText: 'cart.py' }).click();
    await waitForRows('File History', (t) => t.length === 4);
  });

  it('opens a conversation rendered (not JSON) beside the code editor, the hit turn highlighted', async () => {
    await resizeSidebar(-240); // back to its width: room for the code and the conversation
    await rows('File History').filter({ hasText: CLAUDE_EDIT_PROMPT }).first().click();
    const wv = conversationFrame();
    const hit = wv.locator('article.turn.hit');
    await hit.waitFor({ timeout: 60_000 });
    const csp = await wv.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'nonce-/);

    // the session's three turns; the second, which edited the file, is the hit, scrolled to below the long first one
    assert.equal(await wv.locator('article.turn').count(), 3);
    assert.deepEqual(await wv.locator('article.turn').evaluateAll((els) => els.map((e) => e.classList.contains('hit'))), [false, true, false]);
    assert.equal(await hit.getAttribute('aria-current'), 'true');
    assert.match(await hit.locator('.meta').innerText(), /Turn 2/);
    const place = await hit.evaluate((el) => ({
      top: el.getBoundingClientRect().top, height: window.innerHeight, scrolled: window.scrollY,
      header: document.querySelector('header').getBoundingClientRect().bottom,
    }));
    // scrolled down to it, just below the header that stays in view
    assert.ok(place.scrolled > 0 && place.top >= place.header && place.top < place.height / 2, `the hit turn is scrolled to: ${JSON.stringify(place)}`);
    assert.equal((await wv.locator('article.turn').nth(0).locator('.part.user .markdown').innerText()).trim(), CLAUDE_FIRST_PROMPT);

    // the prompt as text, the reply's code block as code, the tool and the file it edited
    assert.equal((await hit.locator('.part.user .markdown').innerText()).trim(), CLAUDE_EDIT_PROMPT);
    const code = await hit.locator('.part.reply pre.code-block code').innerText();
    assert.match(code, /^def total\(items\):\n {4}return sum\(i\.price \* \(1 - i\.discount\) for i in items\)/);
    assert.equal(await hit.locator('.part.reply pre.code-block').getAttribute('data-language'), 'python');
    assert.match(await hit.locator('.tools').innerText(), /Tools: Edit/);
    assert.match(await hit.locator('ul.files').innerText(), new RegExp(`edited ${escape(fixture.file)}`));
    const all = await wv.locator('main').innerText();
    assert.ok(!all.includes('"type"') && !all.includes('{"'), `rendered, not JSON: ${all}`);
    // transcript text that looks like HTML is text
    assert.ok(all.includes(CLAUDE_REPLY_HOSTILE), all);
    assert.equal(await wv.locator('main img, main script, main iframe, main [onerror]').count(), 0);
    assert.deepEqual(dialogs, []);
    // agent, folder and date on top
    assert.equal(await wv.locator('h1.title').innerText(), 'Claude Code conversation in bookshop');
    assert.match(await wv.locator('.session-meta').innerText(), /started 2026-11-30 \d{2}:\d{2}/);

    // beside: a second editor group holds it; the first still shows cart.py as its active editor
    const groups = page.locator('.editor-group-container');
    assert.equal(await groups.count(), 2);
    await groups.nth(0).locator('.tab.active', { hasText: 'cart.py' }).waitFor({ timeout: 10_000 });
    await groups.nth(1).locator('.tab.active', { hasText: 'Claude Code: bookshop' }).waitFor({ timeout: 10_000 });
    await screenshot(page, 'conversation-rendered.png');
  });

  it('opens the raw transcript at the turn\'s line as the secondary action', async () => {
    const wv = conversationFrame();
    await wv.locator('article.turn.hit button.raw').click();
    const jsonl = '7c1e0d2a-4b5f-4e8a-9c3d-2f1a0b9e8d71.jsonl';
    await page.locator('.editor-group-container').nth(1).locator('.tab.active', { hasText: jsonl }).waitFor({ timeout: 30_000 });
    const position = page.locator('.statusbar-item', { hasText: /^\s*Ln \d+, Col \d+/ }).first();
    await position.waitFor({ timeout: 15_000 });
    const line = Number(/Ln (\d+)/.exec(await position.innerText())[1]);
    const file = readdirSync(join(vs.dirs.home, '.claude', 'projects')).map((d) => join(vs.dirs.home, '.claude', 'projects', d, jsonl)).find(existsSync);
    const record = JSON.parse(readFileSync(file, 'utf8').split('\n')[line - 1]);
    assert.equal(record.type, 'user');
    assert.equal(record.message.content, CLAUDE_EDIT_PROMPT);
    await page.keyboard.press('Control+W');
    // the File History view followed the transcript file while it was active: back to cart.py
    await page.locator('.editor-group-container').nth(0).locator('.tab', { hasText: 'cart.py' }).click();
    await waitForRows('File History', (t) => t.length === 4);
  });

  it('continues a Codex session in Pi: migrates that one session and offers to resume it', async () => {
    await rows('File History').filter({ hasText: CODEX_EDIT_PROMPT }).first().click();
    const wv = conversationFrame();
    await wv.locator('h1.title', { hasText: 'Codex conversation in bookshop' }).waitFor({ timeout: 60_000 });
    assert.equal((await wv.locator('article.turn.hit .part.user .markdown').innerText()).trim(), CODEX_EDIT_PROMPT);
    assert.match(await wv.locator('article.turn.hit .part.reply').innerText(), /round\(\.\.\., 2\)/);
    await wv.locator('header button.continue').click();

    const offer = notification(page, 'the Codex session is now a Pi session');
    await offer.first().waitFor({ timeout: 60_000 });
    await offer.first().locator('a.monaco-button, button', { hasText: 'Copy Resume Command' }).click();
    await notification(page, 'resume command copied').first().waitFor({ timeout: 15_000 });
    const piDir = join(vs.dirs.home, '.pi', 'agent', 'sessions', `--${fixture.workspace.replace(/^\//, '').replaceAll('/', '-')}--`);
    const written = readdirSync(piDir).filter((f) => f.includes(CODEX_ID));
    assert.equal(written.length, 1, `one Pi session from the Codex session: ${readdirSync(piDir).join(', ')}`);
    const header = JSON.parse(readFileSync(join(piDir, written[0]), 'utf8').split('\n')[0]);
    assert.equal(header.type, 'session');
    assert.equal(header.cwd, fixture.workspace);
    const clipboard = await page.evaluate(() => navigator.clipboard.readText());
    assert.equal(clipboard, `pi --session ${join(piDir, written[0])}`);
    await clearNotifications(page);

    // again: migrated before; "Resume in Terminal" runs pi itself, in the session's folder, the file its argument
    await wv.locator('header button.continue').click();
    const again = notification(page, 'migrated to Pi before');
    await again.first().waitFor({ timeout: 60_000 });
    await again.first().locator('a.monaco-button, button', { hasText: 'Resume in Terminal' }).click();
    const record = join(stubs, 'pi.argv');
    const deadline = Date.now() + 30_000;
    while (!(existsSync(record) && readFileSync(record, 'utf8').includes('arg=')) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.ok(existsSync(record), 'pi was started');
    const lines = readFileSync(record, 'utf8').trim().split('\n');
    assert.deepEqual(lines, [`cwd=${fixture.workspace}`, 'arg=--session', `arg=${join(piDir, written[0])}`]);
    await clearNotifications(page);
  });
});

function escape(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
