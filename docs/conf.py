"""Sphinx configuration of distsim's API reference (built offline: `sphinx-build -b html docs docs/_build`)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import distsim  # noqa: E402

project = "distsim"
release = version = distsim.__version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_typehints = "description"
autodoc_member_order = "bysource"
autodoc_mock_imports = ["cupy", "dask_cuda", "pynvml"]
html_theme = "alabaster"
exclude_patterns = ["_build"]
nitpicky = False
