"""Synthetic GRN problems with a planted solution (for benchmarks of 256-1024 genes)."""

from __future__ import annotations

import numpy as np

from .problem import Problem


def planted(n: int, *, in_degree: int = 3, repress_fraction: float = 0.25, changes: int = 8, iterations: int = 5,
            seed: int = 0, return_solution: bool = False) -> Problem | tuple[Problem, np.ndarray, np.ndarray]:
    """A random signed network of ``n`` genes (``in_degree`` random sources per gene, a fraction
    ``repress_fraction`` of them repressors) with random rules is simulated from a random initial
    state; its state after ``iterations`` steps is the target. The *reference* network given to the
    GA is the planted one with ``changes`` links altered, so the planted network and rules reach
    fitness (1 - lambda) * changes / n^2 (or better). ``return_solution`` also returns them."""
    if n < 2 or not 1 <= in_degree <= n:
        raise ValueError(f"need n >= 2 and 1 <= in_degree <= n, got n={n}, in_degree={in_degree}")
    rng = np.random.default_rng(seed)
    links = np.zeros((n, n), np.int8)
    for j in range(n):
        src = rng.choice(n, size=in_degree, replace=False)
        links[j, src] = np.where(rng.random(in_degree) < repress_fraction, -1, 1)
    rules = rng.integers(0, 4, size=n).astype(np.int8)
    initial = (rng.random(n) < 0.5).astype(np.uint8)
    genes = tuple(f"g{i:0{len(str(n - 1))}d}" for i in range(n))
    sim = Problem(genes, links, initial, initial, iterations=iterations, name=f"planted{n}")
    target = sim.simulate(links, rules)[-1]
    ref = links.copy()
    for k in rng.choice(n * n, size=min(changes, n * n), replace=False):
        j, i = divmod(int(k), n)
        ref[j, i] = rng.choice([v for v in (-1, 0, 1) if v != ref[j, i]])
    prob = Problem(genes, ref, initial, target, iterations=iterations, name=f"planted{n}")
    return (prob, links, rules) if return_solution else prob
