#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Install rocetune into a venv on a node from an offline wheelhouse archive."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rocetune_agent_install
short_description: Install rocetune into a venv from an offline wheelhouse archive
description:
  - Creates a virtual environment with the node's Python (without network access), installs
    rocetune and its runtime dependencies from a wheelhouse tar with C(pip --no-index), and
    links the C(rocetune) command into the PATH.
  - Idempotent on the archive's content: the sha256 of the installed archive is recorded in the
    venv; the same archive is never installed twice, a new build of the same version is.
  - pip comes from the wheelhouse too (it is run from its wheel), so the node needs neither
    network access nor the distribution's python3-venv/ensurepip package.
  - Used through its action plugin, which sends the archive (C(src) on the controller) only
    when the node does not have that exact archive installed.
options:
  src:
    description: The wheelhouse tar on the controller (built by rocetune_wheelhouse.py).
    type: path
    required: true
  archive:
    description: Internal (set by the action plugin) - the archive in the task's temp directory.
    type: path
  archive_sha256:
    description: Internal (set by the action plugin) - sha256 of I(src).
    type: str
    required: true
  dirs:
    description: Directories to create (mode 0755) when missing, e.g. the env file's directory.
    type: list
    elements: path
    default: []
  venv:
    description: Directory of the virtual environment.
    type: path
    required: true
  python:
    description: The node's Python that creates the venv.
    type: path
    default: /usr/bin/python3
  system_site_packages:
    description: Let the venv see the system site-packages (for a distribution pyverbs).
    type: bool
    default: true
  link:
    description: Symlink to the venv's rocetune command; empty for none.
    type: str
    default: ''
  timeout:
    description: Seconds each pip or python call may take.
    type: int
    default: 600
author: rocetune contributors
"""

RETURN = r"""
version:
  description: The rocetune version installed.
  type: str
  returned: success
executable:
  description: The venv's rocetune command.
  type: str
  returned: always
archive_sha256:
  description: sha256 of the archive.
  type: str
  returned: always
needs_archive:
  description: Internal, between the module and its action plugin.
  type: bool
  returned: when the archive must be sent
actions:
  description: What was done (or would be done in check mode).
  type: list
  elements: str
  returned: always
"""

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile

from ansible.module_utils.basic import AnsibleModule

MARKER = ".rocetune-wheelhouse.sha256"


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read(path):
    try:
        with open(path) as fh:
            return fh.read().strip()
    except (IOError, OSError):
        return None


def run(argv, timeout):
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out.decode("utf-8", "replace")
    except OSError as exc:
        return 127, str(exc)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return 124, "timed out after %ss" % timeout


def tail(text, n=3):
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " | ".join(lines[-n:])


def venv_python_works(venv, timeout):
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        return False
    rc, _ = run([py, "-c", "import sys"], timeout)
    return rc == 0


def installed_version(venv, timeout):
    rc, out = run([os.path.join(venv, "bin", "python"), "-c",
                   "import rocetune, sys; sys.stdout.write(rocetune.__version__)"], timeout)
    return out.strip() if rc == 0 else None


def site_packages_flag(venv):
    text = read(os.path.join(venv, "pyvenv.cfg")) or ""
    m = re.search(r"^include-system-site-packages\s*=\s*(\w+)", text, re.M)
    return bool(m) and m.group(1).lower() == "true"


def set_site_packages_flag(venv, value):
    cfg = os.path.join(venv, "pyvenv.cfg")
    text = read(cfg) or ""
    line = "include-system-site-packages = %s" % ("true" if value else "false")
    if re.search(r"^include-system-site-packages\s*=.*$", text, re.M):
        text = re.sub(r"^include-system-site-packages\s*=.*$", line, text, flags=re.M)
    else:
        text += "\n" + line
    with open(cfg, "w") as fh:
        fh.write(text.rstrip("\n") + "\n")


def safe_extract(archive, dest):
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        for m in members:
            if not m.isfile() or os.path.isabs(m.name) or ".." in m.name.split("/") or "/" in m.name:
                raise ValueError("unexpected member %r in the wheelhouse archive" % m.name)
        # Flat, regular files only (checked above); the 'data' filter where Python has it.
        kwargs = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(dest, members=members, **kwargs)
        return sorted(m.name for m in members)


def python_version(python, timeout):
    rc, out = run([python, "-c", "import sys, platform; "
                   "sys.stdout.write('%d.%d-%s' % (sys.version_info[0], sys.version_info[1], platform.machine()))"],
                  timeout)
    return out.strip() if rc == 0 else None


def pick_pip(names, wheel_dir, node_py):
    """The newest pip wheel whose Requires-Python admits the node's Python."""
    import zipfile
    major_minor = tuple(int(x) for x in node_py.split("-")[0].split("."))

    def key(name):
        return tuple(int(x) if x.isdigit() else 0 for x in name.split("-")[1].split("."))

    for name in sorted((n for n in names if n.startswith("pip-") and n.endswith(".whl")), key=key, reverse=True):
        path = os.path.join(wheel_dir, name)
        requires = None
        try:
            with zipfile.ZipFile(path) as zf:
                meta = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
                if meta:
                    for line in zf.read(meta[0]).decode("utf-8", "replace").splitlines():
                        if line.startswith("Requires-Python:"):
                            requires = line.split(":", 1)[1].strip()
                            break
        except (IOError, OSError, zipfile.BadZipfile):
            continue
        m = re.match(r"^>=\s*(\d+)\.(\d+)", requires or "")
        if not m or major_minor >= (int(m.group(1)), int(m.group(2))):
            return path
    return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            archive=dict(type="path"),
            archive_sha256=dict(type="str", required=True),
            dirs=dict(type="list", elements="path", default=[]),
            venv=dict(type="path", required=True),
            python=dict(type="path", default="/usr/bin/python3"),
            system_site_packages=dict(type="bool", default=True),
            link=dict(type="str", default=""),
            timeout=dict(type="int", default=600),
        ),
        supports_check_mode=True,
    )
    p = module.params
    venv, timeout = p["venv"], p["timeout"]
    exe = os.path.join(venv, "bin", "rocetune")
    result = dict(changed=False, executable=exe, actions=[])

    want = p["archive_sha256"]
    result["archive_sha256"] = want

    actions = result["actions"]
    missing_dirs = [d for d in p["dirs"] if not os.path.isdir(d)]
    for d in missing_dirs:
        actions.append("create directory %s" % d)
    # One Python start on the common path: importing rocetune also proves the venv works.
    version = installed_version(venv, timeout) if os.path.exists(os.path.join(venv, "bin", "python")) else None
    venv_ok = bool(version) or venv_python_works(venv, timeout)
    if not venv_ok:
        actions.append("create venv %s with %s" % (venv, p["python"]))
    elif site_packages_flag(venv) != p["system_site_packages"]:
        actions.append("set include-system-site-packages = %s" % str(p["system_site_packages"]).lower())
    have = read(os.path.join(venv, MARKER)) if venv_ok else None
    install = not version or have != want
    if install:
        actions.append("install rocetune from the wheelhouse %s" % want[:12])
    link = p["link"]
    if link:
        if os.path.islink(link):
            if os.readlink(link) != exe:
                actions.append("point %s at %s" % (link, exe))
        elif os.path.exists(link):
            module.fail_json(msg="%s exists and is not a symlink; move it away or set "
                                 "rocetune_agent_link to another path (or '')" % link, **result)
        else:
            actions.append("link %s -> %s" % (link, exe))

    if not actions:
        result["version"] = version
        module.exit_json(**result)
    if module.check_mode:
        result["changed"] = True
        result["version"] = version
        module.exit_json(**result)
    if install and not p["archive"]:
        result["needs_archive"] = True  # the action plugin sends it and runs us again
        module.exit_json(**result)
    if install and sha256_file(p["archive"]) != want:
        module.fail_json(msg="the wheelhouse archive arrived damaged (sha256 mismatch)", **result)
    result["changed"] = True

    for d in missing_dirs:
        os.makedirs(d, 0o755)
        os.chmod(d, 0o755)

    # 1. The venv, created offline: pip is not needed in it (it runs from the wheelhouse).
    if not venv_ok:
        if os.path.lexists(venv):
            shutil.rmtree(venv)  # a venv whose Python is gone (the node's Python was upgraded)
        argv = [p["python"], "-m", "venv", "--without-pip"]
        if p["system_site_packages"]:
            argv.append("--system-site-packages")
        rc, out = run(argv + [venv], timeout)
        if rc != 0:
            module.fail_json(msg="creating the venv %s with %s failed: %s" % (venv, p["python"], tail(out)),
                             hint="set rocetune_agent_python to a Python 3.9+ that has the venv module",
                             **result)
    elif site_packages_flag(venv) != p["system_site_packages"]:
        set_site_packages_flag(venv, p["system_site_packages"])

    # 2. rocetune from the wheelhouse.
    if install:
        node_py = python_version(os.path.join(venv, "bin", "python"), timeout) or "?"
        tmp = tempfile.mkdtemp(prefix="rocetune-wheelhouse-")
        try:
            try:
                names = safe_extract(p["archive"], tmp)
            except (ValueError, tarfile.TarError, IOError, OSError) as exc:
                module.fail_json(msg="cannot unpack %s: %s" % (p["archive"], exc), **result)
            wheels = [n for n in names if n.startswith("rocetune-") and n.endswith(".whl")]
            pip = pick_pip(names, tmp, node_py)
            hint = ("rebuild the wheelhouse for this node: add '%s' to rocetune_agent_wheelhouse_targets"
                    % node_py)
            if len(wheels) != 1:
                module.fail_json(msg="the wheelhouse holds %d rocetune wheels (%s), expected one"
                                     % (len(wheels), ", ".join(wheels)), **result)
            if not pip:
                module.fail_json(msg="the wheelhouse has no wheels for this node's Python %s" % node_py,
                                 hint=hint, **result)
            vpy = os.path.join(venv, "bin", "python")
            pip_cmd = [vpy, os.path.join(pip, "pip"), "--disable-pip-version-check", "--no-input",
                       "--no-cache-dir", "install", "--no-index", "--find-links", tmp]
            # A fresh venv: one pip run. A new build over an installed rocetune: replace it even
            # when the version is the same, then add what its dependencies need.
            steps = [["rocetune==%s" % wheels[0].split("-")[1]]]
            if version:
                steps.insert(0, ["--force-reinstall", "--no-deps", os.path.join(tmp, wheels[0])])
            for extra in steps:
                rc, out = run(pip_cmd + extra, timeout)
                if rc != 0:
                    if "No matching distribution" in out or "is not a supported wheel" in out:
                        module.fail_json(msg="the wheelhouse has no wheels for this node's Python %s: %s"
                                             % (node_py, tail(out, 1)), hint=hint, **result)
                    module.fail_json(msg="pip install on the node failed (exit %d): %s" % (rc, tail(out)),
                                     **result)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        version = installed_version(venv, timeout)
        if not version:
            module.fail_json(msg="rocetune does not import in %s after installing it" % venv, **result)
        with open(os.path.join(venv, MARKER), "w") as fh:
            fh.write(want + "\n")

    # 3. The command on the PATH.
    if link and not (os.path.islink(link) and os.readlink(link) == exe):
        parent = os.path.dirname(link)
        if parent and not os.path.isdir(parent):
            os.makedirs(parent, 0o755)
        tmp_link = "%s.rocetune-tmp" % link
        if os.path.lexists(tmp_link):
            os.unlink(tmp_link)
        os.symlink(exe, tmp_link)
        os.rename(tmp_link, link)

    result["version"] = version
    module.exit_json(**result)


if __name__ == "__main__":
    main()
