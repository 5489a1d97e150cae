"""Rooted host I/O: every file read and every command goes through here.

`HostRoot` reads files of a host that may be mounted, unpacked or built anywhere (`--root DIR`);
paths are always written as on the host (`/sys/class/net`), never joined by callers.
`LiveRunner` runs commands on this machine; `RecordedRunner` replays `ROOT/commands/<argv>.txt`.
Both can record what was touched, which is how `rocetune capture` writes exactly what was read.

Modules: `root` (HostRoot), `runners` (LiveRunner, RecordedRunner), `command` (CommandResult,
recording_name), `recorder` (Recorder), `context` (ProbeContext, SourceStatus), `inputs` (files
the operator names) and `reads` (the bounded reads they share). Import a name from the module
that holds it.
"""
