// Just enough of the ZIP format to read a .vsix: the central directory (names, sizes) and stored or
// deflated members. No ZIP64 (a .vsix is far below 4 GiB and 65,535 entries).
import { Buffer } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { inflateRawSync } from 'node:zlib';

export class Zip {
  constructor(path) {
    this.data = readFileSync(path);
    const end = this.data.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
    if (end < 0) {
      throw new Error(`${path} is not a ZIP file`);
    }
    const count = this.data.readUInt16LE(end + 10);
    let at = this.data.readUInt32LE(end + 16);
    /** @type {Map<string, {method: number, compressed: number, local: number}>} */
    this.entries = new Map();
    for (let i = 0; i < count; i++) {
      if (this.data.readUInt32LE(at) !== 0x02014b50) {
        throw new Error(`${path}: bad central directory entry ${i}`);
      }
      const nameLength = this.data.readUInt16LE(at + 28);
      const name = this.data.toString('utf8', at + 46, at + 46 + nameLength);
      this.entries.set(name, {
        method: this.data.readUInt16LE(at + 10),
        compressed: this.data.readUInt32LE(at + 20),
        local: this.data.readUInt32LE(at + 42),
      });
      at += 46 + nameLength + this.data.readUInt16LE(at + 30) + this.data.readUInt16LE(at + 32);
    }
  }

  names() {
    return [...this.entries.keys()];
  }

  read(name) {
    const entry = this.entries.get(name);
    if (entry === undefined) {
      throw new Error(`no ${name} in the archive`);
    }
    const start = entry.local + 30 + this.data.readUInt16LE(entry.local + 26) + this.data.readUInt16LE(entry.local + 28);
    const raw = this.data.subarray(start, start + entry.compressed);
    if (entry.method === 0) {
      return Buffer.from(raw);
    }
    if (entry.method === 8) {
      return inflateRawSync(raw);
    }
    throw new Error(`${name}: compression method ${entry.method}`);
  }
}
