/**
 * Channels (`#/channels`): every channel's state, uptime and messages today (GET /channels), with reconnect,
 * disable and enable for an admin (POST /channels/{name}/…, DECISIONS §9). Live: a `channels` event replaces
 * the channel it describes in place, and uptime keeps counting between events.
 */
import { useEffect, useState } from 'preact/hooks';
import type { components } from '../../../client/index.js';
import { must } from '../errors';
import type { LiveEvent, PageProps } from '../page';
import { Badge, ErrorBox, Time, useLive, useLoad, useNow } from '../ui';
import { Table } from '../ui/table';

type Channel = components['schemas']['Channel'];
type Operation = 'reconnect' | 'disable' | 'enable';

/** `3d 4h`, `2h 05m`, `4m 09s`, `12s`. */
function duration(totalSeconds: number): string {
  const s = Math.max(0, Math.floor(totalSeconds));
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m ${String(sec).padStart(2, '0')}s`;
  return `${sec}s`;
}

/** The state word of a channel: connected, disabled, error or disconnected. */
function stateOf(channel: Channel): string {
  if (!channel.enabled) return 'disabled';
  if (channel.connected) return 'connected';
  return channel.error ? 'error' : 'disconnected';
}

/** True when a live event's data looks like a channel view. */
function isChannel(data: unknown): data is Channel {
  const c = data as Partial<Channel> | null;
  return typeof c?.name === 'string' && typeof c.enabled === 'boolean' && typeof c.connected === 'boolean';
}

export default function ChannelsPage(props: PageProps) {
  const { api, role, live } = props;
  const loaded = useLoad(() => must(api.GET('/api/v1/channels')), []);
  // The list as last seen (load or live event), with the time each row was received, for the uptime clock.
  const [rows, setRows] = useState<Array<{ channel: Channel; at: number }>>();
  const [pending, setPending] = useState<string | null>(null);
  const now = useNow(); // uptime keeps counting between events

  useEffect(() => {
    if (loaded.data) setRows(loaded.data.items.map((channel) => ({ channel, at: Date.now() })));
  }, [loaded.data]);

  const apply = (channel: Channel) =>
    setRows((list) => {
      const at = Date.now();
      const current = list ?? [];
      const known = current.some((r) => r.channel.name === channel.name);
      return known
        ? current.map((r) => (r.channel.name === channel.name ? { channel, at } : r))
        : [...current, { channel, at }];
    });

  useLive(live, ['channels'], (event: LiveEvent) => {
    if (isChannel(event.data)) apply(event.data);
    else loaded.reload();
  });

  const run = async (name: string, op: Operation) => {
    setPending(`${name}:${op}`);
    try {
      const path = `/api/v1/channels/{channel_name}/${op}` as const;
      apply(await must(api.POST(path, { params: { path: { channel_name: name } } })));
    } catch (error) {
      props.notify(error);
    } finally {
      setPending(null);
    }
  };

  return (
    <section aria-labelledby="channels-title">
      <h1 id="channels-title">Channels</h1>
      <p class="muted">
        Where messages come in. Uptime counts from the last (re)connect; messages today count from midnight UTC.
        {role !== 'admin' && ' Reconnecting, disabling and enabling need an admin token.'}
      </p>
      {loaded.error !== undefined && <ErrorBox error={loaded.error} />}
      {!rows && loaded.error === undefined && <p class="loading">Loading channels…</p>}
      <Table
        rows={rows}
        empty="No channels are configured."
        labelledBy="channels-title"
        minWidth="42rem"
        columns={[
          'Channel',
          'State',
          'Uptime',
          'Messages today',
          'Last message',
          ...(role === 'admin' ? ['Actions'] : []),
        ]}
        row={({ channel, at }) => {
          const state = stateOf(channel);
          const uptime = channel.connected ? channel.uptime_seconds + (now - at) / 1000 : 0;
          const busy = pending?.startsWith(`${channel.name}:`) ?? false;
          return (
            <tr key={channel.name} data-channel={channel.name}>
              <td>
                <strong>{channel.name}</strong>
              </td>
              <td>
                <Badge status={state} />
                {channel.error && <div class="muted">{channel.error}</div>}
              </td>
              <td>
                {channel.connected ? (
                  <span title={channel.last_connected_at ?? undefined}>{duration(uptime)}</span>
                ) : (
                  '—'
                )}
              </td>
              <td data-testid="messages-today">{channel.messages_today}</td>
              <td>
                <Time iso={channel.last_message_at} />
              </td>
              {role === 'admin' && (
                <td>
                  <div class="actions">
                    <button
                      type="button"
                      class="secondary"
                      disabled={busy || !channel.enabled}
                      aria-label={`Reconnect ${channel.name}`}
                      onClick={() => void run(channel.name, 'reconnect')}
                    >
                      Reconnect
                    </button>
                    {channel.enabled ? (
                      <button
                        type="button"
                        class="danger"
                        disabled={busy}
                        aria-label={`Disable ${channel.name}`}
                        onClick={() => void run(channel.name, 'disable')}
                      >
                        Disable
                      </button>
                    ) : (
                      <button
                        type="button"
                        disabled={busy}
                        aria-label={`Enable ${channel.name}`}
                        onClick={() => void run(channel.name, 'enable')}
                      >
                        Enable
                      </button>
                    )}
                  </div>
                </td>
              )}
            </tr>
          );
        }}
      />
    </section>
  );
}
