"""Write the minimised SBML reproducers of this folder (run once; the tests only read the files).

    python tests/data/bad_sbml/make_reproducers.py [OUT_DIR]      # default: this folder

Each is DSMTS case 00001 (birth-death) with one change found by ``fuzz.py``; see README.md for what
each did to the reader before the fix.
"""

from __future__ import annotations

import gzip
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fuzz  # noqa: E402

BASE = (HERE.parents[1] / "data" / "dsmts" / "00001" / "00001-sbml-l3v1.xml").read_bytes()
CI = re.search(rb"<ci>\s*Lambda\s*</ci>", BASE)


def nest(n: int) -> bytes:
    head = b"<apply><plus/><cn> 1 </cn>"
    return BASE[:CI.start()] + head * n + b"<ci> Lambda </ci>" + b"</apply>" * n + BASE[CI.end():]


def main(out: Path) -> None:
    out.mkdir(exist_ok=True)
    (out / "deep_apply_20000.xml.gz").write_bytes(gzip.compress(nest(20000), mtime=0))
    (out / "deep_apply_600.xml").write_bytes(nest(600))
    long_sum = BASE[:CI.start()] + b"<apply><plus/>" + b"<ci> Lambda </ci>" * 3000 + b"</apply>" + BASE[CI.end():]
    (out / "long_sum_3000.xml.gz").write_bytes(gzip.compress(long_sum, mtime=0))
    wide = b"<apply><plus/>" + b"<ci> Lambda </ci>" * 100000 + b"</apply>"
    nested = (BASE[:CI.start()] + b"<apply><plus/>" + wide + b"<ci> Lambda </ci>" * 100000 + b"</apply>"
              + BASE[CI.end():])
    (out / "wide_sum_200000.xml.gz").write_bytes(gzip.compress(nested, mtime=0))
    k = BASE.find(b"<listOf")
    exploding = BASE[:k] + fuzz.FUNCS[1] + BASE[k:]
    exploding = re.sub(rb"<ci>\s*Lambda\s*</ci>", b"<apply><ci>f40</ci><ci> Lambda </ci></apply>", exploding, count=1)
    (out / "exploding_functions.xml").write_bytes(exploding)
    (out / "doctype_entities.xml").write_bytes(fuzz.doctype(None, BASE))  # type: ignore[arg-type]
    (out / "unknown_encoding.xml").write_bytes(BASE.replace(b'encoding="UTF-8"', b'encoding="UTFC8"', 1))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
