"""Every option of every command that takes a value and may be left out shows its default in --help."""

from __future__ import annotations

import argparse

import pytest

from distsim.cli import build_parser, main


def _parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    out, todo = [], [("distsim", build_parser())]
    while todo:
        name, p = todo.pop()
        out.append((name, p))
        for a in p._actions:  # noqa: SLF001
            if isinstance(a, argparse._SubParsersAction):  # noqa: SLF001
                todo += [(f"{name} {k}", sub) for k, sub in a.choices.items()]
    return out


def test_every_default_is_shown():
    missing = []
    for name, p in _parsers():
        fmt = p.formatter_class(prog=name)
        for a in p._actions:  # noqa: SLF001
            if (a.option_strings and not a.required and a.nargs != 0 and a.default is not argparse.SUPPRESS
                    and not isinstance(a, (argparse._HelpAction, argparse._VersionAction))):  # noqa: SLF001
                if "default" not in fmt._get_help_string(a):  # noqa: SLF001
                    missing.append(f"{name} {a.option_strings[0]}")
    assert not missing, missing


@pytest.mark.parametrize("command", [["ssa", "simulate"], ["pbn", "steady-state"], ["grn", "infer"], ["mcmc", "rates"]])
def test_seed_zero_is_shown(command, capsys):
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: 0)" in text.rsplit("--seed SEED", 1)[1].split("--", 1)[0]
