"""ssh.finish reads a command's whole output, whatever order sshd sends the end in.

OpenSSH sends `exit-status` when the command exits and keeps reading what the command left in its
pipe (session.c, session_exit_message: "there could be some more data waiting in the pipe"), so
output can arrive after the status; only the channel's EOF says that all of it is in."""

from __future__ import annotations

import json

import pytest

from rocetune.fleet import ssh
from rocetune.fleet.targets import Target


class Channel:
    """A paramiko Channel as the transport fills it: the next chunk lands while the reader sleeps,
    as when sshd reads the rest from the command's pipe after sending the status."""

    def __init__(self, chunks, status_first: bool, eof: bool = True, status: int = 1):
        self.pending, self.buffer = list(chunks), b""
        self.status_first, self.eof, self.status = status_first, eof, status
        self.eof_received, self.closed = False, False

    def tick(self, _seconds=0.0):
        if self.pending:
            self.buffer += self.pending.pop(0)
        elif self.eof:
            self.eof_received = True

    def recv_ready(self):
        return bool(self.buffer)

    def recv(self, n):
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def recv_stderr_ready(self):
        return False

    def exit_status_ready(self):
        return self.status_first or self.eof_received

    def recv_exit_status(self):
        return self.status

    def close(self):
        self.closed = True


def finish(monkeypatch, chan, seconds):
    monkeypatch.setattr(ssh.time, "sleep", chan.tick)
    return ssh.finish(chan, Target("n1", "n1"), "doctor", ssh.Deadline(seconds), 1 << 20)


DOC = json.dumps({"command": "doctor", "status": "findings", "data": {"x": "y" * 4000}}).encode()


def test_output_that_follows_the_exit_status_is_read_to_the_eof(monkeypatch):
    chan = Channel([DOC[i : i + 1000] for i in range(0, len(DOC), 1000)], status_first=True)
    done = finish(monkeypatch, chan, 5)
    assert done.out == DOC and done.code == 1


def test_a_command_whose_output_never_ends_meets_the_deadline(monkeypatch):
    with pytest.raises(ssh.Failure, match="n1"):
        finish(monkeypatch, Channel([b"{"], status_first=True, eof=False), 0.2)
