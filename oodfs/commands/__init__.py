"""The commands of ``oodfs``, one module each: ``add_parser(subparsers)`` and ``run(args) -> int``."""
