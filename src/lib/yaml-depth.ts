import { Lexer } from 'yaml';

/**
 * An upper bound on how deeply a YAML text nests, found in one pass over the
 * tokens of `yaml`'s own lexer (a state machine that never recurses), so deep
 * input is refused before the composer (which recurses) ever sees it
 * (ADR 0013).
 *
 * The lexer decides what is a quoted scalar, a comment, a block scalar or a
 * flow bracket exactly as the parser will, so no bracket inside a scalar is
 * counted and no real one is missed (`-[: x` is a plain key, not a flow
 * sequence). Counted per line:
 * - flow depth: `[`/`{` tokens open, `]`/`}` close;
 * - block levels: a stack of indentation widths (kept inside flow
 *   collections too, which can only overestimate);
 * - block indicators on the line: every `-` and `?`, and every `:` after the
 *   line's first (`a: b: c` is an error the parser still nests).
 *
 * A block level counts twice: a mapping's value may be a sequence at the same
 * indentation (`a:` then `- b:`), so one indent step can open two collections.
 * The bound may overestimate, never underestimate.
 */
export function yamlNestingBound(text: string): number {
  let deepest = 0;
  /** Open flow collections, each with the levels it may nest beyond itself. */
  const flows: Array<{ extra: number }> = [];
  let flowExtra = 0;
  const indents: number[] = [];
  let atLineStart = true;
  let lineHasContent = false;
  let markers = 0;
  let colons = 0;
  let indent = 0;

  const note = () => {
    deepest = Math.max(deepest, 2 * (indents.length + markers + Math.max(0, colons - 1)) + flows.length + flowExtra);
  };
  const enterLine = () => {
    while (indents.length > 0 && indents[indents.length - 1]! >= indent) indents.pop();
    indents.push(indent);
    lineHasContent = true;
  };

  for (const token of new Lexer().lex(text)) {
    if (token === '\n') {
      atLineStart = true;
      lineHasContent = false;
      markers = 0;
      colons = 0;
      continue;
    }
    // The lexer's control tokens (document, scalar and flow-end markers) carry no text.
    if (token.length === 1 && token.charCodeAt(0) < 0x20 && token !== '\t') continue;
    if (atLineStart) {
      atLineStart = false;
      indent = /^[ \t]+$/.test(token) ? token.length : 0;
      if (indent > 0) continue;
    }
    if (/^[ \t]+$/.test(token) || token.startsWith('#')) continue;
    if (!lineHasContent) enterLine();
    const top = flows[flows.length - 1];
    if (token === '[' || token === '{') {
      // An entry of a flow sequence may be a one-pair mapping (`[a: b]`, and `[a[b]]` after an error).
      const extra = token === '[' ? 1 : 0;
      flows.push({ extra });
      flowExtra += extra;
    } else if (token === ']' || token === '}') flowExtra -= flows.pop()?.extra ?? 0;
    else if (token === '-' || token === '?') {
      if (top) {
        top.extra++;
        flowExtra++;
      } else markers++;
    } else if (token === ':' && !top) colons++;
    note();
  }
  return deepest;
}
