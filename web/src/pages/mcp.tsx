/**
 * MCP servers (`#/mcp`): the Model Context Protocol servers whose tools the agents may call (GET /mcp/servers,
 * admin, DECISIONS §19), each with its state, transport, tools (the names the agents see, and which of them
 * wait for an approval), last error and restarts, and a Restart that asks once more before it runs (POST
 * /mcp/servers/{name}/restart) and says how it went. No live topic covers them, so the list is polled while
 * the tab is visible. With none configured, the page shows how to add one in gatehouse.yaml.
 */
import { useEffect, useState } from 'preact/hooks';
import type { components } from '../../../client/index.js';
import { describeError, must } from '../errors';
import type { PageProps } from '../page';
import { Badge, ErrorBox, Time, useLoad } from '../ui';
import { ConfirmButton, usePoll } from '../ui/fields';
import './mcp/mcp.css';

type McpServer = components['schemas']['McpServer'];

/** How often the list is read again while the tab is visible (a server connecting, failing, coming back). */
const POLL_MS = 5000;
/** How often while a restarted server is still connecting. */
const FAST_POLL_MS = 1000;

/** The snippet of the empty state: one stdio server under `mcp.servers` (DECISIONS §19). */
const EXAMPLE = `mcp:
  servers:
    files:
      transport: stdio
      command: node
      args: ["server.js"]
      tools: { allow: ["*"] }
      approval: never`;

/** What a Restart came to: done (the card's server shows how it is since), or the error. */
type Outcome = { done: true } | { error: unknown };

/** `2 tools`, `1 tool`. */
function count(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** Where a server is: the command of a stdio server, the URL of an http one. */
function endpoint(server: McpServer): string | null {
  return server.transport === 'stdio' ? server.command : server.url;
}

/** The tools of a server as the agents see them, those that pause for an approval marked. */
function Tools({ server }: { server: McpServer }) {
  if (server.tools.length === 0) {
    return (
      <p class="muted mcp-no-tools">
        {server.state === 'ready' ? 'It offers no tools.' : 'No tools until it connects.'}
      </p>
    );
  }
  return (
    <ul class="mcp-tools" aria-label={`Tools of ${server.name}`}>
      {server.tools.map((tool) => (
        <li key={tool.exposed_as} data-tool={tool.exposed_as}>
          <code class="mcp-tool-name" title={`${tool.name} on ${server.name}`}>
            {tool.exposed_as}
          </code>
          {tool.approval === 'always' && (
            <span class="badge badge-approval" data-field="approval" title="Each call waits for an admin to approve it">
              needs approval
            </span>
          )}
          {tool.description && <span class="muted mcp-tool-description">{tool.description}</span>}
        </li>
      ))}
    </ul>
  );
}

/** The line under a server after its Restart: how the server is since (connecting, then ready or failed), or why the restart was refused. */
function RestartOutcome({ outcome, server }: { outcome: Outcome | undefined; server: McpServer }) {
  let text = null;
  if (outcome && 'error' in outcome) {
    text = <span class="field-error">Restart failed: {describeError(outcome.error).message}</span>;
  } else if (outcome) {
    text =
      server.state === 'connecting' ? (
        <span>Restarted; connecting…</span>
      ) : server.state === 'ready' ? (
        <span>Restarted: ready, {count(server.tools.length, 'tool', 'tools')}.</span>
      ) : (
        <span class="field-error">Restarted, but it is {server.state}: see the last error.</span>
      );
  }
  // Always in the page, so a screen reader announces what is written into it.
  return (
    <p class="mcp-outcome" role="status" data-field="outcome">
      {text}
    </p>
  );
}

/** One server as a card. */
function ServerCard({
  server,
  busy,
  outcome,
  onRestart,
}: {
  server: McpServer;
  busy: boolean;
  outcome: Outcome | undefined;
  onRestart: () => void;
}) {
  const where = endpoint(server);
  return (
    <li class="card mcp-server" data-server={server.name}>
      <div class="mcp-head">
        <h2>{server.name}</h2>
        <span data-field="state">
          <Badge status={server.state} />
        </span>
        <span class="muted mcp-transport" data-field="transport">
          {server.transport}
        </span>
      </div>
      {where && (
        <p class="mcp-endpoint">
          <code data-field="endpoint">{where}</code>
        </p>
      )}
      <dl class="mcp-facts">
        <div>
          <dt>Tools</dt>
          <dd data-field="tools">{server.tools.length}</dd>
        </div>
        <div>
          <dt>Restarts</dt>
          <dd data-field="restarts">{server.restarts}</dd>
        </div>
        <div>
          <dt>Connected</dt>
          <dd>
            <Time iso={server.connected_at} />
          </dd>
        </div>
      </dl>
      {server.last_error && (
        <p class="mcp-error" data-field="last-error">
          <strong>Last error:</strong> {server.last_error}
        </p>
      )}
      <Tools server={server} />
      <div class="actions mcp-actions">
        <ConfirmButton
          label={`Restart ${server.name}`}
          confirmText="Confirm restart"
          disabled={busy}
          onConfirm={onRestart}
        >
          Restart
        </ConfirmButton>
        {busy && <span class="muted">Restarting…</span>}
      </div>
      <RestartOutcome outcome={outcome} server={server} />
    </li>
  );
}

/** What the page shows with no server configured: where to add one, with a snippet. */
function EmptyState() {
  return (
    <div class="card mcp-empty" data-testid="mcp-empty">
      <p>
        <strong>No MCP servers are configured.</strong> Add one under <code>mcp.servers</code> in{' '}
        <code>gatehouse.yaml</code> and restart the gateway; its tools reach the agents as{' '}
        <code>mcp__&lt;server&gt;__&lt;tool&gt;</code>.
      </p>
      <pre>
        <code>{EXAMPLE}</code>
      </pre>
      <p class="muted">
        An http server takes <code>transport: http</code> and a <code>url</code> instead of a command.
      </p>
    </div>
  );
}

export default function McpPage({ api, role }: PageProps) {
  const admin = role === 'admin';
  const loaded = useLoad(
    () => (admin ? must(api.GET('/api/v1/mcp/servers')) : Promise.resolve(undefined)),
    [api, admin],
  );
  const [servers, setServers] = useState<McpServer[]>();
  const [pending, setPending] = useState<string | null>(null);
  const [outcomes, setOutcomes] = useState<Record<string, Outcome>>({});
  const settling = servers?.some((s) => outcomes[s.name] && s.state === 'connecting') ?? false;
  usePoll(loaded.reload, settling ? FAST_POLL_MS : POLL_MS, admin);

  useEffect(() => {
    if (loaded.data) setServers(loaded.data.items);
  }, [loaded.data]);

  const restart = async (name: string) => {
    setPending(name);
    setOutcomes(({ [name]: _previous, ...others }) => others);
    try {
      const server = await must(api.POST('/api/v1/mcp/servers/{name}/restart', { params: { path: { name } } }));
      setServers((list) => list?.map((s) => (s.name === name ? server : s)));
      setOutcomes((all) => ({ ...all, [name]: { done: true } }));
      // A newer load: a poll sent before the restart answered can no longer overwrite it.
      loaded.reload();
    } catch (error) {
      setOutcomes((all) => ({ ...all, [name]: { error } }));
    } finally {
      setPending(null);
    }
  };

  if (!admin) {
    return (
      <section aria-labelledby="mcp-title">
        <h1 id="mcp-title">MCP servers</h1>
        <p class="card">Reading the MCP servers needs an admin token. This token may not read them.</p>
      </section>
    );
  }

  return (
    <section aria-labelledby="mcp-title">
      <h1 id="mcp-title">MCP servers</h1>
      <p class="muted">
        The Model Context Protocol servers whose tools the agents may call, under the names shown. A tool marked{' '}
        <em>needs approval</em> pauses its turn until an admin approves the call.
      </p>
      {loaded.error !== undefined && <ErrorBox error={loaded.error} />}
      {!servers && loaded.error === undefined && <p class="loading">Loading MCP servers…</p>}
      {servers?.length === 0 && <EmptyState />}
      {servers && servers.length > 0 && (
        <ul class="card-list mcp-servers" aria-label="MCP servers">
          {servers.map((server) => (
            <ServerCard
              key={server.name}
              server={server}
              busy={pending === server.name}
              outcome={outcomes[server.name]}
              onRestart={() => void restart(server.name)}
            />
          ))}
        </ul>
      )}
    </section>
  );
}
