#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocetune contributors
# Apache-2.0
"""Save every node's Features on the controller in one call, with check mode and diff."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rocetune_env_features
short_description: Write each node's Features document as DIR/<host>.json, all in one call
description:
  - Runs once on the controller for the whole play (C(run_once), C(delegate_to: localhost))
    instead of one delegated copy per node; writes C(<host>.json) for every host given, each
    only when its content differs, atomically.
  - The JSON is indented by 4 with sorted keys and ends with a newline.
  - Supports check mode and diff.
options:
  dir:
    description: The controller directory for the files (created when missing).
    type: path
    required: true
  features:
    description: Host name to its Features document; hosts whose value is null are skipped
      (the agent did not run there, e.g. in check mode before it was installed).
    type: dict
    required: true
author: rocetune contributors
"""

RETURN = r"""
files:
  description: Each file written (or that would be), with C(path) and C(changed).
  type: list
  elements: dict
  returned: always
"""

import json
import os
import re
import tempfile

from ansible.module_utils.basic import AnsibleModule

SAFE_NAME = re.compile(r"^[A-Za-z0-9_.@:-]+$")


def render(features):
    return json.dumps(features, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"


def read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return None


def main():
    module = AnsibleModule(
        argument_spec=dict(dir=dict(type="path", required=True),
                           features=dict(type="dict", required=True)),
        supports_check_mode=True,
    )
    directory, hosts = module.params["dir"], module.params["features"]
    bad = sorted(h for h in hosts if not SAFE_NAME.match(h) or h in (".", ".."))
    if bad:
        module.fail_json(msg="host names unfit for a file name: %s" % ", ".join(bad))
    results, diffs = [], []
    for host in sorted(hosts):
        if hosts[host] is None:
            continue
        path = os.path.join(directory, host + ".json")
        content, before = render(hosts[host]), read(path)
        differs = content != before
        if differs:
            diffs.append({"before_header": path, "after_header": path,
                          "before": before or "", "after": content})
            if not module.check_mode:
                if not os.path.isdir(directory):
                    os.makedirs(directory, 0o755)
                fd, tmp = tempfile.mkstemp(prefix=".rocetune-", dir=directory)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(content.encode("utf-8"))
                os.chmod(tmp, 0o644)
                module.atomic_move(tmp, path)
        results.append({"path": path, "changed": differs})
    module.exit_json(changed=bool(diffs), diff=diffs, files=results)


if __name__ == "__main__":
    main()
