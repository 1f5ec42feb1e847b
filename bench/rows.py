"""How every benchmark prints its rows: a rich table, or JSON with `--json`."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table


def print_rows(title: str, columns: tuple[str, ...], rows: list[tuple[str, ...]], as_json: bool) -> None:
    if as_json:
        print(json.dumps([dict(zip(columns, row)) for row in rows], indent=2))
        return
    table = Table(title=title)
    for col in columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*row)
    Console().print(table)
