// Settings of the extension (contributes.configuration in package.json) and what the server gets from them.
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { PimemInitializationOptions } from './protocol';

export const SECTION = 'pimem';

export interface PimemSettings {
  python: string;
  dbPath: string;
  autoSync: boolean;
  hoverEnabled: boolean;
  recallLimit: number;
  sources: { pi: boolean; claude: boolean; codex: boolean };
}

/** Settings whose change needs a new server process (they are sent as initializationOptions or argv). */
export const RESTART_SETTINGS = ['pimem.python', 'pimem.dbPath', 'pimem.autoSync', 'pimem.sources'];

export function readSettings(): PimemSettings {
  const c = vscode.workspace.getConfiguration(SECTION);
  const limit = c.get<number>('recall.limit', 20);
  return {
    python: c.get<string>('python', '').trim(),
    dbPath: c.get<string>('dbPath', '').trim(),
    autoSync: c.get<boolean>('autoSync', true),
    hoverEnabled: c.get<boolean>('hover.enabled', true),
    recallLimit: Number.isInteger(limit) ? Math.min(50, Math.max(1, limit)) : 20,
    sources: {
      pi: c.get<boolean>('sources.pi', true),
      claude: c.get<boolean>('sources.claude', true),
      codex: c.get<boolean>('sources.codex', true),
    },
  };
}

/** "~/x" → "<home>/x"; other values unchanged. */
export function expandHome(p: string): string {
  if (p === '~') {
    return os.homedir();
  }
  if (p.startsWith('~/') || p.startsWith('~\\')) {
    return path.join(os.homedir(), p.slice(2));
  }
  return p;
}

export function initializationOptions(settings: PimemSettings): PimemInitializationOptions {
  const options: PimemInitializationOptions = {
    autoSync: settings.autoSync,
    sources: { ...settings.sources },
    hover: 'off', // the client shows hovers on selections itself (src/hover.ts)
  };
  if (settings.dbPath.length > 0) {
    options.dbPath = expandHome(settings.dbPath);
  }
  return options;
}

export function openSetting(id: string): Thenable<unknown> {
  return vscode.commands.executeCommand('workbench.action.openSettings', id);
}
