"""The parts of the local ``transformers`` judge (:mod:`mmjudge.judges.transformers`), one job each:

* :mod:`~mmjudge.judges.local.prompting` — the processor, rendering a request as the model's prompt, encoding;
* :mod:`~mmjudge.judges.local.ratings` — which token ids spell each rating, and reading ratings off logits;
* :mod:`~mmjudge.judges.local.prefix_sharing` — running a prefix shared by several requests once;
* :mod:`~mmjudge.judges.local.placeholders` — prompts about images as the processor tokenises them, each
  distinct image preprocessed once;
* :mod:`~mmjudge.judges.local.attention` — what a model's attention layers allow when a cache is reused;
* :mod:`~mmjudge.judges.local.sizing` — ``batch_size="auto"`` from free GPU memory;
* :mod:`~mmjudge.judges.local.scored` — greedy generations read token by token (``generate_scored``), stop strings;
* :mod:`~mmjudge.judges.local.adapters` — a LoRA adapter (peft's or LLaVA's layout) merged into the model.
"""
