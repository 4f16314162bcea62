"""The generated sections of docs/design/trainer.md: both masters' state tables, rendered from
``ps_master.TRANSITIONS`` and ``ring_master.TRANSITIONS``. A test fails when the doc differs;
``python -m tfhadoop.trainer.design_doc --write`` brings it up to date.
"""
from __future__ import annotations

import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[4] / "docs" / "design" / "trainer.md"


def sections() -> dict[str, str]:
    """Marker name -> the table between ``<!-- name:begin -->`` and ``<!-- name:end -->``."""
    from tfhadoop.trainer import ps_master, ring_master
    from tfhadoop.trainer.state_table import markdown_table

    return {"ps-transitions": markdown_table(ps_master.TRANSITIONS, ps_master.State),
            "ring-transitions": markdown_table(ring_master.TRANSITIONS, ring_master.State)}


def split(text: str, name: str) -> tuple[str, str, str]:
    """``text`` around the section ``name``: before (with the begin marker), inside, after."""
    begin, end = f"<!-- {name}:begin -->\n", f"<!-- {name}:end -->"
    if begin not in text or end not in text:
        raise ValueError(f"{DOC} has no section {begin.strip()} ... {end}")
    before, rest = text.split(begin, 1)
    inside, after = rest.split(end, 1)
    return before + begin, inside, end + after


def stale(text: str | None = None) -> list[str]:
    """The sections whose text in the doc differs from the tables."""
    text = DOC.read_text() if text is None else text
    return [name for name, table in sections().items() if split(text, name)[1] != table]


def write() -> None:
    text = DOC.read_text()
    for name, table in sections().items():
        before, _, after = split(text, name)
        text = before + table + after
    DOC.write_text(text)


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        write()
        print(f"wrote {DOC}")
        return 0
    if argv:
        print("usage: python -m tfhadoop.trainer.design_doc [--write]", file=sys.stderr)
        return 2
    names = stale()
    print(f"{DOC}: " + (f"stale sections {', '.join(names)} (run with --write)" if names else "up to date"))
    return 1 if names else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
