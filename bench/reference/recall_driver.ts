// Runs the seed's recallTurns() (pi-session-memory 0.1.0, verbatim in ./retriever.ts) on
// $MEMORY_DB_PATH for each query of a JSON file ([{"entities": [...], "limit": 5}, ...]), `runs` times
// each, and prints one JSON line per query: {"ms": [...], "rows": [...]}. Not part of the seed.
//   MEMORY_DB_PATH=<db> node --experimental-strip-types --no-warnings recall_driver.ts queries.json 3
import { readFileSync } from "node:fs";
import { recallTurns } from "./retriever.ts";

const queries = JSON.parse(readFileSync(process.argv[2], "utf8")) as Array<{ entities: string[]; limit?: number }>;
const runs = Number(process.argv[3] ?? "3");
for (const query of queries) {
  const times: number[] = [];
  let rows: unknown[] = [];
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    rows = recallTurns(query.entities, query.limit ?? 5);
    times.push(performance.now() - started);
  }
  console.log(JSON.stringify({ ms: times, rows }));
}
