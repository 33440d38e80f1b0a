// The cost of one tools/call on each era's path: N sequential list_folders
// calls over keep-alive, as a 2025-11-25 session or as 2026-07-28 requests
// (envelope, headers, resultType, serverInfo), and mcpd's CPU time for them
// from /proc (ticks of 10 ms).  docs/benchmarks.md: "mcpd: the two eras".
//
//   node scripts/bench-mcp-eras.mjs URL MCPD_PID legacy|modern N
//
// Run mcpd with MCP_RATE_LIMIT=0 so the limit does not answer instead.
import fs from 'node:fs';
const [url, pid, kind, n] = process.argv.slice(2);
const cpu = () => { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
	return (Number(f[11]) + Number(f[12])) * 10; };	// utime+stime, ticks of 10 ms
const H = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
let sid;
if (kind === 'legacy') {
	const r = await fetch(url, { method: 'POST', headers: H, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {} } }) });
	sid = r.headers.get('mcp-session-id'); await r.text();
}
const c0 = cpu(), t0 = performance.now();
for (let i = 0; i < n; i++) {
	const body = kind === 'legacy' ?
		{ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'list_folders', arguments: {} } } :
		{ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'list_folders', arguments: {}, _meta: META } };
	const h = kind === 'legacy' ? { ...H, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' } :
		{ ...H, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'list_folders' };
	const r = await fetch(url, { method: 'POST', headers: h, body: JSON.stringify(body) });
	if (r.status !== 200) throw new Error(`HTTP ${r.status}`);
	await r.text();
}
console.log(`${kind} n=${n} wall=${(performance.now() - t0).toFixed(0)}ms mcpd_cpu=${cpu() - c0}ms`);
