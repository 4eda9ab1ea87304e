"""``python -m pe_core.engines``: --help and a bad argument are answered before torch is imported."""

from pe_core.cli_args import engines_parser

engines_parser().parse_args()

from pe_core.engines.cli import main  # noqa: E402 - after the arguments are known to parse

raise SystemExit(main())
