"""Parse ``nvidia-smi topo -m`` (and ``topo -mp``) output: the GPU/NIC connection matrix.

What nvidia-smi prints, and what this parser copes with::

    <TAB>GPU0<TAB>GPU1<TAB>NIC0<TAB>CPU Affinity<TAB>NUMA Affinity<TAB>GPU NUMA ID
    GPU0<TAB> X <TAB>NV18<TAB>PIX<TAB>0-55,112-167<TAB>0<TAB><TAB>N/A
    NIC0<TAB>PIX<TAB>PXB<TAB> X
    (blank line, "Legend:", "X = Self" lines, "NIC Legend:", "  NIC0: mlx5_0")

* The header may carry ANSI underline escapes (ESC[4m ... ESC[0m) when nvidia-smi writes to a
  terminal. They are removed before parsing.
* Cells are tab-separated. Pasted copies often have the tabs expanded to spaces, so that an
  affinity and the next value may be separated by a single space (``112-127 7``); rows without
  tabs are therefore split on any whitespace and the affinity values recognised by their shape.
* nvidia-smi prints an extra tab after ``NUMA Affinity``; in containers the CPU/NUMA affinity
  cells are empty. In tab-separated rows both are placed by position, empty cells become None.
* Old drivers name NICs in the header directly (``mlx4_0`` instead of ``NIC0`` + legend) and use
  ``SOC`` where newer ones print ``SYS``. Such NICs get the label ``NIC<j>`` (the next index not
  used by a ``NIC<n>`` column) with the header name as their name; ``SOC`` is reported as ``SYS``.
* ``topo -mp`` output has the same shape without ``NV#`` cells.

Result::

    {"gpus":  [{"index": 0, "cpu_affinity": "0-55,112-167" | None,
                "numa_affinity": "0" | None, "gpu_numa_id": "N/A" | None}],
     "nics":  [{"index": 0, "name": "mlx5_0" | None}],     # None: the output has no NIC legend
     "links": {"GPU0": {"GPU1": "NV18", "NIC0": "PIX"}, "NIC0": {"GPU0": "PIX"}},
     "warnings": [str]}

Values are the text nvidia-smi printed (``"N/A"`` stays ``"N/A"``); the self cell ``X`` is left
out of ``links``. Every key of ``links`` and of its rows is ``GPU<i>`` or ``NIC<j>``, where
``NIC<j>`` is the NIC whose ``index`` is j. Link types outside PIX/PXB/PHB/NODE/SYS/NV<n> are
kept as printed and reported in ``warnings``. A cut-off or garbled matrix gives what could be
read plus warnings; ParseError is raised only when no matrix header is found at all.
"""

from __future__ import annotations

import re
from itertools import repeat
from operator import itemgetter
from typing import Dict, List, Optional, Tuple

from ...errors import ParseError
from ._common import add_warning, as_text, clean, first_line, guarded, require_content, snippet

WHAT = "nvidia-smi topo -m"

KNOWN_PATHS = frozenset({"PIX", "PXB", "PHB", "NODE", "SYS"})
LEGACY_PATHS = {"SOC": "SYS"}  # drivers before ~384 said SOC for the inter-socket path

_GPU_RE = re.compile(r"^GPU(\d{1,6})\Z")
_NIC_RE = re.compile(r"^NIC(\d{1,6})\Z")
_NV_RE = re.compile(r"^NV(\d{1,4})\Z")
_LABEL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.:\-]{0,63}\Z")
_NIC_LEGEND_RE = re.compile(r"^\s*(NIC\d{1,6})\s*:\s*(\S+)\s*\Z")
_LEGEND_HEAD_RE = re.compile(r"^\s*Legend\s*:\s*\Z", re.IGNORECASE)
_LEGEND_LINE_RE = re.compile(r"^\s*\S{1,8}\s*=\s")
_ATTR_VALUE_RE = re.compile(r"^(?:\d[\d,\-]*|N/A)\Z")
_ATTR_NAMES_RE = re.compile(r"CPU Affinity|NUMA Affinity|GPU NUMA ID")
_ATTR_KEYS = {"CPU Affinity": "cpu_affinity", "NUMA Affinity": "numa_affinity", "GPU NUMA ID": "gpu_numa_id"}
_HEADER_STOP = frozenset({"CPU", "NUMA", "GPU", "Affinity", "ID"})


def _is_path_token(token: str) -> bool:
    return token == "X" or token in KNOWN_PATHS or token in LEGACY_PATHS or bool(_NV_RE.match(token))


def _is_other_nic(token: str) -> bool:
    """A NIC named in the header by its RDMA name (old drivers): mlx4_0, mlx5_bond_0, ..."""
    return bool(_LABEL_RE.match(token)) and any(ch.isdigit() for ch in token) and token not in _HEADER_STOP


def _is_header(line: str, strict: bool = False) -> bool:
    """Whether a line is the matrix header. Strict: only with a second GPU/NIC/CPU/NUMA token."""
    tokens = line.split(None, 2)  # the first two tokens decide; a matrix row has hundreds
    if not tokens or not _GPU_RE.match(tokens[0]):
        return False
    indented = line[:1] in (" ", "\t")
    if len(tokens) == 1:
        return indented and not strict
    second = tokens[1]
    if _GPU_RE.match(second) or _NIC_RE.match(second) or second in ("CPU", "NUMA"):
        return True
    if strict or _is_path_token(second):
        return False
    return indented and _is_other_nic(second)


class _Header:
    """Columns of the matrix: device labels (canonical GPU<i>/NIC<j>) then attribute keys."""

    def __init__(self, line: str, warnings: List[str]):
        raw_labels: List[str] = []
        end = 0
        for m in re.finditer(r"\S+", line):
            tok = m.group(0)
            if not (_GPU_RE.match(tok) or _NIC_RE.match(tok) or _is_other_nic(tok)):
                break
            raw_labels.append(tok)
            end = m.end()
        attr_text = line[end:].strip()

        used_nic = {int(m.group(1)) for m in map(_NIC_RE.match, raw_labels) if m}
        self.alias: Dict[str, str] = {}  # raw header label -> canonical label
        self.named: Dict[str, str] = {}  # canonical NIC label -> name taken from the header
        self.columns: List[Optional[str]] = []
        next_nic = 0
        for raw in raw_labels:
            if raw in self.alias:
                add_warning(warnings, f"header names {raw} twice; the second column is ignored")
                self.columns.append(None)
                continue
            gm, nm = _GPU_RE.match(raw), _NIC_RE.match(raw)
            if gm:
                canon = f"GPU{int(gm.group(1))}"
            elif nm:
                canon = f"NIC{int(nm.group(1))}"
            else:
                while next_nic in used_nic:
                    next_nic += 1
                used_nic.add(next_nic)
                canon = f"NIC{next_nic}"
                self.named[canon] = raw
            if canon in self.alias.values():
                add_warning(warnings, f"header names {raw} twice; the second column is ignored")
                self.columns.append(None)
                continue
            self.alias[raw] = canon
            self.columns.append(canon)

        self.attrs: List[Optional[str]] = []
        pieces = [p for p in re.split(r"\t|\s{2,}", attr_text) if p.strip()] if attr_text else []
        for piece in pieces:
            piece = piece.strip()
            names = _ATTR_NAMES_RE.findall(piece)
            if names and not _ATTR_NAMES_RE.sub("", piece).strip():
                self.attrs.extend(_ATTR_KEYS[n] for n in names)
            else:
                add_warning(warnings, f"unknown header column {snippet(piece)} ignored")
                self.attrs.append(None)

    @property
    def ndev(self) -> int:
        return len(self.columns)

    def canonical(self, raw: str) -> Optional[str]:
        if raw in self.alias:
            return self.alias[raw]
        gm, nm = _GPU_RE.match(raw), _NIC_RE.match(raw)
        if gm:
            return f"GPU{int(gm.group(1))}"
        if nm:
            return f"NIC{int(nm.group(1))}"
        return None


def _split_row(line: str, header: _Header) -> Tuple[str, List[str], List[str], bool]:
    """(raw label, link cells, remaining cells, tab-separated?) of one matrix row.

    Link cells of a tab-separated row are left unstripped (" X "): _Cells strips the few that
    are not a plain path type, which saves a copy of every cell of a large matrix."""
    if "\t" in line:
        cells = line.split("\t")
        while len(cells) > 1 and not cells[0].strip():
            cells.pop(0)
        label = cells[0].strip()
        end = header.ndev + 1
        return label, cells[1:end], [c.strip() for c in cells[end:]], True
    tokens = line.split()
    label, values = tokens[0], tokens[1:]
    links: List[str] = []
    i = 0
    while i < len(values) and len(links) < header.ndev and not _ATTR_VALUE_RE.match(values[i]):
        links.append(values[i])
        i += 1
    return label, links, values[i:], False


class _Cells:
    """Turns the link cells of one row into {column: link type}, with the warnings they call for.

    A 530-column matrix has 280k cells, nearly all a plain path type (NODE, SYS, NV18): those
    are mapped to one shared string each and placed in C loops (map, dict(zip)); only the
    others (the self marker, empty or unknown cells) are looked at one by one, in column order.
    """

    def __init__(self) -> None:
        # raw cell text -> the shared string it stands for, for cells that need no check
        self.plain: Dict[str, str] = {t: t for t in KNOWN_PATHS}
        self.interned: Dict[str, str] = {}
        self.legacy_seen = False
        self.labels: List[str] = []  # rows with every cell, in order, and those cells as read
        self.grid: List[Tuple[str, ...]] = []
        self._order: Optional[tuple] = None  # (columns, sorted columns, itemgetter) of _sorted_row

    def row(self, label: str, columns: List[Optional[str]], raw: List[str],
            warnings: List[str]) -> Tuple[Dict[str, str], int]:
        plain = self.plain
        values = tuple(map(plain.get, raw, raw))
        if len(values) == len(columns):
            self.labels.append(label)
            self.grid.append(values)
        if None in columns:  # a column the header named twice: cell by cell
            row: Dict[str, str] = {}
            missing = 0
            for col, value in zip(columns, values):
                if col is not None:
                    kept = self._cell(label, col, value, warnings)
                    if kept:
                        row[col] = kept
                    missing += kept == ""
            return row, missing
        row = self._sorted_row(columns, values)
        odd = set(values).difference(plain)
        if not odd:
            return row, 0
        where = sorted(i for v in odd for i in _positions(values, v))
        missing = 0
        for i in where:
            col = columns[i]
            kept = self._cell(label, col, values[i], warnings)
            if kept:
                row[col] = kept  # in place: the row keeps its key order
            else:
                del row[col]
                missing += kept == ""
        return row, missing

    def _sorted_row(self, columns: List[str], values: Tuple[str, ...]) -> Dict[str, str]:
        """{column: cell} with the keys in sorted order -- the order of the Features JSON, so
        that its sort_keys encoder finds each row sorted already (280k cells on a large host)."""
        if len(values) != len(columns) or len(columns) < 2:
            return dict(sorted(zip(columns, values)))
        if self._order is None or self._order[0] is not columns:
            order = sorted(range(len(columns)), key=columns.__getitem__)
            self._order = (columns, [columns[i] for i in order], itemgetter(*order))
        _, keys, pick = self._order
        return dict(zip(keys, pick(values)))

    def mirrored(self, columns: List[Optional[str]]) -> bool:
        """Whether the cells as read are a symmetric matrix (rows in column order): then no
        cell can disagree with its counterpart, which a C-level transpose shows at once."""
        return self.labels == columns and self.grid == list(zip(*self.grid))

    def _cell(self, label: str, col: str, raw: str, warnings: List[str]) -> Optional[str]:
        """The link type of one cell; None for the self marker, "" for an empty cell."""
        value = raw.strip()
        if value == "":
            return ""
        if value == "X":
            if col != label:
                add_warning(warnings, f"row {label}: self marker X under column {col}")
            return None
        if value in LEGACY_PATHS:
            value = LEGACY_PATHS[value]
            self.legacy_seen = True
        elif not _is_path_token(value):
            add_warning(warnings, f"row {label}, column {col}: unknown link type "
                                  f"{snippet(value, 20)} kept as printed")
        else:
            value = self.interned.setdefault(value, value)
            if raw == value:
                self.plain[raw] = value  # NV18 and the like: checked once, plain from now on
        return self.interned.setdefault(value, value)


def _positions(values: List[str], value: str) -> List[int]:
    out, i = [], -1
    try:
        while True:
            i = values.index(value, i + 1)
            out.append(i)
    except ValueError:
        return out


def _tab_attrs(rest: List[str], nattr: int) -> List[str]:
    """Attribute cells of a tab-separated row, minus nvidia-smi's extra empty cell."""
    rest = list(rest)
    # nvidia-smi prints "NUMA<TAB><TAB>GPU NUMA ID": drop that empty cell before the last one.
    while len(rest) > nattr and len(rest) >= 2 and rest[-2] == "":
        del rest[-2]
    while len(rest) > nattr and rest[-1] == "":
        rest.pop()
    return rest


def _space_attrs(rest: List[str], keys: List[Optional[str]]) -> Dict[str, Optional[str]]:
    """Attribute tokens of a whitespace-separated row, where empty cells leave no token."""
    out: Dict[str, Optional[str]] = {}
    if len(rest) >= len(keys):
        for key, value in zip(keys, rest):
            if key:
                out[key] = value
        return out
    rest = list(rest)
    if rest and keys and keys[-1] == "gpu_numa_id" and rest[-1] == "N/A":
        out["gpu_numa_id"] = rest.pop()
        keys = keys[:-1]
    for key, value in zip(keys, rest):
        if key:
            out[key] = value
    return out


@guarded(WHAT)
def parse_topo_matrix(text: str) -> dict:
    """Parse ``nvidia-smi topo -m``/``-mp`` output; see the module docstring for the result."""
    text = clean(as_text(text, WHAT))
    require_content(text, WHAT)
    lines = text.splitlines()
    warnings: List[str] = []

    start = next((i for i, line in enumerate(lines) if _is_header(line)), None)
    if start is None:
        raise ParseError(WHAT, f"no matrix header ('GPU0 GPU1 ...') found; first line: {first_line(text)}",
                         hint="pass the output of 'nvidia-smi topo -m'")
    header = _Header(lines[start], warnings)

    links: Dict[str, Dict[str, str]] = {}
    attrs: Dict[str, Dict[str, Optional[str]]] = {}
    legend: Dict[str, str] = {}
    legend_seen = False
    rows_done = False
    row_count = 0
    cells = _Cells()

    for line in lines[start + 1:]:
        legend_match = _NIC_LEGEND_RE.match(line)
        if legend_match:
            legend_seen = True
            label, name = f"NIC{int(legend_match.group(1)[3:])}", legend_match.group(2)
            if label in legend and legend[label] != name:
                add_warning(warnings, f"NIC legend names {label} twice ({legend[label]}, {name}); "
                                      "kept the first")
            legend.setdefault(label, name)
            continue
        if not line.strip():
            continue
        if _LEGEND_HEAD_RE.match(line) or line.strip().lower() == "nic legend:":
            rows_done = True
            legend_seen = legend_seen or "nic" in line.lower()
            continue
        if rows_done:
            continue  # legend text, or whatever follows the matrix
        if _LEGEND_LINE_RE.match(line):
            rows_done = True  # a legend printed without its "Legend:" title
            continue
        if _is_header(line, strict=True):
            add_warning(warnings, "a second matrix header follows; only the first matrix is read")
            rows_done = True
            continue

        raw_label, link_cells, rest, tabbed = _split_row(line, header)
        label = header.canonical(raw_label)
        if label is None:
            add_warning(warnings, f"ignored line {snippet(line)}")
            continue
        if label in links:
            add_warning(warnings, f"row {label} appears twice; kept the first")
            continue
        if label not in header.columns:
            add_warning(warnings, f"row {raw_label} has no column in the header")
        row_count += 1
        row, missing = cells.row(label, header.columns, link_cells, warnings)
        if len(link_cells) < header.ndev:
            add_warning(warnings, f"row {label}: {len(link_cells)} of {header.ndev} link cells (cut off?)")
        if missing:
            add_warning(warnings, f"row {label}: {missing} empty link cell(s)")
        links[label] = row

        nattr = len(header.attrs)
        if label.startswith("GPU"):
            if tabbed:
                values = _tab_attrs(rest, nattr)
                got = {k: (v or None) for k, v in zip(header.attrs, values) if k}
            else:
                values = rest
                got = _space_attrs(rest, header.attrs)
            if len(values) > nattr:
                add_warning(warnings, f"row {label}: {len(values) - nattr} unexpected value(s) "
                                      "after the link cells")
            elif len(values) < nattr:
                add_warning(warnings, f"row {label}: {len(values)} of {nattr} affinity value(s)")
            attrs[label] = got
        elif any(rest):
            add_warning(warnings, f"row {label}: unexpected value(s) after the link cells")

    links = dict(sorted(links.items()))  # rows in the order of the Features JSON, like their cells
    if row_count == 0:
        add_warning(warnings, "no matrix rows after the header (output cut off?)")
    if cells.legacy_seen:
        add_warning(warnings, "old nvidia-smi: SOC reported as SYS")

    gpu_labels = [c for c in header.columns if c and c.startswith("GPU")]
    for label in links:
        if label.startswith("GPU") and label not in gpu_labels:
            gpu_labels.append(label)
    gpus = []
    for label in sorted(set(gpu_labels), key=lambda s: int(s[3:])):
        if label not in links and row_count:
            add_warning(warnings, f"no row for {label} (output cut off?)")
        got = attrs.get(label, {})
        gpus.append({
            "index": int(label[3:]),
            "cpu_affinity": got.get("cpu_affinity"),
            "numa_affinity": got.get("numa_affinity"),
            "gpu_numa_id": got.get("gpu_numa_id"),
        })

    nic_labels = [c for c in header.columns if c and c.startswith("NIC")]
    for label in links:
        if label.startswith("NIC") and label not in nic_labels:
            nic_labels.append(label)
    nics = []
    unnamed = []
    for label in sorted(set(nic_labels), key=lambda s: int(s[3:])):
        if label not in links and row_count:
            add_warning(warnings, f"no row for {label} (output cut off?)")
        name = header.named.get(label) or legend.get(label)
        if name is None:
            unnamed.append(label)
        nics.append({"index": int(label[3:]), "name": name})
    if unnamed:
        if legend_seen or legend:
            add_warning(warnings, f"NIC legend does not name {', '.join(unnamed)}")
        else:
            add_warning(warnings, "no NIC legend in the output: NIC names unknown")
    for label in sorted(set(legend) - set(nic_labels), key=lambda s: int(s[3:])):
        add_warning(warnings, f"NIC legend names {label} ({legend[label]}), which has no column")

    if cells.mirrored(header.columns) or _all_symmetric(links):
        return {"gpus": gpus, "nics": nics, "links": links, "warnings": warnings}
    reported = set()
    for a in sorted(links):
        for b, value in sorted(links[a].items()):
            back = links.get(b, {}).get(a)
            pair = tuple(sorted((a, b)))
            if back is not None and back != value and pair not in reported:
                reported.add(pair)
                add_warning(warnings, f"{a}-{b} is {value} one way and {back} the other")

    return {"gpus": gpus, "nics": nics, "links": links, "warnings": warnings}


def _all_symmetric(links: Dict[str, Dict[str, str]]) -> bool:
    """Whether every cell that has a counterpart (b's row, a's column) agrees with it.

    Row by row in C loops (map): the counterpart of a missing cell is the cell itself."""
    empty: Dict[str, str] = {}
    get = links.get
    for a, row in links.items():
        values = list(row.values())
        others = map(get, row, repeat(empty))
        if list(map(dict.get, others, repeat(a), values)) != values:
            return False
    return True


def _nv_count(value: Optional[str]) -> Optional[int]:
    m = _NV_RE.match(value or "")
    return int(m.group(1)) if m else None


def nvlink_pairs(matrix: dict) -> Dict[Tuple[int, int], int]:
    """{(i, j): n} for GPU pairs i < j joined by a bonded set of n NVLinks (``NV<n>``)."""
    links = matrix.get("links") or {}
    out: Dict[Tuple[int, int], int] = {}
    for row, cells in links.items():
        rm = _GPU_RE.match(row)
        if not rm or not isinstance(cells, dict):
            continue
        for col, value in cells.items():
            cm = _GPU_RE.match(col)
            count = _nv_count(value)
            if not cm or count is None:
                continue
            i, j = int(rm.group(1)), int(cm.group(1))
            if i == j:
                continue
            out.setdefault((min(i, j), max(i, j)), count)
    return dict(sorted(out.items()))


def gpu_nic_paths(matrix: dict) -> Dict[Tuple[int, str], str]:
    """{(gpu index, NIC name): path type} for every GPU x NIC cell of the matrix.

    The NIC is named by its legend name, or by its label (``NIC3``) when the output has no legend.
    The GPU's row is used; the NIC's row is the fallback when the GPU row lacks the cell.
    """
    links = matrix.get("links") or {}
    out: Dict[Tuple[int, str], str] = {}
    for gpu in matrix.get("gpus") or []:
        g = f"GPU{gpu['index']}"
        for nic in matrix.get("nics") or []:
            n = f"NIC{nic['index']}"
            path = (links.get(g) or {}).get(n) or (links.get(n) or {}).get(g)
            if path:
                out[(gpu["index"], nic.get("name") or n)] = path
    return out
