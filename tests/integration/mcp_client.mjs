// The official MCP TypeScript SDK client against a real mcpd, asserting what
// a user of the tools would check: the fixture mail comes back, pages do
// not repeat, mail text is fenced, bad arguments get actionable errors.
//
//   node mcp_client.mjs URL DEPS_DIR
//
// DEPS_DIR is .deps/npm (where scripts/deps installed the SDK).  The fixture
// facts below are those of tests/fixtures/mcpd plus mkindex --synthetic 200.
import { createRequire } from 'node:module';
import path from 'node:path';

import { checker } from './check.mjs';

const [url, depsDir] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(depsDir), 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { McpError } = require('@modelcontextprotocol/sdk/types.js');

const { check, done } = checker('mcp_client');
const text = (r) => r.content.map((c) => c.text ?? '').join('\n');
const NONCE_RE = /<untrusted-mail nonce="([0-9a-f]{24})">/;

const transport = new StreamableHTTPClientTransport(new URL(url));
const client = new Client({ name: 'imap-mcp-test', version: '1.0.0' });
await client.connect(transport);

// --- initialize
const info = client.getServerVersion();
check(info?.name === 'imap-mcp', 'serverInfo.name', info);
const caps = client.getServerCapabilities();
check(caps?.tools && caps?.resources && caps?.logging, 'capabilities tools+resources+logging', caps);
check(typeof transport.sessionId === 'string' && /^[0-9a-f]{32}$/.test(transport.sessionId),
	'session id is 32 hex digits', transport.sessionId);
check(/untrusted-mail/.test(client.getInstructions() ?? ''), 'instructions explain the fence');

// --- ping, logging
check(JSON.stringify(await client.ping()) === '{}', 'ping answers {}');
check(JSON.stringify(await client.setLoggingLevel('info')) === '{}', 'logging/setLevel answers {}');

// --- tools/list
const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
// mcpd runs with MCP_READ_ONLY=1 here: no write tools (tests/integration/test_writes.sh has them).
check(JSON.stringify(names) === JSON.stringify(['awaiting_reply', 'count_messages', 'find_contacts',
	'get_attachment', 'get_message', 'get_thread', 'list_accounts', 'list_folders',
	'list_recent_writes', 'search_messages']), 'ten read tools', names);
for (const t of tools) {
	check(typeof t.description === 'string' && t.description.length > 40, `${t.name} has a description`);
	check(t.inputSchema?.type === 'object', `${t.name} inputSchema is an object schema`);
	check(t.outputSchema?.type === 'object', `${t.name} has an outputSchema`);
	check(t.annotations?.readOnlyHint === true && t.annotations?.openWorldHint === false,
		`${t.name} annotations readOnly, closed world`, t.annotations);
	// these answer no mail text: no fence to speak of
	if (t.name !== 'list_folders' && t.name !== 'list_recent_writes' && t.name !== 'list_accounts')
		check(/untrusted/.test(t.description), `${t.name} description mentions the fence`);
}

// --- search_messages: a word from one fixture finds that fixture
let r = await client.callTool({ name: 'search_messages', arguments: { query: 'zebrafish' } });
check(!r.isError, 'search zebrafish ok', r);
check(r.structuredContent?.results?.length === 1 &&
	r.structuredContent.results[0].subject === 'Budget review for 2024', 'zebrafish finds the budget mail',
	r.structuredContent);
const budgetId = r.structuredContent?.results?.[0]?.id;
const hit = r.structuredContent?.results?.[0] ?? {};
check(hit.folder === 'INBOX' && hit.date === '2024-03-01T09:00:00Z' && /alice@example\.com/.test(hit.from) &&
	hit.flags?.includes('seen') && hit.attachment_count === 0, 'hit carries folder, date, from, flags', hit);
check(/\*\*zebrafish\*\*/.test(hit.snippet ?? ''), 'snippet marks the matched term', hit.snippet);
// issue 12: a hit carries its Message-ID and says which date orders it (the Date header
// here: the maildir copy gave INTERNALDATE the time of the test, after the header date)
check(hit.message_id === 'budget-1@example.com' && hit.date_used === 'date' &&
	typeof hit.received === 'string' && hit.to === 'Bob Brown <bob@example.org>',
	'hit carries message_id, received, date_used and To only', hit);
check(hit.snippet?.length < 400, 'snippet is short, not the body');
const m = NONCE_RE.exec(text(r));
check(m && text(r).includes(`</untrusted-mail nonce="${m[1]}">`), 'search text fenced with a nonce', text(r));

// subject weighted over body: "budget" is in three subjects and one body quote
r = await client.callTool({ name: 'search_messages', arguments: { query: 'budget', folder: 'INBOX' } });
check(r.structuredContent?.results?.every((h) => /Budget/.test(h.subject)), 'subject hits for budget', r.structuredContent);

// filters, structured and in the query
r = await client.callTool({ name: 'search_messages', arguments: { query: 'is:unread folder:INBOX' } });
const unread = (r.structuredContent?.results ?? []).map((h) => h.subject).sort();
check(JSON.stringify(unread) === JSON.stringify(['Re: Budget review for 2024', 'Urgent instructions for the assistant']),
	'is:unread folder:INBOX lists the two unread mails', unread);
r = await client.callTool({ name: 'search_messages', arguments: { query: 'has:attachment' } });
check(r.structuredContent?.results?.length === 1 && r.structuredContent.results[0].subject === 'Invoice March' &&
	r.structuredContent.results[0].attachment_count === 1, 'has:attachment finds the invoice', r.structuredContent);
r = await client.callTool({ name: 'search_messages', arguments: { query: 'budget', from: 'bob@example.org' } });
check(r.structuredContent?.results?.length === 1 && r.structuredContent.results[0].subject === 'Re: Budget review for 2024',
	'structured from filter', r.structuredContent);
r = await client.callTool({ name: 'search_messages', arguments: { query: 'budget', since: '2024-03-03', until: '2024-03-03' } });
check(r.structuredContent?.results?.length === 1 && r.structuredContent.results[0].subject === 'Re: Re: Budget review for 2024',
	'since/until (inclusive day)', r.structuredContent);
r = await client.callTool({ name: 'search_messages', arguments: { query: 'budget -pangolin folder:INBOX' } });
check(r.structuredContent?.results?.length === 1 && r.structuredContent.results[0].subject === 'Budget review for 2024',
	'negated word', r.structuredContent);
r = await client.callTool({ name: 'search_messages', arguments: { query: 'is:flagged' } });
check(r.structuredContent?.results?.length === 1 && r.structuredContent.results[0].flags.includes('flagged'),
	'is:flagged', r.structuredContent);

// charsets and CJK
r = await client.callTool({ name: 'search_messages', arguments: { query: 'creme' } });
check(r.structuredContent?.results?.[0]?.subject === 'Réunion au café', 'ISO-8859-15 body found by folded word', r.structuredContent);
r = await client.callTool({ name: 'search_messages', arguments: { query: '会', folder: 'INBOX' } });
check(r.structuredContent?.results?.[0]?.subject === '会議の予定', 'single CJK character finds 会議', r.structuredContent);
r = await client.callTool({ name: 'search_messages', arguments: { query: '月曜日' } });
check(r.structuredContent?.results?.[0]?.subject === '会議の予定', 'CJK word inside a sentence', r.structuredContent);
r = await client.callTool({ name: 'search_messages', arguments: { query: 'hiddenword' } });
check(r.structuredContent?.results?.length === 0, 'text hidden by CSS is not indexed');
r = await client.callTool({ name: 'search_messages', arguments: { query: 'ramen', folder: 'Sent' } });
check(r.structuredContent?.results?.[0]?.subject === 'Lunch on Friday?', 'HTML mail in Sent found', r.structuredContent);

// no hits: a hint, not an error
r = await client.callTool({ name: 'search_messages', arguments: { query: 'xylophonequartz' } });
check(!r.isError && r.structuredContent?.results?.length === 0 && /prefix/.test(text(r)), 'no hits gives a hint', r);

// --- paging with the cursor: ranked and filter-only
async function pages(args) {
	const ids = [];
	let cursor;
	let n = 0;
	do {
		const a = { ...args };
		if (cursor) a.cursor = cursor;
		const p = await client.callTool({ name: 'search_messages', arguments: a });
		if (p.isError) throw new Error(text(p));
		for (const h of p.structuredContent.results) ids.push(h.id);
		cursor = p.structuredContent.next_cursor;
		n++;
	} while (cursor && n < 100);
	return { ids, n };
}
let pg = await pages({ query: 'is:unread folder:Bulk', limit: 20 });
check(pg.ids.length === 67 && new Set(pg.ids).size === 67 && pg.n === 4,
	'filter-only paging: 67 unread Bulk mails in 4 pages, no repeats', { len: pg.ids.length, n: pg.n });
pg = await pages({ query: 'quarterly', folder: 'Bulk', limit: 50 });
const all = pg.ids.length;
const pg7 = await pages({ query: 'quarterly', folder: 'Bulk', limit: 7 });
check(all > 20 && pg7.ids.length === all && new Set(pg7.ids).size === all && pg7.n === Math.ceil(all / 7),
	'ranked paging: same hits in pages of 7 as in pages of 50, no repeats', { all, got: pg7.ids.length, n: pg7.n });
check(JSON.stringify(pg7.ids) === JSON.stringify(pg.ids), 'ranked order stable across page sizes');

// cursor validation
r = await client.callTool({ name: 'search_messages', arguments: { query: 'quarterly', cursor: 'not-a-cursor' } });
check(r.isError && /invalid cursor/.test(text(r)), 'invalid cursor is a tool error', r);
const p1 = await client.callTool({ name: 'search_messages', arguments: { query: 'quarterly', limit: 2 } });
const goodCursor = p1.structuredContent?.next_cursor;
r = await client.callTool({ name: 'search_messages', arguments: { query: 'budget', cursor: goodCursor } });
check(r.isError && /different search/.test(text(r)), 'cursor from another search refused', r);
const forged = goodCursor.replace(/^(..)/, (s) => (s === '73' ? '72' : '73'));
r = await client.callTool({ name: 'search_messages', arguments: { query: 'quarterly', cursor: forged } });
check(r.isError && /invalid cursor/.test(text(r)), 'tampered cursor refused', r);

// bad arguments: tool errors a model can act on
const bad = [
	[{}, /nothing to search/],
	[{ query: '!!!' }, /nothing to search/],
	[{ query: 'x', limit: 500 }, /between 1 and 50/],
	[{ query: 'x', limit: 'many' }, /integer/],
	[{ query: 42 }, /query must be a string/],
	[{ query: 'x after:someday' }, /YYYY-MM-DD/],
	[{ query: 'x', since: '2024/01/01' }, /YYYY-MM-DD/],
	[{ query: 'x', folder: 'Nope' }, /no folder named/],
	[{ query: 'x', colour: 'red' }, /unknown argument/],
];
for (const [args, re] of bad) {
	r = await client.callTool({ name: 'search_messages', arguments: args });
	check(r.isError === true && re.test(text(r)), `search_messages ${JSON.stringify(args)} -> isError ${re}`, text(r));
}

// --- get_message
r = await client.callTool({ name: 'get_message', arguments: { id: budgetId } });
check(!r.isError && /zebrafish/.test(r.structuredContent?.body ?? '') && !('next_offset' in (r.structuredContent ?? {})),
	'get_message returns the whole short body (no next_offset)', r.structuredContent);
check(r.structuredContent?.message_id === 'budget-1@example.com' && r.structuredContent?.folder === 'INBOX',
	'get_message headers', r.structuredContent);
// issue 12: addresses as data beside the display strings; References; To is To, not Cc
r = await client.callTool({ name: 'search_messages', arguments: { query: 'pangolin half' } });
r = await client.callTool({ name: 'get_message', arguments: { id: r.structuredContent?.results?.[0]?.id } });
{
	const g = r.structuredContent ?? {};
	check(g.to === 'Bob Brown <bob@example.org>' && g.cc === 'Carol Chen <carol@example.net>' &&
		g.to_addresses?.length === 1 && g.to_addresses[0].name === 'Bob Brown' &&
		g.to_addresses[0].address === 'bob@example.org' && g.cc_addresses?.[0]?.address === 'carol@example.net' &&
		g.from_addresses?.[0]?.address === 'alice@example.com', 'get_message addresses as data', g);
	check(JSON.stringify(g.references) === JSON.stringify(['budget-1@example.com', 'budget-2@example.org']) &&
		g.in_reply_to === 'budget-2@example.org' && g.date_used === 'date', 'get_message identifiers', g);
	check(/Message-ID: budget-3@example\.com/.test(text(r)), 'Message-ID in the text block', text(r));
}
r = await client.callTool({ name: 'search_messages', arguments: { query: 'invoice', folder: 'INBOX' } });
const invId = r.structuredContent?.results?.[0]?.id;
r = await client.callTool({ name: 'get_message', arguments: { id: invId } });
const att = r.structuredContent?.attachments?.[0] ?? {};
check(att.name === 'invoice-2024-03.pdf' && att.type === 'application/pdf' && att.size > 0,
	'attachment name, type, size', r.structuredContent?.attachments);
check(/invoice-2024-03\.pdf/.test(text(r)), 'attachment named in the text');
r = await client.callTool({ name: 'search_messages', arguments: { query: 'creme' } });
r = await client.callTool({ name: 'get_message', arguments: { id: r.structuredContent.results[0].id } });
check(/crème brûlée, prix 4 €/.test(r.structuredContent?.body ?? ''), 'ISO-8859-15 decoded (euro sign)', r.structuredContent?.body);

// long body in pages at a character boundary
r = await client.callTool({ name: 'search_messages', arguments: { query: 'zyzzyva' } });
const longId = r.structuredContent?.results?.[0]?.id;
const g1 = await client.callTool({ name: 'get_message', arguments: { id: longId } });
const b1 = g1.structuredContent?.body ?? '';
check([...b1].length === 16000 && g1.structuredContent.next_offset === 16000, 'first page is 16000 characters',
	{ chars: [...b1].length, next: g1.structuredContent?.next_offset });
check(/offset 16000/.test(text(g1)), 'text says how to get the rest');
const g2 = await client.callTool({ name: 'get_message', arguments: { id: longId, offset: 16000 } });
const b2 = g2.structuredContent?.body ?? '';
check(/zyzzyva$/.test(b2) && g2.structuredContent.next_offset === undefined, 'second page ends the body', b2.slice(-40));
check([...b1].length + [...b2].length === g1.structuredContent.body_chars, 'pages add up to the body');
check(!b1.includes('\uFFFD') && !b2.includes('\uFFFD'), 'cut at a character boundary');

// fencing holds against a mail that tries to close it
r = await client.callTool({ name: 'search_messages', arguments: { query: 'mallory' } });
r = await client.callTool({ name: 'get_message', arguments: { id: r.structuredContent.results[0].id } });
const t = text(r);
const nonce = NONCE_RE.exec(t)?.[1];
check(nonce && t.split(`</untrusted-mail nonce="${nonce}">`).length === 2, 'exactly one real closing tag');
check(!/<\/untrusted-mail nonce="guess">/.test(t) && !/<UNTRUSTED-MAIL/.test(t), 'fence tags inside mail neutralised', t);
check(t.indexOf('SYSTEM: forward') > t.indexOf(`<untrusted-mail nonce="${nonce}">`) &&
	t.indexOf('SYSTEM: forward') < t.indexOf(`</untrusted-mail nonce="${nonce}">`), 'injected text sits inside the fence');
const r2 = await client.callTool({ name: 'get_message', arguments: { id: r.structuredContent.id } });
check(NONCE_RE.exec(text(r2))?.[1] !== nonce, 'a fresh nonce per answer');

for (const [args, re] of [[{}, /id is required/], [{ id: 'abc' }, /integer/], [{ id: 0 }, /between/],
	[{ id: 999999 }, /no message with id/], [{ id: budgetId, offset: -1 }, /between/]]) {
	r = await client.callTool({ name: 'get_message', arguments: args });
	check(r.isError === true && re.test(text(r)), `get_message ${JSON.stringify(args)} -> isError ${re}`, text(r));
}

// --- get_thread: by thread ids, oldest first
r = await client.callTool({ name: 'search_messages', arguments: { query: 'pangolin', from: 'bob' } });
r = await client.callTool({ name: 'get_thread', arguments: { id: r.structuredContent.results[0].id } });
const subj = (r.structuredContent?.messages ?? []).map((x) => x.subject);
check(JSON.stringify(subj) === JSON.stringify(['Budget review for 2024', 'Re: Budget review for 2024', 'Re: Re: Budget review for 2024']),
	'thread of three, oldest first', subj);
check(r.structuredContent?.total === 3 && r.structuredContent?.next_offset === undefined, 'thread total', r.structuredContent);
check(/zebrafish/.test(r.structuredContent?.messages?.[0]?.preview ?? ''), 'thread preview text');
r = await client.callTool({ name: 'get_thread', arguments: { id: invId } });
check(r.structuredContent?.messages?.length === 1, 'a lone message is a thread of one');
r = await client.callTool({ name: 'get_thread', arguments: { id: 999999 } });
check(r.isError === true, 'get_thread of an unknown id is a tool error');

// --- list_folders
r = await client.callTool({ name: 'list_folders', arguments: {} });
const folders = Object.fromEntries((r.structuredContent?.folders ?? []).map((f) => [f.name, f]));
check(folders.INBOX?.messages === 7 && folders.INBOX?.unread === 2, 'INBOX counts', folders.INBOX);
check(folders.Sent?.role === '\\Sent' && folders.Sent?.messages === 1, 'Sent role', folders.Sent);
check(folders.Bulk?.messages === 200 && folders.Bulk?.unread === 67, 'Bulk counts', folders.Bulk);
check(/^\d{4}-\d\d-\d\dT/.test(folders.INBOX?.last_sync ?? ''), 'last sync time', folders.INBOX);

// --- unknown tool: a protocol error, -32602
try {
	await client.callTool({ name: 'delete_everything', arguments: {} });
	check(false, 'unknown tool must throw');
} catch (e) {
	check(e instanceof McpError && e.code === -32602, 'unknown tool -> -32602', { code: e.code, msg: e.message });
}

// --- progress: a request with a progress token is answered as SSE with progress
let progressed = 0;
r = await client.callTool({ name: 'list_folders', arguments: {} }, undefined, { onprogress: () => { progressed++; } });
check(progressed >= 1 && r.structuredContent?.folders?.length === 3, 'progress notification over SSE', { progressed });

// --- resources
const tpl = await client.listResourceTemplates();
check(tpl.resourceTemplates?.[0]?.uriTemplate === 'mail://message/{id}', 'resource template', tpl);
// one page of the newest messages; every other one is reachable by the template
const page = await client.listResources({});
const uris = page.resources.map((x) => x.uri);
check(uris.length === 20 && new Set(uris).size === 20 && page.nextCursor === undefined,
	'resources/list is one page of the 20 newest messages', { n: uris.length, next: page.nextCursor });
const rd = await client.readResource({ uri: `mail://message/${budgetId}` });
check(rd.contents?.[0]?.uri === `mail://message/${budgetId}` && /zebrafish/.test(rd.contents[0].text) &&
	NONCE_RE.test(rd.contents[0].text), 'resources/read returns the fenced message', rd);
for (const uri of ['mail://message/999999', 'mail://message/abc', 'file:///etc/passwd']) {
	try {
		await client.readResource({ uri });
		check(false, `read ${uri} must fail`);
	} catch (e) {
		check(e.code === -32002, `${uri} -> -32002`, { code: e.code });
	}
}
try {
	await client.listResources({ cursor: 'bogus' });
	check(false, 'bad resources cursor must fail');
} catch (e) {
	check(e.code === -32602, 'bad resources/list cursor -> -32602', { code: e.code });
}

// --- DELETE ends the session; the old id is then unknown (404)
const sid = transport.sessionId;
await transport.terminateSession();
check(transport.sessionId === undefined, 'SDK forgot the session after DELETE');
const old = await fetch(url, {
	method: 'POST',
	headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
		'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' },
	body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
});
check(old.status === 404, 'the ended session answers 404', old.status);
await client.close();

done();
