# shellcheck shell=bash
# mcp_tool_names read|all: the names of mcpd's tools, sorted, joined by ", ",
# from the definitions in mcpd/tools/*.json ("read": those a read-scope token
# sees, readOnlyHint true), so tests that check tools/list follow the table.
mcp_tool_names() {
	python3 - "${src:?}" "$1" <<'PY'
import glob, json, sys
tools = [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/mcpd/tools/*.json")]
names = sorted(t["name"] for t in tools
               if sys.argv[2] == "all" or t.get("annotations", {}).get("readOnlyHint"))
print(", ".join(names))
PY
}
