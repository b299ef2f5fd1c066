/**
 * Why the gateway's status is what it is (GET /health, ADR 0024): every component that is not `ok`, with its
 * message. On the `echo` provider (the default of a fresh install) the provider's "degraded" is no fault but an
 * unfinished set-up, so a first-run checklist takes its place.
 */
import type { HealthReport } from '../../api';
import { Badge } from '../../ui';

/** The report's components by name, in the order the report lists them. */
type Components = HealthReport['components'];

const COMPONENT_NAMES: Record<keyof Components, string> = {
  store: 'Store',
  provider: 'Model provider',
  channels: 'Channels',
  bus: 'Shared bus',
  mcp: 'MCP servers',
  memory: 'Memory',
};

/** `openai:gpt-4o-mini` → type `openai`, model `gpt-4o-mini` (a model name may itself hold colons). */
export function providerParts(provider: string): { type: string; model: string } {
  const colon = provider.indexOf(':');
  return colon < 0
    ? { type: provider, model: '—' }
    : { type: provider.slice(0, colon), model: provider.slice(colon + 1) };
}

/** True while the gateway answers with the offline `echo` provider. */
export function onEcho(report: HealthReport): boolean {
  return providerParts(report.provider).type === 'echo';
}

/** The first steps of a fresh gateway, shown while it runs on `echo`. */
export function FirstRunChecklist() {
  return (
    <section class="card first-run" aria-labelledby="first-run-title">
      <h2 id="first-run-title">Getting started</h2>
      <p>
        The gateway answers with the built-in <code>echo</code> provider: it repeats each message and calls no model.
        That is why its status is <strong>degraded</strong>; nothing is broken.
      </p>
      <ol class="checklist">
        <li>
          <strong>Set a model provider.</strong> Start the gateway with <code>OPENAI_API_KEY</code> in its environment,
          or set <code>provider.type</code> (<code>openai</code> or <code>anthropic</code>) and{' '}
          <code>provider.model</code> in the configuration (<a href="#/config">Config</a> or the config file), then
          restart it.
        </li>
        <li>
          <strong>Try it.</strong> Open <a href="#/chat">Chat</a> and send a message.
        </li>
        <li>
          <strong>Add a channel</strong> (Telegram, Slack or the webhook) so people reach the agent where they are:{' '}
          <a href="#/channels">Channels</a>.
        </li>
        <li>
          <strong>Read the docs:</strong> the README's configuration section, and the API reference at{' '}
          <a href="/api/docs">/api/docs</a>.
        </li>
      </ol>
    </section>
  );
}

/** The components that are not `ok`, each with its status and message; on echo the provider is left to the checklist. */
export function HealthWhy({ report }: { report: HealthReport }) {
  const echo = onEcho(report);
  const faults = (Object.keys(COMPONENT_NAMES) as (keyof Components)[])
    .map((name) => ({ name, component: report.components[name] }))
    .filter(({ name, component }) => component.status !== 'ok' && !(echo && name === 'provider'));
  if (report.status === 'healthy' || (faults.length === 0 && !report.error)) {
    return (
      <p class="health-why" data-health="ok">
        {report.status === 'healthy' ? 'Every component reports ok.' : 'Only the set-up below remains.'}
      </p>
    );
  }
  return (
    <div class="health-why" data-health={report.status}>
      <p>
        The status is <strong>{report.status}</strong> because:
      </p>
      <ul class="health-faults">
        {report.error && (
          <li>
            <strong>Gateway</strong>: {report.error.message}
          </li>
        )}
        {faults.map(({ name, component }) => (
          <li key={name} data-component={name}>
            <strong>{COMPONENT_NAMES[name]}</strong> <Badge status={component.status} />
            {component.message ? `: ${component.message}` : ''}
          </li>
        ))}
      </ul>
    </div>
  );
}
