// Whether a history file may be opened in a text editor ("Open raw transcript"). Some agents keep their
// conversations in a SQLite database (OpenCode's opencode.db, Cursor's and older VS Code's state.vscdb): opened as
// text it is binary noise, and an editor could even save it back. Decided by the file's own header, not its name,
// so that no agent's format rules are repeated here. Pure (no `vscode` import), unit-tested under Node.
import * as fs from 'node:fs';

/** The first 16 bytes of every SQLite 3 database file (https://www.sqlite.org/fileformat.html, 1.3.1). */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/** True when `file` starts with SQLite's header; false for anything else, and for a file that cannot be read. */
export function isDatabaseFile(file: string, readHead: (file: string, bytes: number) => Buffer = readFileHead): boolean {
  try {
    return readHead(file, SQLITE_HEADER.length).equals(SQLITE_HEADER);
  } catch {
    return false; // unreadable: opening it as text says why
  }
}

function readFileHead(file: string, bytes: number): Buffer {
  // O_NONBLOCK: a FIFO planted under a transcript's path must not hang the extension host
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  try {
    if (!fs.fstatSync(fd).isFile()) {
      return Buffer.alloc(0);
    }
    const head = Buffer.alloc(bytes);
    const read = fs.readSync(fd, head, 0, bytes, 0);
    return head.subarray(0, read);
  } finally {
    fs.closeSync(fd);
  }
}
