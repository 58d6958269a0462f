// Test-only extension (test/e2e/harness.mjs installs it next to Pi Memory): "Pi Memory E2E: Invoke
// Language-Model Tool" reads ~/lm-tool-request.json ({tool, input}), calls vscode.lm.invokeTool outside any chat
// (toolInvocationToken: undefined), writes ~/lm-tool-result.json ({ok, text | error, tool}) and shows the text in
// an editor (~/lm-tool-result.md) for the screenshot. ~ is the temporary HOME of the e2e run.
const vscode = require('vscode');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

function write(result) {
  const file = path.join(os.homedir(), 'lm-tool-result.json');
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(result, null, 2));
  fs.renameSync(`${file}.tmp`, file); // the test never reads half a file
}

async function invoke() {
  const request = JSON.parse(fs.readFileSync(path.join(os.homedir(), 'lm-tool-request.json'), 'utf8'));
  const info = vscode.lm.tools.find((t) => t.name === request.tool);
  const tool = info === undefined ? null : { name: info.name, description: info.description, inputSchema: info.inputSchema, tags: info.tags };
  let result;
  try {
    const answer = await vscode.lm.invokeTool(request.tool, { input: request.input, toolInvocationToken: undefined });
    const parts = answer.content.map((part) => (part instanceof vscode.LanguageModelTextPart ? { text: part.value } : { other: String(part) }));
    result = { ok: true, parts, text: parts.map((p) => p.text ?? '').join(''), tool };
  } catch (error) {
    result = { ok: false, error: error instanceof Error ? error.message : String(error), tool };
  }
  // shown from a file (not an untitled editor, which would ask to be saved when the test closes it)
  const shown = path.join(os.homedir(), 'lm-tool-result.md');
  fs.writeFileSync(shown, result.ok ? result.text : `error: ${result.error}\n`);
  await vscode.window.showTextDocument(vscode.Uri.file(shown), { preview: false });
  write(result);
}

exports.activate = (context) => {
  context.subscriptions.push(vscode.commands.registerCommand('pimemE2e.invokeTool', invoke));
};
