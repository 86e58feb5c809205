"""CITATION.cff: valid YAML with the fields of the Citation File Format 1.2.0, the package's name,
version and license, and the seed papers the workloads implement as references."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

import distsim

ROOT = Path(__file__).resolve().parents[2]


def test_citation_file_matches_the_package():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert {"message", "title", "authors"} <= set(cff)
    assert cff["version"] == distsim.__version__
    assert cff["license"] == project["license"]
    assert cff["title"].startswith("distsim")
    refs = cff["references"]
    assert {r["authors"][0]["family-names"] for r in refs} == {"Mizera", "Neri", "García-Calvo", "Niemi", "Komarov"}
    for r in refs:
        assert r["type"] and r["title"] and isinstance(r["year"], int)
        assert all("family-names" in a for a in r["authors"])
