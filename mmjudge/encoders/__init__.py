"""Encoders shared by several metrics: CLIP and Long-CLIP (:mod:`.clip`: loading, preprocessing,
cached embeddings; :mod:`.longclip`: the OpenAI-format (Long-CLIP, OpenAI CLIP, OpenCLIP) → ``transformers``
converter; :mod:`.openai_clip`: backbones and encoders from such state dicts; :mod:`.clip_tokenizer`: OpenAI's
``clip.tokenize`` exactly; :mod:`.checkpoint_files`: reading other projects' checkpoint files safely, and
naming them by content)."""
