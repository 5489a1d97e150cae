"""The hosts a gather reaches, and how: from names on the command line or an Ansible inventory
(read by ansible-core itself, never by a parser of ours), completed from ~/.ssh/config.

Precedence for each setting, highest first: the inventory's host and group vars (ansible_host,
ansible_port, ansible_user, ansible_ssh_private_key_file, as Ansible itself applies them), the
command line (--user, --port, --identity), ~/.ssh/config (HostName, Port, User, IdentityFile),
then the defaults (port 22, the local user, the agent and ~/.ssh/id_* keys).

`Match exec` in ~/.ssh/config runs a command while the config is read. Run as root with another
user's HOME (`sudo -E`), that would be the user's command run as root: a config that is not
root's own (its owner, or a directory on its path another user may change) has each such Match
block skipped, with a warning; as any other user, a config of someone else's is treated alike.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional

from ..errors import ExitCode, RocetuneError


@dataclass
class Target:
    name: str  # the host's name in the fleet: DIR/NAME.json
    hostname: str  # what is connected to
    port: Optional[int] = None
    user: Optional[str] = None
    identities: List[str] = field(default_factory=list)

    @property
    def key_name(self) -> str:
        """The name of the host's key in known_hosts, as OpenSSH writes it."""
        port = self.port or 22
        return self.hostname if port == 22 else f"[{self.hostname}]:{port}"


@dataclass
class Defaults:
    user: Optional[str] = None
    port: Optional[int] = None
    identity: Optional[str] = None


def check_name(name: str, where: str) -> str:
    """A host name that is safe as a file name in DIR."""
    if not name or name.startswith(".") or "/" in name or "\0" in name or any(c.isspace() for c in name):
        raise RocetuneError(f"{where}: host name {name!r} cannot name a result file",
                            hint="a host name has no '/', space, or leading '.'", code=ExitCode.INPUT)
    return name


def from_names(names: Iterable[str]) -> List[Target]:
    """`[USER@]HOST` from the command line."""
    out = []
    for raw in names:
        user, _, host = raw.rpartition("@")
        check_name(host, "host")
        out.append(Target(host, host, user=user or None))
    return _unique(out)


def from_inventory(path: str, limit: Optional[str] = None) -> List[Target]:
    """The hosts of an Ansible inventory (YAML or INI), those of group `limit` only if given."""
    if not os.path.isfile(path):
        raise RocetuneError(f"--inventory {path}: no such file", code=ExitCode.INPUT)
    try:
        from ansible.inventory.helpers import get_group_vars
        from ansible.inventory.manager import InventoryManager
        from ansible.parsing.dataloader import DataLoader
        from ansible.utils.vars import combine_vars
    except ImportError:
        raise RocetuneError("--inventory needs ansible-core on this machine, and it cannot be imported",
                            hint="install ansible-core, or name the hosts on the command line",
                            code=ExitCode.INPUT) from None
    try:
        inventory = InventoryManager(loader=DataLoader(), sources=[path])
        hosts = inventory.get_hosts(pattern=limit or "all")
    except Exception as exc:  # ansible raises its own error types for a malformed inventory
        raise RocetuneError(f"--inventory {path}: {str(exc).splitlines()[0][:300]}", code=ExitCode.INPUT) from None
    if not hosts:
        what = f"no host in group {limit!r}" if limit else "no host in it (or ansible cannot parse it)"
        raise RocetuneError(f"--inventory {path}: {what}", code=ExitCode.INPUT)
    out = []
    for host in hosts:
        hvars = combine_vars(get_group_vars(host.get_groups()), host.get_vars())
        out.append(_target(host.name, hvars, path))
    return _unique(out)


def _target(name: str, hvars: Dict, path: str) -> Target:
    check_name(name, f"--inventory {path}")

    def text(key: str) -> Optional[str]:
        value = hvars.get(key)
        if value is None:
            return None
        value = str(value)
        if "{{" in value or "{%" in value:
            raise RocetuneError(f"--inventory {path}: host {name}: {key} is a template ({value[:80]}); "
                                "gather does not render templates", code=ExitCode.INPUT)
        return value

    port = text("ansible_port")
    if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
        raise RocetuneError(f"--inventory {path}: host {name}: ansible_port {port!r} is not a port",
                            code=ExitCode.INPUT)
    key = text("ansible_ssh_private_key_file")
    return Target(name, text("ansible_host") or name, port=int(port) if port else None,
                  user=text("ansible_user"), identities=[os.path.expanduser(key)] if key else [])


def complete(targets: List[Target], defaults: Defaults, ssh_config: Optional[str] = None,
             warn: Optional[Callable[[str], None]] = None) -> List[Target]:
    """Fill what the inventory left open from the command line, then ~/.ssh/config."""
    lookup = _ssh_config(ssh_config if ssh_config is not None else os.path.expanduser("~/.ssh/config"),
                         warn or (lambda message: None))
    for t in targets:
        conf = lookup(t.hostname) if lookup else {}
        if t.hostname == t.name and conf.get("hostname"):
            t.hostname = conf["hostname"]
        t.port = t.port or defaults.port or _port(conf.get("port")) or 22
        t.user = t.user or defaults.user or conf.get("user")
        if not t.identities:
            if defaults.identity:
                t.identities = [os.path.expanduser(defaults.identity)]
            else:
                t.identities = [os.path.expanduser(p) for p in conf.get("identityfile", [])
                                if os.path.isfile(os.path.expanduser(p))]
    return targets


MAX_SSH_CONFIG_BYTES = 1 << 20


def _ssh_config(path: str, warn: Callable[[str], None]):
    if not os.path.isfile(path):
        return None
    import paramiko

    from ..errors import HostReadError
    from ..hostfs.inputs import read_input_stat

    try:
        data, st = read_input_stat(path, MAX_SSH_CONFIG_BYTES)
    except HostReadError as exc:
        raise RocetuneError(f"{path}: cannot read: {exc.reason}", code=ExitCode.INPUT) from None
    text = data.decode("utf-8", "replace")
    why = _untrusted(path, st)
    if why:
        text = _without_match_exec(text, path, why, warn)
    try:
        config = paramiko.SSHConfig.from_text(text)
    except Exception as exc:  # paramiko raises several types for a config it cannot read
        raise RocetuneError(f"{path}: cannot read: {exc}", code=ExitCode.INPUT) from None
    return config.lookup


def _untrusted(path: str, st: os.stat_result) -> Optional[str]:
    """Why commands of the config at `path` must not run as this process, or None."""
    from ..fsutil import directory_problem

    euid = os.geteuid()
    if st.st_uid not in ({0} if euid == 0 else {0, euid}):
        return f"the file is uid {st.st_uid}'s and rocetune runs as uid {euid}"
    return directory_problem(os.path.dirname(os.path.abspath(path)))


_MATCH_LINE = re.compile(r"\s*match(?:\s*=\s*|\s+)(.*)", re.IGNORECASE)


def _without_match_exec(text: str, path: str, why: str, warn: Callable[[str], None]) -> str:
    """`text` with every Match block whose criteria run a command turned into one that matches
    no host (its settings then apply to none)."""
    import shlex

    out = []
    for number, line in enumerate(text.splitlines(), 1):
        m = _MATCH_LINE.fullmatch(line)
        if m:
            try:
                words = shlex.split(m.group(1))
            except ValueError:
                words = m.group(1).split()
            if any(w.lower().lstrip("!") == "exec" for w in words):
                warn(f"{path}:{number}: Match exec not run ({why}): its block is skipped")
                line = "Host !*"
        out.append(line)
    return "\n".join(out) + "\n"


def _port(value) -> Optional[int]:
    return int(value) if value and str(value).isdigit() else None


def _unique(targets: List[Target]) -> List[Target]:
    seen, out = set(), []
    for t in targets:
        if t.name not in seen:
            seen.add(t.name)
            out.append(t)
    return out
