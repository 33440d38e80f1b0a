// One tools/call through the official MCP SDK client; prints the result as
// JSON ({isError, structuredContent, text}) on stdout.  With TOOL "list",
// prints the tool names of tools/list.  With TOOL "batch", reads one call a
// line from stdin ({"tool": NAME, "arguments": {...}}) and makes them all in
// one session, one result a line, in order: a node process costs about half
// a second of CPU, which a test of many calls would otherwise pay for each.
// MCP_BEARER_TOKEN, when set, is sent as the Authorization header (an mcpd
// with MCP_AUTH=jwt).
//
//   node mcp_call.mjs URL DEPS_DIR TOOL [ARGS_JSON]
//   node mcp_call.mjs URL DEPS_DIR batch < CALLS
import { createRequire } from 'node:module';
import path from 'node:path';

const [url, depsDir, tool, argsJson] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(depsDir), 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

const opts = {};
if (process.env.MCP_BEARER_TOKEN)
	opts.requestInit = { headers: { Authorization: `Bearer ${process.env.MCP_BEARER_TOKEN}` } };
function answer(r) {
	return JSON.stringify({ isError: !!r.isError, structuredContent: r.structuredContent ?? null,
		text: r.content.map((c) => c.text ?? '').join('\n') });
}

const client = new Client({ name: 'imap-mcp-writes-test', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(url), opts));
if (tool === 'list') {
	const r = await client.listTools();
	console.log(JSON.stringify(r.tools.map((t) => ({ name: t.name, annotations: t.annotations }))));
} else if (tool === 'batch') {
	let input = '';
	for await (const chunk of process.stdin)
		input += chunk;
	for (const line of input.split('\n').filter((l) => l.trim() !== '')) {
		const c = JSON.parse(line);
		console.log(answer(await client.callTool({ name: c.tool, arguments: c.arguments ?? {} })));
	}
} else {
	console.log(answer(await client.callTool({ name: tool, arguments: JSON.parse(argsJson ?? '{}') })));
}
await client.close();
