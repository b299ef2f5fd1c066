/**
 * What of one turn's reply the terminal has shown, so that following the turn again — after a reconnect, or after
 * an approval — prints only what is new.
 *
 * The gateway answers a message sent again with the same idempotency key by replay: the turn's stored events from
 * the first (`delta`, `tool_call`, `tool_result`, in their stored order), then its live ones (DECISIONS §6, §8).
 * Each pass over the turn therefore repeats a prefix of what an earlier pass showed. Text is matched by its offset
 * in the turn's concatenated deltas (the resume point, as `Last-Event-ID` is for `GET /turns/{event_id}/events`),
 * tool calls and results by their call id.
 */
export class ReplyStream {
  /** Characters of delta text shown, over every pass. */
  private shownChars = 0;
  /** Characters of delta text seen in the current pass. */
  private passChars = 0;
  /** Delta text of the current model step in this pass (the final Message carries the last step's text). */
  private segment = '';
  private readonly calls = new Map<string, { name: string; arguments: unknown }>();
  private readonly results = new Set<string>();
  private readonly shownCalls = new Set<string>();

  /** Starts following the turn again from its first event. */
  beginPass(): void {
    this.passChars = 0;
    this.segment = '';
  }

  /** The part of a delta not shown yet ('' when a replay repeats text already on screen). */
  delta(content: string): string {
    const start = this.passChars;
    this.passChars += content.length;
    this.segment += content;
    if (this.passChars <= this.shownChars) return '';
    const fresh = content.slice(Math.max(0, this.shownChars - start));
    this.shownChars = this.passChars;
    return fresh;
  }

  /** Records a tool call; true when it was not shown before. A tool call ends the model step's text. */
  toolCall(id: string, name: string, args: unknown): boolean {
    this.segment = '';
    this.calls.set(id, { name, arguments: args });
    if (this.shownCalls.has(id)) return false;
    this.shownCalls.add(id);
    return true;
  }

  /** Records a tool result; true when it was not shown before. */
  toolResult(id: string): boolean {
    this.segment = '';
    if (this.results.has(id)) return false;
    this.results.add(id);
    return true;
  }

  /**
   * The part of the final Message's content the deltas did not show: all of it for a reply that streamed nothing
   * (chat commands, a pause's question), '' when the deltas showed it.
   */
  remainder(content: string): string {
    if (!content.startsWith(this.segment)) return '';
    const rest = content.slice(this.segment.length);
    this.segment = content;
    return rest;
  }

  /** The first tool call seen without a result: the one a turn waiting for approval paused on. */
  unresolvedCall(): { id: string; name: string; arguments: unknown } | null {
    const open = [...this.calls.entries()].filter(([id]) => !this.results.has(id));
    const first = open[0];
    return first ? { id: first[0], ...first[1] } : null;
  }

  /** True once any text or tool call of the turn was shown. */
  get showedAnything(): boolean {
    return this.shownChars > 0 || this.shownCalls.size > 0;
  }
}
