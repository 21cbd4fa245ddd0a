"""``oodfs merge``: combine results folders of one suite (several machines, or shards of a grid)
into one folder (:mod:`oodfs.results.merge`)."""

from __future__ import annotations

import sys

from oodfs.commands.options import folder
from oodfs.results.merge import merge_stores


def add_parser(sub) -> None:
    p = sub.add_parser(
        "merge",
        help="combine results folders of one suite (machines, shards) into one",
        description="Combine the results folders DIR... of one suite (the same suite identity and profile) "
        "into OUT (results.sqlite and results.parquet). A task in several folders must have the same "
        "identity and values there (a failed copy gives way to a result); otherwise nothing is written.",
    )
    p.add_argument("dirs", nargs="+", metavar="DIR", help="results folders written by `oodfs bench`")
    p.add_argument("--out", type=folder, required=True, help="the new results folder (must not hold results)")


def run(args) -> int:
    info = merge_stores(args.dirs, args.out, argv=["oodfs"] + sys.argv[1:])
    print(
        f"merged {info['folders']} folders into {args.out}: {info['tasks']} tasks ({info['duplicates']} "
        f"found in several folders, {info['replaced_failures']} failed copies replaced by a result)",
        file=sys.stderr,
    )
    return 0
