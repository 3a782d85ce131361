"""Constraints between knobs, written as small comparisons such as ``tcp_rmem_max <= rmem_max``.

An expression is parsed with :mod:`ast` and only names, numbers, ``+ - * /`` and one
comparison are accepted, so a space file can never run code. Names are knobs of the space
or entries of its ``limits`` (device maxima, e.g. ``rx_ring_max``). A constraint whose knobs
are not all active under a configuration does not apply to it.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from nictune.errors import SpaceDefinitionError

_BINOPS: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_CMPOPS: dict[type[ast.cmpop], Callable[[float, float], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}

_ALLOWED = "one comparison (<, <=, >, >=, ==, !=) of knobs, limits and numbers with + - * /"


def _quoted(expression: str, limit: int = 80) -> str:
    """``repr(expression)`` cut to ``limit`` characters, for messages."""
    text = repr(expression)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def _as_float(value: float) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf


@dataclass(frozen=True)
class Constraint:
    """A comparison between expressions over knob values and limits."""

    expression: str
    names: frozenset[str]
    _tree: ast.Compare

    @classmethod
    def parse(cls, expression: str) -> Constraint:
        """Parse and check the expression.

        Raises:
            SpaceDefinitionError: the expression is not a single safe comparison.
        """
        try:
            tree = ast.parse(expression.strip(), mode="eval").body
        except (SyntaxError, ValueError) as exc:  # ValueError: a NUL character in the text
            why = exc.msg if isinstance(exc, SyntaxError) else str(exc)
            raise SpaceDefinitionError(
                f"constraint {_quoted(expression)}: not an expression ({why}); allowed: {_ALLOWED}",
                field="constraints", allowed=_ALLOWED,
            ) from None
        if not isinstance(tree, ast.Compare) or len(tree.ops) != 1:
            raise SpaceDefinitionError(
                f"constraint {_quoted(expression)}: must be one comparison such as 'a <= b'; "
                f"allowed: {_ALLOWED}",
                field="constraints",
                allowed=_ALLOWED,
            )
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.BinOp) and type(node.op) not in _BINOPS:
                raise SpaceDefinitionError(
                    f"constraint {_quoted(expression)}: operator not allowed; allowed: + - * /",
                    field="constraints", allowed="+ - * /",
                )
            elif not isinstance(
                node, (ast.Compare, ast.BinOp, ast.Name, ast.Constant, ast.Load, ast.UnaryOp,
                       ast.USub, *_BINOPS, *_CMPOPS)
            ):
                raise SpaceDefinitionError(
                    f"constraint {_quoted(expression)}: {type(node).__name__} is not allowed; "
                    f"allowed: {_ALLOWED}",
                    field="constraints", allowed=_ALLOWED,
                )
            if not isinstance(node, ast.Constant):
                continue
            value = node.value
            if not isinstance(value, (int, float)):
                raise SpaceDefinitionError(
                    f"constraint {_quoted(expression)}: only numbers may appear as constants; "
                    f"allowed: {_ALLOWED}",
                    field="constraints", allowed=_ALLOWED,
                )
            if not math.isfinite(_as_float(value)):
                raise SpaceDefinitionError(
                    f"constraint {_quoted(expression)}: the number is too large; allowed: finite numbers",
                    field="constraints", allowed="finite numbers",
                )
        return cls(expression.strip(), frozenset(names), tree)

    def _eval(self, node: ast.expr, env: Mapping[str, float]) -> float:
        if isinstance(node, ast.Constant):
            assert isinstance(node.value, int | float)
            return float(node.value)
        if isinstance(node, ast.Name):
            return float(env[node.id])
        if isinstance(node, ast.UnaryOp):
            return -self._eval(node.operand, env)
        assert isinstance(node, ast.BinOp)
        return _BINOPS[type(node.op)](self._eval(node.left, env), self._eval(node.right, env))

    def applies(self, env: Mapping[str, object]) -> bool:
        """Whether every name is bound (inactive knobs leave the constraint out)."""
        return all(name in env for name in self.names)

    def holds(self, env: Mapping[str, float]) -> bool:
        """Evaluate the comparison; ``env`` maps names to numbers (bools count as 0/1).

        A comparison that cannot be evaluated (a division by zero) does not hold.
        """
        try:
            left = self._eval(self._tree.left, env)
            right = self._eval(self._tree.comparators[0], env)
        except (ZeroDivisionError, OverflowError):
            return False
        return _CMPOPS[type(self._tree.ops[0])](left, right)
