"""Encoders shared by several metrics: CLIP and Long-CLIP (:mod:`.clip`: loading, preprocessing,
cached embeddings; :mod:`.longclip`: the Long-CLIP → ``transformers`` converter)."""
