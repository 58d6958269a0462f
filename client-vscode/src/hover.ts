// Hover on a selection: recall the selected text as free text (`pimem/recall {text}`: the server chooses the
// terms), show what was searched and the top three turns in the hover, with a link that opens them in the
// results panel. The transcript text is escaped (src/render.ts: hoverMarkdown).
import * as vscode from 'vscode';
import { readSettings } from './config';
import { ErrorCodes, RecallRequest, type RecallResult } from './protocol';
import { recallText } from './query';
import { hoverMarkdown, searchedTerms } from './render';
import type { PimemServer } from './server';

const HOVER_ROWS = 3;
/** Hover results kept for the "open in panel" link. */
const KEEP = 20;

export interface StoredRecall {
  query: string;
  result: RecallResult;
}

/** The argument of the show-results command when it is run from a hover link. */
export interface ShowResultsArgs {
  hoverId: string;
}

export function isShowResultsArgs(value: unknown): value is ShowResultsArgs {
  return typeof value === 'object' && value !== null && typeof (value as ShowResultsArgs).hoverId === 'string';
}

export class SelectionHoverProvider implements vscode.HoverProvider {
  private readonly stored = new Map<string, StoredRecall>();
  private counter = 0;

  constructor(
    private readonly server: PimemServer,
    private readonly showResultsCommand: string,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  /** A recall shown in a hover, by the id in its link. */
  take(hoverId: string): StoredRecall | undefined {
    return this.stored.get(hoverId);
  }

  async provideHover(
    document: vscode.TextDocument,
    position: vscode.Position,
    token: vscode.CancellationToken,
  ): Promise<vscode.Hover | undefined> {
    if (!readSettings().hoverEnabled || this.server.current.kind !== 'running') {
      return undefined;
    }
    const editor = vscode.window.visibleTextEditors.find((e) => e.document === document);
    const selection = editor?.selections.find((s) => !s.isEmpty && s.contains(position));
    if (selection === undefined) {
      return undefined;
    }
    const text = recallText(document.getText(selection));
    if (text.trim().length === 0) {
      return undefined;
    }
    let result: RecallResult;
    try {
      result = await this.server.request(RecallRequest, { text, limit: HOVER_ROWS }, token);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code !== ErrorCodes.InvalidParams && code !== ErrorCodes.RequestCancelled && !token.isCancellationRequested) {
        this.log.warn(`Hover recall failed: ${error instanceof Error ? error.message : String(error)}`);
      }
      return undefined;
    }
    if (token.isCancellationRequested || result.results.length === 0) {
      return undefined;
    }
    const hoverId = this.remember({ query: text, result });
    const args: ShowResultsArgs[] = [{ hoverId }];
    const uri = `command:${this.showResultsCommand}?${encodeURIComponent(JSON.stringify(args))}`;
    const markdown = new vscode.MarkdownString(
      hoverMarkdown(result.entities, result.results.slice(0, HOVER_ROWS), { showResultsUri: uri, searched: searchedTerms(result) }),
    );
    markdown.isTrusted = { enabledCommands: [this.showResultsCommand] };
    markdown.supportHtml = false;
    markdown.supportThemeIcons = false;
    return new vscode.Hover(markdown, selection);
  }

  private remember(recall: StoredRecall): string {
    this.counter += 1;
    const id = `h${this.counter}`;
    this.stored.set(id, recall);
    for (const key of this.stored.keys()) {
      if (this.stored.size <= KEEP) {
        break;
      }
      this.stored.delete(key);
    }
    return id;
  }
}
