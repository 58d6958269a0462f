// The views of the past (issue 15): the Sessions tree, the File History view and its CodeLens, the rendered
// conversation and "Continue in Pi", registered together so that extension.ts only calls this.
import * as vscode from 'vscode';
import { ConversationPanel } from './conversation';
import { continueInPi } from './continueInPi';
import { FileHistoryCache, FileHistoryCodeLens, FileHistoryView } from './fileHistory';
import type { PimemServer } from './server';
import { SessionsCommands, SessionsTree } from './sessionsTree';

export function registerHistoryViews(context: vscode.ExtensionContext, server: PimemServer, log: vscode.LogOutputChannel): vscode.Disposable[] {
  const conversation = new ConversationPanel(context.extensionUri, server, log);
  const cache = new FileHistoryCache(server);
  const lens = new FileHistoryCodeLens(cache);
  return [
    conversation,
    cache,
    lens,
    new SessionsTree(server, context.workspaceState, log),
    new FileHistoryView(server, cache),
    vscode.languages.registerCodeLensProvider({ scheme: 'file' }, lens),
    vscode.commands.registerCommand(SessionsCommands.openConversation, (args: unknown) => conversation.open(args)),
    vscode.commands.registerCommand(SessionsCommands.continueInPi, (args: unknown) => continueInPi(server, log, args)),
  ];
}
