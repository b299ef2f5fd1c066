import { describe, expect, it } from 'vitest';
import { ReplyStream } from './chat.stream.js';

describe('ReplyStream', () => {
  it('shows each delta once as it streams', () => {
    const reply = new ReplyStream();
    reply.beginPass();
    expect(reply.delta('Hel')).toBe('Hel');
    expect(reply.delta('lo')).toBe('lo');
    expect(reply.remainder('Hello')).toBe('');
  });

  it('a replay after a drop shows only what comes after the text already shown', () => {
    const reply = new ReplyStream();
    reply.beginPass();
    reply.delta('Alpha ');
    reply.delta('be');
    reply.beginPass(); // reconnected: the gateway replays the turn from its first event
    expect(reply.delta('Alpha ')).toBe('');
    expect(reply.delta('beta ')).toBe('ta ');
    expect(reply.delta('gamma')).toBe('gamma');
    expect(reply.remainder('Alpha beta gamma')).toBe('');
  });

  it('tool calls and results are shown once, however often they are replayed', () => {
    const reply = new ReplyStream();
    reply.beginPass();
    expect(reply.toolCall('call_1', 'memory_save', { content: 'x' })).toBe(true);
    expect(reply.unresolvedCall()).toEqual({ id: 'call_1', name: 'memory_save', arguments: { content: 'x' } });
    reply.beginPass();
    expect(reply.toolCall('call_1', 'memory_save', { content: 'x' })).toBe(false);
    expect(reply.toolResult('call_1')).toBe(true);
    expect(reply.toolResult('call_1')).toBe(false);
    expect(reply.unresolvedCall()).toBeNull();
  });

  it('the final content adds what no delta showed: the last step only, or all of a reply that did not stream', () => {
    const streamed = new ReplyStream();
    streamed.beginPass();
    streamed.delta('Looking it up. ');
    streamed.toolCall('call_1', 'memory_search', {});
    streamed.toolResult('call_1');
    streamed.delta('Found');
    expect(streamed.remainder('Found it.')).toBe(' it.');

    const command = new ReplyStream();
    command.beginPass();
    expect(command.remainder('Started a new conversation.')).toBe('Started a new conversation.');
    expect(command.showedAnything).toBe(false);
  });

  it('a final content that does not continue the streamed text adds nothing (never a repeat)', () => {
    const reply = new ReplyStream();
    reply.beginPass();
    reply.delta('partial');
    expect(reply.remainder('other')).toBe('');
  });
});
