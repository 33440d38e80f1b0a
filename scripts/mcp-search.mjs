// One search through the official MCP TypeScript SDK client, as any MCP
// client would make it: initialize, tools/list, search_messages.
//
//   node scripts/mcp-search.mjs URL QUERY [LIMIT]
//
// Env: MCP_DEPS (default .deps/npm next to this script's parent, where
// scripts/deps installed the SDK); MCP_BEARER_TOKEN, when set, is sent as
// "Authorization: Bearer ..." on every request (an OAuth-protected mcpd).
// Prints the tool names, then one line per hit:
//   hit <id> | <date> | <folder> | <from> | <subject>
// Exit status 0 when the search ran (even with no hits), 1 on any error.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const [url, query, limitArg] = process.argv.slice(2);
if (!url || !query) {
	console.error('usage: node mcp-search.mjs URL QUERY [LIMIT]');
	process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const depsDir = process.env.MCP_DEPS || path.join(here, '..', '.deps', 'npm');
const require = createRequire(path.join(path.resolve(depsDir), 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

const opts = {};
if (process.env.MCP_BEARER_TOKEN)
	opts.requestInit = { headers: { Authorization: `Bearer ${process.env.MCP_BEARER_TOKEN}` } };
const transport = new StreamableHTTPClientTransport(new URL(url), opts);
const client = new Client({ name: 'imap-mcp-quickstart', version: '1.0.0' });
try {
	await client.connect(transport);
	const info = client.getServerVersion();
	console.log(`server: ${info?.name} ${info?.version}`);
	const { tools } = await client.listTools();
	console.log(`tools: ${tools.map((t) => t.name).sort().join(', ')}`);
	const r = await client.callTool({
		name: 'search_messages',
		arguments: { query, limit: Number(limitArg) || 3 },
	});
	if (r.isError) {
		console.error(`search failed: ${r.content.map((c) => c.text ?? '').join(' ')}`);
		process.exit(1);
	}
	const results = r.structuredContent?.results ?? [];
	console.log(`search "${query}": ${results.length} hit(s) shown`);
	for (const h of results)
		console.log(`hit ${h.id} | ${(h.date ?? '').slice(0, 10)} | ${h.folder} | ${h.from} | ${h.subject}`);
	await transport.terminateSession().catch(() => {});
	await client.close();
} catch (e) {
	console.error(`mcp-search: ${e?.message ?? e}`);
	process.exit(1);
}
