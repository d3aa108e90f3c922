#!/usr/bin/env python3
"""mcp-results-schema.py REFERENCE_SCHEMA_DIR > lua/mcp-results.json

The MCP schema's definitions that `luamcp test` checks results against: for
each revision it serves (2025-11-25, 2026-07-28), the result types of the
methods a test client calls and every definition they reach by $ref, from
the official schema.json of that revision (REFERENCE_SCHEMA_DIR/REV/schema.json),
unchanged. Run again when a revision's schema changes; the output is
committed and embedded in the binary (lua/test.lua reads it).
"""
import json
import sys

ROOTS = ["CallToolResult", "ReadResourceResult", "GetPromptResult", "CompleteResult",
         "ListToolsResult", "ListResourcesResult", "ListResourceTemplatesResult",
         "ListPromptsResult", "InitializeResult", "InputRequiredResult", "JSONRPCErrorResponse"]


def closure(defs, roots):
    seen = set()

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "$ref" and isinstance(v, str) and v.startswith("#/$defs/"):
                    name = v[len("#/$defs/"):]
                    if name not in seen:
                        seen.add(name)
                        walk(defs[name])
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    for r in roots:
        seen.add(r)
        walk(defs[r])
    return {k: defs[k] for k in sorted(seen)}


def main():
    ref = sys.argv[1]
    out = {}
    for rev in ("2025-11-25", "2026-07-28"):
        with open(f"{ref}/{rev}/schema.json") as f:
            schema = json.load(f)
        defs = schema["$defs"]
        out[rev] = {"$schema": schema["$schema"], "$defs": closure(defs, [r for r in ROOTS if r in defs])}
    json.dump(out, sys.stdout, separators=(",", ":"), sort_keys=True)
    sys.stdout.write("\n")


main()
