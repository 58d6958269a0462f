// What a new user finds in a real VS Code (code-server + headless Chromium) before any history exists: the
// palette finds the commands by the agents' names and "conversation"/"history", the editor context menu reads
// "Pi Memory: Recall Selection", and the walkthrough opens with its five steps.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { folderUrl, QUIET_WORKBENCH_SETTINGS, runCommand, screenshot, startVsCode } from './harness.mjs';

describe('Pi Memory as a new user finds it', { timeout: 300_000 }, () => {
  let vs;
  let page;
  const workspace = mkdtempSync(join(tmpdir(), 'pimem-listing-'));
  const NOTES = 'notes.txt';

  before(async () => {
    writeFileSync(join(workspace, NOTES), 'flamingo cache\n');
    vs = await startVsCode({
      name: 'listing',
      prepareHome: () => undefined,   // no agent history yet
      settings: (dirs) => ({ ...QUIET_WORKBENCH_SETTINGS, 'pimem.dbPath': join(dirs.run, 'memory.db') }),
    });
    page = vs.page;
    await page.goto(folderUrl(vs.port, workspace));
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: NOTES }).waitFor({ timeout: 90_000 });
  });

  let step = 0;
  afterEach(async () => {
    step += 1;
    await screenshot(page, `listing-${step}.png`).catch(() => undefined);
  });

  after(async () => {
    await vs?.stop();
    rmSync(workspace, { recursive: true, force: true });
  });

  it('typing claude, codex, conversation or history in the palette lists the recall command', async () => {
    const input = page.locator('.quick-input-widget .quick-input-box input');
    const recall = page.locator('.quick-input-widget .monaco-list-row', { hasText: 'Pi Memory: Recall… (Search Claude Code, Codex and Pi Conversation History)' });
    for (const word of ['claude', 'codex', 'conversation', 'history']) {
      // the extension's commands appear once it is loaded: retry the first word a while
      for (let attempt = 0; ; attempt++) {
        await page.keyboard.press('F1');
        await input.waitFor({ state: 'visible', timeout: 5000 });
        await input.fill(`>${word}`);
        try {
          await recall.first().waitFor({ timeout: 3000 });
          break;
        } catch (error) {
          await page.keyboard.press('Escape');
          if (attempt >= 20) {
            throw error;
          }
        }
      }
      await page.keyboard.press('Escape');
    }
  });

  it('the editor context menu on a selection offers "Pi Memory: Recall Selection"', async () => {
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: NOTES }).dblclick();
    const word = page.locator('.monaco-editor .view-lines span', { hasText: 'flamingo' }).first();
    await word.waitFor({ timeout: 30_000 });
    await word.dblclick();
    await word.click({ button: 'right' });
    await page.locator('.context-view .action-label', { hasText: 'Pi Memory: Recall Selection' }).waitFor({ timeout: 10_000 });
    await page.keyboard.press('Escape');
  });

  it('the walkthrough opens with its five steps', async () => {
    await runCommand(page, 'Welcome: Open Walkthrough...');
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'Get Started with Pi Memory' }).first().click();
    const walkthrough = page.locator('.gettingStartedContainer');
    for (const title of ['Sync your conversation history', 'Search past conversations', 'Hover a selection',
      'Continue Codex sessions in Pi', 'Let your agents ask their memory']) {
      await walkthrough.locator('.getting-started-step', { hasText: title }).first().waitFor({ timeout: 30_000 });
    }
    // the selected step's Markdown medium (media/walkthrough/sync.md) renders beside it, in a webview frame
    const deadline = Date.now() + 30_000;
    for (;;) {
      const texts = await Promise.all(page.frames().map((f) => f.locator('body').innerText({ timeout: 1000 }).catch(() => '')));
      if (texts.some((t) => t.includes('Pi Memory reads the transcripts your coding agents already write'))) {
        break;
      }
      assert.ok(Date.now() < deadline, 'the walkthrough shows sync.md');
      await page.waitForTimeout(500);
    }
  });
});
