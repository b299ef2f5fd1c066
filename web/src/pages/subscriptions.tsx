/**
 * Subscriptions (`#/subscriptions`): the event subscriptions, signed webhooks the gateway POSTs to other systems
 * (admin, DECISIONS §20). Add one (URL, events as checkboxes with `*` for all, description); the answer's signing
 * secret is shown once, with a Copy button and the warning that it is not shown again. Each subscription shows
 * its events and delivery counts, and offers Test (one signed delivery now, and how it went), Disable or Enable,
 * Delete (asked once more) and its deliveries, filtered by status (pending, delivered, failed: the dead letters),
 * with attempts, the last answer and error, and Retry on a failed one. No live topic covers subscriptions, so the
 * list and the open delivery tables are polled while the tab is visible.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { components, paths } from '../../../client/index.js';
import { describeError, must } from '../errors';
import type { PageProps } from '../page';
import { Badge, ErrorBox, Time, useLoad } from '../ui';
import { ConfirmButton, FieldError, fieldProps, LocalFieldError, usePoll } from '../ui/fields';
import { FormFooter, useSubmit } from '../ui/form';
import { Table } from '../ui/table';
import './subscriptions/subscriptions.css';

type Subscription = components['schemas']['Subscription'];
type CreatedSubscription = components['schemas']['CreatedSubscription'];
type Delivery = components['schemas']['Delivery'];
type TestResult = components['schemas']['SubscriptionTestResult'];
type CreateBody = NonNullable<paths['/api/v1/subscriptions']['post']['requestBody']>['content']['application/json'];
type EventName = CreateBody['events'][number];
type Client = PageProps['api'];

/** How often the list and the open delivery tables are read again while the tab is visible. */
const POLL_MS = 5000;
/** Deliveries per page of a subscription's table. */
const PAGE_SIZE = 20;

/** The events a subscription may ask for, each with what it reports (`*`, every one, comes first in the form). */
const EVENTS: ReadonlyArray<{ name: Exclude<EventName, '*'>; hint: string }> = [
  { name: 'message.received', hint: 'a message reached a session' },
  { name: 'turn.completed', hint: 'a turn ended with its reply' },
  { name: 'turn.failed', hint: 'a turn failed' },
  { name: 'turn.waiting_approval', hint: 'a turn waits for an approval' },
  { name: 'session.created', hint: 'a session was started' },
  { name: 'task.completed', hint: 'a task was completed' },
  { name: 'cron.fired', hint: 'a cron job ran' },
  { name: 'channel.state_changed', hint: 'a channel connected, failed or was turned off' },
];

/** The status filter of the deliveries: everything, or one status (failed being the dead letters). */
const STATUS_FILTERS = [
  { value: '', label: 'All' },
  { value: 'pending', label: 'Pending' },
  { value: 'delivered', label: 'Delivered' },
  { value: 'failed', label: 'Failed (dead letters)' },
] as const;
type StatusFilter = (typeof STATUS_FILTERS)[number]['value'];

/** `2 deliveries`, `1 delivery`. */
function count(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** The add form: URL, events (`*` for all, which greys out the others), description. */
function SubscriptionForm({ api, onCreated }: { api: Client; onCreated: (created: CreatedSubscription) => void }) {
  const [url, setUrl] = useState('');
  const [all, setAll] = useState(false);
  const [events, setEvents] = useState<ReadonlySet<EventName>>(new Set());
  const [description, setDescription] = useState('');
  const form = useSubmit(async () => {
    if (!url.trim()) throw new LocalFieldError('url', 'Enter the URL the deliveries are POSTed to.');
    const chosen: EventName[] = all ? ['*'] : EVENTS.map((e) => e.name).filter((name) => events.has(name));
    if (chosen.length === 0) throw new LocalFieldError('events', 'Choose at least one event, or every event (*).');
    const body: CreateBody = { url: url.trim(), events: chosen };
    if (description.trim()) body.description = description.trim();
    const created = await must(api.POST('/api/v1/subscriptions', { body }));
    setUrl('');
    setAll(false);
    setEvents(new Set());
    setDescription('');
    onCreated(created);
  });
  const fields = form.fields;
  const toggle = (name: EventName, on: boolean) =>
    setEvents((set) => {
      const next = new Set(set);
      if (on) next.add(name);
      else next.delete(name);
      return next;
    });
  return (
    <form class="form-grid subs-form" aria-label="New subscription" noValidate onSubmit={form.onSubmit}>
      <div class="field wide">
        <label for="subs-new-url">
          URL <span class="hint">(https; deliveries are POSTed here)</span>
        </label>
        <input
          {...fieldProps('subs-new-url', fields.url)}
          type="url"
          inputMode="url"
          autoComplete="off"
          spellcheck={false}
          placeholder="https://hooks.example.com/gatehouse"
          value={url}
          onInput={(event) => setUrl(event.currentTarget.value)}
        />
        <FieldError id="subs-new-url" error={fields.url} />
      </div>
      <fieldset
        class="field wide subs-events"
        id="subs-new-events"
        aria-describedby={fields.events ? 'subs-new-events-error' : undefined}
      >
        <legend>Events</legend>
        <span class="subs-check subs-check-all">
          <input
            id="subs-new-event-all"
            type="checkbox"
            checked={all}
            onChange={(event) => setAll(event.currentTarget.checked)}
          />
          <label for="subs-new-event-all">
            Every event <code>*</code> <span class="hint">(including events added later)</span>
          </label>
        </span>
        {EVENTS.map(({ name, hint }) => (
          <span class="subs-check" key={name}>
            <input
              id={`subs-new-event-${name}`}
              type="checkbox"
              value={name}
              disabled={all}
              checked={!all && events.has(name)}
              onChange={(event) => toggle(name, event.currentTarget.checked)}
            />
            <label for={`subs-new-event-${name}`}>
              <code>{name}</code> <span class="hint">{hint}</span>
            </label>
          </span>
        ))}
        <FieldError id="subs-new-events" error={fields.events} />
      </fieldset>
      <div class="field wide">
        <label for="subs-new-description">
          Description <span class="hint">(optional: what the receiver is)</span>
        </label>
        <input
          {...fieldProps('subs-new-description', fields.description)}
          type="text"
          maxLength={500}
          value={description}
          onInput={(event) => setDescription(event.currentTarget.value)}
        />
        <FieldError id="subs-new-description" error={fields.description} />
      </div>
      <FormFooter state={form} submit={form.busy ? 'Adding…' : 'Add subscription'} wide />
    </form>
  );
}

/**
 * The secret of a new subscription, shown this once: a Copy button (the clipboard, or the text selected for
 * Ctrl+C where the browser refuses), the warning, and the button that puts it away. Focus moves to its heading,
 * so a keyboard or a screen reader lands on it.
 */
function SecretPanel({ created, onDone }: { created: CreatedSubscription; onDone: () => void }) {
  const heading = useRef<HTMLHeadingElement>(null);
  const code = useRef<HTMLElement>(null);
  const [copied, setCopied] = useState<'copied' | 'select' | null>(null);
  useEffect(() => heading.current?.focus(), [created.id]);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(created.secret);
      setCopied('copied');
    } catch {
      const range = document.createRange();
      if (code.current) range.selectNodeContents(code.current);
      const selection = window.getSelection();
      selection?.removeAllRanges();
      selection?.addRange(range);
      setCopied('select');
    }
  };
  return (
    <section class="card subs-secret" aria-labelledby="subs-secret-title" data-testid="subscription-secret">
      <h2 id="subs-secret-title" tabIndex={-1} ref={heading}>
        Subscription added: copy its signing secret now
      </h2>
      <p class="subs-secret-warning">
        <strong>This secret is not shown again.</strong> Receivers verify the <code>webhook-signature</code> of each
        delivery to <code class="subs-url">{created.url}</code> with it. Lost, it can only be replaced by adding the
        subscription anew.
      </p>
      <p class="subs-secret-value">
        <code ref={code} data-field="secret">
          {created.secret}
        </code>
      </p>
      <div class="actions">
        <button type="button" onClick={() => void copy()}>
          Copy secret
        </button>
        <button type="button" class="secondary" onClick={onDone}>
          I have stored it
        </button>
        <span role="status" class="muted" data-field="copy-status">
          {copied === 'copied'
            ? 'Copied to the clipboard.'
            : copied === 'select'
              ? 'Selected: press Ctrl+C (⌘C) to copy.'
              : ''}
        </span>
      </div>
    </section>
  );
}

/** The deliveries of one subscription, newest first: a status filter, the table, Retry on a failed one, pages. */
function Deliveries({
  api,
  subscription,
  version,
  onRetried,
}: {
  api: Client;
  subscription: Subscription;
  version: number;
  onRetried: () => void;
}) {
  const [status, setStatus] = useState<StatusFilter>('');
  const [offset, setOffset] = useState(0);
  const [retrying, setRetrying] = useState<string | null>(null);
  const [retryError, setRetryError] = useState<unknown>(undefined);
  const [retried, setRetried] = useState(0);
  const list = useLoad(
    () =>
      must(
        api.GET('/api/v1/subscriptions/{id}/deliveries', {
          params: {
            path: { id: subscription.id },
            query: { limit: PAGE_SIZE, offset, ...(status ? { status } : {}) },
          },
        }),
      ),
    [subscription.id, status, offset, version, retried],
  );
  const filterId = `subs-status-${subscription.id}`;
  const retry = async (delivery: Delivery) => {
    setRetrying(delivery.id);
    setRetryError(undefined);
    try {
      await must(api.POST('/api/v1/deliveries/{id}/retry', { params: { path: { id: delivery.id } } }));
      setRetried((n) => n + 1);
      onRetried();
    } catch (error) {
      setRetryError(error);
    } finally {
      setRetrying(null);
    }
  };
  const data = list.data;
  const filterLabel = STATUS_FILTERS.find((f) => f.value === status)?.label ?? 'All';
  return (
    <section class="subs-deliveries" aria-label={`Deliveries to ${subscription.url}`}>
      <div class="toolbar subs-deliveries-bar">
        <div class="field">
          <label for={filterId}>Status</label>
          <select
            id={filterId}
            value={status}
            onChange={(event) => {
              setStatus(event.currentTarget.value as StatusFilter);
              setOffset(0);
            }}
          >
            {STATUS_FILTERS.map((filter) => (
              <option key={filter.value} value={filter.value}>
                {filter.label}
              </option>
            ))}
          </select>
        </div>
        {data !== undefined && (
          <span class="muted" data-field="delivery-total">
            {status ? `${data.total} ${status}` : count(data.total, 'delivery', 'deliveries')}
          </span>
        )}
      </div>
      {status === 'failed' && (
        <p class="muted subs-dead-letters">
          A failed delivery is a dead letter: its retries ran out (a test is never retried). Retry sends it again, with
          the same <code>webhook-id</code>.
        </p>
      )}
      {retryError !== undefined && <ErrorBox error={retryError} />}
      {list.error !== undefined && <ErrorBox error={list.error} />}
      {data === undefined && list.error === undefined && <p class="loading">Loading deliveries…</p>}
      <Table
        rows={data?.items}
        region={`Deliveries to ${subscription.url}, ${filterLabel.toLowerCase()}`}
        minWidth="64rem"
        testId={`deliveries-${subscription.id}`}
        empty={status ? `No ${status} deliveries.` : 'No deliveries yet: they appear once a subscribed event happens.'}
        caption={`Deliveries to ${subscription.url}, newest first`}
        columns={[
          'Event',
          'Status',
          'Attempts',
          'Last answer',
          'Last error',
          'Next attempt',
          'Created',
          'Delivered',
          { label: 'Actions', hidden: true },
        ]}
        row={(delivery) => (
          <tr key={delivery.id} data-delivery-id={delivery.id} data-status={delivery.status}>
            <td class="subs-event">
              <code>{delivery.event_type}</code>
            </td>
            <td data-field="status">
              <Badge status={delivery.status} />
            </td>
            <td class="num" data-field="attempts">
              {delivery.attempts}
            </td>
            <td class="num" data-field="last-status">
              {delivery.last_status ?? '—'}
            </td>
            <td class="subs-last-error" data-field="last-error">
              {delivery.last_error ?? '—'}
            </td>
            <td>
              <Time iso={delivery.next_attempt_at} />
            </td>
            <td>
              <Time iso={delivery.created_at} />
            </td>
            <td>
              <Time iso={delivery.delivered_at} />
            </td>
            <td>
              {delivery.status === 'failed' && (
                <button
                  type="button"
                  class="secondary"
                  disabled={retrying !== null}
                  aria-label={`Retry delivery ${delivery.id}`}
                  onClick={() => void retry(delivery)}
                >
                  {retrying === delivery.id ? 'Retrying…' : 'Retry'}
                </button>
              )}
            </td>
          </tr>
        )}
      />
      {data !== undefined && data.total > PAGE_SIZE && (
        <nav class="actions pager" aria-label={`Pages of deliveries to ${subscription.url}`}>
          <button
            type="button"
            class="secondary"
            disabled={offset === 0}
            onClick={() => setOffset(Math.max(0, offset - PAGE_SIZE))}
          >
            Previous
          </button>
          <span>
            {offset + 1}–{Math.min(offset + PAGE_SIZE, data.total)} of {data.total}
          </span>
          <button
            type="button"
            class="secondary"
            disabled={offset + PAGE_SIZE >= data.total}
            onClick={() => setOffset(offset + PAGE_SIZE)}
          >
            Next
          </button>
        </nav>
      )}
    </section>
  );
}

/** What the last Test of a subscription came to: its result, or why it could not be sent. */
type TestOutcome = { result: TestResult } | { error: unknown };

/** The line under a subscription after its Test (always in the page, so a screen reader announces it). */
function TestLine({ outcome, busy }: { outcome: TestOutcome | undefined; busy: boolean }) {
  let text = null;
  if (busy) {
    text = <span>Sending a test delivery…</span>;
  } else if (outcome && 'error' in outcome) {
    text = <span class="field-error">Test not sent: {describeError(outcome.error).message}</span>;
  } else if (outcome) {
    const { result } = outcome;
    const facts = `${result.status === null ? 'no answer' : `HTTP ${result.status}`}, ${Math.round(result.duration_ms)} ms`;
    // The error of a plain non-2xx answer says no more than its status.
    const error = result.error && result.error !== `HTTP ${result.status}` ? `: ${result.error}` : '.';
    text = result.ok ? (
      <span class="subs-ok">Test delivered ({facts}).</span>
    ) : (
      <span class="field-error">
        Test failed ({facts}){error}
      </span>
    );
  }
  return (
    <p class="subs-test-outcome" role="status" data-field="test-outcome">
      {text}
    </p>
  );
}

/** One subscription as a card: URL, state, events, counts, actions, the Test line and (opened) its deliveries. */
function SubscriptionCard({
  api,
  subscription,
  version,
  onChanged,
  onDeleted,
  notify,
}: {
  api: Client;
  subscription: Subscription;
  version: number;
  onChanged: (changed?: Subscription) => void;
  onDeleted: (id: string) => void;
  notify: PageProps['notify'];
}) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState<'test' | 'toggle' | 'delete' | null>(null);
  const [outcome, setOutcome] = useState<TestOutcome>();
  const path = { params: { path: { id: subscription.id } } };
  const stats = subscription.stats;
  const test = async () => {
    setBusy('test');
    setOutcome(undefined);
    try {
      const result = await must(api.POST('/api/v1/subscriptions/{id}/test', path));
      setOutcome({ result });
      onChanged();
    } catch (error) {
      setOutcome({ error });
    } finally {
      setBusy(null);
    }
  };
  const toggle = async () => {
    setBusy('toggle');
    try {
      onChanged(
        await must(api.PATCH('/api/v1/subscriptions/{id}', { ...path, body: { enabled: !subscription.enabled } })),
      );
    } catch (error) {
      notify(error);
    } finally {
      setBusy(null);
    }
  };
  const remove = async () => {
    setBusy('delete');
    try {
      await must(api.DELETE('/api/v1/subscriptions/{id}', path));
      onDeleted(subscription.id);
    } catch (error) {
      notify(error);
      setBusy(null);
    }
  };
  return (
    <li class="card subs-card" data-subscription-id={subscription.id}>
      <div class="subs-head">
        <h2 class="subs-url">{subscription.url}</h2>
        <span data-field="enabled">
          <Badge status={subscription.enabled ? 'enabled' : 'disabled'} />
        </span>
      </div>
      {subscription.description && (
        <p class="subs-description" data-field="description">
          {subscription.description}
        </p>
      )}
      <ul class="subs-event-list" aria-label={`Events sent to ${subscription.url}`}>
        {subscription.events.map((name) => (
          <li key={name}>
            <code>{name === '*' ? '* (every event)' : name}</code>
          </li>
        ))}
      </ul>
      <dl class="subs-facts">
        <div>
          <dt>Pending</dt>
          <dd data-field="pending">{stats ? stats.pending : '—'}</dd>
        </div>
        <div>
          <dt>Delivered</dt>
          <dd data-field="delivered">{stats ? stats.delivered : '—'}</dd>
        </div>
        <div>
          <dt>Failed</dt>
          <dd data-field="failed" class={stats && stats.failed > 0 ? 'subs-failed' : undefined}>
            {stats ? stats.failed : '—'}
          </dd>
        </div>
        <div>
          <dt>Created</dt>
          <dd>
            <Time iso={subscription.created_at} />
          </dd>
        </div>
        <div>
          <dt>Id</dt>
          <dd>
            <code data-field="id">{subscription.id}</code>
          </dd>
        </div>
      </dl>
      <div class="actions subs-actions">
        <button
          type="button"
          disabled={busy !== null}
          aria-label={`Send a test delivery to ${subscription.url}`}
          onClick={() => void test()}
        >
          Test
        </button>
        <button
          type="button"
          class="secondary"
          disabled={busy !== null}
          aria-label={`${subscription.enabled ? 'Disable' : 'Enable'} ${subscription.url}`}
          onClick={() => void toggle()}
        >
          {subscription.enabled ? 'Disable' : 'Enable'}
        </button>
        <button
          type="button"
          class="secondary"
          aria-expanded={open}
          aria-label={`${open ? 'Hide deliveries' : 'Deliveries'} to ${subscription.url}`}
          onClick={() => setOpen((o) => !o)}
        >
          {open ? 'Hide deliveries' : 'Deliveries'}
        </button>
        <ConfirmButton
          label={`Delete subscription ${subscription.url}`}
          confirmText="Confirm delete"
          disabled={busy !== null}
          onConfirm={() => void remove()}
        >
          Delete
        </ConfirmButton>
      </div>
      <TestLine outcome={outcome} busy={busy === 'test'} />
      {open && <Deliveries api={api} subscription={subscription} version={version} onRetried={() => onChanged()} />}
    </li>
  );
}

/**
 * Every subscription with its delivery counts: the list answers none, so each one is read on its own (GET
 * /subscriptions/{id}); one that cannot be read (deleted meanwhile) stays as listed.
 */
async function loadWithStats(api: Client): Promise<Subscription[]> {
  const { items } = await must(api.GET('/api/v1/subscriptions'));
  return Promise.all(
    items.map(async (item) => {
      if (item.stats) return item;
      return must(api.GET('/api/v1/subscriptions/{id}', { params: { path: { id: item.id } } })).catch(() => item);
    }),
  );
}

export default function SubscriptionsPage({ api, role, notify }: PageProps) {
  const admin = role === 'admin';
  const loaded = useLoad(() => (admin ? loadWithStats(api) : Promise.resolve(undefined)), [api, admin]);
  const [list, setList] = useState<Subscription[]>();
  const [created, setCreated] = useState<CreatedSubscription | null>(null);
  const [version, setVersion] = useState(0);
  const addCard = useRef<HTMLDetailsElement>(null);
  const refresh = () => {
    loaded.reload();
    setVersion((v) => v + 1);
  };
  usePoll(refresh, POLL_MS, admin);

  useEffect(() => {
    if (loaded.data) setList(loaded.data);
  }, [loaded.data]);

  if (!admin) {
    return (
      <section aria-labelledby="subs-title">
        <h1 id="subs-title">Subscriptions</h1>
        <p class="card">Event subscriptions need an admin token. This token may not read them.</p>
      </section>
    );
  }

  return (
    <section aria-labelledby="subs-title" class="subs-page">
      <h1 id="subs-title">Subscriptions</h1>
      <p class="muted">
        Signed webhooks: the gateway POSTs each event a subscription asks for to its URL (Standard Webhooks headers,
        signed with the subscription’s secret) and retries until the receiver answers 2xx.
      </p>
      {created && (
        <SecretPanel
          created={created}
          onDone={() => {
            setCreated(null);
            addCard.current?.querySelector('summary')?.focus();
          }}
        />
      )}
      <details class="card add-card" ref={addCard}>
        <summary>New subscription</summary>
        <SubscriptionForm
          api={api}
          onCreated={(subscription) => {
            setCreated(subscription);
            if (addCard.current) addCard.current.open = false;
            const { secret: _secret, ...shown } = subscription;
            setList((items) => [...(items ?? []), shown]);
            loaded.reload();
          }}
        />
      </details>
      {loaded.error !== undefined && <ErrorBox error={loaded.error} />}
      {!list && loaded.error === undefined && <p class="loading">Loading subscriptions…</p>}
      {list?.length === 0 && (
        <p class="empty" data-testid="subscriptions-empty">
          No subscriptions yet. Add one to have events POSTed to a URL of yours.
        </p>
      )}
      {list && list.length > 0 && (
        <ul class="card-list subs-list" aria-label="Subscriptions">
          {list.map((subscription) => (
            <SubscriptionCard
              key={subscription.id}
              api={api}
              subscription={subscription}
              version={version}
              notify={notify}
              onChanged={(changed) => {
                if (changed) setList((items) => items?.map((s) => (s.id === changed.id ? { ...s, ...changed } : s)));
                refresh();
              }}
              onDeleted={(id) => {
                setList((items) => items?.filter((s) => s.id !== id));
                loaded.reload();
              }}
            />
          ))}
        </ul>
      )}
    </section>
  );
}
