"""Parsers for the text that host tools print (nvidia-smi, ibstat, ibv_devinfo, ip -j).

Every parser takes the tool's output as text and either returns plain data (dicts, lists, str,
int, None) or raises :class:`rocetune.errors.ParseError`; no other exception leaves a parser.
qos_tools raises its own QosOutputError instead: the roce_qos role's boot script runs its copy
(plugins/module_utils/rocetune_qos_tools.py) without rocetune.
"""
