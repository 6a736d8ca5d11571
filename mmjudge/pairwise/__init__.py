"""Head-to-head judging: two texts about the same input, which is better, per criterion — and many systems
ranked from such pairs.

- :mod:`.combine`: both orders of a comparison made one preference (exactly antisymmetric), the position
  bias, the certainty-weighted overall preference (pure numpy);
- :mod:`.prompts`: the pairwise prompt set (``mmjudge/prompts/harmonic_eval_pairwise.toml``);
- :mod:`.metric`: :class:`PairwiseHarmonicEval`, what ``HarmonicEval.compare`` runs;
- :mod:`.sources`: two files of system outputs read as one stream of pairs (``mmjudge compare --a --b``);
- :mod:`.bradley_terry`, :mod:`.schedule`, :mod:`.arena`: strengths with bootstrap intervals, the adaptive
  schedule of which pairs to judge, and the resumable run that ranks many systems.
"""

from mmjudge.pairwise.combine import Combined, combine_orders, verdict
from mmjudge.pairwise.metric import PairwiseHarmonicEval
from mmjudge.pairwise.prompts import PairPrompts, load_pair_prompts

__all__ = ["Combined", "PairPrompts", "PairwiseHarmonicEval", "combine_orders", "load_pair_prompts", "verdict"]
