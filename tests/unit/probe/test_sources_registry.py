"""A probe source is one module of rocetune.probe.sources declaring `SOURCE = Source(...)`: the
registry finds it, runs it after the sources it needs and hands it their sections; the probe puts
its section and its status in the Features. A need nobody declares, or a cycle, is one clear error."""

import importlib
import json
import sys
import textwrap

import pytest

from rocetune.cli.main import main
from rocetune.model.schema import features_schema
from rocetune.probe import collect_features, sources
from rocetune.probe.source import Source
from rocetune.probe.sources import SourceRegistryError, ordered
from tests.fixtures.roots import root_of

TOY = textwrap.dedent('''
    """A toy source: how many RoCE ports the rdma section holds, and the host's hostname file."""
    from rocetune.probe.source import Source


    def probe(ctx, rdma, host):
        ports = [p for d in rdma["devices"] for p in d["ports"] if p.get("link_layer") == "Ethernet"]
        return {"roce_ports": len(ports), "hostname": (ctx.text("/proc/sys/kernel/hostname") or "").strip(),
                "host_seen": host["hostname"]}


    SOURCE = Source("toy", reads="/proc/sys/kernel/hostname", needs=("rdma", "host"), order=5)
''')


def drop_in(tmp_path, **modules):
    for name, text in modules.items():
        (tmp_path / f"{name}.py").write_text(text)
    if str(tmp_path) not in sources.__path__:
        sources.__path__.append(str(tmp_path))
    forget(tmp_path)


def forget(tmp_path):
    """The registry and the modules imported from tmp_path, so that the next lookup reads them anew."""
    for name in [n for n, m in sys.modules.items() if str(tmp_path) in (getattr(m, "__file__", None) or "")]:
        del sys.modules[name]
    importlib.invalidate_caches()
    sources.forget()


@pytest.fixture
def package_dir(tmp_path):
    yield tmp_path
    sources.__path__.remove(str(tmp_path))
    forget(tmp_path)
    sources.registry()


def names():
    return [s.name for s, _ in sources.registry()]


def test_a_new_module_is_a_new_source_run_after_what_it_needs(package_dir, capsys):
    drop_in(package_dir, toy=TOY)
    order = names()
    assert order.index("toy") > order.index("rdma") and order.index("toy") > order.index("host")
    assert order.index("toy") < order.index("verbs")  # its order puts it first among those ready with it
    root = root_of("dgx-h100-roce")
    f = collect_features(root)
    assert f["toy"] == {"roce_ports": 12, "hostname": "dgx-h100-01", "host_seen": "dgx-h100-01"}
    assert f["sources"]["toy"] == {"ok": True, "reason": None, "warnings": []}
    assert main(["--json", "probe", "--root", root]) == 0  # and through the verb
    assert json.loads(capsys.readouterr().out)["data"]["features"]["toy"]["roce_ports"] == 12


def test_a_source_that_raises_fails_alone(package_dir):
    drop_in(package_dir, toy=TOY.replace('ports = [', 'raise KeyError("a toy bug")\n    ports = ['))
    f = collect_features(root_of("dgx-h100-roce"))
    assert f["sources"]["toy"] == {"ok": False, "reason": "KeyError: 'a toy bug'", "warnings": [],
                                   "failed": "KeyError"}
    assert f["toy"] == {}  # a section the schema does not describe yet: empty
    assert all(st["ok"] for name, st in f["sources"].items() if name in ("host", "pci", "net", "rdma", "verbs"))


def test_an_unknown_need_is_an_error_naming_it(package_dir, capsys):
    drop_in(package_dir, toy=TOY.replace('needs=("rdma", "host")', 'needs=("rdma", "switch")'))
    with pytest.raises(SourceRegistryError, match=r"^probe sources: toy needs switch, which no source declares"):
        sources.registry()
    assert main(["probe", "--root", root_of("dgx-h100-roce")]) == 70
    err = capsys.readouterr().err
    assert "probe sources: toy needs switch, which no source declares" in err and "Traceback" not in err


def test_a_cycle_is_an_error_naming_it(package_dir, capsys):
    drop_in(package_dir, toy=TOY, toy2=TOY.replace('"toy"', '"toy2"').replace('needs=("rdma", "host")',
                                                                            'needs=("toy",)'),
            toy3=TOY.replace('"toy"', '"toy3"').replace('needs=("rdma", "host")', 'needs=("toy2",)'))
    order = names()  # a chain is fine
    assert order.index("rdma") < order.index("toy") < order.index("toy2") < order.index("toy3")
    drop_in(package_dir, toy=TOY.replace('needs=("rdma", "host")', 'needs=("rdma", "toy3")'))
    with pytest.raises(SourceRegistryError, match=r"^probe sources: a cycle of needs: toy -> toy3 -> toy2 -> toy$"):
        sources.registry()
    assert main(["--json", "probe", "--root", root_of("dgx-h100-roce")]) == 70
    envelope = json.loads(capsys.readouterr().out)
    assert "a cycle of needs: toy -> toy3 -> toy2 -> toy" in json.dumps(envelope)


def test_a_module_without_a_declaration_or_a_name_twice_is_an_error(package_dir):
    drop_in(package_dir, toy="def probe(ctx):\n    return {}\n")
    with pytest.raises(SourceRegistryError, match=r"sources\.toy declares no SOURCE = Source\(\.\.\.\) and probe"):
        sources.registry()
    (package_dir / "toy.py").unlink()
    forget(package_dir)
    drop_in(package_dir, toy_pci=TOY.replace('"toy"', '"pci"'))
    with pytest.raises(SourceRegistryError, match=r"pci is declared by rocetune\.probe\.sources\.pci and "
                                                  r"rocetune\.probe\.sources\.toy_pci"):
        sources.registry()


def test_ordered_is_by_needs_then_order_then_name():
    s = [Source("c", "x", needs=("a",), order=1), Source("a", "x", order=50), Source("b", "x", order=50),
         Source("d", "x", order=60)]
    assert [x.name for x in ordered(s)] == ["a", "c", "b", "d"]
    with pytest.raises(SourceRegistryError, match=r"a cycle of needs: a -> a"):
        ordered([Source("a", "x", needs=("a",))])


def test_the_shipped_sources_in_their_order_each_a_section_of_the_schema():
    shipped = names()
    assert shipped == ["host", "pci", "net", "gpu", "rdma", "verbs", "kernel", "declared", "qos", "lldp",
                       "nic_firmware", "phy", "nvlink"]
    sections = features_schema()["properties"]
    for source, module in sources.registry():
        assert source.name in sections, source.name
        assert source.reads and module.__name__ == f"rocetune.probe.sources.{source.name}"
