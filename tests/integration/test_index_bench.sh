#!/usr/bin/env bash
# The index's size budget: <= 4 KB per message with 1.5 KB bodies, full text
# included, with and without CJK text.  Throughput is printed, not asserted:
# CI machines are shared (docs/index.md has measured figures).
set -euo pipefail
: "${MB_BUILD_DIR:?}"
bench=$MB_BUILD_DIR/tests/index_bench
dir=$(mktemp -d /tmp/test_index_bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
for cjk in 0 30; do
	line=$("$bench" -n 3000 -b 1500 -c $cjk "$dir")
	echo "$line"
	per=$(sed -n 's/.*bytes_per_msg=\([0-9]*\).*/\1/p' <<<"$line")
	if [ -z "$per" ] || [ "$per" -gt 4096 ]; then
		echo "FAIL: $per bytes per message (budget 4096)"
		exit 1
	fi
done
echo "ok"
