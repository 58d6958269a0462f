// Script of the conversation webview: renders a session's turns (their Markdown read by src/markdown.ts into
// blocks) and sends the actions back to the extension by turn index. Every character of a transcript is put into
// the DOM with textContent / createTextNode: no HTML is ever parsed from data, and no link is ever made from it.
import type { Block, Inline } from '../markdown';
import type { ConversationFromWebview, ConversationState, ConversationToWebview, ConversationTurn } from '../conversationProtocol';

interface VsCodeApi {
  postMessage(message: ConversationFromWebview): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const root = element('root');
const status = element('status');
let shownId: number | undefined;

function element(id: string): HTMLElement {
  const found = document.getElementById(id);
  if (found === null) {
    throw new Error(`the conversation shell has no #${id}`);
  }
  return found;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className !== undefined) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

function button(className: string, label: string, message: ConversationFromWebview, accessibleName?: string): HTMLButtonElement {
  const b = el('button', className, label);
  b.type = 'button';
  if (accessibleName !== undefined) {
    b.setAttribute('aria-label', accessibleName);
  }
  b.addEventListener('click', () => {
    b.disabled = true; // enabled again by the next state
    vscode.postMessage(message);
  });
  return b;
}

function inlines(parent: HTMLElement, pieces: readonly Inline[]): void {
  for (const piece of pieces) {
    switch (piece.kind) {
      case 'text':
        parent.appendChild(document.createTextNode(piece.text));
        break;
      case 'code':
        parent.appendChild(el('code', undefined, piece.text));
        break;
      case 'break':
        parent.appendChild(el('br'));
        break;
      case 'strong': {
        const strong = el('strong');
        inlines(strong, piece.children);
        parent.appendChild(strong);
        break;
      }
      case 'em': {
        const em = el('em');
        inlines(em, piece.children);
        parent.appendChild(em);
        break;
      }
    }
  }
}

function blocks(parent: HTMLElement, list: readonly Block[]): void {
  for (const block of list) {
    switch (block.kind) {
      case 'paragraph': {
        const p = el('p');
        inlines(p, block.inlines);
        parent.appendChild(p);
        break;
      }
      case 'heading': {
        // headings inside a turn stay below the turn's own heading level
        const h = el(`h${String(Math.min(6, block.level + 3))}` as 'h4', 'md-heading');
        inlines(h, block.inlines);
        parent.appendChild(h);
        break;
      }
      case 'code': {
        const pre = el('pre', 'code-block');
        if (block.language !== '') {
          pre.setAttribute('data-language', block.language);
          pre.appendChild(el('span', 'language', block.language));
        }
        pre.appendChild(el('code', undefined, block.text));
        parent.appendChild(pre);
        break;
      }
      case 'list': {
        const list = el(block.ordered ? 'ol' : 'ul');
        if (block.ordered && block.start !== 1) {
          list.setAttribute('start', String(block.start));
        }
        for (const item of block.items) {
          const li = el('li');
          inlines(li, item);
          list.appendChild(li);
        }
        parent.appendChild(list);
        break;
      }
      case 'quote': {
        const quote = el('blockquote');
        blocks(quote, block.blocks);
        parent.appendChild(quote);
        break;
      }
      case 'rule':
        parent.appendChild(el('hr'));
        break;
    }
  }
}

function part(className: string, label: string, content: readonly Block[], empty: string): HTMLElement {
  const section = el('section', `part ${className}`);
  section.appendChild(el('h3', 'speaker', label));
  const body = el('div', 'markdown');
  if (content.length === 0) {
    body.appendChild(el('p', 'none', empty));
  } else {
    blocks(body, content);
  }
  section.appendChild(body);
  return section;
}

const ACTION_WORDS: Record<string, string> = { read: 'read', write: 'wrote', edit: 'edited', delete: 'deleted' };

function turnView(state: ConversationState, turn: ConversationTurn): HTMLElement {
  const article = el('article', turn.hit ? 'turn hit' : 'turn');
  article.id = `turn-${String(turn.index)}`;
  article.setAttribute('role', 'listitem');
  article.setAttribute('aria-label', `Turn ${String(turn.position)} of ${String(state.turnCount)}, ${turn.date}${turn.hit ? ', the recalled turn' : ''}`);
  if (turn.hit) {
    article.setAttribute('aria-current', 'true');
  }
  const meta = el('div', 'meta');
  meta.appendChild(el('span', 'position', `Turn ${String(turn.position)}`));
  meta.appendChild(el('span', 'date', turn.date));
  if (turn.hit) {
    meta.appendChild(el('span', 'hit-label', 'recalled turn'));
  }
  article.appendChild(meta);
  article.appendChild(part('user', 'You', turn.user, '(no prompt)'));
  if (turn.toolNames.length > 0) {
    const tools = el('p', 'tools');
    tools.appendChild(el('span', 'label', 'Tools: '));
    turn.toolNames.forEach((name, n) => {
      if (n > 0) {
        tools.appendChild(document.createTextNode(', '));
      }
      tools.appendChild(el('code', name === turn.editTool ? 'tool edited' : 'tool', name));
    });
    article.appendChild(tools);
  }
  if (turn.files.length > 0) {
    const files = el('ul', 'files');
    files.setAttribute('aria-label', 'Files its tool calls touched');
    for (const file of turn.files) {
      const li = el('li', file.edited === true ? 'edited' : undefined);
      li.appendChild(el('span', 'action', `${ACTION_WORDS[file.action] ?? file.action} `));
      li.appendChild(el('code', 'path', file.path));
      if (file.edited === true) {
        // opened from the memory of a line: this is the edit that wrote it
        li.appendChild(el('span', 'edit-label', ' — the edit of the lines you asked about'));
      }
      files.appendChild(li);
    }
    article.appendChild(files);
  }
  article.appendChild(part('reply', state.agent, turn.reply, '(no reply)'));
  const actions = el('div', 'actions');
  if (turn.hidden > 0) {
    const more = `Show more of this turn (${turn.hidden.toLocaleString('en-US')} characters not shown)`;
    actions.appendChild(button('more-text', more, { type: 'moreText', index: turn.index }, `${more}, turn ${String(turn.position)}`));
  }
  if (turn.truncated) {
    actions.appendChild(button('whole', 'Show whole turn', { type: 'whole', index: turn.index }, `Show whole turn ${String(turn.position)}`));
  }
  if (turn.canOpenRaw) {
    actions.appendChild(
      button('raw', 'Open raw transcript at this line', { type: 'openRaw', index: turn.index }, `Open raw transcript at turn ${String(turn.position)}`),
    );
  }
  article.appendChild(actions);
  return article;
}

function render(state: ConversationState): void {
  root.replaceChildren();
  const header = el('header');
  header.appendChild(el('h1', 'title', `${state.agent} conversation in ${state.folder}`));
  const meta = el('p', 'session-meta');
  meta.appendChild(el('span', 'agent', state.agent));
  const cwd = el('span', 'cwd', state.cwd);
  meta.appendChild(cwd);
  meta.appendChild(el('span', 'started', `started ${state.started}`));
  meta.appendChild(el('span', 'count', state.from === 0 ? 'no turns' : `turns ${String(state.from)}–${String(state.to)} of ${String(state.turnCount)}`));
  header.appendChild(meta);
  const actions = el('div', 'actions');
  if (state.canContinueInPi) {
    actions.appendChild(button('continue', 'Continue in Pi', { type: 'continueInPi' }));
  }
  if (state.canCopyResume) {
    actions.appendChild(button('copy', 'Copy resume command', { type: 'copyResume' }));
  }
  header.appendChild(actions);
  root.appendChild(header);

  if (state.moreBefore) {
    root.appendChild(button('more earlier', 'Show earlier turns', { type: 'more', direction: 'earlier' }));
  }
  const list = el('div', 'turns');
  list.setAttribute('role', 'list');
  for (const turn of state.turns) {
    list.appendChild(turnView(state, turn));
  }
  root.appendChild(list);
  if (state.moreAfter) {
    root.appendChild(button('more later', 'Show later turns', { type: 'more', direction: 'later' }));
  }
  if (shownId !== state.id) {
    shownId = state.id;
    const hit = state.turns.find((t) => t.hit);
    const target = hit === undefined ? undefined : document.getElementById(`turn-${String(hit.index)}`);
    if (target !== null && target !== undefined) {
      // below the sticky header (agent, folder, date), which stays in view
      window.scrollTo({ top: target.getBoundingClientRect().top + window.scrollY - header.offsetHeight - 8 });
    }
    status.textContent = hit === undefined ? `${state.agent} conversation opened` : `${state.agent} conversation opened at turn ${String(hit.position)}`;
  }
}

window.addEventListener('message', (event: MessageEvent<ConversationToWebview>) => {
  const message = event.data;
  if (message.type === 'state') {
    render(message.state);
  } else {
    root.replaceChildren(el('p', message.type === 'error' ? 'error' : 'loading', message.message));
  }
});
vscode.postMessage({ type: 'ready' });
