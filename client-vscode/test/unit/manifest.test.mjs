// What users see of package.json: command names in the palette and menus, the walkthrough, the listing.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const client = fileURLToPath(new URL('../..', import.meta.url));
const manifest = JSON.parse(readFileSync(join(client, 'package.json'), 'utf8'));
const { commands, menus, walkthroughs } = manifest.contributes;
const contributed = new Set(commands.map((c) => c.command));
const hiddenFromPalette = new Set((menus.commandPalette ?? []).filter((m) => m.when === 'false').map((m) => m.command));
const paletteCommands = commands.filter((c) => !hiddenFromPalette.has(c.command));
/** Menus whose commands act on the thing they are invoked on (a tree item, a webview element). */
const ITEM_MENUS = ['view/item/context', 'webview/context', 'comments/commentThread/context'];
/** Hidden commands that the extension's own tree items and webviews run (as a TreeItem's `command`, or on a
 *  webview message) rather than a menu; each must be named by the source that runs it. */
const RUN_BY_VIEWS = new Map([
  ['pimem.openConversation', ['src/fileHistory.ts', 'src/sessionsTree.ts', 'src/rowActions.ts']],
  // the links of the line-history hover
  ['pimem.lineHistory.open', ['src/lineHistory.ts']],
]);

/** The palette's label of a command, and whether typing `word` finds it: the palette matches the start of
 *  a word of "Category: Title" (as well as contiguous substrings, which this is stricter than). */
const label = (c) => (c.category ? `${c.category}: ${c.title}` : c.title);
const findsWord = (text, word) => new RegExp(`(^|[^\\p{L}\\p{N}])${word}`, 'iu').test(text);

test('every command in the palette has the category "Pi Memory"', () => {
  assert.ok(paletteCommands.length >= 8);
  for (const command of paletteCommands) {
    assert.equal(command.category, 'Pi Memory', `${command.command} ("${command.title}")`);
    assert.ok(!command.title.startsWith('Pi Memory'), `${command.command}: the category already says Pi Memory`);
  }
});

test('commands hidden from the palette are menu entries, and every command of an item menu is hidden', () => {
  for (const id of hiddenFromPalette) {
    assert.ok(contributed.has(id), `commandPalette names ${id}, which is no contributed command`);
    const elsewhere = Object.entries(menus).some(([menu, items]) => menu !== 'commandPalette' && items.some((m) => m.command === id));
    const runners = RUN_BY_VIEWS.get(id) ?? [];
    for (const source of runners) {
      assert.ok(readFileSync(join(client, source), 'utf8').includes(`'${id}'`), `${source} no longer runs ${id}`);
    }
    assert.ok(elsewhere || runners.length > 0, `${id} is hidden from the palette and in no menu: nothing can run it`);
  }
  for (const menu of ITEM_MENUS) {
    for (const item of menus[menu] ?? []) {
      assert.ok(hiddenFromPalette.has(item.command), `${item.command} (${menu}) needs its item: hide it with commandPalette "when": "false"`);
    }
  }
  for (const [menu, items] of Object.entries(menus)) {
    for (const item of items) {
      assert.ok(contributed.has(item.command), `${menu} names ${item.command}, which is no contributed command`);
    }
  }
});

test('the editor context menu reads "Pi Memory: Recall Selection"', () => {
  const entries = menus['editor/context'].map((m) => commands.find((c) => c.command === m.command));
  const recall = entries.find((c) => c.command === 'pimem.recallSelectionFromMenu');
  // menus show a command's title without its category
  assert.equal(recall?.title, 'Pi Memory: Recall Selection');
  assert.ok(hiddenFromPalette.has(recall.command), 'the palette already has Pi Memory: Recall Selection (Search Conversation History)');
});

test('typing claude, codex, conversation or history in the palette finds the recall command', () => {
  // contributes.commands has no keywords field: the palette searches the category and title only
  for (const field of ['keywords', 'tags', 'aliases']) {
    assert.ok(commands.every((c) => !(field in c)), `commands have no "${field}" (VS Code ignores it)`);
  }
  const recall = commands.find((c) => c.command === 'pimem.recall');
  for (const word of ['claude', 'codex', 'conversation', 'history']) {
    assert.ok(findsWord(label(recall), word), `"${word}" finds ${label(recall)}`);
    const found = paletteCommands.filter((c) => findsWord(label(c), word)).map((c) => c.command);
    assert.ok(found.length >= 2, `"${word}" finds ${found}`);
  }
  // the titles the e2e suite and the README use still start the labels
  for (const [id, start] of [['pimem.recall', 'Recall…'], ['pimem.recallSelection', 'Recall Selection'], ['pimem.sync', 'Sync Now'], ['pimem.rebuild', 'Rebuild Memory']]) {
    assert.ok(commands.find((c) => c.command === id).title.startsWith(start), id);
  }
});

test('the walkthrough covers sync, search, hover, migrate and agents, and its media and commands exist', () => {
  assert.equal(walkthroughs.length, 1);
  const [walkthrough] = walkthroughs;
  assert.match(walkthrough.title, /Pi Memory/);
  assert.deepEqual(walkthrough.steps.map((s) => s.id), ['sync', 'search', 'hover', 'migrate', 'agents']);
  for (const step of walkthrough.steps) {
    const media = step.media;
    assert.ok(media && (media.markdown || media.image || media.svg), `${step.id} has media`);
    for (const path of [media.markdown, media.svg, ...(typeof media.image === 'object' ? Object.values(media.image) : [media.image])]) {
      if (path !== undefined) {
        assert.ok(existsSync(join(client, path)), `${step.id}: ${path} exists`);
      }
    }
    if (media.image !== undefined) {
      assert.ok(media.altText, `${step.id}: an image needs altText`);
    }
    const links = [...step.description.matchAll(/\]\(command:([\w.]+)/g)].map((m) => m[1]);
    const events = (step.completionEvents ?? []).filter((e) => e.startsWith('onCommand:')).map((e) => e.slice('onCommand:'.length));
    for (const id of [...links, ...events]) {
      assert.ok(contributed.has(id), `${step.id} names ${id}, which is no contributed command`);
    }
    assert.ok((step.completionEvents ?? []).length > 0, `${step.id} can be completed`);
    // a markdown medium's own links must resolve too (no image yet: none may point at a missing file)
    if (media.markdown !== undefined) {
      const text = readFileSync(join(client, media.markdown), 'utf8');
      for (const [, target] of text.matchAll(/!\[[^\]]*\]\(([^)\s]+)/g)) {
        assert.ok(existsSync(join(client, media.markdown, '..', target)), `${media.markdown}: image ${target}`);
      }
    }
  }
});

test('the listing has its metadata: icon (128x128 PNG), banner, repository, README and CHANGELOG without broken images', () => {
  const icon = readFileSync(join(client, manifest.icon));
  assert.equal(icon.toString('latin1', 1, 4), 'PNG');
  assert.deepEqual([icon.readUInt32BE(16), icon.readUInt32BE(20)], [128, 128]);
  assert.match(manifest.galleryBanner.color, /^#[0-9A-Fa-f]{6}$/);
  assert.ok(['dark', 'light'].includes(manifest.galleryBanner.theme));
  assert.match(manifest.repository.url, /^https:\/\//);
  assert.ok(manifest.displayName === 'Pi Memory' && manifest.contributes.configuration.title === 'Pi Memory');
  for (const doc of ['README.md', 'CHANGELOG.md']) {
    const text = readFileSync(join(client, doc), 'utf8');
    assert.ok(text.length > 200, `${doc} has content`);
    for (const [, target] of text.matchAll(/!\[[^\]]*\]\(([^)\s]+)/g)) {
      assert.ok(/^https:/.test(target) || existsSync(join(client, target)), `${doc}: image ${target} exists`);
    }
  }
});

test('which conversation wrote a line: the annotation is opt-in, the hover on, the command in the palette and the editor menu', () => {
  const settings = manifest.contributes.configuration.properties;
  assert.equal(settings['pimem.lineAnnotation.enabled'].default, false);
  assert.equal(settings['pimem.lineHistory.hover'].default, true);
  assert.equal(commands.find((c) => c.command === 'pimem.whichConversation')?.title, 'Which Conversation Wrote This?');
  const menu = commands.find((c) => c.command === 'pimem.whichConversationFromMenu');
  assert.equal(menu?.title, 'Pi Memory: Which Conversation Wrote This?');
  assert.ok(menus['editor/context'].some((m) => m.command === menu.command));
  assert.ok(hiddenFromPalette.has(menu.command) && hiddenFromPalette.has('pimem.lineHistory.open'));
});
