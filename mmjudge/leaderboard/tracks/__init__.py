"""The board's tracks: each kind of submission is one declaration (a :class:`Track` subclass) plus one
line in :data:`TRACKS`; intake, the worker, the views, the downloads and the page read it from here.

A track says what an uploaded file must hold (:meth:`Track.read_file`), how the worker scores it
(:meth:`Track.score`), how scored submissions rank (:meth:`Track.rank`), what its tab shows
(:attr:`Track.filters`, :meth:`Track.view`, :attr:`Track.plot`), what a submission's page adds
(:meth:`Track.breakdown`) and what a participant is told (:meth:`Track.example_line`,
:meth:`Track.line_fields`, :meth:`Track.guide_steps`). Nothing else in the board names a track.

>>> track_names()
['models', 'metrics', 'arena', 'judges']
>>> get_track("models").label, [f.key for f in get_track("metrics").filters]
('Models', ['task', 'criterion'])
>>> get_track("chess")
Traceback (most recent call last):
...
ValueError: Unknown track 'chess'. Available: arena, judges, metrics, models.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from mmjudge.registry import Registry

# Page order: the first track's tab comes first. Adding a track: its module here and one line.
TRACKS = Registry(
    "track",
    {
        "models": "mmjudge.leaderboard.tracks.models:ModelsTrack",
        "metrics": "mmjudge.leaderboard.tracks.metrics:MetricsTrack",
        "arena": "mmjudge.leaderboard.tracks.arena:ArenaTrack",
        "judges": "mmjudge.leaderboard.tracks.judges:JudgesTrack",
    },
)
_ORDER = ("models", "metrics", "arena", "judges")
DEFAULT_WEIGHT = 1.0
_INSTANCES: dict[str, Track] = {}


def track_names() -> list[str]:
    """The tracks in page order."""
    return [n for n in _ORDER if n in TRACKS] + [n for n in TRACKS.names() if n not in _ORDER]


def get_track(name: str) -> Track:
    """The track called ``name`` (one instance per process); an unknown name is one ``ValueError`` line."""
    key = TRACKS.key(str(name))
    if key not in _INSTANCES:
        _INSTANCES[key] = TRACKS.get(key)()
    return _INSTANCES[key]


def all_tracks() -> list[Track]:
    return [get_track(n) for n in track_names()]


@dataclass(frozen=True)
class Filter:
    """One control above a track's table: ``key`` is the name :meth:`Track.rank` and :meth:`Track.view`
    read it under; ``kind`` is ``"dropdown"`` or ``"radio"``."""

    key: str
    label: str
    choices: tuple[str, ...]
    value: str
    kind: str = "dropdown"


@dataclass(frozen=True)
class Plot:
    """A line plot under a track's table (x, y, colour columns of the frame :meth:`Track.view` returns);
    ``colours`` fixes each colour value's colour."""

    x: str
    y: str
    color: str
    title: str
    y_lim: tuple[float, float]
    sort: tuple[str, ...]
    tooltip: tuple[str, ...]
    colours: tuple[tuple[str, str], ...] = ()

    def colour_map(self) -> dict[str, str]:
        return dict(self.colours)

    def legend(self, data: Any) -> list[str]:
        """The colour values that have a line in ``data`` (a value whose every ``y`` is missing has none):
        what the legend lists.

        >>> Plot("x", "y", "c", "t", (0, 1), (), (), (("a", "#111"), ("b", "#222"))).legend(
        ...     {"c": ["a", "b"], "y": [None, 2.0]})
        ['b']
        """
        drawn = {c for c, y in zip(data[self.color], data[self.y]) if y is not None and y == y}
        return [value for value, _ in self.colours if value in drawn]


@dataclass
class TrackView:
    """What a track's tab shows: the table, its caption (escaped Markdown) and the plot's data (or None)."""

    table: Any
    caption: str
    plot: Any = None


@dataclass
class ScoringJob:
    """One claimed submission, as the worker hands it to :meth:`Track.score`.

    Attributes:
        benchmark: the submission's benchmark.
        payload: what :meth:`Track.read_file` returned for the stored file.
        settings: the board's settings.
        data_dir: the board's data dir (the judge cache lives there).
        check: raises when the job is no longer this worker's (call it between units of work).
        resources: kept by the worker across its jobs (a loaded metric, a judge).
        work_dir: the job's own folder (:mod:`mmjudge.leaderboard.job_folder`), locked by this worker while
            it scores: what a track writes there survives a killed worker (the next one resumes from it),
            and it is removed once the job is DONE or FAILED. None outside a worker.
    """

    benchmark: Any
    payload: Any
    settings: Mapping[str, Any]
    data_dir: Path
    check: Callable[[], None]
    resources: dict = field(default_factory=dict)
    work_dir: Path | None = None


@dataclass
class Scored:
    """A scored submission: the signature it ranks under, its summary, and its per-item rows."""

    signature: str
    summary: dict
    rows: list


class Track:
    """One kind of submission. Subclasses set the class attributes and implement the methods."""

    name: ClassVar[str]
    label: ClassVar[str]  # the tab's title
    about: ClassVar[str] = ""  # what the track asks for and ranks (Markdown, the page's introduction)
    headline: ClassVar[str]  # the key of a ranked row's figure (``/status`` reports it)
    board_name_suffix: ClassVar[str] = ""  # a benchmark's board name: the loader's name + this
    filters: ClassVar[tuple[Filter, ...]] = ()
    plot: ClassVar[Plot | None] = None
    pinned_columns: ClassVar[int] = 2
    # Relative widths of the table's columns (others: DEFAULT_WEIGHT), so that every column, the
    # identifying ones (note, submitter, id) included, fits the page without scrolling sideways.
    column_weights: ClassVar[dict[str, float]] = {}
    # The legacy ``/<name>_table`` API endpoint: its parameters, in order (keys of filters or "benchmark").
    table_api: ClassVar[tuple[str, ...]] = ("benchmark",)

    # -------------------------------------------------------------------------- intake and worker
    def read_file(self, data: bytes, bench: Any, max_bytes: int | None) -> Any:
        """The checked content of an uploaded file (``SubmissionError`` with one line when it is wrong)."""
        raise NotImplementedError

    def score(self, job: ScoringJob) -> Scored:
        """Score one submission (the worker calls ``job.check()`` between units of work)."""
        raise NotImplementedError

    def load_benchmark(self, loader: str, options: dict, board: str) -> Any:
        """A board benchmark of this track from one of the engine's dataset loaders (``settings.json``)."""
        raise NotImplementedError

    # ---------------------------------------------------------------------------------- the board
    def column_widths(self, columns: Sequence[str]) -> list[str]:
        """Each column's share of the table's width, in percent.

        >>> class T(Track):
        ...     column_weights = {"id": 2.0}
        >>> T().column_widths(["name", "id", "x"])
        ['25.0%', '50.0%', '25.0%']
        """
        weights = [float(self.column_weights.get(c, DEFAULT_WEIGHT)) for c in columns]
        total = sum(weights) or 1.0
        return [f"{100 * w / total:.1f}%" for w in weights]

    def defaults(self) -> dict[str, str]:
        """Every filter at its default value."""
        return {f.key: f.value for f in self.filters}

    def rank(self, entries: Sequence[Any], filters: Mapping[str, str], settings: Mapping[str, Any]) -> list[dict]:
        """Ranked tables (one per benchmark and signature group) of scored submissions."""
        raise NotImplementedError

    def view(self, tables: list[dict], index: int, filters: Mapping[str, str], context: ViewContext) -> TrackView:
        """The tab's table, caption and plot for ``tables[index]`` (``tables`` empty: nothing scored yet)."""
        raise NotImplementedError

    def breakdown(self, summary: dict) -> tuple[list[str], list[dict], list[str]]:
        """A submission page's part: (Markdown lines, breakdown rows, their columns)."""
        raise NotImplementedError

    # -------------------------------------------------------------------------------- downloads
    def example_line(self, bench: Any, item: dict) -> dict:
        """One line of the example submission, for ``item`` of :meth:`Benchmark.public_items`."""
        raise NotImplementedError

    def line_fields(self, bench: Any) -> dict[str, str]:
        """Each field of a submission line and what it holds (the ``/benchmarks`` API)."""
        raise NotImplementedError

    def guide_steps(self, bench: Any, settings: Mapping[str, Any], words: GuideWords) -> list[str]:
        """The numbered steps of the "How to take part" guide (Markdown lines)."""
        raise NotImplementedError


@dataclass(frozen=True)
class GuideWords:
    """What every track's guide repeats: an example line (JSON), the upload limit in words, the benchmark's
    name as the page shows it, and ``command(kind, file)``, a terminal command line (``download`` or
    ``submit``) with the board's address."""

    example: str
    size: str
    name: str
    command: Callable[[str, str], str]


@dataclass
class ViewContext:
    """What a view may read besides its tables: every scored entry of the track and the settings."""

    entries: Sequence[Any]
    settings: Mapping[str, Any]
