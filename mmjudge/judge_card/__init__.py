"""Which judge can I trust? A judge card: one judge run on benchmarks of judges (or verdicts it gave elsewhere
scored against them), every figure with its interval, beside what the judge costs.

- :mod:`.benchmarks`: the benchmarks a card knows and how each counts (data);
- :mod:`.measures`: accuracy, macro and prompt-level accuracy, Multi-Crit's trade-off figures, agreement with
  ties, bootstrap intervals, and what a judge run shows beside them (position bias, agreement between the two
  orders);
- :mod:`.pairs`, :mod:`.ratings`, :mod:`.rankings`: each kind of benchmark read, judged and scored (rankings: the
  normalised Levenshtein distance of a judge's ranking from the human's);
- :mod:`.verdicts`: verdict files produced elsewhere (``--verdicts``);
- :mod:`.run`: :func:`~.run.judge_card`, what ``mmjudge judge-card`` calls; :mod:`.output`: ``card.json``,
  ``card.md``, the chart.
"""
