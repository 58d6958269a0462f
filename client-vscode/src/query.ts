// What a recall sends: the words the user types into "Recall…" (separated by spaces, or phrases separated by
// commas), or the text of a selection. The limits are the server's (docs/lsp-extensions.md, "Limits").
export const MAX_ENTITIES = 8;
/** Longest `text` the server accepts, in characters (code points). */
export const MAX_TEXT_CHARS = 100_000;

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

/**
 * A selection as `pimem/recall {text}` takes it: its first MAX_TEXT_CHARS characters (the server refuses a longer
 * text, and chooses its terms from the beginning anyway). Never splits a surrogate pair.
 */
export function recallText(text: string, max = MAX_TEXT_CHARS): string {
  if (text.length <= max) {
    return text; // UTF-16 units ≥ code points
  }
  let end = 0;
  for (let chars = 0; chars < max && end < text.length; chars++) {
    end += (text.codePointAt(end) ?? 0) > 0xffff ? 2 : 1;
  }
  return text.slice(0, end);
}
