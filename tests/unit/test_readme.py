"""Every command and Python snippet of the README runs as written (from a copy of the examples, in
a scratch folder), except what the README marks GPU-sized. Shell lines that set up the checkout
(`make`, `.venv` activation) are the README's set-up and are tested by CI itself."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```(bash|python)\n(.*?)```", re.S)


def _blocks(lang: str) -> list[str]:
    return [body for kind, body in BLOCK.findall((ROOT / "README.md").read_text()) if kind == lang]


def _commands() -> list[str]:
    out = []
    for body in _blocks("bash"):
        joined = body.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.split(" #", 1)[0].strip() if not line.strip().startswith("#") else ""
            if line.startswith("distsim "):
                out.append(line)
    return out


def _workdir(tmp_path: Path) -> Path:
    for name in ("examples", "tests"):
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


def _env() -> dict[str, str]:
    env = dict(os.environ, DISTSIM_DISABLE_GPU="1")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.mark.parametrize("command", _commands(), ids=lambda c: " ".join(shlex.split(c)[1:3]))
def test_readme_command(command, tmp_path):
    done = subprocess.run(shlex.split(command), cwd=_workdir(tmp_path), env=_env(), capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]


@pytest.mark.parametrize("k", range(len(_blocks("python"))))
def test_readme_python_snippet(k, tmp_path):
    script = _workdir(tmp_path) / f"snippet{k}.py"
    script.write_text(_blocks("python")[k])
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
