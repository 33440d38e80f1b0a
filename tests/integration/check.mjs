// The assertion helper of the client tests (mcp_client*.mjs, mcp_aisdk.mjs):
// check() counts and reports, done() prints the tally and exits 1 on any failure.
export function checker(label) {
	let failures = 0;
	let checks = 0;
	return {
		check(cond, what, detail) {
			checks++;
			if (!cond) {
				failures++;
				console.error(`FAIL [${label}]: ${what}${detail !== undefined ?
					`: ${JSON.stringify(detail).slice(0, 600)}` : ''}`);
			}
		},
		done() {
			console.log(`${label}: ${checks - failures}/${checks} checks passed`);
			process.exit(failures ? 1 : 0);
		},
	};
}
