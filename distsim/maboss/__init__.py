"""MaBoSS-style continuous-time Boolean time courses of a ``.bnd`` + ``.cfg`` model.

>>> from distsim.maboss import maboss
>>> ds = maboss("examples/pbn/maboss_calzone2010_cell_fate_28n.bnd", trajectories=2000, seed=1)

MaBoSS's semantics (Stoll et al. 2012): in state x node i flips at rate ``rate_up`` (x_i = 0) or
``rate_down`` (x_i = 1); each trajectory jumps after an exponential time of the total rate (Gillespie;
``discrete_time = 1``: after ``time_tick``) to the state with node i flipped with probability
r_i / total, until ``max_time`` or a fixed point (every rate 0). ``probability(time, state)`` is the
time each trajectory spends in a visible state within ``[k tick, (k+1) tick)``, divided by ``tick``
and averaged over trajectories; nodes with ``is_internal`` are left out of the states.
"""

from .model import Model, Settings, compile_model, load
from .csv import write_csv
from .simulate import knockout_screen, maboss, sweep

__all__ = ["Model", "Settings", "compile_model", "knockout_screen", "load", "maboss", "sweep", "write_csv"]
