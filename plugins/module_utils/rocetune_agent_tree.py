# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""The installed agent, run from bytecode by the node's own Python through a small launcher
script (the `rocetune` command), in one of two forms:

- the packed zip itself, lib_dir/VERSION-SHA12.pyz, where the node's Python takes the bytecode
  the zip carries (the packing Python's, next to each module; rocetune.agentpack); one file,
  written atomically and found by its sha256;
- else the zip unpacked into lib_dir/VERSION-SHA12/ and byte-compiled there by the node's Python
  (a zip without bytecode for this Python would compile every module from source at every
  start: 0.4-0.6 s on an H100 host, against 0.2 s from bytecode).

The launcher runs that Python with -I -S: no PYTHON* environment variables, no user site and no
site-packages .pth files (a torch venv's cost 0.05-0.1 s a start); the interpreter's
site-packages directories go at the end of sys.path, so the distribution's pyverbs is still
found.

Pure Python (no Ansible): unit-tested on a temporary directory.
"""

from __future__ import absolute_import, division, print_function

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

try:  # as the collection's module_utils
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import directory_problem
except ImportError:  # loaded alone, beside its siblings
    from rocetune_files import directory_problem  # pylint: disable=import-error

__metaclass__ = type

STAMP = ".rocetune-agent.json"  # written last: a tree without it is incomplete
MIN_PYTHON = (3, 9)

# What the launcher needs to know about the node's Python, asked of that Python itself.
_FACTS = ("import json, site, sys\n"
          "from importlib.util import MAGIC_NUMBER\n"
          "print(json.dumps({'version': list(sys.version_info[:2]), 'magic': MAGIC_NUMBER.hex(),"
          " 'cache_tag': sys.implementation.cache_tag, 'site': site.getsitepackages()}))\n")
# The module whose bytecode in the zip says which Python made it (its first four bytes).
_MAGIC_PROBE = "rocetune/__init__.pyc"


class TreeError(Exception):
    pass


def _own_facts():
    import site
    from importlib.util import MAGIC_NUMBER
    return {"version": list(sys.version_info[:2]), "magic": MAGIC_NUMBER.hex(),
            "cache_tag": sys.implementation.cache_tag, "site": site.getsitepackages()}


def python_facts(python):
    """{version, magic, cache_tag, site} of the interpreter at `python`; TreeError when it cannot
    serve. The interpreter running this module answers without starting another where it is the
    one named (the same path) and no virtual environment's (whose prefix `site` sets, which the
    launcher's -S skips)."""
    if python == sys.executable and sys.prefix == sys.base_prefix and sys.exec_prefix == sys.base_exec_prefix:
        facts = _own_facts()
    else:
        facts = _ask(python)
    if tuple(facts["version"]) < MIN_PYTHON:
        raise TreeError("%s is Python %d.%d: the agent needs %d.%d or newer"
                        % ((python,) + tuple(facts["version"]) + MIN_PYTHON))
    return facts


def _ask(python):
    try:
        proc = subprocess.Popen([python, "-I", "-S", "-c", _FACTS], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        out, err = proc.communicate()
    except OSError as exc:
        raise TreeError("%s cannot run: %s" % (python, exc)) from None
    if proc.returncode != 0:
        raise TreeError("%s failed (exit %d): %s" % (python, proc.returncode, err.decode("utf-8", "replace")[:300]))
    return json.loads(out.decode("utf-8"))


def tree_name(version, sha256):
    return "%s-%s" % (version, sha256[:12])


def read_stamp(tree):
    try:
        with open(os.path.join(tree, STAMP)) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def zip_name(version, sha256):
    return tree_name(version, sha256) + ".pyz"


def zip_magic(path):
    """The magic number (hex) of the bytecode the zip at `path` carries, or None."""
    try:
        with zipfile.ZipFile(path) as zf:
            return zf.read(_MAGIC_PROBE)[:4].hex()
    except (OSError, KeyError, zipfile.BadZipFile):
        return None


def zip_version(path):
    """rocetune's __version__ in the zip at `path`."""
    try:
        with zipfile.ZipFile(path) as zf:
            text = zf.read("rocetune/__init__.py").decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise TreeError("the agent archive %s has no readable rocetune/__init__.py: %s" % (path, exc)) from None
    m = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
    if not m:
        raise TreeError("the agent archive has no rocetune/__init__.py __version__")
    return m.group(1)


def _sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _named(lib_dir, suffix):
    """The paths in lib_dir whose names end with `suffix`, sorted (none when it cannot be read)."""
    try:
        names = sorted(os.listdir(lib_dir))
    except OSError:
        return []
    return [os.path.join(lib_dir, name) for name in names if name.endswith(suffix)]


def find_zip(lib_dir, sha256):
    """The installed zip of the agent with this sha256 under lib_dir (its bytes checked), or None."""
    for path in _named(lib_dir, "-%s.pyz" % sha256[:12]):
        if os.path.isfile(path) and not os.path.islink(path):
            try:
                if _sha256_of(path) == sha256:
                    return path
            except OSError:
                continue
    return None


def install_zip(zip_path, lib_dir, sha256):
    """Copy the zip to lib_dir/VERSION-SHA12.pyz (written aside, renamed into place, 0644).
    Returns its path."""
    if not os.path.isdir(lib_dir):
        os.makedirs(lib_dir)
        os.chmod(lib_dir, 0o755)
    path = os.path.join(lib_dir, zip_name(zip_version(zip_path), sha256))
    fd, tmp = tempfile.mkstemp(prefix=".install-", suffix=".pyz", dir=lib_dir)
    try:
        with os.fdopen(fd, "wb") as out, open(zip_path, "rb") as src:
            shutil.copyfileobj(src, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        os.rename(tmp, path)
        return path
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def find_tree(lib_dir, sha256):
    """The complete tree of the agent with this sha256 under lib_dir, or None."""
    for tree in _named(lib_dir, "-" + sha256[:12]):
        stamp = read_stamp(tree)
        if stamp and stamp.get("sha256") == sha256:
            return tree
    return None


def launcher_text(python, tree, facts, stamp):
    """The `rocetune` command: a script run by the node's Python, isolated, from the tree."""
    site_dirs = [d for d in facts["site"] if d != tree]
    return ("#!%s -IS\n"
            "# rocetune %s (agent sha256 %s), installed by the rocetune_agent role.\n"
            "# -I -S: no PYTHON* variables, user site or .pth files; the interpreter's site-packages\n"
            "# come last (the distribution's pyverbs).\n"
            "import os, sys\n"
            "sys.path[:0] = [%r]\n"
            "sys.path += %r\n"
            "from rocetune.cli.main import main\n"
            "code = main()\n"
            "try:  # then exit without tearing every module down, as the process ends anyway\n"
            "    sys.stdout.flush()\n"
            "    sys.stderr.flush()\n"
            "except BaseException:\n"
            "    os._exit(120)  # what Python exits with when it cannot flush stdout\n"
            "os._exit(code)\n") % (python, stamp["version"], stamp["sha256"], tree, site_dirs)


def launcher_tree(text):
    """The tree an installed launcher runs from (None when `text` is no launcher of ours)."""
    m = re.search(r"^sys\.path\[:0\] = \['([^']+)'\]$", text or "", re.M)
    return m.group(1) if m else None


def _safe_members(zf):
    for info in zf.infolist():
        name = info.filename
        if name.startswith("/") or ".." in name.split("/") or "\\" in name:
            raise TreeError("the agent archive holds an unsafe path: %r" % name)
        yield info


def _version_of(tree):
    with open(os.path.join(tree, "rocetune", "__init__.py")) as fh:
        m = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", fh.read(), re.M)
    if not m:
        raise TreeError("the agent archive has no rocetune/__init__.py __version__")
    return m.group(1)


def compile_tree(python, tree, source_dir=None):
    """Byte-compile every module of the tree with `python` (its own cache tag). source_dir:
    where the files lie now when the tree is built elsewhere and renamed into place."""
    argv = [python, "-I", "-S", "-m", "compileall", "-q", "--invalidation-mode", "timestamp"]
    if source_dir:
        argv += ["-s", source_dir, "-p", tree]
    proc = subprocess.Popen(argv + [source_dir or tree], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.communicate()[0]
    if proc.returncode != 0:
        raise TreeError("compiling the agent with %s failed: %s" % (python, out.decode("utf-8", "replace")[-400:]))


def _readable(tree):
    """Directories 0755, files 0644, whatever the umask: every user runs the agent, from bytecode."""
    os.chmod(tree, 0o755)
    for dirpath, dirnames, filenames in os.walk(tree):
        for d in dirnames:
            os.chmod(os.path.join(dirpath, d), 0o755)
        for f in filenames:
            os.chmod(os.path.join(dirpath, f), 0o644)


def write_stamp(tree, stamp):
    tmp = os.path.join(tree, STAMP + ".tmp")
    with open(tmp, "w") as fh:
        json.dump(stamp, fh, sort_keys=True)
        fh.write("\n")
    os.chmod(tmp, 0o644)
    os.rename(tmp, os.path.join(tree, STAMP))


def unpack(zip_path, lib_dir, sha256, python, cache_tag):
    """Unpack the agent's sources into lib_dir/VERSION-SHA12 (built aside, renamed into place,
    stamped last) and compile them with `python`. Returns the tree's path."""
    if not os.path.isdir(lib_dir):
        os.makedirs(lib_dir)
        os.chmod(lib_dir, 0o755)
    work = tempfile.mkdtemp(prefix=".unpack-", dir=lib_dir)
    try:
        with zipfile.ZipFile(zip_path) as zf:
            for info in _safe_members(zf):
                if not info.filename.endswith(".pyc"):  # another Python's bytecode: compiled here
                    zf.extract(info, work)
        version = _version_of(work)
        tree = os.path.join(lib_dir, tree_name(version, sha256))
        compile_tree(python, tree, source_dir=work)
        _readable(work)
        write_stamp(work, {"sha256": sha256, "version": version, "compiled": [cache_tag]})
        if os.path.lexists(tree):  # an earlier, unfinished copy
            shutil.rmtree(tree)
        os.rename(work, tree)
        return tree
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def add_cache_tag(python, tree, stamp, cache_tag):
    """Compile an installed tree for one more interpreter (another Python on the same node)."""
    compile_tree(python, tree)
    _readable(tree)
    stamp = dict(stamp, compiled=sorted(set(stamp.get("compiled", [])) | {cache_tag}))
    write_stamp(tree, stamp)
    return stamp


def write_launcher(path, text, mode):
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        raise TreeError("%s does not exist: the command's directory must" % directory)
    why = directory_problem(directory)
    if why:  # a launcher root runs must not sit where another user can swap it
        raise TreeError("cannot write %s: %s" % (path, why))
    fd, tmp = tempfile.mkstemp(prefix=".rocetune-", dir=directory)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        if os.geteuid() == 0:
            os.chown(tmp, 0, 0)
        os.rename(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def read_text(path):
    """A file's text, or None when it is missing or not text (the old single-zip agent)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(1 << 16)
    except OSError:
        return None
    if b"\x00" in data:  # a zip's headers always hold NUL bytes
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def remove_tree(lib_dir, tree):
    """Remove an installed agent the launcher no longer runs (a tree or a zip), if it is one of
    ours inside lib_dir."""
    if not tree or os.path.dirname(os.path.normpath(tree)) != os.path.normpath(lib_dir):
        return False
    if tree.endswith(".pyz") and os.path.isfile(tree) and not os.path.islink(tree):
        os.unlink(tree)
        return True
    if read_stamp(tree) is not None:
        shutil.rmtree(tree, ignore_errors=True)
        return True
    return False
