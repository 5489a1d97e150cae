"""Checks a SONiC CONFIG_DB document against the schema tools/sonic_yang_schema.py builds from
SONiC's YANG models (tests/fixtures/switch/yang), plus the leafrefs the schema lists: a name that
one table gives another must be an entry of that table. Each problem names where it is and the YANG
line it breaks."""

import json
import os
from typing import List

from jsonschema import Draft202012Validator

SWITCH = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "switch")
SCHEMA_PATH = os.path.join(SWITCH, "sonic-configdb-qos.schema.json")


def schema() -> dict:
    with open(SCHEMA_PATH, encoding="utf-8") as fh:
        return json.load(fh)


def problems(doc: dict, checked_against: dict = None) -> List[str]:
    sch = checked_against or schema()
    out = []
    for err in sorted(Draft202012Validator(sch).iter_errors(doc), key=lambda e: (list(map(str, e.absolute_path)), e.message)):
        where = "/".join(map(str, err.absolute_path)) or "(document)"
        out.append(f"{where}: {err.message} [{err.schema.get('$comment', 'schema')}]")
    out += leafref_problems(doc, sch)
    return out


# Tables that are the switch's own: a rendered file names their entries (its ports, the buffer
# profiles SONiC's templates define) without holding them; checked where the document has them.
SWITCH_OWNED = ("PORT", "BUFFER_PROFILE")


def leafref_problems(doc: dict, sch: dict) -> List[str]:
    """Every reference must name an entry of a table the document holds; the PORT names in keys are
    the switch's own table and cannot be checked offline."""
    out = []
    for ref in sch["x-leafrefs"]:
        if ref["field"] == "(key)":
            continue
        for key, fields in sorted(doc.get(ref["table"], {}).items()):
            name = fields.get(ref["field"]) if isinstance(fields, dict) else None
            if name is None or (name == "NULL" and ref["table"] == "BUFFER_PG"):
                continue
            if ref["target"] in SWITCH_OWNED and ref["target"] not in doc:
                continue
            if ref["target"] not in sch["properties"] and ref["target"] not in SWITCH_OWNED:
                out.append(f"{ref['table']}/{key}/{ref['field']}: names a {ref['target']} entry, a table the schema "
                           f"does not cover [{ref['$comment']}]")
            elif name not in doc.get(ref["target"], {}):
                out.append(f"{ref['table']}/{key}/{ref['field']}: {name!r} is no {ref['target']} entry [{ref['$comment']}]")
    return out


def config_load(running: dict, loaded: dict) -> dict:
    """CONFIG_DB after `config load FILE` over `running`: each entry's fields merged over the
    running ones, an entry given as null deleted (sonic-cfggen --write-to-db -> swss-common
    ConfigDBConnector.mod_config; typed_to_raw(None) is an empty hash, which mod_entry deletes)."""
    out = {t: {k: dict(v) for k, v in entries.items()} for t, entries in running.items() if isinstance(entries, dict)}
    for table, entries in loaded.items():
        for key, fields in entries.items():
            if fields is None:
                out.get(table, {}).pop(key, None)
            else:
                out.setdefault(table, {}).setdefault(key, {}).update(fields)
    return out


def db_content(doc: dict) -> dict:
    """The entries a loaded file writes (its null deletions left out)."""
    return {t: {k: v for k, v in e.items() if v is not None} for t, e in doc.items()}
