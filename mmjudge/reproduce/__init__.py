"""Rebuilding the papers' tables cell by cell against their published numbers (``mmjudge reproduce``).

Four tables ship as data (``mmjudge/reproduce/tables/``): HarmonicEval's Tables 8 and 9, VELA's Table 1 and
FLEUR's Table 1. Each cell names its benchmark, measure, published number and source; :func:`plan` says
what each needs and whether it is here (the dry run), :func:`reproduce` recomputes what can run, with
bootstrap intervals from :mod:`mmjudge.metaeval`, and says for every cell ``match``, ``outside`` or
``not_run`` (and why).

>>> from mmjudge.reproduce import plan
>>> run = plan("harmonic_eval_9")
>>> len(run.cells), sorted({c.benchmark for c in run.cells})
(10, ['foil'])
"""

from mmjudge.reproduce.output import cell_text, dry_run_text, markdown, write
from mmjudge.reproduce.results import FIELDS, CellResult, Reproduction
from mmjudge.reproduce.run import Settings, plan, reproduce
from mmjudge.reproduce.tables import Cell, Column, Row, Table, load_tables, select_cells
from mmjudge.reproduce.timing import Timing, time_metric

__all__ = [
    "FIELDS",
    "Cell",
    "CellResult",
    "Column",
    "Reproduction",
    "Row",
    "Settings",
    "Table",
    "Timing",
    "cell_text",
    "dry_run_text",
    "load_tables",
    "markdown",
    "plan",
    "reproduce",
    "select_cells",
    "time_metric",
    "write",
]
