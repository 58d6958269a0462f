// What the user types into "Recall…": words separated by spaces, or phrases separated by commas.
export const MAX_ENTITIES = 8;

/** Entities of an input: comma-separated phrases when there is a comma, else whitespace-separated words. */
export function parseEntities(input: string): string[] {
  const parts = input.includes(',') ? input.split(',') : input.split(/\s+/);
  const seen = new Set<string>();
  const entities: string[] = [];
  for (const part of parts) {
    const entity = part.trim().replace(/\s+/g, ' ');
    if (entity.length > 0 && !seen.has(entity.toLowerCase())) {
      seen.add(entity.toLowerCase());
      entities.push(entity);
    }
  }
  return entities;
}

/** A message for the input box, or undefined when the input is acceptable. */
export function validateEntities(input: string): string | undefined {
  const count = parseEntities(input).length;
  if (count === 0) {
    return 'Type at least one word to look for.';
  }
  if (count > MAX_ENTITIES) {
    return `At most ${MAX_ENTITIES} words or phrases (got ${count}).`;
  }
  return undefined;
}
