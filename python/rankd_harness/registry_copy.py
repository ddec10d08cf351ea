"""Copies of the shipped registry that turn its feature caches on, for the tests and benchmarks
that measure the cache.

Standard library only (Debian's python3).
"""
import os
import re


def cache_every_cacheable_schema(registry, cache):
    """Adds `cache` (a TOML `cache = { ... }` line) to every key schema in registry/key_schemas.toml
    that may have one: hash and list schemas (a set schema has no cache, docs/plan-format.md).
    Returns how many schemas it changed."""
    path = os.path.join(registry, "key_schemas.toml")
    with open(path) as f:
        text = f.read()
    blocks = re.split(r"(?m)^(?=\[\[key_schemas\]\]$)", text)
    changed = 0
    for i, block in enumerate(blocks):
        if not block.startswith("[[key_schemas]]") or re.search(r'(?m)^type = "set"$', block):
            continue
        blocks[i], n = re.subn(r'(?m)^(endpoint = "[^"]*")$', r"\1\n" + cache, block)
        changed += n
    with open(path, "w") as f:
        f.write("".join(blocks))
    return changed
