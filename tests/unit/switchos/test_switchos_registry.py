"""A switch OS is one module of rocetune.switchos: adding one (here a toy OS written into a
directory the package searches) is enough for `qos render --os`, its choices, `qos check`'s
recognition and reading, and the names every error lists."""

import json
import textwrap

import pytest

from rocetune import switchos
from rocetune.cli.main import main

TOY = textwrap.dedent('''
    """A toy switch OS: `toy prio P lossless|lossy` lines."""
    from rocetune.model.switch_qos import SwitchQos, SwitchReading
    from rocetune.switchos.base import Choice, Rendered, SwitchOs, refuse


    class Toy(SwitchOs):
        name = "toyos"
        title = "ToyOS"
        suffix = ".toy"
        order = 99
        reads = "a ToyOS `show qos`"
        choices = (Choice("flavour", ("plain", "fancy"), "for ToyOS, the flavour"),)

        def looks_like(self, text):
            return text.startswith("toy ")

        def parse(self, text, source):
            pfc, dscp = [], {}
            for line in text.splitlines():
                words = line.split()
                if words[:2] == ["toy", "prio"] and words[3] == "lossless":
                    pfc.append(int(words[2]))
                if words[:2] == ["toy", "dscp"]:
                    dscp[int(words[2])] = int(words[3])
            g = SwitchReading(ports=["port1"], trust="dscp", dscp_to_priority=dscp, pfc=tuple(pfc))
            return SwitchQos(kind=self.name, source=source, groups=[g])

        def render(self, intent, ports, chosen):
            if self.choice(chosen, "flavour") is None:
                raise refuse("ToyOS: no flavour", "name it: --flavour plain|fancy")
            lines = [f"toy dscp {c.dscp} {c.priority}" for c in intent.classes]
            lines += [f"toy prio {p} lossless" for p in intent.lossless]
            return Rendered(text="\\n".join(lines) + "\\n", assumes=["a toy"], bound="everything")


    OS = Toy()
''')


@pytest.fixture
def toy(tmp_path):
    (tmp_path / "toyos.py").write_text(TOY)
    switchos.__path__.append(str(tmp_path))
    switchos.forget()
    yield tmp_path
    switchos.__path__.remove(str(tmp_path))
    switchos.forget()
    switchos.registry()


def test_a_new_module_is_a_new_switch_os(toy, capsys):
    assert switchos.names()[-1] == "toyos" and {"sonic", "nvue", "eos"} <= set(switchos.names())
    out = toy / "leaf.toy"
    assert main(["--json", "qos", "render", "--os", "toyos", "--flavour", "fancy", "-o", str(out)]) == 0
    envelope = json.loads(capsys.readouterr().out)
    assert envelope["data"]["suffix"] == ".toy" and envelope["data"]["assumes"] == ["a toy"]
    assert out.read_text() == "toy dscp 26 3\ntoy dscp 48 6\ntoy prio 3 lossless\n"
    assert main(["--json", "qos", "check", str(out)]) == 0  # recognised as ToyOS: PFC and DSCPs agree
    envelope = json.loads(capsys.readouterr().out)
    assert envelope["data"]["kind"] == "toyos"
    assert [f["id"] for f in envelope["data"]["findings"] if f["severity"] == "error"] == []


def test_its_choices_and_refusals_come_with_it(toy, capsys):
    assert main(["qos", "render", "--os", "toyos"]) == 2
    assert "ToyOS: no flavour" in capsys.readouterr().err
    assert main(["qos", "render", "--os", "sonic", "--flavour", "plain"]) == 2
    assert "--flavour is a choice of toyos, not of sonic" in capsys.readouterr().err
    assert main(["qos", "render", "--os", "vyos"]) == 2
    assert "not one of sonic, nvue, eos, nxos, toyos" in capsys.readouterr().err


def test_the_os_list_is_written_once():
    """No other module of rocetune lists the switch OSes: the registry is the one place."""
    import pathlib

    import rocetune

    root = pathlib.Path(rocetune.__file__).parent
    listing = [p for p in root.rglob("*.py") if "switchos" not in p.parts
               and ('"sonic", "nvue", "eos"' in p.read_text() or "sonic|nvue|eos" in p.read_text())]
    assert listing == []
