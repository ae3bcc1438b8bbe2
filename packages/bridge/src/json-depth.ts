/**
 * How deep the JSON a server accepts (an HTTP body, an MCP message) may nest. Validating deeper input
 * overflows the stack in schema code, so it is refused at the door with the bound in the error.
 * Tool inputs and tool schemas stay far below it.
 */
export const MAX_JSON_DEPTH = 128;

/** True when a JSON text nests arrays and objects deeper than `limit`; stops at the first level over. */
export function nestsDeeperThan(text: string, limit = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}
