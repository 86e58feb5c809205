"""The one model-format table: selection by name, extension and content; errors; a new format."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from distsim.errors import ModelError
from distsim.models.formats import registry
from distsim.models.formats.base import Format
from distsim.models.pbn import PBN
from distsim.models.reactions import ReactionNetwork

ROOT = Path(__file__).resolve().parents[2]
PBN_EX = ROOT / "examples" / "pbn"
SSA_EX = ROOT / "examples" / "ssa"
SBML = ROOT / "tests" / "data" / "dsmts" / "00001" / "00001-sbml-l3v1.xml"


def test_table_lists_every_format_once():
    names = [f.name for f in registry.FORMATS]
    assert names == ["sbml", "antimony", "text", "sbml-qual", "maboss", "assa", "bnmpy", "boolnet"]
    spellings = [n for f in registry.FORMATS for n in (f.name, *f.aliases)]
    assert len(spellings) == len(set(spellings))
    assert {f.kind for f in registry.FORMATS} == {"boolean", "reaction"}
    assert [f.name for f in registry.formats("reaction")] == ["sbml", "antimony", "text"]


@pytest.mark.parametrize("src,fmt,cls", [
    (PBN_EX / "bang_example_network.pbn", "assa", PBN),
    (PBN_EX / "bbm023_faure2006_mammalian_cell_cycle_10n.bnet", "boolnet", PBN),
    (PBN_EX / "bnmpy_shmulevich2002_examplePBN_3n.txt", "bnmpy", PBN),
    (SSA_EX / "michaelis_menten.rxn", "text", ReactionNetwork),
    (SBML, "sbml", ReactionNetwork),
])
def test_any_kind_by_extension_and_by_content(tmp_path, src, fmt, cls):
    assert registry.detect(src).name == fmt
    assert isinstance(registry.load(src), cls)
    unnamed = tmp_path / "model.data"  # no extension that any format claims: sniffed
    shutil.copyfile(src, unnamed)
    assert registry.detect(unnamed).name == fmt
    model = registry.load(unnamed)
    assert isinstance(model, cls) and model.digest() == registry.load(src).digest()
    assert registry.load(unnamed, format=fmt.upper()).digest() == model.digest()


def test_kind_restricts_the_choice(tmp_path):
    rxn = SSA_EX / "michaelis_menten.rxn"
    with pytest.raises(ModelError, match=r"michaelis_menten\.rxn:\d+: cannot tell the Boolean-network format"):
        registry.load(rxn, kind="boolean")
    with pytest.raises(ModelError, match=r"michaelis_menten\.rxn: unknown Boolean-network format 'text'"):
        registry.load(rxn, kind="boolean", format="text")
    with pytest.raises(ValueError, match="unknown model kind"):
        registry.formats("petri")


def test_nothing_matches_names_the_file_and_line(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("# a comment\n\nhello world\n")
    with pytest.raises(ModelError) as info:
        registry.load(f)
    assert info.value.file == str(f) and info.value.line == 3
    assert "cannot tell the model format" in str(info.value) and "pass format=" in str(info.value)
    empty = tmp_path / "empty.txt"
    empty.write_text("# only a comment\n")
    with pytest.raises(ModelError, match=r"empty\.txt:1: the file is empty"):
        registry.load(empty)
    with pytest.raises(FileNotFoundError):
        registry.load(tmp_path / "missing.pbn")
    with pytest.raises(IsADirectoryError):
        registry.load(tmp_path)


def test_options_go_to_the_readers_that_take_them():
    bnet = PBN_EX / "bbm023_faure2006_mammalian_cell_cycle_10n.bnet"
    assert registry.load(bnet, inputs="zero").n == registry.load(bnet).n
    registry.load(PBN_EX / "bang_example_network.pbn", inputs="zero")  # ASSA has no free inputs: ignored
    with pytest.raises(TypeError, match="unknown option 'inptus'"):
        registry.load(bnet, inptus="zero")
    with pytest.raises(TypeError, match="unknown option 'inputs'"):
        registry.load(SBML, kind="reaction", inputs="zero")


def test_write_by_extension(tmp_path):
    net = registry.load(PBN_EX / "bang_example_network.pbn")
    registry.write(net, tmp_path / "copy.pbn")
    assert registry.load(tmp_path / "copy.pbn").digest() == net.digest()
    rxn = registry.load(SSA_EX / "michaelis_menten.rxn")
    registry.write(rxn, tmp_path / "copy.txt", format="rxn")
    assert registry.load(tmp_path / "copy.txt").digest() == rxn.digest()
    with pytest.raises(ValueError, match="does not write"):
        registry.write(rxn, tmp_path / "x.xml")
    with pytest.raises(ValueError, match="cannot tell the format to write"):
        registry.write(net, tmp_path / "x.bnet2")


def test_a_new_format_is_one_record_and_one_table_line(tmp_path, monkeypatch):
    """A toy format ('edges' lines 'A -| B') plugs in with one Format record; nothing else changes."""
    from distsim.models.boolean import Not, Var

    def sniff(path, head):
        return head.startswith(b"%toy")

    def read(path):
        names = Path(path).read_text().split()[1:]
        return PBN.create(names, [[Not(Var(i))] for i in range(len(names))], name="toy")

    toy = Format("toy", "boolean", (".toy",), sniff, read, "'%toy' first")
    monkeypatch.setattr(registry, "FORMATS", registry.FORMATS + (toy,))
    f = tmp_path / "net.dat"
    f.write_text("%toy A B\n")
    assert registry.detect(f).name == "toy"
    assert registry.load(f, kind="boolean").nodes == ("A", "B")
    assert registry.load(f, format="toy").name == "toy"
    with pytest.raises(ValueError, match="kind must be one of"):
        dataclasses.replace(toy, kind="petri")
