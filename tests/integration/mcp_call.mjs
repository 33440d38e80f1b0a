// One tools/call through the official MCP SDK client; prints the result as
// JSON ({isError, structuredContent, text}) on stdout.  With TOOL "list",
// prints the tool names of tools/list.  MCP_BEARER_TOKEN, when set, is sent
// as the Authorization header (an mcpd with MCP_AUTH=jwt).
//
//   node mcp_call.mjs URL DEPS_DIR TOOL [ARGS_JSON]
import { createRequire } from 'node:module';
import path from 'node:path';

const [url, depsDir, tool, argsJson] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(depsDir), 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

const opts = {};
if (process.env.MCP_BEARER_TOKEN)
	opts.requestInit = { headers: { Authorization: `Bearer ${process.env.MCP_BEARER_TOKEN}` } };
const client = new Client({ name: 'imap-mcp-writes-test', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(url), opts));
if (tool === 'list') {
	const r = await client.listTools();
	console.log(JSON.stringify(r.tools.map((t) => ({ name: t.name, annotations: t.annotations }))));
} else {
	const r = await client.callTool({ name: tool, arguments: JSON.parse(argsJson ?? '{}') });
	console.log(JSON.stringify({ isError: !!r.isError, structuredContent: r.structuredContent ?? null,
		text: r.content.map((c) => c.text ?? '').join('\n') }));
}
await client.close();
