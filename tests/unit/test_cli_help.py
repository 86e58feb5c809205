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


def test_mcmc_rates_defaults_are_the_python_defaults(capsys):
    """`distsim mcmc rates` and `mcmc.infer_rates` share one home for their defaults (mcmc.sampler)."""
    import inspect

    from distsim.cli.common import LazyDefault
    from distsim.mcmc import sampler

    args = build_parser().parse_args(["mcmc", "rates", "m.rxn", "--data", "d.csv"])
    python = inspect.signature(sampler.infer_rates).parameters
    assert LazyDefault.resolve(args.iterations) == python["iterations"].default == sampler.ITERATIONS
    assert args.burn_in is None and python["burn_in"].default is None  # both: a fifth of the iterations
    assert args.chains == python["chains"].default and args.thin == python["thin"].default
    assert args.seed == python["seed"].default
    with pytest.raises(SystemExit):
        main(["mcmc", "rates", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"(default: {sampler.ITERATIONS:,}," in text


def test_the_mcmc_burn_in_defaults_to_a_fifth_of_the_iterations():
    from distsim.mcmc.sampler import default_burn_in

    assert default_burn_in(50_000) == 10_000 and default_burn_in(500) == 100 and default_burn_in(4) == 0


def test_the_default_burn_in_is_a_fifth_of_the_iterations_run(tmp_path):
    import warnings

    import distsim.mcmc as mcmc
    import distsim.ssa as ssa

    (tmp_path / "death.rxn").write_text("Death: X -> 0 ; mu = 0.1\ninit: X = 20\n")
    (tmp_path / "obs.csv").write_text("time,X\n0,20\n2,16\n4,13\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 20 iterations: the convergence warning
        ds = mcmc.infer_rates(ssa.load(tmp_path / "death.rxn"), tmp_path / "obs.csv", prior={"mu": (2.0, 10.0)},
                              iterations=20, chains=1, seed=1, backend="cpu")
    assert ds.attrs["burn_in"] == 4 and ds.sizes["draw"] == 16
