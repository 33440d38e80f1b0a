#!/usr/bin/env bash
# The index's size budget: <= 4.5 KB per message with 1.5 KB bodies, full text
# included, with and without CJK text.  It was 4 KB until the overviews'
# message_addrs table and the search's filter index (migrations 0006, 0007:
# about 420 B a message here) came; docs/index.md "Throughput and size
# budget" has the breakdown, and getting back under 4 KB is open work.  Throughput is printed, not asserted:
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
	if [ -z "$per" ] || [ "$per" -gt 4608 ]; then
		echo "FAIL: $per bytes per message (budget 4608)"
		exit 1
	fi
done
echo "ok"
