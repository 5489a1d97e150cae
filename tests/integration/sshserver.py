"""An SSH server on 127.0.0.1 for tests that gather without the lab: paramiko's server side in
threads, a host key of its own, one authorized client key. An exec request runs the command in
`sh -c` with PATH starting at the server's own bin/, where a fake `rocetune` prints recorded
envelopes; every login's user name is recorded."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import List, Optional

import paramiko


def fake_rocetune(bin_dir: Path, probe: Optional[Path] = None, doctor: Optional[Path] = None,
                  doctor_exit: int = 0, body: Optional[str] = None) -> None:
    """bin_dir/rocetune: prints the recorded envelope of the verb it is asked for, or runs `body`."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    if body is None:
        body = (f'case "$*" in\n  *probe*) cat "{probe}"; exit 0;;\n'
                f'  *doctor*) cat "{doctor}"; exit {doctor_exit};;\nesac\nexit 2\n')
    script = bin_dir / "rocetune"
    script.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    script.chmod(0o755)


class _Interface(paramiko.ServerInterface):
    def __init__(self, server: SSHServer):
        self.server = server

    def get_allowed_auths(self, username):
        return "publickey"

    def check_auth_publickey(self, username, key):
        if key == self.server.client_key:
            self.server.logins.append(username)
            return paramiko.AUTH_SUCCESSFUL
        return paramiko.AUTH_FAILED

    def check_channel_request(self, kind, chanid):
        return paramiko.OPEN_SUCCEEDED if kind == "session" else paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_exec_request(self, channel, command):
        threading.Thread(target=self.server._exec, args=(channel, command.decode()), daemon=True).start()
        return True


class SSHServer:
    def __init__(self, host_key: paramiko.PKey, client_key: paramiko.PKey, bin_dir: Path, silent: bool = False):
        self.host_key, self.client_key, self.bin_dir = host_key, client_key, bin_dir
        self.silent = silent  # accept TCP connections and never say a word
        self.logins: List[str] = []
        self.commands: List[str] = []
        self._procs: List[subprocess.Popen] = []
        self._conns: list = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self._stop:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            if not self.silent:
                threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        t = paramiko.Transport(conn)
        self._conns.append(t)
        t.add_server_key(self.host_key)
        try:
            t.start_server(server=_Interface(self))
        except (paramiko.SSHException, EOFError, OSError):
            t.close()

    def _exec(self, channel, command):
        self.commands.append(command)
        try:
            proc = subprocess.Popen(["sh", "-c", command], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env={"PATH": f"{self.bin_dir}:/usr/bin:/bin"})
            self._procs.append(proc)
            out, err = proc.communicate()
            # sshd's order at its worst: the status as the command exits, then what was left in
            # its pipe, then EOF (OpenSSH session.c, session_exit_message)
            channel.send_exit_status(proc.returncode)
            channel.sendall(out)
            channel.sendall_stderr(err)
            channel.shutdown_write()
        except Exception:  # the client went away (a timeout under test); nothing to report to
            pass
        finally:
            # This runs beside the transport thread, which answers the exec request only after
            # check_channel_exec_request returns: a command that ends at once could close the
            # channel before that answer (the client then sees "Channel closed"). The client
            # closes the channel once it has the EOF and the exit status; close it here only if it never does.
            for _ in range(600):
                if channel.closed:
                    break
                time.sleep(0.05)
            channel.close()

    def close(self):
        self._stop = True
        self._sock.close()
        for p in self._procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for c in self._conns:
            c.close()


def dead_port() -> int:
    """A port on 127.0.0.1 nothing listens on (connection refused)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
