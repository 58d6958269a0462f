// What the client does when the server exits on its own: restart it, tell the user once per burst of exits
// (not once per exit), and give up after too many. Pure, so that test/unit checks it.

export type ExitDecision = { restart: true; tellUser: boolean } | { restart: false; exits: number };

export class RestartPolicy {
  private exits: number[] = [];

  /** At most `maxRestarts` restarts within `windowMs`; the next exit in that window stops the restarts. */
  constructor(
    readonly maxRestarts = 3,
    readonly windowMs = 3 * 60 * 1000,
  ) {}

  onExit(now: number): ExitDecision {
    this.exits = [...this.exits.filter((t) => now - t < this.windowMs), now];
    if (this.exits.length > this.maxRestarts) {
      return { restart: false, exits: this.exits.length };
    }
    // Only the first exit after a quiet window is announced: the later ones of a burst go to the log.
    return { restart: true, tellUser: this.exits.length === 1 };
  }

  /** Forget earlier exits (the user restarted the server, or changed its settings). */
  reset(): void {
    this.exits = [];
  }
}
