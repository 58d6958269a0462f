// Messages between the extension and the results webview. The webview renders what it is sent and asks the
// extension to act on a row by index; it never receives a path or a command it could act on by itself.
import type { Source } from './protocol';

export interface PanelRow {
  index: number;
  source: Source;
  cwd: string;
  ts: number;
  hits: number;
  userText: string;
  replyText: string;
  toolNames: string[];
  canOpen: boolean;
  resumeCommand: string | null;
}

export type PanelState =
  | { kind: 'idle' }
  | { kind: 'loading'; query: string }
  | { kind: 'results'; query: string; entities: string[]; rows: PanelRow[] }
  | { kind: 'error'; query: string; message: string };

export interface ToWebview {
  type: 'state';
  state: PanelState;
}

export type FromWebview = { type: 'ready' } | { type: 'open'; index: number } | { type: 'copyResume'; index: number };

/** Validates a message from the webview (it is untrusted input). */
export function parseFromWebview(message: unknown): FromWebview | undefined {
  if (typeof message !== 'object' || message === null) {
    return undefined;
  }
  const m = message as Record<string, unknown>;
  if (m.type === 'ready') {
    return { type: 'ready' };
  }
  if ((m.type === 'open' || m.type === 'copyResume') && Number.isSafeInteger(m.index) && (m.index as number) >= 0) {
    return { type: m.type, index: m.index as number };
  }
  return undefined;
}
