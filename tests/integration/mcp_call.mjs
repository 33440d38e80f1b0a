// One tools/call through the official MCP SDK client; prints the result as
// JSON ({isError, structuredContent, text}) on stdout.  With TOOL "list",
// prints the tool names of tools/list.  With TOOL "batch", reads one call a
// line from stdin ({"tool": NAME, "arguments": {...}}) and makes them all in
// one session, one result a line, in order: a node process costs about half
// a second of CPU, which a test of many calls would otherwise pay for each.
// A batch line may also have "out" (a file the result is written to instead
// of stdout), "token" (the bearer token of this call: one session a token)
// and "list": true (tools/list, as TOOL "list").  In a batch a call that
// throws (an HTTP or JSON-RPC error) gives {"thrown": MESSAGE, "code": ITS
// STATUS OR CODE} and the rest go on; the exit status is 1 if one did.  MCP_BEARER_TOKEN, when set, is
// sent as the Authorization header (an mcpd with MCP_AUTH=jwt).
//
//   node mcp_call.mjs URL DEPS_DIR TOOL [ARGS_JSON]
//   node mcp_call.mjs URL DEPS_DIR batch < CALLS
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

const [url, depsDir, tool, argsJson] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(depsDir), 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

function answer(r) {
	return JSON.stringify({ isError: !!r.isError, structuredContent: r.structuredContent ?? null,
		text: r.content.map((c) => c.text ?? '').join('\n') });
}
async function list(client) {
	const r = await client.listTools();
	return JSON.stringify(r.tools.map((t) => ({ name: t.name, annotations: t.annotations })));
}
const clients = new Map();	// bearer token ('' for none) -> its connected client
async function session(token) {
	if (!clients.has(token)) {
		const opts = {};
		if (token)
			opts.requestInit = { headers: { Authorization: `Bearer ${token}` } };
		const client = new Client({ name: 'imap-mcp-writes-test', version: '1.0.0' });
		await client.connect(new StreamableHTTPClientTransport(new URL(url), opts));
		clients.set(token, client);
	}
	return clients.get(token);
}

if (tool === 'list') {
	console.log(await list(await session(process.env.MCP_BEARER_TOKEN ?? '')));
} else if (tool === 'batch') {
	let input = '';
	for await (const chunk of process.stdin)
		input += chunk;
	for (const line of input.split('\n').filter((l) => l.trim() !== '')) {
		const c = JSON.parse(line);
		const s = await session(c.token ?? process.env.MCP_BEARER_TOKEN ?? '');
		let out;
		try {
			out = c.list ? await list(s) : answer(await s.callTool({ name: c.tool, arguments: c.arguments ?? {} }));
		} catch (e) {
			out = JSON.stringify({ thrown: String(e?.message ?? e), code: e?.code ?? null });
			process.exitCode = 1;
		}
		if (c.out)
			writeFileSync(c.out, out + '\n');
		else
			console.log(out);
	}
} else {
	const client = await session(process.env.MCP_BEARER_TOKEN ?? '');
	console.log(answer(await client.callTool({ name: tool, arguments: JSON.parse(argsJson ?? '{}') })));
}
for (const c of clients.values())
	await c.close();
