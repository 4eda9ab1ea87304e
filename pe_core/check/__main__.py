"""``python -m pe_core.check``: --help and a bad argument are answered before torch is imported."""

from pe_core.cli_args import check_parser

check_parser().parse_args()

from pe_core.check.cli import main  # noqa: E402 - after the arguments are known to parse

raise SystemExit(main())
