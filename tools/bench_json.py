"""Reading the JSON of `imgpipe bench --json FILE` (schema: docs/bench.md), for the tools that turn it into
charts and tables."""
import json
import lzma


def load(path, tool):
    """The document at `path` (xz-compressed where it ends in .xz); exits naming `tool` and the file when it is not
    an imgpipe bench JSON."""
    opener = lzma.open if str(path).endswith(".xz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("schema") != "imgpipe-bench/1":
        raise SystemExit(f"{tool}: {path}: not an imgpipe bench JSON (schema {doc.get('schema')!r})")
    return doc
