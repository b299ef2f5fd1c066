import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

/**
 * An MCP server on stdio for the memory scenarios and the soak: one tool,
 * `blob`, whose result is `bytes` of text (a large tool output, offline).
 * The gateway starts it as `mcp.servers.big` and offers it as `mcp__big__blob`.
 */

const server = new McpServer({ name: 'bench-blob', version: '1.0.0' });
const line = `${'0123456789abcdef'.repeat(63)}\n`;

server.registerTool(
  'blob',
  { description: 'Returns `bytes` bytes of text', inputSchema: { bytes: z.number().int().min(1).max(16_777_216) } },
  ({ bytes }) => ({
    content: [{ type: 'text', text: line.repeat(Math.ceil(bytes / line.length)).slice(0, bytes) }],
  }),
);

await server.connect(new StdioServerTransport());
