"""Synthetic reaction networks used to benchmark large-model SSA (Komarov & D'Souza 2012, seed 004)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..models.reactions import Reaction, ReactionNetwork


def cyclic_chain(n: int, rate: float = 1.0, initial: int = 1) -> ReactionNetwork:
    """S_i -> S_{i+1 mod n} at ``rate``; every species starts at ``initial``. The total propensity is
    constant (n * rate * initial), so firings per realization are Poisson(n rate initial t_end)."""
    species = [f"S{i}" for i in range(n)]
    reactions = [Reaction(((i, 1),), (((i + 1) % n, 1),), rate, name=f"R{i}") for i in range(n)]
    return ReactionNetwork.create(species, [initial] * n, reactions, name=f"cyclic_chain_{n}")


def colloidal_aggregation(n: int, k_agg: float = 1e-3, k_frag: float = 1e-2, monomers: int | None = None
                          ) -> ReactionNetwork:
    """Clusters S_1..S_n: S_i + S_j -> S_{i+j} (k_agg) and S_{i+j} -> S_i + S_j (k_frag), i <= j, i+j <= n;
    starts with ``monomers`` (default 10 n) copies of S_1. Densely connected: about n^2/2 reactions."""
    species = [f"S{i}" for i in range(1, n + 1)]
    reactions = []
    for i in range(1, n + 1):
        for j in range(i, n + 1 - i):
            reactants = ((i - 1, 2),) if i == j else ((i - 1, 1), (j - 1, 1))
            reactions.append(Reaction(reactants, ((i + j - 1, 1),), k_agg, name=f"agg_{i}_{j}"))
            reactions.append(Reaction(((i + j - 1, 1),), reactants, k_frag, name=f"frag_{i}_{j}"))
    x0 = [0] * n
    x0[0] = 10 * n if monomers is None else monomers
    return ReactionNetwork.create(species, x0, reactions, name=f"colloidal_aggregation_{n}")


def random_network(n: int, reactions_per_species: int = 2, seed: int = 0, initial: int = 100, *,
                   reactions: int | None = None, named_rates: bool = False) -> ReactionNetwork:
    """A random sparse network on n species: conversions A -> B and exchanges A + B -> C + D (molecule
    numbers conserved, so counts stay bounded), random rates in [0.5, 1.5] (per molecule pair / initial).
    ``reactions``: their number (default ``reactions_per_species * n``); ``named_rates``: reaction k's
    rate is the parameter ``k<k>`` (so a one-at-a-time sensitivity can scale every rate constant)."""
    rng = np.random.default_rng(seed)
    species = [f"S{i}" for i in range(n)]
    out, params = [], {}
    for k in range(reactions_per_species * n if reactions is None else reactions):
        if rng.random() < 0.5:
            a, b = rng.choice(n, 2, replace=False)
            sides, rate = (((int(a), 1),), ((int(b), 1),)), float(rng.uniform(0.5, 1.5))
        else:
            a, b, c, d = rng.choice(n, 4, replace=False)
            sides = (((int(a), 1), (int(b), 1)), ((int(c), 1), (int(d), 1)))
            rate = float(rng.uniform(0.5, 1.5)) / initial
        if named_rates:
            params[f"k{k}"] = rate
        out.append(Reaction(*sides, f"k{k}" if named_rates else rate, name=f"R{k}"))
    return ReactionNetwork.create(species, [initial] * n, out, params, name=f"random_{n}")


def yeast_sized_network(seed: int = 1) -> ReactionNetwork:
    """A random mass-action network the size of seed 001's motivating model (the yeast iron-homeostasis
    model of Achcar et al. 2011: 641 species, 1,029 reactions), one named rate constant per reaction
    and 10 molecules of each species (about 1e4 firings per unit time): the subject of the
    one-at-a-time sensitivity benchmark (benchmarks/sweep_batched.py)."""
    net = random_network(641, seed=seed, initial=10, reactions=1029, named_rates=True)
    return replace(net, name="yeast_sized_random_641x1029")
