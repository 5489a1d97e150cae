"""Parsers for the text that host tools print (nvidia-smi, ibstat, ibv_devinfo, ip -j).

Every parser takes the tool's output as text and either returns plain data (dicts, lists, str,
int, None) or raises :class:`rocetune.errors.ParseError`; no other exception leaves a parser.
The readers the collection shares live in rocetune.core (standard library only) and raise their
own errors.
"""
