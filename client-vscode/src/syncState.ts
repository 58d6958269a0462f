// Which sync the status bar item shows (src/syncUi.ts). Pure (no `vscode` import), unit-tested under Node.
//
// A finished sync keeps showing as "syncing" until pimem/status has the new count: showing the count from before
// it (on a first sync "0 turns") for a moment would be wrong.
import type { SyncStatusParams } from './protocol';

export class SyncState {
  /** The sync to show, undefined: show the count. */
  current: SyncStatusParams | undefined;
  private events = 0;

  /** A pimem/syncStatus. When it says the sync ended, returns the token that `countKnown` takes. */
  update(p: SyncStatusParams): number | undefined {
    this.events += 1;
    if (p.syncing) {
      this.current = p;
      return undefined;
    }
    return this.events;
  }

  /** The count after the sync that ended with `token` is known (or cannot be had): show it, unless a newer sync began. */
  countKnown(token: number): void {
    if (token === this.events) {
      this.current = undefined;
    }
  }

  /** The server stopped: no sync. */
  clear(): void {
    this.current = undefined;
  }
}
