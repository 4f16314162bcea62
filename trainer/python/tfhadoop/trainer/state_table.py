"""A state machine written as a table, shared by the PS master and the ring master, and the
Markdown form of such a table that docs/design/trainer.md shows (``tfhadoop.trainer.design_doc``
writes it; a test fails when the doc and the tables differ).

Each event has one :class:`Rule`: the states in which it is handled (elsewhere it is ignored),
what its handler does, and the states the handler may lead to. A machine names its handlers in
an explicit table of bound methods (``handlers``), so that an editor finds each one's caller.
"""
from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class Rule:
    states: frozenset  # the states in which the event is handled (elsewhere it is ignored)
    next: frozenset  # the other states the handler may lead to
    does: str  # what the handler does (docs/design/trainer.md shows this table)
    stay: bool = False  # it may also leave the state as it is


class TableMachine:
    """``dispatch``/``fail``/``done`` over a subclass's ``TRANSITIONS`` and ``handlers()``: an event
    is handled only in the states its rule names, by its handler, which returns the next state
    (None: stay), and that state must be one the rule allows. Subclasses' ``State`` enums have
    SUCCEEDED and FAILED; they set ``state`` and ``outcome`` in ``__init__``."""

    TRANSITIONS: Mapping = {}
    state: Any  # the subclass's State
    outcome: tuple[str, str] | None

    def handlers(self) -> Mapping[enum.Enum, Callable]:
        """Event -> the bound method that handles it (built per dispatch: a test may swap one)."""
        raise NotImplementedError

    def dispatch(self, event, **data) -> None:
        rule = self.TRANSITIONS[event]
        if self.state not in rule.states:
            return
        before = self.state
        nxt = self.handlers()[event](**data) or self.state
        if nxt not in rule.next and not (rule.stay and nxt == before):
            allowed = sorted(s.value for s in rule.next)
            raise AssertionError(f"{event.value} in {before.value} led to {nxt.value}, not in {allowed}")
        self.state = nxt

    def fail(self, diagnostics: str) -> Any:
        self.outcome = ("FAILED", diagnostics)
        return type(self.state).FAILED

    @property
    def done(self) -> bool:
        return self.state.name in ("SUCCEEDED", "FAILED")

    def final(self) -> tuple[str, str]:
        """The outcome of a machine that is ``done``: ``fail``, or the handler that succeeded, set it."""
        if self.outcome is None:
            raise AssertionError(f"{self.state.value} without an outcome")
        return self.outcome


def markdown_table(transitions: Mapping, states: type[enum.Enum]) -> str:
    """``transitions`` as a Markdown table: event, where handled, what the handler does, where it leads."""
    order = list(states)

    def names(xs):
        return ", ".join(x.value for x in sorted(xs, key=order.index))

    rows = ["| event | handled in | handler does | leads to |", "|---|---|---|---|"]
    rows += [f"| {e.value} | {names(r.states)} | {r.does} | "
             f"{', '.join(['(same)'] * r.stay + [names(r.next)] * bool(r.next))} |"
             for e, r in transitions.items()]
    return "\n".join(rows) + "\n"
