"""A generated block of a Markdown page, between two marker comments: the --write / --check command line both table
generators (cost_params_doc.py, perf_table.py) share."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable


def main(doc: Path, begin: str, end: str, content: Callable[[], str], script: str, description: str, argv=None) -> int:
    """--write rewrites the block of `doc` between `begin` and `end` with content(); --check exits 1 when it differs."""
    ap = argparse.ArgumentParser(description=description)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true")
    g.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    text = doc.read_text()
    i, j = text.index(begin) + len(begin), text.index(end)
    new = text[:i] + "\n" + content() + "\n" + text[j:]
    if a.write:
        doc.write_text(new)
        return 0
    if new != text:
        print(f"{doc} is out of date: run python scripts/{script} --write", file=sys.stderr)
        return 1
    return 0
