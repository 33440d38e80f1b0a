// The AI SDK's MCP client (@ai-sdk/mcp) against a real mcpd.  It probes
// server/discover before anything else, so against mcpd it must land on the
// 2026-07-28 path: no initialize, no session.  A wrapping fetch records what
// went over the wire to prove it.
//
//   node mcp_aisdk.mjs URL DEPS_DIR
import { createRequire } from 'node:module';
import path from 'node:path';

import { checker } from './check.mjs';

const [url, depsDir] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(depsDir), 'package.json'));
const { createMCPClient } = await import(require.resolve('@ai-sdk/mcp'));

const { check, done } = checker('mcp_aisdk');

const seen = [];	// [method, MCP-Protocol-Version, Mcp-Session-Id] per POST
const recording = async (input, init = {}) => {
	const h = new Headers(init.headers);
	let method;
	try {
		method = JSON.parse(init.body).method;
	} catch {
		method = undefined;
	}
	seen.push([method, h.get('mcp-protocol-version'), h.get('mcp-session-id')]);
	return fetch(input, init);
};

const client = await createMCPClient({ transport: { type: 'http', url, fetch: recording } });
check(seen[0]?.[0] === 'server/discover', 'the first request is server/discover', seen[0]);
check(!seen.some(([m]) => m === 'initialize'), 'no initialize', seen);
check(client.serverInfo?.name === 'imap-mcp', 'server info from discover', client.serverInfo);
const tools = await client.listTools();
check(tools.tools?.length === process.env.READ_TOOLS.split(',').length, 'the read tools',
	tools.tools?.map((t) => t.name));
const r = await client.callTool({ name: 'search_messages', arguments: { query: 'zebrafish' } });
check(r.structuredContent?.results?.[0]?.subject === 'Budget review for 2024', 'search over the modern path', r);
const res = await client.listResources();
check(res.resources?.length === 20, 'resources/list: the 20 newest', res.resources?.length);
await client.close();
check(seen.length >= 4 && seen.every(([, v, s]) => v === '2026-07-28' && s === null),
	'every request at 2026-07-28, none with a session', seen);

done();
