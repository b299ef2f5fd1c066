import { styleText } from 'node:util';

/** A colour or emphasis of `node:util`'s `styleText`. */
export type Tone = 'red' | 'yellow' | 'green' | 'cyan' | 'gray' | 'bold' | 'dim' | 'magenta';

/** `text` in `tone` when `colour` (a terminal), else as is. */
export function style(colour: boolean, tone: Tone, text: string): string {
  return colour ? styleText(tone, text) : text;
}

/** `3d 4h`, `2h 5m`, `4m 10s`, `12s`. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${s % 60}s`;
  return `${s}s`;
}
