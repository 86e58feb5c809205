"""Counter-based random numbers shared by every workload (Philox4x32-10, CPU == GPU bit for bit)."""

from .derive import derive_seeds
from .philox import MAX_SEED, below, check_seed, check_seeds, philox, philox4x32_10, u01_f32, u01_f64, uniform_f32, uniform_f64

__all__ = ["MAX_SEED", "below", "derive_seeds", "check_seed", "check_seeds", "philox", "philox4x32_10", "u01_f32", "u01_f64", "uniform_f32", "uniform_f64"]
