"""The package's YAML data files, read once for each state of the file."""
from __future__ import annotations

import os
from functools import lru_cache


def rows(path, parse):
    """``parse`` of the YAML document at ``path`` (a checked tuple of frozen rows), read again only where the file's
    time or size has changed: a replay or a prediction asks for a file's rows once for each run it takes."""
    found = os.stat(path)
    return _rows(os.fspath(path), found.st_mtime_ns, found.st_size, parse)


@lru_cache(maxsize=16)
def _rows(path, _time, _size, parse):
    import yaml

    with open(path, encoding="utf-8") as handle:   # libyaml's parser where PyYAML has it: the same document, sooner
        return parse(yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
