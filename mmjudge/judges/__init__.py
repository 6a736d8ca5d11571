"""Judge backends behind one interface (:class:`mmjudge.judges.base.Judge`; the request and result values are
:mod:`mmjudge.judges.requests`), registered by name in :data:`JUDGES`.

>>> from mmjudge.judges import available_judges
>>> "transformers" in available_judges() and "dummy" in available_judges()
True
"""

from __future__ import annotations

from typing import Any

from mmjudge.judges.base import Judge
from mmjudge.registry import Registry

__all__ = ["JUDGES", "available_judges", "load_judge"]


# Judge backends: name -> class. A new backend is one file in this package and one line here.
JUDGES = Registry(
    "judge backend",
    {
        "dummy": "mmjudge.judges.dummy:DummyJudge",
        "openai": "mmjudge.judges.openai.judge:OpenAIJudge",
        "transformers": "mmjudge.judges.transformers:TransformersJudge",
    },
)


def available_judges() -> list[str]:
    """Names accepted by :func:`load_judge`."""
    return JUDGES.names()


def load_judge(name: str, **kwargs: Any) -> Judge:
    """The judge backend ``name`` (see :data:`JUDGES`) built with ``kwargs``. Under ``torchrun`` /
    ``accelerate launch`` it comes wrapped in :class:`~mmjudge.judges.data_parallel.DataParallelJudge`, so
    each call's requests are split between the processes (:mod:`mmjudge.distributed`)."""
    from mmjudge.judges.data_parallel import parallel

    return parallel(JUDGES.get(name)(**kwargs))
