/**
 * Agents (`#/agents`): the agents this token may use (GET /agents; an admin sees all, DECISIONS §17-18) with
 * their provider, model, tools (the names open under the count), live sessions and which one is the default,
 * and who the token is (GET /whoami). The session counts follow the live `sessions` topic.
 */
import type { components } from '../../../client/index.js';
import { must } from '../errors';
import type { PageProps } from '../page';
import { ErrorBox, useLive, useLoad, useThrottled } from '../ui';
import { Table } from '../ui/table';
import './agents/agents.css';

type Agent = components['schemas']['Agent'];

/** The tool count, opening to the tool names (also in its title). */
function Tools({ agent }: { agent: Agent }) {
  const count = agent.tools.length;
  if (count === 0) return <span class="muted">none</span>;
  const label = `${count} ${count === 1 ? 'tool' : 'tools'}`;
  return (
    <details class="agent-tools" data-field="tools">
      <summary title={agent.tools.join(', ')} aria-label={`${label} of ${agent.id}`}>
        {label}
      </summary>
      <ul>
        {agent.tools.map((tool) => (
          <li key={tool}>
            <code>{tool}</code>
          </li>
        ))}
      </ul>
    </details>
  );
}

export default function AgentsPage(props: PageProps) {
  const { api, live } = props;
  const agents = useLoad(() => must(api.GET('/api/v1/agents')), [api]);
  const whoami = useLoad(() => must(api.GET('/api/v1/whoami')), [api]);
  const reload = useThrottled(agents.reload, 400);
  useLive(live, ['sessions'], reload);

  return (
    <section aria-labelledby="agents-title">
      <h1 id="agents-title">Agents</h1>
      {whoami.data && (
        <p class="whoami" data-testid="whoami">
          Signed in as <strong>{whoami.data.principal}</strong> ({whoami.data.role})
        </p>
      )}
      {whoami.error !== undefined && <ErrorBox error={whoami.error} />}
      <p class="muted">
        The agents this token may use, each with its model and tools. Sessions counts the live sessions of each
        {props.role === 'admin' ? '.' : ' that this token owns.'}
      </p>
      {agents.error !== undefined && <ErrorBox error={agents.error} />}
      {!agents.data && agents.error === undefined && <p class="loading">Loading agents…</p>}
      <Table
        rows={agents.data?.items}
        empty="No agents are available to this token."
        caption="Agents"
        columns={['Agent', 'Model', 'Tools', 'Sessions']}
        row={(agent) => (
          <tr key={agent.id} data-agent={agent.id}>
            <td class="agent-id">
              <strong>{agent.id}</strong>
              {agent.default && (
                <span class="badge badge-default" title="Runs the sessions no binding names an agent for">
                  default
                </span>
              )}
            </td>
            <td>
              <span data-field="model">{agent.model}</span>
              <div class="muted agent-provider">
                via <span data-field="provider">{agent.provider}</span>
              </div>
            </td>
            <td>
              <Tools agent={agent} />
            </td>
            <td data-field="sessions">{agent.sessions}</td>
          </tr>
        )}
      />
    </section>
  );
}
