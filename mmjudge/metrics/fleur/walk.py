"""The teacher-forced walk along the FLEUR score a judge would print (``0.xy`` or ``1.0``).

Each step takes the judge's greedy token and distribution at the next position and either extends the
forced prefix (the judge prints what a score needs) or stops (``deviated``: the metric then falls back
to generation).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mmjudge.judges.requests import RatingResult
from mmjudge.metrics.fleur.smoothing import DIGITS, smooth_decimals, smooth_one

# What a judge printing a FLEUR score is expected to print next at each stage of the walk.
EXPECTED_NEXT = {"lead": "0.", "dot": "."}


@dataclass
class Walk:
    """One sample's teacher-forced walk along the score the judge would print."""

    prefix: str = ""  # assistant text teacher-forced so far
    stage: str = "lead"  # lead -> dot -> d1 -> d2 -> done | deviated
    spaced: bool = False  # a whitespace token was taken before the leading digit
    lead: str = ""
    lead_raw: list = field(default_factory=list)
    d1: str = ""
    d1_raw: list = field(default_factory=list)
    d2: str = ""
    d2_raw: list | None = None

    def step(self, result: RatingResult) -> None:
        greedy = result.greedy
        if self.stage == "lead":
            if not greedy.strip() and not self.spaced:  # e.g. Llama's lone "▁" before a digit
                self.prefix, self.spaced = self.prefix + " ", True
            elif greedy.strip() in ("0", "1"):
                self.prefix, self.lead, self.lead_raw, self.stage = (
                    self.prefix + greedy,
                    greedy.strip(),
                    result.raw,
                    "dot",
                )
            else:
                self.stage = "deviated"
        elif self.stage == "dot":
            self.prefix, self.stage = (self.prefix + ".", "d1") if greedy == "." else (self.prefix, "deviated")
        elif self.stage == "d1":
            ok = greedy in DIGITS and (self.lead == "0" or greedy == "0")
            if not ok:
                self.stage = "deviated"
            elif self.lead == "1":
                self.d1, self.stage = greedy, "done"
            else:
                self.prefix, self.d1, self.d1_raw, self.stage = self.prefix + greedy, greedy, result.raw, "d2"
        elif self.stage == "d2":
            if greedy in DIGITS:
                self.d2, self.d2_raw = greedy, result.raw
            self.stage = "done"

    def score(self) -> float:
        return smooth_one(self.lead_raw) if self.lead == "1" else smooth_decimals(self.d1_raw, self.d2_raw)

    def printed(self) -> str:
        return f"{self.lead}.{self.d1}{self.d2}"
