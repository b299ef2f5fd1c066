/**
 * An upper bound on how deeply a YAML text nests, found by one linear scan
 * and no parsing, so deep input is refused before the YAML parser (which
 * recurses) ever sees it (ADR 0013).
 *
 * Counted per line: block levels from indentation (a stack of indent
 * widths, as a tokenizer does), block sequence and explicit-key markers at
 * the start of the content (`- - x` nests twice on one line), and flow
 * collections (`[`, `{`) outside quoted scalars and comments. A block level
 * counts twice: a mapping's value may be a sequence at the same indentation
 * (`a:` then `- b:`), so one indent step can open two collections. The bound
 * may overestimate (a bracket in a plain scalar counts), never underestimate.
 */
export function yamlNestingBound(text: string): number {
  let deepest = 0;
  let flow = 0;
  const indents: number[] = [];
  for (const line of text.split('\n')) {
    let i = 0;
    while (i < line.length && (line[i] === ' ' || line[i] === '\t')) i++;
    if (i === line.length || line[i] === '#') continue;
    if (flow === 0) {
      while (indents.length > 0 && indents[indents.length - 1]! >= i) indents.pop();
      indents.push(i);
    }
    let markers = 0;
    while ((line[i] === '-' || line[i] === '?') && (line[i + 1] === ' ' || i + 1 === line.length)) {
      markers++;
      i += 2;
      while (line[i] === ' ') i++;
    }
    let quote: string | null = null;
    for (let j = i; j < line.length; j++) {
      const c = line[j];
      if (quote) {
        if (c === quote) quote = null;
        else if (c === '\\' && quote === '"') j++;
        continue;
      }
      if (c === '"' || c === "'") quote = c;
      else if (c === '#' && (j === 0 || line[j - 1] === ' ')) break;
      else if (c === '[' || c === '{') flow++;
      else if ((c === ']' || c === '}') && flow > 0) flow--;
      deepest = Math.max(deepest, 2 * (indents.length + markers) + flow);
    }
    deepest = Math.max(deepest, 2 * (indents.length + markers) + flow);
  }
  return deepest;
}
