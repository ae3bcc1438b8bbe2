// One bound on how deep JSON may nest, applied at every door: tool inputs (the session), HTTP bodies
// and MCP messages (bridge, serve --mcp) and exec's lines. Validating or writing back deeper input
// overflows the stack in schema code, so it is refused first, with the bound in the error. Tool
// inputs and tool schemas stay far below it.

/** How deep the JSON a tool input, an HTTP body or an MCP message may nest. */
export const MAX_JSON_DEPTH = 128;

/**
 * Whether a JSON text nests arrays and objects deeper than `limit` (stops at the first level over),
 * before JSON.parse builds it. Strings are stepped over with indexOf, so a text carrying a large file
 * costs far less than its parse.
 */
export function nestsDeeperThan(text: string, limit = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // To the closing quote: the next quote preceded by an even number of backslashes.
      for (;;) {
        const q = text.indexOf('"', i + 1);
        if (q === -1) return false;
        let b = q - 1;
        while (text.charCodeAt(b) === 0x5c) b--;
        i = q;
        if ((q - 1 - b) % 2 === 0) break;
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/**
 * Whether a JSON-like value nests objects and arrays deeper than `limit`, walked without recursion
 * (so it cannot overflow itself, and a cycle ends at the bound).
 */
export function valueNestsDeeperThan(value: unknown, limit = MAX_JSON_DEPTH): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop() as [unknown, number];
    if (typeof item !== "object" || item === null) continue;
    if (depth > limit) return true;
    for (const child of Object.values(item)) stack.push([child, depth + 1]);
  }
  return false;
}
