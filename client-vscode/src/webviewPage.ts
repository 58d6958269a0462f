// The HTML page of every pimem webview (results panel, sidebar search, conversation): one strict
// Content-Security-Policy in one place. Only the extension's own script (by nonce) and stylesheet load;
// no inline script, no remote content, no forms. `body` is the extension's own fixed markup: transcript
// text never goes into it (the scripts set it with textContent).
import * as crypto from 'node:crypto';
import * as vscode from 'vscode';

export interface WebviewPage {
  script: string; // file under dist/
  style: string; // file under media/
  title: string;
  body: string; // fixed markup, before the script tag
  images?: boolean; // allow the extension's own images (img-src)
}

export function webviewPage(webview: vscode.Webview, extensionUri: vscode.Uri, page: WebviewPage): string {
  const nonce = crypto.randomBytes(18).toString('base64');
  const script = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'dist', page.script));
  const style = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'media', page.style));
  const csp = [
    "default-src 'none'",
    `style-src ${webview.cspSource}`,
    `script-src 'nonce-${nonce}'`,
    ...(page.images === true ? [`img-src ${webview.cspSource}`] : []),
    `font-src ${webview.cspSource}`,
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style.toString()}">
<title>${page.title}</title>
</head>
<body>
${page.body}
<script nonce="${nonce}" src="${script.toString()}"></script>
</body>
</html>`;
}
