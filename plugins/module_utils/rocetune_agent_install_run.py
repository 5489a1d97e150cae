# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""The rocetune_agent_install module's body: its argument spec and run(module), here so that
the preflight runs the very same code in check mode (rocetune_preflight).

Without `src` it only looks: is the agent with this sha256 installed in a form this Python runs
from bytecode (the zip, when its bytecode is this Python's; else the tree compiled for this
Python), is the launcher in place. When the agent is missing it says so (needs_content) and
changes nothing on the node; the module's action plugin then transfers the zip and calls it
again with `src`."""

from __future__ import absolute_import, division, print_function

import hashlib
import os

__metaclass__ = type

try:
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_agent_tree import (
        TreeError,
        add_cache_tag,
        find_tree,
        find_zip,
        install_zip,
        launcher_text,
        launcher_tree,
        python_facts,
        read_stamp,
        read_text,
        remove_tree,
        tree_name,
        unpack,
        write_launcher,
        zip_magic,
        zip_name,
        zip_version,
    )
    from ansible_collections.rocetune.fabric.plugins.module_utils.rocetune_files import directory_problem
except ImportError:  # unit tests import the files as plain modules
    from rocetune_agent_tree import (  # pylint: disable=import-error
        TreeError,
        add_cache_tag,
        find_tree,
        find_zip,
        install_zip,
        launcher_text,
        launcher_tree,
        python_facts,
        read_stamp,
        read_text,
        remove_tree,
        tree_name,
        unpack,
        write_launcher,
        zip_magic,
        zip_name,
        zip_version,
    )
    from rocetune_files import directory_problem  # pylint: disable=import-error

ARGUMENT_SPEC = dict(
    dest=dict(type="path", required=True),
    sha256=dict(type="str", required=True),
    python=dict(type="path", required=True),
    lib_dir=dict(type="path", required=True),
    mode=dict(type="str", default="0755"),
    src=dict(type="path"),
)


def sha256_of(path):
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def _describe(text, path):
    if text is not None:
        return text
    return "" if not os.path.lexists(path) else "(the agent as one zip file, sha256 %s)\n" % sha256_of(path)


def _inputs(module):
    """(mode, the node's Python facts), every input checked before anything is made."""
    p = module.params
    try:
        mode = int(p["mode"], 8)
    except ValueError:
        module.fail_json(msg="mode %r: an octal mode such as 0755" % p["mode"])
    try:
        facts = python_facts(p["python"])
    except TreeError as exc:
        module.fail_json(msg="rocetune_agent_python: %s" % exc)
    if not os.path.isdir(os.path.dirname(p["dest"]) or "."):
        module.fail_json(msg="rocetune_agent_command: %s does not exist on this node (the command's directory "
                             "must); nothing was changed" % os.path.dirname(p["dest"]))
    why = directory_problem(p["lib_dir"])
    if why:  # root runs the agent from there: no other user may swap what it imports
        module.fail_json(msg="rocetune_agent_lib_dir: the agent cannot live in %s: %s; nothing was changed"
                             % (p["lib_dir"], why))
    return mode, facts


def run(module):
    p = module.params
    diff_mode = getattr(module, "_diff", False)
    mode, facts = _inputs(module)
    lib_dir, sha = p["lib_dir"], p["sha256"]
    changes = []
    installed = find_zip(lib_dir, sha)
    if installed and zip_magic(installed) == facts["magic"]:
        tree, stamp = installed, {"version": zip_version(installed), "sha256": sha}
    else:
        tree = find_tree(lib_dir, sha)
        stamp = read_stamp(tree) if tree else None
    if tree is None:
        # The zip installed for another Python serves as the source; else the one transferred.
        source = installed or p["src"]
        if not source:
            # The zip must come over first; nothing is made on the node until it does.
            result = dict(changed=bool(module.check_mode), needs_content=True,
                          msg="the agent sha256 %s is not installed in %s" % (sha, lib_dir))
            if module.check_mode and diff_mode:
                result["diff"] = {"before_header": p["dest"], "after_header": p["dest"], "before": "",
                                  "after": "rocetune agent sha256 %s, installed in %s as bytecode for %s\n"
                                           % (sha, lib_dir, facts["cache_tag"])}
            module.exit_json(**result)
        if source == p["src"] and sha256_of(source) != sha:
            module.fail_json(msg="the transferred agent %s does not have sha256 %s" % (source, sha))
        made_lib_dir = not os.path.isdir(lib_dir)
        try:
            version = zip_version(source)
            as_zip = zip_magic(source) == facts["magic"]  # the zip's bytecode is this Python's
            if module.check_mode:
                tree = os.path.join(lib_dir, (zip_name if as_zip else tree_name)(version, sha))
            elif as_zip:
                tree = install_zip(source, lib_dir, sha)
            else:
                tree = unpack(source, lib_dir, sha, p["python"], facts["cache_tag"])
        except (TreeError, OSError) as exc:
            module.fail_json(msg="cannot install the agent in %s: %s" % (lib_dir, exc), changed=made_lib_dir)
        stamp = {"version": version, "sha256": sha, "compiled": [facts["cache_tag"]]}
        changes.append(("installed %s" if as_zip else "unpacked and compiled in %s") % tree)
    elif not tree.endswith(".pyz") and facts["cache_tag"] not in stamp.get("compiled", []):
        if not module.check_mode:
            stamp = add_cache_tag(p["python"], tree, stamp, facts["cache_tag"])
        changes.append("compiled in %s for %s" % (tree, facts["cache_tag"]))
    want = launcher_text(p["python"], tree, facts, stamp)
    have = read_text(p["dest"])
    result = dict(needs_content=False, tree=tree)
    if have != want:
        if diff_mode:
            result["diff"] = {"before_header": p["dest"], "after_header": p["dest"],
                              "before": _describe(have, p["dest"]), "after": want}
        changes.append("launcher %s written" % p["dest"])
    else:
        st = os.stat(p["dest"])
        owner = (0, 0) if os.geteuid() == 0 else (os.geteuid(), os.getegid())  # root: root's
        if (st.st_mode & 0o7777, st.st_uid, st.st_gid) != (mode,) + owner:
            changes.append("owner and mode %s set on %s" % (p["mode"], p["dest"]))
    if changes and not module.check_mode:
        try:
            write_launcher(p["dest"], want, mode)
        except (TreeError, OSError) as exc:
            module.fail_json(msg="cannot write %s: %s" % (p["dest"], exc), changed=True)
        old = launcher_tree(have)
        if old and os.path.normpath(old) != os.path.normpath(tree) and remove_tree(p["lib_dir"], old):
            changes.append("%s removed" % old)
    module.exit_json(changed=bool(changes), msg="; ".join(changes) or "up to date", **result)
