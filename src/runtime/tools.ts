import type { ToolSpec } from './providers/provider.js';

/** What a tool may know about the turn that calls it. */
export interface ToolContext {
  sessionKey: string;
  eventId: string;
  /**
   * Whose memory the turn reads and writes (DECISIONS §17-18): `principal:<id>`
   * or `agent:<id>`, by its agent's `memory_scope`; absent: the default principal's.
   */
  memoryOwner?: string;
  /** The principal that owns the turn's session (DECISIONS §18): what the tools create is its. Absent: `default`. */
  principal?: string;
  /** Aborted when the turn is interrupted. */
  signal: AbortSignal;
}

/**
 * A tool the agent can call. Capabilities (memory, knowledge, tasks, skills)
 * export their tools; the composition root registers them. The runtime
 * never imports a capability.
 */
export interface AgentTool {
  spec: ToolSpec;
  /** Runs the tool. The result is sent to the model as JSON text. Throwing reports the error to the model. */
  run(args: Record<string, unknown>, ctx: ToolContext): Promise<unknown>;
  /**
   * The tool's own approval policy (an MCP server's `approval`, DECISIONS §19), asked at each call besides the
   * agent's `approval_required`: true pauses the turn (`waiting_approval`) until an admin approves the call.
   */
  needsApproval?(): boolean;
}

/**
 * Tools that come and go while the gateway runs (an MCP server's, refreshed when it announces a change):
 * looked up by name at each call and listed at each model call. Names never clash with registered tools
 * (a source owns a prefix, such as `mcp__`).
 */
export interface ToolSource {
  get(name: string): AgentTool | undefined;
  list(): readonly AgentTool[];
}

/** The `ask_user` tool: handled by the agent loop itself (pauses the turn). */
export const ASK_USER_TOOL: ToolSpec = {
  name: 'ask_user',
  description:
    'Ask the user a clarifying question when the request is ambiguous. The turn pauses until the user answers; the answer is returned as the result.',
  parameters: {
    type: 'object',
    properties: { question: { type: 'string', description: 'The question to ask' } },
    required: ['question'],
  },
};

/** The tools available to the agent, by name. */
/** The tools one agent may call: looked up by name, and the specs sent to its model. */
export interface ToolSet {
  get(name: string): AgentTool | undefined;
  specs(): ToolSpec[];
}

export class ToolRegistry implements ToolSet {
  private readonly tools = new Map<string, AgentTool>();
  private readonly sources: ToolSource[] = [];

  /** Adds tools that come and go (see ToolSource): asked after the registered tools. */
  attach(source: ToolSource): void {
    this.sources.push(source);
  }

  /** Adds a tool; a duplicate name is a programming error. */
  register(tool: AgentTool): void {
    if (this.tools.has(tool.spec.name) || tool.spec.name === ASK_USER_TOOL.name) {
      throw new Error(`tool ${tool.spec.name} registered twice`);
    }
    this.tools.set(tool.spec.name, tool);
  }

  get(name: string): AgentTool | undefined {
    const registered = this.tools.get(name);
    if (registered || this.sources.length === 0) return registered;
    for (const source of this.sources) {
      const tool = source.get(name);
      if (tool) return tool;
    }
    return undefined;
  }

  /** Specs sent to the model: every registered tool, then the attached sources' tools, plus `ask_user`. */
  specs(): ToolSpec[] {
    return [...this.all().map((t) => t.spec), ASK_USER_TOOL];
  }

  /** Every tool name, `ask_user` included. */
  names(): string[] {
    return [...this.all().map((t) => t.spec.name), ASK_USER_TOOL.name];
  }

  private all(): AgentTool[] {
    const registered = [...this.tools.values()];
    return this.sources.length === 0 ? registered : [...registered, ...this.sources.flatMap((s) => s.list())];
  }

  /**
   * The tools `allowed` lets through, `ask_user` included, as one agent sees
   * them (DECISIONS §17): a live view, so tools registered later show too.
   * A call of a tool outside it is answered as an unknown tool.
   */
  view(allowed: (name: string) => boolean): ToolSet {
    return {
      get: (name) => (allowed(name) ? this.get(name) : undefined),
      specs: () => this.specs().filter((spec) => allowed(spec.name)),
    };
  }
}
