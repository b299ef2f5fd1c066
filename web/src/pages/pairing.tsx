/**
 * Pairing (`#/pairing`): issue a single-use pairing code for a platform (POST /pair, admin; DECISIONS §4) and
 * watch it count down to its expiry. The codes issued in this tab stay listed until they expire; the code
 * itself is a secret, so it lives only in this page's memory. An api token sees why it cannot issue codes.
 */
import { useState } from 'preact/hooks';
import { must } from '../errors';
import type { PageProps } from '../page';
import { Badge, ErrorBox, Time, useNow } from '../ui';
import { useSubmit } from '../ui/form';
import { Table } from '../ui/table';
import './pairing/pairing.css';

/** A code issued in this tab: its platform, the code, and when it stops being valid (ms since the epoch). */
interface IssuedCode {
  platform: string;
  code: string;
  ttlSeconds: number;
  issuedAt: number;
  expiresAt: number;
}

/** `m:ss` for a number of seconds (never negative). */
function clock(seconds: number): string {
  const s = Math.max(0, Math.ceil(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

export default function PairingPage({ api, role }: PageProps) {
  const [platform, setPlatform] = useState('telegram');
  const [codes, setCodes] = useState<IssuedCode[]>([]);
  const now = useNow(codes.some((c) => c.expiresAt > Date.now()));
  const latest = codes[0];

  const issue = useSubmit(async () => {
    const name = platform.trim();
    if (!name) return;
    const issued = await must(api.POST('/api/v1/pair', { body: { platform: name } }));
    const issuedAt = Date.now();
    const entry: IssuedCode = {
      platform: name,
      code: issued.code,
      ttlSeconds: issued.ttl_seconds,
      issuedAt,
      expiresAt: issuedAt + issued.ttl_seconds * 1000,
    };
    setCodes((list) => [entry, ...list.filter((c) => c.expiresAt > issuedAt)].slice(0, 20));
  });

  return (
    <section aria-labelledby="pairing-title">
      <h1 id="pairing-title">Pairing</h1>
      <p class="muted">
        A pairing code lets one person on a chat platform pair their account with this gateway: they send the code to
        the bot, and from then on their messages are accepted. Each code works once and expires.
      </p>

      {role !== 'admin' ? (
        <p class="card">Issuing pairing codes needs an admin token. This token may only read.</p>
      ) : (
        // The button sits on the input's line (the hint goes under both), so they line up at any width.
        <form class="card pairing-form" onSubmit={issue.onSubmit} aria-label="Issue a pairing code">
          <label for="pairing-platform">Platform</label>
          <div class="pairing-row">
            <input
              id="pairing-platform"
              name="platform"
              required
              maxLength={100}
              autoComplete="off"
              value={platform}
              onInput={(e) => setPlatform(e.currentTarget.value)}
              aria-describedby="pairing-platform-hint"
            />
            <button type="submit" disabled={issue.busy || !platform.trim()}>
              {issue.busy ? 'Generating…' : 'Generate code'}
            </button>
          </div>
          <span id="pairing-platform-hint" class="muted">
            The platform the code pairs users of, e.g. telegram, discord, slack.
          </span>
        </form>
      )}

      {issue.error !== undefined && <ErrorBox error={issue.error} />}

      {latest && (
        <div class="card" role="region" aria-labelledby="pairing-latest-title">
          <h2 id="pairing-latest-title">Newest code for {latest.platform}</h2>
          <p class="stat">
            <code class="value" data-testid="pairing-code">
              {latest.code}
            </code>
          </p>
          {latest.expiresAt > now ? (
            <>
              <p role="timer" aria-live="off" data-testid="pairing-countdown">
                Expires in <strong>{clock((latest.expiresAt - now) / 1000)}</strong> (at{' '}
                <Time iso={new Date(latest.expiresAt).toISOString()} />)
              </p>
              <progress
                class="meter"
                max={latest.ttlSeconds}
                value={Math.max(0, (latest.expiresAt - now) / 1000)}
                aria-label="Time left before the code expires"
              />
            </>
          ) : (
            <p role="status">
              <Badge status="expired" /> This code has expired; generate another.
            </p>
          )}
        </div>
      )}

      <h2 id="pairing-issued-title">Codes issued in this tab</h2>
      <Table
        rows={codes}
        empty="No codes issued yet. Codes are shown only here, once, and are not stored by the dashboard."
        labelledBy="pairing-issued-title"
        minWidth="28rem"
        columns={['Platform', 'Code', 'Issued', 'Time left']}
        row={(c) => (
          <tr key={`${c.code}-${c.issuedAt}`}>
            <td>{c.platform}</td>
            <td>
              <code>{c.code}</code>
            </td>
            <td>
              <Time iso={new Date(c.issuedAt).toISOString()} />
            </td>
            <td>{c.expiresAt > now ? clock((c.expiresAt - now) / 1000) : <Badge status="expired" />}</td>
          </tr>
        )}
      />
    </section>
  );
}
