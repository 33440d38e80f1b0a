"""Check MCP answers (JSON-RPC files) for mailbox text outside the fence.

For each text block (a tool's content, a resource's contents): the regions
between this answer's real fences (<untrusted-mail nonce="HEX24"> ...
</untrusted-mail nonce="HEX24">) are removed, and so are the fence note's
literal tags (nonce="N"); what is left must hold no fence tag, and every
OBEY in it must stand inside a double-quoted string on its line (the way
mcpd/fence.c's mcp_fence_inline() writes a folder name).  Every other JSON
string in the answer (structuredContent, titles, names) must hold no fence
tag.  Prints each problem; exit status 1 when there is one.
"""
import json
import re
import sys

TAG = re.compile(r"</?untrusted-mail", re.I)
FENCE = re.compile(r'<untrusted-mail nonce="([0-9a-f]{24})">\n.*?</untrusted-mail nonce="\1">\n',
                   re.S)
NOTE = re.compile(r'</?untrusted-mail nonce=\\?"N\\?">')


def quoted(line, pos):
    """Whether line[pos] is inside a "..." string (backslash escapes)."""
    inside, i = False, 0
    while i < pos:
        if line[i] == "\\" and inside:
            i += 2
            continue
        if line[i] == '"':
            inside = not inside
        i += 1
    return inside


def texts(j, path=""):
    """(path, string, is_text_block) for every string in j."""
    if isinstance(j, dict):
        for k, v in j.items():
            block = k == "text" and isinstance(v, str)
            if block:
                yield path + "." + k, v, True
            else:
                yield from texts(v, path + "." + k)
    elif isinstance(j, list):
        for i, v in enumerate(j):
            yield from texts(v, "%s[%d]" % (path, i))
    elif isinstance(j, str):
        yield path, j, False


problems = 0
for name in sys.argv[1:]:
    answer = json.load(open(name))
    for path, s, block in texts(answer):
        if block:
            rest = NOTE.sub("", FENCE.sub("", s))
            for line in rest.split("\n"):
                if TAG.search(line):
                    print("%s %s: a fence tag outside the fence: %r" % (name, path, line))
                    problems += 1
                for m in re.finditer("OBEY", line):
                    if not quoted(line, m.start()):
                        print("%s %s: mail outside the fence, unquoted: %r" % (name, path, line))
                        problems += 1
        elif TAG.search(s) and not NOTE.search(s) or TAG.search(NOTE.sub("", s)):
            print("%s %s: a fence tag in a JSON string: %r" % (name, path, s))
            problems += 1
sys.exit(1 if problems else 0)
