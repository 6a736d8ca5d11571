"""Which judge can I trust? A judge card: one judge run on benchmarks of judges (or verdicts it gave elsewhere
scored against them), every figure with its interval, beside what the judge costs.

- :mod:`.benchmarks`: the benchmarks a card knows and how each counts (data);
- :mod:`.measures`: accuracy, macro and prompt-level accuracy, agreement with ties, bootstrap intervals, and
  what a judge run shows beside them (position bias, agreement between the two orders);
- :mod:`.verdicts`: verdict files produced elsewhere (``--verdicts``);
- :mod:`.run`: :func:`~.run.judge_card`, what ``mmjudge judge-card`` calls; :mod:`.output`: ``card.json``,
  ``card.md``, the chart.
"""
