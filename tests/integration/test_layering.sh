#!/usr/bin/env bash
# The layering that docs/architecture.md promises, checked on the built
# objects rather than on the text, so a call without an #include is caught:
#   1. neither daemon includes <sqlite3.h> or calls sqlite3_* itself: every
#      SQL statement belongs to libmailbox's index modules;
#   2. neither daemon borrows the raw connection (mb_index_db);
#   3. syncd's files form no call circle: each file's undefined symbols are
#      matched to the daemon file that defines them, and the graph must be a
#      DAG (a circle is printed with the names that tie it).
set -euo pipefail
: "${MB_BUILD_DIR:?}" "${MB_SOURCE_DIR:?}"
fail() { echo "FAIL: $*"; exit 1; }

for d in mcpd syncd; do
	hits=$(grep -rln --include='*.[ch]' -E '#[[:space:]]*include[[:space:]]*[<"]sqlite3\.h[>"]' \
	    "$MB_SOURCE_DIR/$d" || true)
	[ -z "$hits" ] || fail "$d sources include sqlite3.h: $hits"
done

# An object whose source is gone (a file renamed or split since the build dir
# was made) is left behind by make: only objects of today's sources count.
objs=()
while IFS= read -r o; do
	rel=${o#*.dir/}
	[ -f "$MB_SOURCE_DIR/${rel%.o}" ] && objs+=("$o")
done < <(find "$MB_BUILD_DIR/CMakeFiles" \
    \( -path '*/syncd_parts.dir/*' -o -path '*/syncd.dir/*' -o -path '*/mcpd_parts.dir/*' \
    -o -path '*/mcpd.dir/*' \) -name '*.c.o' | sort)
((${#objs[@]} > 10)) || fail "found only ${#objs[@]} daemon objects under $MB_BUILD_DIR"

for o in "${objs[@]}"; do
	if nm -u "$o" | grep -Eq ' (sqlite3_|mb_index_db$)'; then
		fail "$(basename "$o" .o) calls SQLite directly: $(nm -u "$o" |
		    grep -Eo '(sqlite3_[a-z0-9_]+|mb_index_db)$' | sort -u | tr '\n' ' ')"
	fi
done

python3 - "${objs[@]}" <<'PY'
import os, subprocess, sys
objs = [o for o in sys.argv[1:] if "/syncd" in o]
defs, uses = {}, {}
for o in objs:
    name = os.path.basename(o)[:-len(".o")]
    out = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
    d, u = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBR":
            d.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            u.add(parts[1])
    defs[name], uses[name] = d, u
owner = {s: f for f, ss in defs.items() for s in ss}
edges = {f: {} for f in defs}
for f, us in uses.items():
    for s in us:
        g = owner.get(s)
        if g is not None and g != f:
            edges[f].setdefault(g, []).append(s)
# Depth-first search for a back edge; print the first circle found.
state, stack = {}, []
def visit(f):
    state[f] = 1
    stack.append(f)
    for g in sorted(edges[f]):
        if state.get(g) == 1:
            circle = stack[stack.index(g):] + [g]
            ties = ["%s -> %s: %s" % (a, b, ", ".join(sorted(edges[a][b])))
                    for a, b in zip(circle, circle[1:])]
            print("FAIL: syncd's files call each other in a circle:\n  " + "\n  ".join(ties))
            sys.exit(1)
        if g not in state:
            visit(g)
    stack.pop()
    state[f] = 2
for f in sorted(edges):
    if f not in state:
        visit(f)
print("syncd call graph: %d files, %d edges, no circle" %
      (len(edges), sum(len(v) for v in edges.values())))
PY
echo "PASS: daemons hold no SQL and syncd's files form no circle"
