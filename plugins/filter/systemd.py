# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Filters that put inventory values into systemd unit files as data, never as syntax.

systemd reads more than the shell does: it expands %-specifiers (systemd.unit(5)) in most
settings and $VAR / ${VAR} in command lines (systemd.service(5), "Command lines"), splits
command lines itself (systemd.syntax(7), "Quoting"), and ends every setting at a newline. Shell
quoting protects none of that: these filters do, and refuse what cannot be written safely."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six import string_types

# A word systemd reads as itself, unquoted: no whitespace, quote, backslash, specifier,
# variable or command separator.
_BARE_WORD = re.compile(r"^[A-Za-z0-9_@+=:,./-]+\Z")
# The program of a command line: an absolute path, literal (no specifier, variable or quote)
# and without a prefix character ("-", "@", "+", "!", ":" change how systemd runs it).
_PROGRAM = re.compile(r"^/[A-Za-z0-9_@+=:,./-]*\Z")
# systemd.unit(5): a unit name is [A-Za-z0-9:_.\\-] with one "@" for instances, then a type.
_UNIT_NAME = re.compile(r"^[A-Za-z0-9:_.\\-]+(@[A-Za-z0-9:_.\\-]*)?"
                        r"\.(service|socket|device|mount|automount|swap|target|path|timer|slice|scope)\Z")
_UNIT_NAME_MAX = 255
_NAMED_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _label(name):
    return "%s: " % name if name else ""


def _text(value, name, what):
    if isinstance(value, bool) or value is None or not isinstance(value, string_types + (int, float)):
        raise AnsibleFilterError("%s%r is not %s" % (_label(name), value, what))
    text = value if isinstance(value, string_types) else str(value)
    if "\0" in text:
        raise AnsibleFilterError("%s%r holds a NUL character, which no unit file can carry" % (_label(name), text))
    return text


def _quote_word(word):
    """One command-line word as systemd reads it back: bare when it can be, else in double
    quotes with C escapes; % doubled (specifiers) and $ doubled (variables) either way."""
    if _BARE_WORD.match(word):
        return word
    out = []
    for ch in word:
        if ch in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[ch])
        elif ch == "%":
            out.append("%%")
        elif ch == "$":
            out.append("$$")
        elif ord(ch) < 0x20 or ord(ch) == 0x7f:
            out.append("\\x%02x" % ord(ch))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def systemd_exec(argv, name=None):
    """An argument list -> the value of an ExecStart= line that runs exactly that argv."""
    if isinstance(argv, string_types) or not isinstance(argv, (list, tuple)) or not argv:
        raise AnsibleFilterError("%s%r is not a non-empty list of arguments" % (_label(name), argv))
    words = [_text(w, name, "a command-line argument") for w in argv]
    if not _PROGRAM.match(words[0]):
        raise AnsibleFilterError(
            "%s%r: the program of a systemd command line must be an absolute path of letters, digits "
            "and _@+=:,./- only" % (_label(name), words[0]))
    return " ".join(_quote_word(w) for w in words)


def systemd_escape(value, name=None):
    """A string -> a unit name component, as `systemd-escape` writes it (systemd.unit(5),
    "String Escaping for Inclusion in Unit Names"): "/" -> "-", a leading "." and every byte
    outside [A-Za-z0-9:_.] -> \\xNN."""
    text = _text(value, name, "a string")
    if not text:
        raise AnsibleFilterError("%san empty string is no unit name component" % _label(name))
    out = []
    for i, ch in enumerate(text):
        if ch == "/":
            out.append("-")
        elif (ch.isalnum() and ord(ch) < 0x80 or ch in ":_" or (ch == "." and i > 0)):
            out.append(ch)
        else:
            out.extend("\\x%02x" % b for b in bytearray(ch.encode("utf-8")))
    return "".join(out)


def systemd_unit_names(names, name=None):
    """A list of unit names -> the value of an After=/Wants= line; a name that is not a unit
    name (whitespace, a newline, a specifier, a missing type) is refused."""
    if isinstance(names, string_types) or not isinstance(names, (list, tuple)):
        raise AnsibleFilterError("%s%r is not a list of unit names" % (_label(name), names))
    for unit in names:
        text = _text(unit, name, "a unit name")
        if len(text) > _UNIT_NAME_MAX or not _UNIT_NAME.match(text):
            raise AnsibleFilterError("%s%r is not a systemd unit name (systemd.unit(5): letters, digits, "
                                     ":_.\\- and one @, then a type such as .service)" % (_label(name), text))
    return " ".join(names)


class FilterModule(object):
    """systemd unit file quoting."""

    def filters(self):
        return {
            "systemd_exec": systemd_exec,
            "systemd_escape": systemd_escape,
            "systemd_unit_names": systemd_unit_names,
        }
