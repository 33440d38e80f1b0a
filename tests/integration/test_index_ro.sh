#!/usr/bin/env bash
# mcpd's view of the index: another user, read-only, in a directory it cannot
# write.  It can read while syncd is down because syncd keeps -wal and -shm
# (SQLITE_FCNTL_PERSIST_WAL); without them the open fails with a message that
# says why.  Needs root (to become nobody); skipped otherwise.
set -euo pipefail
: "${MB_BUILD_DIR:?}"
bench=$MB_BUILD_DIR/tests/index_bench
ro=$MB_BUILD_DIR/tests/index_ro_open
if [ "$(id -u)" -ne 0 ] || ! command -v runuser >/dev/null; then
	echo "SKIP: needs root and runuser to test as another user"
	exit 0
fi
dir=$(mktemp -d /tmp/test_index_ro.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
# The build tree may be in a directory nobody cannot enter (/root): run a copy.
cp "$ro" "$dir/index_ro_open"
ro=$dir/index_ro_open
"$bench" -n 200 -k "$dir" >/dev/null

# The writer is gone; -wal and -shm stay, owned by root, mode 0644.
[ -e "$dir/index.db-shm" ] || { echo "FAIL: syncd did not keep index.db-shm"; exit 1; }
out=$(runuser -u nobody -- "$ro" "$dir/index.db")
[ "$out" = "messages=200" ] || { echo "FAIL: read-only open as nobody: $out"; exit 1; }

# The reader cannot write even where the file system would let it.
chmod 666 "$dir/index.db" "$dir/index.db-wal" "$dir/index.db-shm"
out=$(runuser -u nobody -- "$ro" "$dir/index.db")
[ "$out" = "messages=200" ] || { echo "FAIL: $out"; exit 1; }
chmod 644 "$dir/index.db" "$dir/index.db-wal" "$dir/index.db-shm"

# Without -shm, and with no way to create it, the open fails and says why.
rm "$dir/index.db-wal" "$dir/index.db-shm"
if err=$(runuser -u nobody -- "$ro" "$dir/index.db" 2>&1); then
	echo "FAIL: opened without -shm in an unwritable directory: $err"
	exit 1
fi
case $err in
*"needs $dir/index.db-shm to exist"*) ;;
*) echo "FAIL: unhelpful message: $err"; exit 1 ;;
esac
echo "ok"
