// End-to-end test of the Pi Memory sidebar (issue 15 §1, §4, §5) in a real VS Code (code-server) driven by
// headless Chromium, on the sample history: the search view (live, workspace toggle, agent filters, paging),
// "Resume in terminal" with stub agents on PATH that record how they were started, the hover's first hit and
// its link to the sidebar, the results panel beside the editor and restored after a window reload.
// PIMEM_README_SCREENSHOTS=1 also copies the README screenshots into media/screenshots/.
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import {
  clearNotifications,
  clientDir,
  folderUrl,
  notification,
  notificationText,
  QUIET_WORKBENCH_SETTINGS,
  repoDir,
  resultsFrame,
  runCommand,
  screenshot,
  searchFrame,
  startVsCode,
} from './harness.mjs';

const samples = join(repoDir, 'samples', 'history');
const WORKSPACE = '/tmp/pimem-demo/webshop';
const NOTES = 'search-notes.txt';
// X1's prompt (samples/history/MANIFEST.md), a Codex turn: the hover on this sentence must show it first
const SENTENCE = 'Why would the flamingo bug only show up after a price update?';
const CLAUDE_SESSION = '1ed4dd9a-5989-4487-9ac3-d2b870816ee8';
const AGENTS = ['claude', 'codex', 'pi'];

async function readmeScreenshot(page, name) {
  const path = await screenshot(page, name);
  if (process.env.PIMEM_README_SCREENSHOTS === '1') {
    const dir = join(clientDir, 'media', 'screenshots');
    mkdirSync(dir, { recursive: true });
    copyFileSync(path, join(dir, name));
  }
}

/** Waits until `read()` gives a value that `ok` accepts; returns it. */
async function until(page, read, ok, what, timeout = 30_000) {
  const deadline = Date.now() + timeout;
  let value = await read();
  while (!ok(value)) {
    if (Date.now() > deadline) {
      throw new Error(`${what}: still ${JSON.stringify(value)} after ${timeout} ms`);
    }
    await page.waitForTimeout(200);
    value = await read();
  }
  return value;
}

describe('Pi Memory sidebar in VS Code', { timeout: 600_000 }, () => {
  let vs;
  let page;
  let stubs;
  let createdWorkspace = false;
  const originalPath = process.env.PATH;

  before(async () => {
    assert.ok(existsSync(samples), `${samples} is missing`);
    createdWorkspace = !existsSync(WORKSPACE);
    mkdirSync(WORKSPACE, { recursive: true });
    writeFileSync(join(WORKSPACE, NOTES), `${SENTENCE}\n\nnothing else here\n`);
    // stub agents: each records its working directory and arguments, one per line, into <stubs>/<name>.argv
    stubs = mkdtempSync('/tmp/pimem-stubs-');
    for (const name of AGENTS) {
      const file = join(stubs, name);
      writeFileSync(file, `#!/bin/sh\n{ printf 'cwd=%s\\n' "$(pwd -P)"; for a in "$@"; do printf 'arg=%s\\n' "$a"; done; } > '${stubs}/${name}.argv'\nsleep 30\n`);
      chmodSync(file, 0o755);
    }
    process.env.PATH = `${stubs}:${originalPath}`; // code-server, its extension host and terminals inherit it
    vs = await startVsCode({
      name: 'search',
      prepareHome: (home) => {
        cpSync(join(samples, 'claude'), join(home, '.claude'), { recursive: true });
        cpSync(join(samples, 'codex'), join(home, '.codex'), { recursive: true });
        cpSync(join(samples, 'pi'), join(home, '.pi'), { recursive: true });
        writeFileSync(join(home, '.profile'), `export PATH="${stubs}:$PATH"\n`);
      },
      settings: (dirs) => ({
        ...QUIET_WORKBENCH_SETTINGS,
        'editor.hover.delay': 200,
        'pimem.dbPath': join(dirs.run, 'memory.db'),
      }),
    });
    page = vs.page;
  });

  let step = 0;
  afterEach(async () => {
    step += 1;
    await screenshot(page, `search-step-${step}.png`).catch(() => undefined);
  });

  after(async () => {
    process.env.PATH = originalPath;
    await vs?.stop();
    rmSync(join(WORKSPACE, NOTES), { force: true });
    if (createdWorkspace) {
      rmSync(WORKSPACE, { recursive: true, force: true });
    }
    if (stubs !== undefined) {
      rmSync(stubs, { recursive: true, force: true });
    }
  });

  const sf = () => searchFrame(page);
  const cards = () => sf().locator('#results > li.card');

  /** Types a query into the focused search box (replacing what is there) and waits for its answer. */
  async function search(query) {
    const box = sf().locator('#query');
    await box.fill(query);
    await box.press('Enter');
    await until(page, () => sf().locator('#results').getAttribute('aria-busy'), (v) => v === 'false', `search ${query}`);
  }

  it('syncs without flashing "0 turns" at the end, and a Sync Now with nothing new says so', async () => {
    // every text the Pi Memory status bar item shows, from the first paint on
    await page.addInitScript(() => {
      window.__pimemStatus = [];
      new window.MutationObserver(() => {
        const texts = [...document.querySelectorAll('.statusbar-item')].map((e) => e.textContent.trim());
        const text = texts.find((t) => /Pi Memory|^\d+ turns?$/.test(t));
        if (text !== undefined && text !== window.__pimemStatus[window.__pimemStatus.length - 1]) {
          window.__pimemStatus.push(text);
        }
      }).observe(document, { subtree: true, childList: true, characterData: true });
    });
    await page.goto(folderUrl(vs.port, WORKSPACE));
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: NOTES }).waitFor({ timeout: 90_000 });
    await page.locator('.statusbar-item', { hasText: /^\s*\d+ turns?\s*$/ }).waitFor({ timeout: 120_000 });
    const shown = await page.evaluate(() => window.__pimemStatus);
    const syncing = shown.findIndex((t) => /syncing|indexing/.test(t));
    assert.ok(syncing >= 0, `the item showed the sync: ${JSON.stringify(shown)}`);
    assert.deepEqual(shown.slice(syncing).filter((t) => /^0 turns$/.test(t)), [], `no "0 turns" after the sync began: ${JSON.stringify(shown)}`);
    await runCommand(page, 'Pi Memory: Sync Now');
    const text = await notificationText(page, /Pi Memory: nothing new to sync/);
    assert.match(text, /Pi Memory: nothing new to sync: \d+ transcript files checked, none changed \(\d+\.\d s\)\./);
    await clearNotifications(page);
  });

  it('opens the sidebar with its keybinding, the cursor in the box, and searches as one types', async () => {
    // the container is in the activity bar with its own title
    await page.locator('.activitybar .action-item a[aria-label^="Pi Memory"]').first().waitFor({ timeout: 30_000 });
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: NOTES }).click();
    await page.keyboard.press('Control+Alt+Shift+M');
    await sf().locator('#query:focus').waitFor({ timeout: 30_000 });
    const welcome = await sf().locator('#welcome').innerText();
    assert.match(welcome, /Type to search your past conversations/, welcome);
    const csp = await sf().locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'nonce-/);

    await page.keyboard.type('flamingo', { delay: 40 }); // live: no Enter
    await cards().first().waitFor({ timeout: 30_000 });
    await until(page, () => sf().locator('#results').getAttribute('aria-busy'), (v) => v === 'false', 'search flamingo');
    const all = (await cards().allInnerTexts()).join('\n');
    assert.ok(all.includes('Why does the flamingo bug happen? Explain the cache invalidation in src/cache.py.'), all);
    assert.ok(all.includes(SENTENCE), all);
    const agents = new Set(await sf().locator('#results .agent').allInnerTexts());
    assert.deepEqual([...agents].sort(), ['Claude Code', 'Codex', 'Pi']);
    const marks = await sf().locator('#results mark').allInnerTexts();
    assert.ok(marks.length >= (await cards().count()) && marks.every((m) => m.toLowerCase() === 'flamingo'), marks.join(','));
    assert.match(await sf().locator('#searched').innerText(), /^searched: flamingo$/);
    assert.match(await sf().locator('#count').innerText(), /^\d+\+? turns?$/);
    assert.equal(await sf().locator('#count').getAttribute('aria-live'), 'polite');
    assert.equal(await sf().locator('#results').getAttribute('role'), 'list');
    assert.equal(await cards().first().getAttribute('role'), 'listitem');
    // every card has an "Open…" action and distinct accessible names
    const opens = await sf().locator('#results button.open').evaluateAll((els) => els.map((e) => [e.textContent, e.getAttribute('aria-label')]));
    assert.ok(opens.every(([label]) => label.startsWith('Open')), JSON.stringify(opens));
    const cardNames = await cards().evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')));
    assert.deepEqual(opens.map(([, name]) => name), cardNames.map((n) => `Open conversation: ${n}`));
    assert.ok(cardNames.some((n) => n.includes(': Why does the flamingo bug happen?')), cardNames.join(' | '));
    const oneCard = await cards().first().locator('button').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')));
    assert.equal(new Set(oneCard).size, oneCard.length, `distinct names in a card: ${oneCard}`);

    // keyboard: down from the box to the first card, down again to the second
    await sf().locator('#query').press('ArrowDown');
    await sf().locator('#results > li.card:nth-child(1):focus').waitFor();
    await page.keyboard.press('ArrowDown');
    await sf().locator('#results > li.card:nth-child(2):focus').waitFor();
    await readmeScreenshot(page, 'sidebar-search.png');
  });

  it('"this workspace only" and the agent filters ask the server again, and keep the focus', async () => {
    await search('cache');
    const everywhere = await cards().count();
    const folders = async () => new Set(await sf().locator('#results .cwd').evaluateAll((els) => els.map((e) => e.getAttribute('title'))));
    assert.ok([...(await folders())].some((f) => f !== WORKSPACE), `"cache" is in other folders too: ${[...(await folders())]}`);
    // no shared memory is configured: no scope switch, and no row names an author
    assert.equal(await sf().locator('#scopeLabel').isHidden(), true);
    assert.equal(await sf().locator('#results .author').count(), 0);
    await sf().locator('#workspaceOnly').check();
    const scoped = await until(page, () => cards().count(), (n) => n > 0 && n < everywhere, 'fewer rows in the workspace only');
    assert.deepEqual([...(await folders())], [WORKSPACE]);
    await sf().locator('#workspaceOnly:focus').waitFor();

    const codex = await sf().locator('#results > li.card[data-source="codex"]').count();
    assert.ok(codex > 0);
    await sf().locator('#agent-codex').uncheck();
    await until(page, () => sf().locator('#results > li.card[data-source="codex"]').count(), (n) => n === 0, 'no Codex rows');
    // the server was asked (not rows hidden): the others are all still there
    assert.equal(await cards().count(), scoped - codex);
    await sf().locator('#agent-codex:focus').waitFor();
    await sf().locator('#agent-codex').check();
    await until(page, () => cards().count(), (n) => n === scoped, 'the Codex rows back');

    // nothing in the workspace: a button searches everywhere
    await search('中文项目');
    await sf().locator('#welcome', { hasText: 'No past turns match.' }).waitFor();
    await sf().locator('#searchAll').click();
    await cards().first().waitFor({ timeout: 30_000 });
    assert.equal(await sf().locator('#workspaceOnly').isChecked(), false);
  });

  it('pages: "Show more" shows more turns', async () => {
    await search('e, a'); // two entities (a comma): nearly every turn has an "e" or an "a"
    assert.equal(await cards().count(), 20);
    const count = await sf().locator('#count').innerText();
    const exact = /^(\d+) turns$/.exec(count);
    assert.ok(exact !== null || count === '20+ turns', count);
    const first = await cards().evaluateAll((els) => els.map((e) => e.innerText));
    await sf().locator('#more').click();
    const shown = await until(page, () => cards().count(), (n) => n > 20, 'more rows');
    // a server with `total` pages by offset (its count is exact), an older one answers a bigger limit
    assert.ok(shown <= 40, String(shown));
    if (exact !== null) {
      assert.equal(shown, Math.min(40, Number(exact[1])));
    }
    const now = await cards().evaluateAll((els) => els.map((e) => e.innerText));
    assert.deepEqual(now.slice(0, 20), first, 'the first page stays, the new rows come after it');
    await screenshot(page, 'sidebar-paging.png');
  });

  it('"Resume in terminal" runs each agent itself in the session folder; copying confirms once', async () => {
    await search('flamingo');
    for (const source of AGENTS) {
      const record = join(stubs, `${source}.argv`);
      rmSync(record, { force: true });
      await sf().locator(`#results > li.card[data-source="${source}"] button.resume`).first().click();
      await until(page, () => existsSync(record) && readFileSync(record, 'utf8').includes('\n'), Boolean, `${source} started`);
      const lines = readFileSync(record, 'utf8').trim().split('\n');
      const args = lines.filter((l) => l.startsWith('arg=')).map((l) => l.slice(4));
      assert.equal(lines[0], `cwd=${WORKSPACE}`, `${source}: ${lines}`);
      if (source === 'claude') {
        assert.deepEqual(args, ['--resume', CLAUDE_SESSION]);
      } else if (source === 'codex') {
        assert.equal(args[0], 'resume');
        assert.match(args[1], /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
        assert.equal(args.length, 2);
      } else {
        assert.equal(args[0], '--session');
        assert.ok(args[1].startsWith(join(vs.dirs.home, '.pi', 'agent', 'sessions')) && existsSync(args[1]), args[1]);
        assert.equal(args.length, 2);
      }
    }
    await page.locator('.terminal-tabs-entry, .single-terminal-tab, .terminal-outer-container').first().waitFor({ timeout: 15_000 });
    await screenshot(page, 'resume-terminal.png');
    await clearNotifications(page);

    const copy = sf().locator('#results > li.card[data-source="claude"] button.copy').first();
    await copy.click();
    await notification(page, 'resume command copied').first().waitFor({ timeout: 15_000 });
    await copy.click();
    await copy.click();
    await page.waitForTimeout(1500);
    assert.equal(await notification(page, 'resume command copied').count(), 1, 'one toast, not one per click');
    const clipboard = await page.evaluate(() => navigator.clipboard.readText());
    assert.match(clipboard, new RegExp(`claude --resume ${CLAUDE_SESSION}`));
    await clearNotifications(page);
  });

  it('the hover on a selected sentence shows its conversation first, and links to the sidebar', async () => {
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ state: 'visible' });
    await input.fill(NOTES);
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: NOTES }).first().waitFor();
    await page.keyboard.press('Enter');
    const line = page.locator('.editor-instance .view-lines .view-line', { hasText: 'only show up after' }).first();
    await line.waitFor({ timeout: 30_000 });
    await line.click();
    await page.keyboard.press('Home');
    await page.keyboard.press('Shift+End');
    await page.locator('.editor-instance .selected-text').first().waitFor();
    const box = await line.boundingBox();
    await page.mouse.move(box.x + 400, box.y + 200);
    await page.mouse.move(box.x + 60, box.y + box.height / 2, { steps: 5 });
    const hover = page.locator('.monaco-hover', { hasText: 'Pi Memory' });
    await hover.waitFor({ state: 'visible', timeout: 30_000 });
    const text = await hover.innerText();
    const rows = text.split('You:').slice(1);
    assert.equal(rows.length, 3, text);
    assert.ok(rows[0].trim().startsWith(SENTENCE), `the sentence's own turn first: ${text}`);
    assert.match(text.split('You:')[0], /Codex · webshop/, 'it is a Codex turn of the workspace');
    assert.ok(!text.includes('**'), `no literal asterisks: ${text}`);
    await readmeScreenshot(page, 'hover-sentence.png');

    await hover.locator('a', { hasText: 'Search in the sidebar' }).click();
    await until(page, () => sf().locator('#query').inputValue(), (v) => v === SENTENCE, 'the sentence in the search box');
    await until(page, () => sf().locator('#results').getAttribute('aria-busy'), (v) => v === 'false', 'search the sentence');
    assert.ok((await cards().first().innerText()).includes(SENTENCE));
  });

  it('the results panel opens beside the editor, which keeps the focus, and comes back after a reload', async () => {
    await page.locator('.tabs-container .tab', { hasText: NOTES }).first().click();
    await runCommand(page, 'Pi Memory: Recall…');
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ state: 'visible' });
    await input.fill('flamingo');
    await page.keyboard.press('Enter');
    await resultsFrame(page).locator('article.result').first().waitFor({ timeout: 60_000 });
    const groups = page.locator('.part.editor .editor-group-container');
    assert.equal(await groups.count(), 2, 'the panel has a group of its own');
    await page.locator('.part.editor .editor-group-container.active .tab.active', { hasText: NOTES }).waitFor({ timeout: 10_000 });
    const actions = await resultsFrame(page).locator('article.result').first().locator('.actions button').allInnerTexts();
    assert.deepEqual(actions.filter((a) => a !== 'Show full text' && a !== 'Show whole turn'),
      ['Open conversation', 'Open raw transcript', 'Resume in terminal', 'Copy resume command']);
    await sf().locator('#workspaceOnly').check(); // remembered for this workspace
    await page.waitForTimeout(500);
    await readmeScreenshot(page, 'panel-beside.png');

    // as a user reloads: the workbench saves its state (editors, webview state) and loads again
    await runCommand(page, 'Developer: Reload Window');
    await page.waitForURL(/.*/, { waitUntil: 'load', timeout: 90_000 });
    await page.locator('.monaco-workbench').waitFor({ timeout: 90_000 });
    await page.locator('.tabs-container .tab', { hasText: 'Pi Memory: flamingo' }).waitFor({ timeout: 90_000 });
    await resultsFrame(page).locator('article.result').first().waitFor({ timeout: 90_000 });
    assert.ok((await resultsFrame(page).locator('article.result').count()) >= 3);
    if (!(await sf().locator('#query').isVisible().catch(() => false))) {
      await runCommand(page, 'Pi Memory: Search Past Conversations in the Sidebar');
    }
    await until(page, () => sf().locator('#workspaceOnly').isChecked(), Boolean, 'the toggle remembered', 60_000);
  });
});
