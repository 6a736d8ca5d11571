"""Head-to-head runs: many systems ranked from pairs of their texts. The pairwise *metric* — one pair judged
in both orders, per criterion — belongs to HarmonicEval (:mod:`mmjudge.metrics.harmonic_eval.pairwise`, with
:mod:`~mmjudge.metrics.harmonic_eval.preference` and :mod:`~mmjudge.metrics.harmonic_eval.pair_prompts`);
this package runs it over files and systems:

- :mod:`.sources`: two files of system outputs read as one stream of pairs (``mmjudge compare --a --b``);
- :mod:`.summary`: what a run of comparisons found, per criterion;
- :mod:`.bradley_terry`, :mod:`.schedule`, :mod:`.arena`: strengths with bootstrap intervals, the adaptive
  schedule of which pairs to judge, and the resumable run that ranks many systems.
"""
