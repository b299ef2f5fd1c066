/** One server-sent event. */
export interface SseEvent {
  id?: string;
  event: string;
  data: unknown;
}

/**
 * Parses a raw `text/event-stream` body into events: comments skipped, blocks
 * without data skipped, data parsed as JSON when it is JSON (else kept as text).
 */
export function parseSse(raw: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of raw.split(/\n\n/)) {
    let id: string | undefined;
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':') || line === '') continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id') id = value;
      else if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length === 0) continue;
    const text = data.join('\n');
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* plain text data */
    }
    events.push({ ...(id !== undefined ? { id } : {}), event, data: parsed });
  }
  return events;
}

/** The complete events of a stream body (a frame cut short at the end is left out, as an EventSource does). */
export function completeEvents(body: string): SseEvent[] {
  return parseSse(body.slice(0, body.lastIndexOf('\n\n') + 2));
}

/** The text of a turn's `delta` events, in order. */
export function deltaText(events: readonly SseEvent[]): string {
  return events
    .filter((e) => e.event === 'delta')
    .map((e) => (e.data as { content: string }).content)
    .join('');
}
