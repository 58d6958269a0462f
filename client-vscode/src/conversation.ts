// "Open" a past conversation: `pimem.openConversation` {sessionId, turnId?} shows the session rendered (prompts
// and replies as Markdown, tool names, touched files, the hit turn scrolled to and highlighted) in a webview
// beside the current editor, which stays the active editor of its group. The HTML is a fixed shell under a strict
// Content-Security-Policy; the turns are posted as data (src/conversationProtocol.ts) and built by
// dist/conversation.js with textContent only. Secondary actions: the raw transcript at a turn's line, a resume
// command, and "Continue in Pi" for a Codex session (src/continueInPi.ts).
import * as vscode from 'vscode';
import { continueInPi } from './continueInPi';
import { conversationState, MORE_CHARS, parseConversationMessage, PIECE_CHARS, type ConversationToWebview } from './conversationProtocol';
import { parseOpenConversationArgs } from './historyArgs';
import { isDatabaseFile } from './rawTranscript';
import { SessionRequest, TurnRequest, type SessionResult, type SessionTurn } from './protocol';
import { folderName, plainText, sourceLabel } from './render';
import { describeError, type PimemServer } from './server';
import { webviewPage } from './webviewPage';

export const CONVERSATION_VIEW_TYPE = 'pimem.conversation';
/** Turns loaded on each side of the hit, and per "Show earlier/later turns". */
const WINDOW = 50;
/** The most turns the panel holds at once (the server answers at most 200 per side). */
const MAX_TURNS = 400;

interface Shown {
  session: SessionResult;
  turns: SessionTurn[];
  firstPosition: number;
  hitTurnId: string | undefined;
  /** The edit to highlight in the hit turn (opened from the memory of a line). */
  edit: { file?: string; tool?: string };
  id: number;
  /** Characters shown of a long turn's prompt and reply, by turn id, once "Show more" was asked (src/conversationProtocol.ts). */
  shownChars: Map<string, number>;
}

export class ConversationPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private shown: Shown | undefined;
  private opened = 0;
  /** The latest open request: an older, slower one must not replace it. */
  private generation = 0;
  private last: ConversationToWebview | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly server: PimemServer,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  async open(raw: unknown): Promise<void> {
    const args = parseOpenConversationArgs(raw);
    if (args === undefined) {
      void vscode.window.showWarningMessage('Pi Memory: open a conversation from the Sessions or File History view, or from a search result.');
      return;
    }
    const generation = ++this.generation;
    this.ensurePanel();
    this.post({ type: 'loading', message: 'Loading the conversation…' });
    let session: SessionResult;
    try {
      session = await this.server.request(SessionRequest, { sessionId: args.sessionId, turnId: args.turnId, before: WINDOW, after: WINDOW });
    } catch (error) {
      if (generation === this.generation) {
        this.post({ type: 'error', message: `Could not load the conversation: ${describeError(error)}` });
      }
      return;
    }
    if (generation !== this.generation) {
      return;
    }
    this.shown = { session, turns: session.turns, firstPosition: session.firstPosition, hitTurnId: args.turnId, edit: { file: args.file, tool: args.tool }, id: ++this.opened, shownChars: new Map() };
    this.render();
  }

  dispose(): void {
    this.panel?.dispose();
  }

  private render(): void {
    const shown = this.shown;
    if (shown === undefined || this.panel === undefined) {
      return;
    }
    const { session } = shown;
    this.panel.title = `${sourceLabel(session.source)}: ${plainText(folderName(session.cwd), 40)}`;
    this.post({ type: 'state', state: conversationState(session, shown.turns, shown.firstPosition, shown.hitTurnId, shown.id, shown.shownChars, shown.edit) });
  }

  private post(message: ConversationToWebview): void {
    this.last = message;
    void this.panel?.webview.postMessage(message);
  }

  private ensurePanel(): vscode.WebviewPanel {
    if (this.panel !== undefined) {
      this.panel.reveal(this.panel.viewColumn, true);
      return this.panel;
    }
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    // Beside the active editor, focus kept there: the code being read stays the active editor of its group.
    const panel = vscode.window.createWebviewPanel(
      CONVERSATION_VIEW_TYPE,
      'Pi Memory: Conversation',
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, enableCommandUris: false, enableFindWidget: true, localResourceRoots: [dist, media] },
    );
    panel.webview.html = this.html(panel.webview);
    panel.webview.onDidReceiveMessage((raw: unknown) => this.onMessage(raw));
    panel.onDidDispose(() => {
      if (this.panel === panel) {
        this.panel = undefined;
        this.shown = undefined;
      }
    });
    this.panel = panel;
    return panel;
  }

  private html(webview: vscode.Webview): string {
    return webviewPage(webview, this.extensionUri, {
      script: 'conversation.js',
      style: 'conversation.css',
      title: 'Pi Memory: Conversation',
      body: `<div id="status" class="visually-hidden" role="status" aria-live="polite"></div>
<main id="root"></main>`,
    });
  }

  private onMessage(raw: unknown): void {
    const message = parseConversationMessage(raw);
    if (message === undefined) {
      this.log.warn('Ignored an unexpected message from the conversation panel.');
      return;
    }
    const shown = this.shown;
    if (message.type === 'ready') {
      if (this.last !== undefined) {
        this.post(this.last);
      }
      return;
    }
    if (shown === undefined) {
      return;
    }
    switch (message.type) {
      case 'openRaw': {
        const turn = shown.turns[message.index];
        if (turn !== undefined) {
          void this.openRaw(turn);
        }
        break;
      }
      case 'whole':
        void this.showWholeTurn(shown, message.index);
        break;
      case 'moreText': {
        const turn = shown.turns[message.index];
        if (turn !== undefined) {
          shown.shownChars.set(turn.turnId, (shown.shownChars.get(turn.turnId) ?? PIECE_CHARS) + MORE_CHARS);
        }
        this.render();
        break;
      }
      case 'more':
        void this.loadMore(shown, message.direction);
        break;
      case 'continueInPi':
        void continueInPi(this.server, this.log, shown.session.sessionId).finally(() => this.render());
        break;
      case 'copyResume':
        void this.copyResume(shown.session);
        break;
    }
  }

  /** The transcript file at the turn's line, in the panel's group (a preview tab). */
  private async openRaw(turn: SessionTurn): Promise<void> {
    if (isDatabaseFile(turn.jsonlPath)) {
      // OpenCode's and Cursor's stores: binary, and an editor could write them back; this view is the conversation
      void vscode.window.showInformationMessage('Pi Memory: this session is stored in a database, not a text transcript; its conversation is shown here.');
      return;
    }
    try {
      const document = await vscode.workspace.openTextDocument(vscode.Uri.file(turn.jsonlPath));
      const line = turn.line !== null && turn.line >= 1 ? Math.min(turn.line, document.lineCount) - 1 : 0;
      await vscode.window.showTextDocument(document, {
        selection: new vscode.Range(line, 0, line, 0),
        preview: true,
        viewColumn: this.panel?.viewColumn ?? vscode.ViewColumn.Beside,
      });
    } catch (error) {
      // the path and the error (which quotes it) come from the store: the log gets them, the notification not
      this.log.warn(`Could not open ${turn.jsonlPath}: ${error instanceof Error ? error.message : String(error)}`);
      void vscode.window.showErrorMessage('Pi Memory: could not open the transcript (see the Pi Memory log).');
    }
    this.render();
  }

  private async showWholeTurn(shown: Shown, index: number): Promise<void> {
    const turn = shown.turns[index];
    if (turn === undefined) {
      return;
    }
    try {
      const whole = (await this.server.request(TurnRequest, { turnId: turn.turnId })).turn;
      if (whole === null) {
        void vscode.window.showWarningMessage('Pi Memory: this turn is no longer in the memory.');
      } else if (this.shown === shown) {
        shown.turns[index] = { ...turn, ...whole, truncated: false };
      }
    } catch (error) {
      void vscode.window.showErrorMessage(`Pi Memory: could not fetch the whole turn: ${describeError(error)}`);
    }
    this.render();
  }

  /** Earlier or later turns of the session, added to the shown window (at most MAX_TURNS kept). */
  private async loadMore(shown: Shown, direction: 'earlier' | 'later'): Promise<void> {
    const anchor = direction === 'earlier' ? shown.turns[0] : shown.turns[shown.turns.length - 1];
    if (anchor === undefined) {
      return;
    }
    try {
      const page = await this.server.request(SessionRequest, {
        sessionId: shown.session.sessionId,
        turnId: anchor.turnId,
        before: direction === 'earlier' ? WINDOW : 0,
        after: direction === 'later' ? WINDOW : 0,
      });
      if (this.shown !== shown) {
        return;
      }
      const known = new Set(shown.turns.map((t) => t.turnId));
      const fresh = page.turns.filter((t) => !known.has(t.turnId));
      if (direction === 'earlier') {
        shown.turns = [...fresh, ...shown.turns].slice(0, MAX_TURNS);
        shown.firstPosition = page.firstPosition;
      } else {
        const all = [...shown.turns, ...fresh];
        const drop = Math.max(0, all.length - MAX_TURNS);
        shown.turns = all.slice(drop);
        shown.firstPosition += drop;
      }
      shown.session = { ...shown.session, turnCount: page.turnCount };
    } catch (error) {
      void vscode.window.showErrorMessage(`Pi Memory: could not load more turns: ${describeError(error)}`);
    }
    this.render();
  }

  private async copyResume(session: SessionResult): Promise<void> {
    if (session.resumeCommand !== null) {
      await vscode.env.clipboard.writeText(session.resumeCommand);
      // not quoted: a resume command is built from stored data, and notifications render links
      void vscode.window.showInformationMessage('Pi Memory: resume command copied to the clipboard.');
    }
    this.render();
  }
}
