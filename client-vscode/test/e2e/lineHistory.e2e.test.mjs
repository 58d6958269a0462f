// End-to-end test of the memory of each line (issue 23) in a real VS Code (code-server + headless Chromium): on a
// file whose lines Pi, Codex and Claude Code each wrote (lineEdits.mjs) and one the person wrote, the current-line
// annotation and the hover appear on each agent's line and on none of the person's; the hover's link opens the
// conversation at that turn with the edit highlighted; "Which Conversation Wrote This?" lists the three
// conversations of a selection; an unsaved buffer is attributed as it is (the client sends its text).
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { after, afterEach, before, describe, it } from 'node:test';
import { join } from 'node:path';
import { CLAUDE_PROMPT, CODEX_PROMPT, LINES, PI_PROMPT, writeLineEditHistory } from './lineEdits.mjs';
import { clientDir, EXTENSION_ID, folderUrl, QUIET_WORKBENCH_SETTINGS, runCommand, screenshot, startVsCode } from './harness.mjs';

/** A screenshot, copied into media/screenshots for the README with PIMEM_README_SCREENSHOTS=1 (as search.e2e does). */
async function readmeScreenshot(page, name) {
  const path = await screenshot(page, name);
  if (process.env.PIMEM_README_SCREENSHOTS === '1') {
    const dir = join(clientDir, 'media', 'screenshots');
    mkdirSync(dir, { recursive: true });
    copyFileSync(path, join(dir, name));
  }
}

const AGENTS = [
  ['pi', 'Pi', PI_PROMPT],
  ['codex', 'Codex', CODEX_PROMPT],
  ['claude', 'Claude Code', CLAUDE_PROMPT],
];

describe('Pi Memory: which conversation wrote each line, in VS Code', { timeout: 600_000 }, () => {
  let vs;
  let page;
  let fixture;

  before(async () => {
    vs = await startVsCode({
      name: 'line-history',
      prepareHome: (home) => {
        fixture = writeLineEditHistory(home);
      },
      settings: (dirs) => ({
        ...QUIET_WORKBENCH_SETTINGS,
        'editor.hover.delay': 200,
        'pimem.lineAnnotation.enabled': true,
        'pimem.fileHistory.codeLens': false,
        'pimem.dbPath': join(dirs.run, 'memory.db'),
      }),
    });
    page = vs.page;
  });

  let step = 0;
  afterEach(async () => {
    step += 1;
    await screenshot(page, `line-history-step-${step}.png`).catch(() => undefined);
  });

  after(async () => {
    await vs?.stop();
  });

  const editor = () => page.locator('.editor-group-container').first().locator('.editor-instance');
  const line = (text) => editor().locator('.view-lines .view-line', { hasText: text }).first();
  /**
   * What the decorations of the code editor show: the text of the content VS Code puts before and after lines
   * (CSS `content` of ::before / ::after, and injected text, which is DOM text).
   */
  const decorationText = () =>
    editor().evaluate((root) => {
      const out = [];
      for (const el of root.querySelectorAll('.view-lines *, .view-overlays *')) {
        for (const pseudo of ['::before', '::after']) {
          const content = el.ownerDocument.defaultView.getComputedStyle(el, pseudo).content;
          if (content !== 'none' && content !== 'normal' && content !== '""') {
            out.push(content);
          }
        }
      }
      out.push(root.querySelector('.view-lines')?.textContent ?? '');
      return out.join('\n');
    });
  /** Puts the cursor at the end of a line (a click on one of its words, then End). */
  async function cursorTo(text) {
    await line(text).locator('span span').filter({ hasText: /[A-Za-z]{3}/ }).first().click();
    await page.keyboard.press('End');
  }
  async function waitForAnnotation(pattern, timeout = 30_000) {
    const deadline = Date.now() + timeout;
    let shown = '';
    while (Date.now() < deadline) {
      shown = await decorationText();
      if (pattern.test(shown)) {
        return shown;
      }
      await page.waitForTimeout(200);
    }
    throw new Error(`no annotation ${pattern}: ${shown}`);
  }
  const ANNOTATION = / · (just now|yesterday|an? \w+ ago|\d+ \w+ ago) · /;
  /** Hovers the cursor's line (its last token) and returns the line-history hover, or undefined within `wait` ms. */
  async function hoverLine(text, wait = 20_000) {
    await page.mouse.move(5, 5); // away first: a hover shown before must close
    await page.locator('.monaco-hover', { hasText: 'written by' }).waitFor({ state: 'hidden', timeout: 5_000 }).catch(() => undefined);
    // a word of the line (its last span is the annotation's, which has no box of its own)
    const token = line(text).locator('span span').filter({ hasText: /[A-Za-z]{3}/ }).first();
    let box = null;
    for (let i = 0; i < 20 && box === null; i++) {
      box = await token.boundingBox(); // null while the line is being rendered again (its decorations changed)
      if (box === null) {
        await page.waitForTimeout(100);
      }
    }
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2, { steps: 4 });
    const hover = page.locator('.monaco-hover', { hasText: 'written by' });
    try {
      await hover.waitFor({ state: 'visible', timeout: wait });
      return hover;
    } catch {
      return undefined;
    }
  }

  it('annotates the line the cursor rests on with the agent, the time and the prompt of the turn that wrote it', async () => {
    await page.goto(folderUrl(vs.port, fixture.workspace));
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'README.md' }).waitFor({ timeout: 90_000 });
    await page.locator('.statusbar-item', { hasText: /^\s*\d+ turns?\s*$/ }).waitFor({ timeout: 120_000 });
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ state: 'visible' });
    await input.fill('pricing.py');
    await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'pricing.py' }).first().waitFor();
    await page.keyboard.press('Enter');
    await line(LINES.person).waitFor({ timeout: 30_000 });

    for (const [key, agent, prompt] of AGENTS) {
      await cursorTo(LINES[key]);
      await waitForAnnotation(new RegExp(`${agent} · (\\d+ days ago|yesterday) · ${escape(prompt.slice(0, 40))}`));
      await screenshot(page, `line-annotation-${key}.png`);
    }
    // the person's line: the annotation of the line before goes, and none comes
    await cursorTo(LINES.person);
    await page.waitForTimeout(1500);
    const shown = await decorationText();
    assert.doesNotMatch(shown, ANNOTATION, `no annotation on the person's line: ${shown}`);
  });

  it('shows "written by" in a hover on each agent\'s line and none on the person\'s line', async () => {
    for (const [key, agent, prompt] of AGENTS) {
      await cursorTo(LINES[key]);
      const hover = await hoverLine(LINES[key]);
      assert.ok(hover !== undefined, `a hover on ${agent}'s line`);
      const text = await hover.innerText();
      assert.match(text, new RegExp(`written by ${agent} · (\\d+ days ago|yesterday) · ${escape(prompt)}`), text);
      assert.match(text, /Open conversation/);
      await screenshot(page, `line-hover-${key}.png`);
    }
    await cursorTo(LINES.person);
    assert.equal(await hoverLine(LINES.person, 4_000), undefined, 'no hover on the person\'s line');
  });

  it('opens the conversation at the turn from the hover, with the edit highlighted', async () => {
    await cursorTo(LINES.claude);
    const hover = await hoverLine(LINES.claude);
    assert.ok(hover !== undefined);
    await hover.locator('a', { hasText: 'Open conversation' }).click();
    const wv = page
      .frameLocator(`iframe.webview.ready[src*="extensionId=${EXTENSION_ID}"]:not([src*="purpose=webviewView"])`)
      .frameLocator('iframe#active-frame');
    const hit = wv.locator('article.turn.hit');
    await hit.waitFor({ timeout: 60_000 });
    assert.equal((await hit.locator('.part.user .markdown').innerText()).trim(), CLAUDE_PROMPT);
    const edited = hit.locator('ul.files li.edited');
    assert.equal(await edited.count(), 1);
    assert.match(await edited.innerText(), new RegExp(`edited ${escape(fixture.file)}`));
    assert.equal(await hit.locator('.tools code.tool.edited').innerText(), 'Edit');
    // the other turn of that conversation is not the hit and has no highlighted edit
    assert.equal(await wv.locator('article.turn').count(), 2);
    assert.equal(await wv.locator('li.edited').count(), 1);
    await readmeScreenshot(page, 'line-history.png');
  });

  it('"Which Conversation Wrote This?" lists the conversations of the selected lines and opens the chosen one', async () => {
    await line(LINES.person).locator('span span').first().click();
    await page.keyboard.press('Control+A');
    await runCommand(page, 'Pi Memory: Which Conversation Wrote This?');
    const rows = page.locator('.quick-input-widget .monaco-list-row');
    await rows.filter({ hasText: CODEX_PROMPT }).first().waitFor({ timeout: 30_000 });
    const texts = await rows.evaluateAll((els) => els.map((el) => el.textContent.replace(/\s+/g, ' ').trim()));
    // one conversation each, newest first (the separators name them)
    const order = [CLAUDE_PROMPT, CODEX_PROMPT, PI_PROMPT].map((p) => texts.findIndex((t) => t.includes(p)));
    assert.ok(order.every((i) => i >= 0) && order[0] < order[1] && order[1] < order[2], texts.join(' | '));
    assert.ok(texts.some((t) => t.includes('Codex conversation')), texts.join(' | '));
    assert.ok(!texts.some((t) => t.includes(LINES.person)), 'the person\'s line is no conversation');
    await screenshot(page, 'line-which-conversation.png');
    await rows.filter({ hasText: CODEX_PROMPT }).first().click();
    const wv = page
      .frameLocator(`iframe.webview.ready[src*="extensionId=${EXTENSION_ID}"]:not([src*="purpose=webviewView"])`)
      .frameLocator('iframe#active-frame');
    await wv.locator('h1.title', { hasText: 'Codex conversation' }).waitFor({ timeout: 60_000 });
    assert.equal((await wv.locator('article.turn.hit .part.user .markdown').innerText()).trim(), CODEX_PROMPT);
    assert.equal(await wv.locator('article.turn.hit ul.files li.edited').count(), 1);
  });

  it('attributes an unsaved buffer as it is: lines moved down by an edit keep their annotation', async () => {
    await line(LINES.person).locator('span span').first().click();
    await page.keyboard.press('Home');
    await page.keyboard.type('# a line typed now, not saved\n');
    await cursorTo(LINES.codex);
    await waitForAnnotation(new RegExp(`Codex · (\\d+ days ago|yesterday) · ${escape(CODEX_PROMPT.slice(0, 40))}`));
    await cursorTo('# a line typed now, not saved');
    await page.waitForTimeout(1500);
    assert.doesNotMatch(await decorationText(), ANNOTATION, 'nothing on the new line');
  });
});

function escape(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
