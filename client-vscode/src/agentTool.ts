// The language-model tool `pimem_recall` (package.json contributes.languageModelTools): what it sends to
// `pimem/agentRecall` and how its outcomes read to the model that called it. Pure (no `vscode` import), so that
// test/unit checks it; src/agents.ts registers the tool.
import type { AgentRecallParams } from './protocol';
import { plainText } from './render';

export const RECALL_TOOL = 'pimem_recall';
const SERVER_METHOD_PREFIX = 'pimem/agentRecall: ';

/**
 * The model's input as `pimem/agentRecall` params: its arguments unchanged (the server validates them exactly as
 * `pimem mcp` does, and names the field that is wrong), and `redact` from the user's setting, which a model's
 * input cannot override. Throws an Error the model can act on when the input is not an object at all.
 */
export function agentRecallParams(input: unknown, redact: boolean): AgentRecallParams {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new Error(
      `${RECALL_TOOL}: the input must be an object such as {"entities": ["payroll", "LangGraph"]}; ` +
        'call it again with 1 to 8 specific entities.',
    );
  }
  return { ...(input as Record<string, unknown>), redact };
}

/** What the editor shows while the tool runs: the entities the model chose, as plain text. */
export function invocationMessage(input: unknown): string {
  const entities = (input as { entities?: unknown } | null)?.entities;
  const words = Array.isArray(entities) ? entities.filter((e): e is string => typeof e === 'string') : [];
  return words.length > 0
    ? `Searching past conversations for ${plainText(words.join(', '), 120)}`
    : 'Searching past conversations';
}

export type ToolFailure =
  | { kind: 'input'; message: string } // InvalidParams from the server: the model can fix its input
  | { kind: 'notRunning'; message: string } // no server to ask
  | { kind: 'failed'; message: string }; // the store or the server failed (RequestFailed, anything else)

/** The message of the Error the tool throws: what went wrong and what the model should do next. */
export function toolFailureMessage(failure: ToolFailure): string {
  const detail = oneLine(failure.message);
  switch (failure.kind) {
    case 'input': {
      const field = detail.startsWith(SERVER_METHOD_PREFIX) ? detail.slice(SERVER_METHOD_PREFIX.length) : detail;
      return `${RECALL_TOOL}: ${field}. Correct the input (see the tool's input schema) and call ${RECALL_TOOL} again.`;
    }
    case 'notRunning':
      return (
        `${RECALL_TOOL} is unavailable: ${detail}. Do not retry now; tell the user that Pi Memory's server is not ` +
        'running ("Pi Memory: Show Status" in VS Code says why).'
      );
    case 'failed':
      return `${RECALL_TOOL} could not search the memory: ${detail}. Do not retry; tell the user what failed.`;
  }
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().replace(/\.$/, '');
}
