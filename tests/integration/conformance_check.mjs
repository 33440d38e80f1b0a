// Compare a conformance run (its -o directory: one checks.json per scenario)
// with a baseline of expected failures (conformance-baseline-next.txt says
// the format).  Prints what differs; exits 1 when anything does.
//
//   node conformance_check.mjs RESULTS_DIR BASELINE
import fs from 'node:fs';
import path from 'node:path';

const [dir, baselineFile] = process.argv.slice(2);
const whole = new Set();
const single = new Set();	// "scenario check-id"
for (const raw of fs.readFileSync(baselineFile, 'utf8').split('\n')) {
	const line = raw.replace(/#.*/, '').trim();
	if (!line)
		continue;
	const [scenario, check] = line.split(/\s+/);
	(check ? single : whole).add(check ? `${scenario} ${check}` : scenario);
}
const failing = (c) => c.status === 'FAILURE' || c.status === 'WARNING';
let problems = 0;
let scenarios = 0;
let passed = 0;
const ran = new Set();
const usedSingle = new Set();
for (const sub of fs.readdirSync(dir)) {
	const m = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(sub);
	if (!m)
		continue;
	const scenario = m[1];
	const checks = JSON.parse(fs.readFileSync(path.join(dir, sub, 'checks.json'), 'utf8'));
	scenarios++;
	ran.add(scenario);
	const bad = checks.filter(failing);
	passed += checks.filter((c) => c.status === 'SUCCESS').length;
	if (whole.has(scenario)) {
		if (bad.length === 0) {
			console.log(`STALE: ${scenario} passes now: remove it from the baseline`);
			problems++;
		}
		continue;
	}
	for (const c of bad) {
		if (single.has(`${scenario} ${c.id}`))
			usedSingle.add(`${scenario} ${c.id}`);
		else {
			console.log(`FAIL: ${scenario}: ${c.id}: ${c.status}: ${(c.errorMessage ?? '').slice(0, 300)}`);
			problems++;
		}
	}
}
for (const s of single)
	if (!usedSingle.has(s) && ran.has(s.split(' ')[0])) {
		console.log(`STALE: ${s} passes now: remove it from the baseline`);
		problems++;
	}
for (const s of [...whole, ...[...single].map((x) => x.split(' ')[0])])
	if (!ran.has(s)) {
		console.log(`STALE: ${s} did not run: remove it from the baseline`);
		problems++;
	}
console.log(`conformance: ${scenarios} scenarios, ${passed} checks passed, ${problems} unexpected`);
process.exit(problems || scenarios === 0 ? 1 : 0);
