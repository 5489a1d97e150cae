"""Shell arithmetic `$((...))` over integer literals, evaluated as bash does (C division and
remainder, octal and hex literals), never executed."""

from __future__ import annotations

import ast
import operator
import re
from typing import Optional

_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.LShift: operator.lshift, ast.RShift: operator.rshift}


def arith(expr: str) -> Optional[int]:
    """Evaluate `$((expr))` when it holds only integer literals and + - * / % << >> ( )."""
    if not re.fullmatch(r"[\d\s+\-*/%()<>xXa-fA-F]*", expr) or not expr.strip():
        return None

    def number(m: re.Match[str]) -> str:
        tok = m.group(0)
        if tok[:2].lower() == "0x":
            return str(int(tok, 16))
        if len(tok) > 1 and tok.startswith("0"):
            return str(int(tok, 8))  # the shell reads a leading 0 as octal
        return tok

    try:
        py = re.sub(r"\b0[xX][0-9a-fA-F]+|\b\d+", number, expr)
        tree = ast.parse(py.strip(), mode="eval")
        return _eval(tree.body)
    except (SyntaxError, ValueError, ZeroDivisionError, TypeError, OverflowError):
        return None


def _eval(node: ast.AST) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left), _eval(node.right)
        if type(node.op) in _BIN:
            if isinstance(node.op, (ast.LShift, ast.RShift)) and not 0 <= b < 64:
                raise ValueError("shift")
            return _BIN[type(node.op)](a, b)
        if isinstance(node.op, ast.Div):
            if b == 0:
                raise ZeroDivisionError
            q = abs(a) // abs(b)
            return q if (a >= 0) == (b >= 0) else -q
        if isinstance(node.op, ast.Mod):
            if b == 0:
                raise ZeroDivisionError
            r = abs(a) % abs(b)
            return r if a >= 0 else -r
    raise ValueError("unsupported")
