// The official MCP TypeScript SDK v2 client (@modelcontextprotocol/client)
// against a real mcpd, in one of its three version-negotiation modes:
//
//   node mcp_client2.mjs URL DEPS_DIR legacy|auto|modern
//
// legacy: the 2025 initialize handshake; auto: probe server/discover and land
// on the era the server offers (mcpd speaks 2026-07-28, so modern); modern:
// pinned to 2026-07-28, no fallback.  In every mode: connect, list the tools
// (icons, output schemas without null types), call each read tool with the
// client's output-schema validation on, read a resource, list resources to
// the end, and check the errors a user meets.  The fixture facts are those of
// tests/fixtures/mcpd plus mkindex --synthetic 200, served with MCP_READ_ONLY=1.
import { createRequire } from 'node:module';
import path from 'node:path';

import { checker } from './check.mjs';

const [url, depsDir, mode] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(depsDir), 'package.json'));
const { Client, StreamableHTTPClientTransport } = require('@modelcontextprotocol/client');

const { check, done } = checker(`mcp_client2 ${mode}`);
const text = (r) => r.content.map((c) => c.text ?? '').join('\n');
const modern = mode !== 'legacy';
const negotiation = { legacy: { mode: 'legacy' }, auto: { mode: 'auto' }, modern: { mode: { pin: '2026-07-28' } } }[mode];
if (!negotiation) {
	console.error('mode must be legacy, auto or modern');
	process.exit(2);
}

const transport = new StreamableHTTPClientTransport(new URL(url));
const client = new Client({ name: 'imap-mcp-test', version: '2.0.0' }, { versionNegotiation: negotiation });
await client.connect(transport);

// --- the era and who the server says it is
check(client.getProtocolEra() === (modern ? 'modern' : 'legacy'), 'the era', client.getProtocolEra());
const info = client.getServerVersion();
check(info?.name === 'imap-mcp' && /flag, move, trash and draft/.test(info?.description ?? ''),
	'serverInfo names the server and its write tools', info);
check(info?.icons?.[0]?.src?.startsWith('data:image/svg+xml;base64,'), 'serverInfo has an icon', info?.icons);
const caps = client.getServerCapabilities();
check(caps?.tools && caps?.resources, 'capabilities tools+resources', caps);
check(modern ? caps?.logging === undefined : caps?.logging !== undefined,
	modern ? 'no logging capability (deprecated in 2026-07-28)' : 'logging capability', caps);
check(/untrusted-mail/.test(client.getInstructions() ?? ''), 'instructions explain the fence');
if (modern) {
	const d = await client.discover();
	check(JSON.stringify(d.supportedVersions) === '["2026-07-28"]', 'server/discover versions', d);
	check(transport.sessionId === undefined, 'no session on the modern path', transport.sessionId);
}

// --- tools/list: the read tools, icons, schemas a strict client takes
const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
// READ_TOOLS: the read tools' names, comma-separated, from mcpd/tools/*.json (the test script).
check(JSON.stringify(names) === JSON.stringify(process.env.READ_TOOLS.split(',')),
	'the read tools', names);
for (const t of tools) {
	check(t.icons?.length === 1, `${t.name} has an icon`);
	check(t.outputSchema?.type === 'object', `${t.name} has an outputSchema`);
	check(!/"null"/.test(JSON.stringify(t.outputSchema)), `${t.name}: no null types in the outputSchema`);
	check(/^[a-z_]{1,64}$/.test(t.name), `${t.name}: a name the tool-naming guidance allows`);
}

// --- every read tool, structuredContent validated by the SDK against outputSchema
let r = await client.callTool({ name: 'search_messages', arguments: { query: 'zebrafish' } });
const hit = r.structuredContent?.results?.[0];
check(!r.isError && hit?.subject === 'Budget review for 2024', 'search finds the budget mail', r.structuredContent);
const links = r.content.filter((c) => c.type === 'resource_link');
check(links.length === 1 && links[0].uri === `mail://message/${hit?.id}`, 'a resource_link per hit', r.content);
r = await client.callTool({ name: 'search_messages', arguments: { query: 'is:unread folder:INBOX' } });
check(r.structuredContent?.results?.length === 2 && r.structuredContent.results.every((h) => h.flags.includes('unread')),
	'flags in words (unread)', r.structuredContent?.results?.map((h) => h.flags));
r = await client.callTool({ name: 'get_message', arguments: { id: hit.id } });
check(!r.isError && /zebrafish/.test(r.structuredContent?.body ?? '') && !('next_offset' in r.structuredContent),
	'get_message: whole body, no next_offset', r.structuredContent);
r = await client.callTool({ name: 'get_thread', arguments: { id: hit.id } });
check(r.structuredContent?.total === 3 && r.structuredContent.messages.length === 3, 'get_thread: three', r.structuredContent);
r = await client.callTool({ name: 'list_folders', arguments: {} });
check(r.structuredContent?.folders?.length === 3, 'list_folders: three folders', r.structuredContent);
r = await client.callTool({ name: 'list_recent_writes', arguments: {} });
check(!r.isError && Array.isArray(r.structuredContent?.writes), 'list_recent_writes', r.structuredContent);

// input validation failures are tool errors the model can read (SEP-1303)
r = await client.callTool({ name: 'get_message', arguments: { id: 'abc' } });
check(r.isError === true && /integer/.test(text(r)), 'bad arguments -> tool error', text(r));
try {
	await client.callTool({ name: 'delete_everything', arguments: {} });
	check(false, 'unknown tool must throw');
} catch (e) {
	check(e.code === -32602, 'unknown tool -> -32602', { code: e.code, msg: e.message });
}

// --- resources: every page (the SDK gathers them), the template, a read
const all = await client.listResources();
check(all.resources.length === 20 && !all.nextCursor, 'resources/list to the end: 20 newest', all.resources.length);
const tpl = await client.listResourceTemplates();
check(tpl.resourceTemplates?.[0]?.uriTemplate === 'mail://message/{id}', 'resource template', tpl);
const rd = await client.readResource({ uri: `mail://message/${hit.id}` });
check(/zebrafish/.test(rd.contents?.[0]?.text ?? ''), 'resources/read returns the message', rd);
try {
	await client.readResource({ uri: 'mail://message/999999' });
	check(false, 'reading a missing message must fail');
} catch (e) {
	// 2026-07-28 says -32602; the SDK reports the 2025 code (-32002, which
	// test_mcpd.sh sees on the wire) as -32602 too, or keeps it
	check(modern ? e.code === -32602 : [-32002, -32602].includes(e.code), 'missing resource: not found',
		{ code: e.code });
}
await client.close();

done();
