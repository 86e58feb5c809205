"""Generate the SBML files of this folder with the peer tools themselves (run once; tests never run it).

    python tests/data/ecosystem/generate.py        # needs gillespy2, antimony, tellurium (see README.md)

Writes ``gillespy2_*.xml`` (GillesPy2's ``export_SBML``), ``antimony_*.xml`` + ``*.ant``
(antimony's ``getSBMLString`` of the antimony text) and ``tellurium_*.xml`` (tellurium
``loada(...).getSBML()``, i.e. libRoadRunner's SBML), then prints the package versions.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent

# ---- GillesPy2 models (mass action through GillesPy2's own `rate=`) ----------------------------


def gillespy2_models():
    import gillespy2

    def model(name, species, params, reactions):
        m = gillespy2.Model(name=name)
        m.add_species([gillespy2.Species(name=s, initial_value=v) for s, v in species])
        m.add_parameter([gillespy2.Parameter(name=p, expression=v) for p, v in params])
        m.add_reaction([gillespy2.Reaction(name=r, reactants=a, products=b, rate=k) for r, a, b, k in reactions])
        return m

    yield "michaelis_menten", model(
        "michaelis_menten", [("E", 120), ("S", 301), ("ES", 0), ("P", 0)],
        [("k1", 0.001), ("k2", 0.2), ("k3", 0.1)],
        [("bind", {"E": 1, "S": 1}, {"ES": 1}, "k1"), ("unbind", {"ES": 1}, {"E": 1, "S": 1}, "k2"),
         ("produce", {"ES": 1}, {"E": 1, "P": 1}, "k3")])
    yield "dimerisation", model(
        "dimerisation", [("P", 100), ("P2", 0)], [("k1", 0.001), ("k2", 0.01)],
        [("dimerise", {"P": 2}, {"P2": 1}, "k1"), ("split", {"P2": 1}, {"P": 2}, "k2")])
    yield "birth_death", model(
        "birth_death", [("X", 100)], [("lam", 0.1), ("mu", 0.11)],
        [("birth", {"X": 1}, {"X": 2}, "lam"), ("death", {"X": 1}, {}, "mu")])


# ---- antimony text (``->`` = reversible flag, as antimony users write it) -----------------------

ANTIMONY = {
    "michaelis_menten": """// Michaelis-Menten (seed 003 values)
model michaelis_menten
  bind: E + S -> ES; k1*E*S
  unbind: ES -> E + S; k2*ES
  produce: ES -> E + P; k3*ES
  E = 120; S = 301; ES = 0; P = 0
  k1 = 0.001; k2 = 0.2; k3 = 0.1
end
""",
    "dimerisation": """// dimerisation with a reversible law that splits into two mass-action terms
model dimerisation
  dimer: 2 P -> P2; k1*P*(P - 1)/2 - k2*P2
  P = 100; P2 = 0
  k1 = 0.001; k2 = 0.01
end
""",
    "birth_death": """model birth_death
  birth: X => 2 X; lam*X
  death: X => ; mu*X
  X = 100; lam = 0.1; mu = 0.11
end
""",
}

TELLURIUM = {
    "isomerisation": "A -> B; kf*A - kr*B; A = 50; B = 0; kf = 0.3; kr = 0.2",
}


def main() -> None:
    import antimony
    import gillespy2
    import libsbml
    import roadrunner
    import tellurium as te

    for name, m in gillespy2_models():
        path = HERE / f"gillespy2_{name}.xml"
        gillespy2.export_SBML(m, filename=str(path))
        print("wrote", path.name)
    for name, text in ANTIMONY.items():
        (HERE / f"antimony_{name}.ant").write_text(text)
        antimony.clearPreviousLoads()
        assert antimony.loadAntimonyString(text) >= 0, antimony.getLastError()
        (HERE / f"antimony_{name}.xml").write_text(antimony.getSBMLString(antimony.getMainModuleName()))
        print("wrote", f"antimony_{name}.ant/.xml")
    for name, text in TELLURIUM.items():
        (HERE / f"tellurium_{name}.xml").write_text(te.loada(text).getSBML())
        print("wrote", f"tellurium_{name}.xml")
    print(f"gillespy2 {gillespy2.__version__}, antimony {antimony.getVersionStr()}, tellurium {te.__version__}, "
          f"libroadrunner {roadrunner.__version__}, libsbml {libsbml.getLibSBMLDottedVersion()}")


if __name__ == "__main__":
    main()
